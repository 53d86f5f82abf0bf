"""Key lookup: the time to authenticate does not depend on where the key sits in the store.

What it measures: the median time of `KeyStore.authenticate` over 3,000 stored
personal keys, for the first key, the last key, a near miss of the first and a
key like none of them (each the median of 15 calls, after a warm-up).

Baseline: the fastest of the four, in the same process and the same loop. With
an early exit the first key would be ~1000x faster than the last, so the ratio
slowest / fastest shows it at once. Goal: below 3. (The tests prove the same
property by counting: every stored key goes through hmac.compare_digest on
every call; this is its timing face.)

    python benchmarks/key_lookup.py [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # run as a script or imported
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import Report, print_report

TARGET = "key_lookup"
GOAL = 3.0
KEYS = 3000


def median_time(store, header: str, rounds: int) -> float:  # noqa: ANN001
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        try:
            store.authenticate(header)
        except Exception:  # noqa: BLE001, S110 - a miss is what is being timed
            pass
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def measure(quick: bool = False) -> Report:
    from sim.api.keys import KeyStore

    rounds = 5 if quick else 15
    store = KeyStore()
    secrets = [store.personal().secret for _ in range(KEYS)]
    headers = {"first": f"Bearer {secrets[0]}", "last": f"Bearer {secrets[-1]}",
               "near miss": f"Bearer {secrets[0][:-1]}!", "miss": "Bearer nothing-like-it"}
    for header in headers.values():
        median_time(store, header, rounds=3)  # warm up
    times = {name: median_time(store, header, rounds) for name, header in headers.items()}
    fastest, slowest = min(times.values()), max(times.values())
    ratio = slowest / fastest
    report = Report(TARGET, data={"keys": KEYS, "rounds": rounds, "median_s": times})
    report.lines.append(f"{KEYS} keys, median of {rounds} calls each: " + ", ".join(
        f"{name} {seconds * 1000:.2f} ms" for name, seconds in times.items()))
    report.add(f"slowest {slowest * 1000:.2f} ms", f"fastest {fastest * 1000:.2f} ms", ratio,
               f"< {GOAL:g}", ratio < GOAL)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 calls per median, not 15")
    args = parser.parse_args(argv)
    print_report(measure(args.quick))
    return 0


if __name__ == "__main__":
    sys.exit(main())

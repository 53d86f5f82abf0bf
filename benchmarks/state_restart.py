"""Restart of `sim serve --state`: seconds to reopen a file with 1k / 10k / 100k mutations.

What it measures: `sim.api.restore.open_server(path)` (check the file, load
its latest snapshot, replay the journal rows after it, restore the keys) on a
state file built with N journaled mutations through the API, in process:
projects created (one call in a hundred), renamed, their computes suspended
and started, the clock advanced. Two restarts per size:

- after a clean stop (a snapshot at the stop: nothing to replay);
- after a crash (the file left as a killed server leaves it: the rows after
  the last periodic snapshot are replayed, at most `SNAPSHOT_EVERY`).

Baseline: reopening a state file with no mutation at all, in the same run (the
fixed cost: checks, a fresh control plane, the application). Ratios are
restart / baseline. Goal: every restart < 2 s, whatever the history (the
absolute goal; the ratio shows it does not grow with N like a full replay).
For comparison the same file is also replayed in full (snapshots ignored) at
1k and 10k: what a restart cost before snapshots.

What a restart still grows with is the size of the world (a snapshot holds
every project, compute and pending event): `--projects-every 10` builds ten
times the projects for the same history, to show it.

    python benchmarks/state_restart.py [--quick] [--sizes 1000,10000,100000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # run as a script or imported
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import Report, print_report, table

TARGET = "state_restart"
GOAL_S = 2.0
SIZES = (1_000, 10_000, 100_000)
KEY = "sim_bench_key_0123456789abcdef"


def build(path: Path, mutations: int, projects_every: int = 100) -> None:
    """A state file with `mutations` journaled mutations, a project created every
    `projects_every`; left as a crash leaves it."""
    from sim.api import in_process_client
    from sim.api.restore import open_server

    server, _ = open_server(path, seed=1)
    server.keep_key(server.add_personal_key(KEY))
    api = in_process_client(server, api_key=KEY)
    projects: list[tuple[str, str]] = []  # (project, its primary compute)
    done = 0
    while done < mutations:
        n = done
        if n % projects_every == 0 or not projects:
            made = api.post("projects", json={"project": {"name": f"p{n}"}}).json()
            projects.append((made["project"]["id"], made["endpoints"][0]["id"]))
        else:
            pid, ep = projects[n % len(projects)]
            kind = n % 10
            if kind in (1, 2, 3):
                api.patch(f"projects/{pid}", json={"project": {"name": f"p{n}"}})
            elif kind in (4, 5):
                api.post(f"projects/{pid}/endpoints/{ep}/suspend")
            elif kind in (6, 7):
                api.post(f"projects/{pid}/endpoints/{ep}/start")
            else:
                api.sim("POST", "advance", json={"seconds": 7})
        done += 1
    api.close()
    server.journal.close()  # type: ignore[union-attr]  # as a crash: no snapshot at the stop


def reopen(path: Path, **options: object) -> tuple[float, int, bool]:
    """(seconds, journal rows replayed, whether a snapshot was loaded); then a clean stop."""
    from sim.api.restore import open_server

    started = time.perf_counter()
    server, restored = open_server(path, **options)  # type: ignore[arg-type]
    seconds = time.perf_counter() - started
    server.close_state()
    return seconds, restored.entries, restored.snapshot_after > 0


def full_replay(path: Path) -> tuple[float, int]:
    """Every journal row replayed, the snapshot ignored: what a restart cost without one."""
    from sim.api.restore import replay
    from sim.api.server import SimServer
    from sim.api.state_file import open_journal

    journal, meta, _ = open_journal(path)
    try:
        server = SimServer(seed=int(meta["seed"]))
        started = time.perf_counter()
        rows, _requests = replay(journal, server)
        return time.perf_counter() - started, rows
    finally:
        journal.close()


def measure(quick: bool = False, *, sizes: tuple[int, ...] | None = None,
            projects_every: int = 100) -> Report:
    sizes = sizes or ((1_000,) if quick else SIZES)
    report = Report(TARGET, data={"sizes": list(sizes), "projects_every": projects_every})
    rows = []
    with tempfile.TemporaryDirectory(prefix="sim-bench-") as tmp:
        empty = Path(tmp) / "empty.db"
        build(empty, 0)
        baseline = min(reopen(empty)[0] for _ in range(3))
        report.data["baseline_s"] = baseline
        for n in sizes:
            path = Path(tmp) / f"n{n}.db"
            started = time.perf_counter()
            build(path, n, projects_every)
            built = time.perf_counter() - started
            crash_s, crash_rows, loaded = reopen(path)  # from the last periodic snapshot
            clean_s, clean_rows, _ = reopen(path)  # after that clean stop
            full = full_replay(path) if n <= 10_000 else None
            size_mb = sum(p.stat().st_size for p in Path(tmp).glob(f"n{n}.db*")) / 1e6
            rows.append((f"{n:,}", f"{-(-n // projects_every):,}", f"{built:.0f}", f"{size_mb:.1f}",
                         f"{crash_s:.2f} ({crash_rows} rows{', snapshot' if loaded else ''})",
                         f"{clean_s:.2f} ({clean_rows} rows)",
                         "-" if full is None else f"{full[0]:.1f} ({full[1]} rows)"))
            report.data[str(n)] = {"crash_s": crash_s, "crash_rows": crash_rows,
                                   "clean_s": clean_s, "built_s": built, "file_mb": size_mb,
                                   "full_replay_s": None if full is None else full[0]}
            worst = max(crash_s, clean_s)
            report.add(f"restart at {n:,} mutations: {worst:.2f} s",
                       f"empty file: {baseline:.3f} s", worst / baseline, f"< {GOAL_S:g} s",
                       worst < GOAL_S)
    report.lines.append(f"baseline: reopening a state file with no mutation: {baseline:.3f} s")
    report.lines.append(table(rows, ("mutations", "projects", "build s", "file MB", "restart after crash s",
                                     "restart after clean stop s", "full replay s (no snapshot)")))
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1k mutations only")
    parser.add_argument("--sizes", help="comma-separated numbers of mutations")
    parser.add_argument("--projects-every", type=int, default=100, metavar="K",
                        help="create a project every K mutations (default 100)")
    args = parser.parse_args(argv)
    sizes = tuple(int(s) for s in args.sizes.split(",")) if args.sizes else None
    print_report(measure(args.quick, sizes=sizes, projects_every=args.projects_every))
    return 0


if __name__ == "__main__":
    sys.exit(main())

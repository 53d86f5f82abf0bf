"""`sim serve --scenario` advanced by the compute kernel, against `sim run` of the same fleet.

benchmarks/realistic.yaml resized by `_harness.realistic_text` (diurnal load,
autoscaling, the pooler on half, hourly checks, 1 % operation failures, a PATCH on
1 % of the projects), all in this process, one after the other:

1. day: `sim run` of one day (the run: fleet built, warm-up, the day) against a served
   world of the same scenario (built and warmed up apart) advanced by a day in one
   call, at 1,000 and 10,000 computes; the ratio advance / run (goal <= 2), and the
   same against a run that records its events (`record_events: all`), as a served
   world does (the API lists every operation).
2. month: the same scenario over N days, `sim run`, a served world advanced in one
   call, and one advanced in N x 24 calls of an hour: each compute's active seconds,
   CU-seconds and cold starts must be equal (not close) in the three.
3. realtime: a served world of 10,000 computes on `--clock realtime --speed 3600`,
   one clock read every 0.2 wall seconds for a bounded time: the largest and p99 time a
   read waits for the world to catch up (its lag behind the schedule), and the
   one-line warning `sim serve` prints at start for that fleet and speed.
4. reads during an advance: GET /projects/{id} in a loop from another thread while a
   served world of 1,000 computes advances N days; p50, p99 and largest latency.

    python benchmarks/serve_advance.py [--quick] [--parts day,month,realtime,reads]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # run as a script or imported
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import realistic_text

DAY = 86_400.0


def _scenario(computes: int, days: float):
    from sim.scenario.loader import parse_scenario

    return parse_scenario(realistic_text(computes, days))


def _served(scenario, **options):
    from sim.api.server import SimServer

    started = time.perf_counter()
    server = SimServer(scenario=scenario, **options)
    return server, time.perf_counter() - started


def day(computes: int) -> dict:
    """`sim run` of a day against a served world advanced a day, same scenario."""
    from sim.scenario.runner import run_scenario

    _warm()
    scenario = _scenario(computes, 1)
    started = time.perf_counter()
    run_scenario(scenario)
    run_s = time.perf_counter() - started
    # a served world lists every operation: against a run that keeps them too
    started = time.perf_counter()
    run_scenario(scenario.model_copy(update={"record_events": "all"}))
    run_events_s = time.perf_counter() - started
    server, build_s = _served(scenario)
    started = time.perf_counter()
    server.advance(DAY)
    advance_s = time.perf_counter() - started
    return {"computes": computes, "sim_run_s": run_s, "sim_run_events_s": run_events_s,
            "serve_build_s": build_s, "serve_advance_s": advance_s,
            "ratio": advance_s / run_s, "ratio_events": advance_s / run_events_s,
            "counts": dict(server.advancing.counts)}


def _warm() -> None:
    """What a process pays once (the kernels' compile cache loaded, lazy imports), paid
    before anything is timed, by a small run and a small served world."""
    from sim.scenario.runner import run_scenario

    small = _scenario(20, 1)
    run_scenario(small)
    _served(small)[0].advance(3_600)


def _figures(computes) -> dict:
    return {(r.project_name, r.branch_name, r.type): (r.active_s, r.cu_s, r.cold_starts)
            for r in computes}


def month(computes: int, days: float) -> dict:
    """Each compute's figures: `sim run`, one advance, hourly advances."""
    from sim.scenario.runner import run_scenario

    scenario = _scenario(computes, days)
    out: dict = {"computes": computes, "days": days}
    started = time.perf_counter()
    ran = _figures(run_scenario(scenario).computes)
    out["sim_run_s"] = time.perf_counter() - started
    served = {}
    for calls in (1, int(round(days * 24))):
        server, _ = _served(scenario)
        started = time.perf_counter()
        for _ in range(calls):
            server.advance(scenario.duration / calls)
        out[f"advance_{calls}_calls_s"] = time.perf_counter() - started
        served[calls] = _figures(server.cp.result(scenario.name, scenario.duration,
                                                  scenario.price_per_cu_hour).computes)
    for name, figures in (("sim run", ran), *((f"{c} calls", f) for c, f in served.items())):
        out[name] = {"CU-hours": sum(f[1] for f in figures.values()) / 3600,
                     "active hours": sum(f[0] for f in figures.values()) / 3600,
                     "cold starts": sum(f[2] for f in figures.values())}
    out["equal"] = all(f == ran for f in served.values())
    return out


def realtime(computes: int, speed: float, wall_s: float) -> dict:
    """Reads of the clock on a realtime server: how long each waits for the catch-up."""
    from sim.api import in_process_client
    from sim.api.realtime_check import realtime_warning

    server, build_s = _served(_scenario(computes, 30), clock="realtime", speed=speed)
    warning = realtime_warning(server)
    api = in_process_client(server)
    server.configure(clock="realtime")  # the schedule starts now, after the build
    waits, behind = [], []
    deadline = time.monotonic() + wall_s
    while time.monotonic() < deadline:
        asked = time.monotonic()
        seconds = api.clock()["seconds"]
        answered = time.monotonic()
        waits.append(answered - asked)
        # how far the world's instant is behind the schedule when the answer arrives
        behind.append((server._wall() - server._wall_origin) - seconds / speed)
        time.sleep(max(0.0, 0.2 - (answered - asked)))
    return {"computes": computes, "speed": speed, "build_s": build_s, "reads": len(waits),
            "largest_wait_s": max(waits), "p99_wait_s": _p99(waits),
            "largest_lag_s": max(behind), "warning": warning}


def reads(computes: int, days: float) -> dict:
    """GET /projects/{id} latencies while another thread advances the world."""
    from sim.api import in_process_client

    server, _ = _served(_scenario(computes, days + 1))
    api = in_process_client(server)
    project = api.get("projects", params={"limit": 1}).json()["projects"][0]["id"]
    done = threading.Event()

    def advance() -> None:
        server.advance(days * DAY)
        done.set()

    started = time.perf_counter()
    threading.Thread(target=advance, daemon=True).start()
    latencies = []
    while not done.is_set():
        asked = time.perf_counter()
        assert api.get(f"projects/{project}").status_code == 200
        latencies.append(time.perf_counter() - asked)
    return {"computes": computes, "days": days, "advance_s": time.perf_counter() - started,
            "reads": len(latencies), "p50_s": statistics.median(latencies),
            "p99_s": _p99(latencies), "largest_s": max(latencies),
            "step_s": server.advance_step_s}


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="smaller fleets (100 / 1,000 computes, month of 3 days)")
    parser.add_argument("--parts", default="day,month,realtime,reads")
    parser.add_argument("--month-computes", type=int, default=1_000)
    parser.add_argument("--month-days", type=float, default=30.0)
    args = parser.parse_args(argv)
    parts = set(args.parts.split(","))
    sizes = (100, 1_000) if args.quick else (1_000, 10_000)
    if "day" in parts:
        for n in sizes:
            print("day:", day(n), flush=True)
    if "month" in parts:
        n, d = (100, 3.0) if args.quick else (args.month_computes, args.month_days)
        print("month:", month(n, d), flush=True)
    if "realtime" in parts:
        print("realtime:", realtime(sizes[-1], 3600.0, 10.0 if args.quick else 30.0),
              flush=True)
    if "reads" in parts:
        print("reads:", reads(sizes[0], 1.0 if args.quick else 3.0), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

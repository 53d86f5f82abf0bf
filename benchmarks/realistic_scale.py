"""The realistic fleet at scale: 10,000 computes x 30 days in under 120 s and 4 GiB, two
dask workers at least 1.7x one, and a projection to 1,000,000 computes on N workers.

What it measures, all through `sim run` in child processes (end to end: load,
simulate, frames, Parquet, summary, charts, report), on benchmarks/realistic.yaml
(diurnal arrivals, autoscaling, pooler on half the computes, 1 % refusals on a
tenth, 1 % operation failures, hourly availability checks, PATCHes on 1 % of
projects) resized by `_harness.realistic_text`:

1. scaling: 100 / 300 / 1,000 / 3,000 / 10,000 computes x 30 days (fleet_scale.py's
   machinery: smallest first, a run whose projection passes the timeout is
   skipped and the headline is then projected along the line through the two
   largest finished runs, and says so). --quick: 20 / 60 / 200 computes x 7 d.
2. workers: `sim run --workers 1` against `--workers 2` on 10,000 computes x
   30 days, the fleet of the scale target (--quick: 100 x 7 days; at a few seconds
   the cluster's start-up decides the ratio), alternating 1, 2, 1, 2 (quick: once each); the best
   wall time of each side counts. Goal: speed-up >= 1.7.
3. a projection on paper of 1,000,000 computes x 30 days on a dask cluster of
   N = 10, 50, 100, 500 workers, from the measured per-worker throughput r1
   (sessions per CPU second of the 1-worker run, worker and client) and the
   measured 2-worker speed-up S2 (benchmarks/README.md gives the formula).

    python benchmarks/realistic_scale.py [--quick] [--skip-scaling] [--skip-workers]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # run as a script or imported
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import GIB, Report, fleet_size, print_report, realistic_text, table
from fleet_scale import run_point, scale_report
from sharding import machine_speedup

TARGET = "realistic_scale"
FULL = (10_000, 30.0)
GOAL_S = 120.0
GOAL_BYTES = 4 * GIB
GOAL_SPEEDUP = 1.7
FULL_POINTS = [(100, 30.0), (300, 30.0), (1_000, 30.0), (3_000, 30.0), (10_000, 30.0)]
QUICK_POINTS = [(20, 7.0), (60, 7.0), (200, 7.0)]
WORKERS_SIZE, QUICK_WORKERS_SIZE = (10_000, 30.0), (100, 7.0)
CLUSTER = (10, 50, 100, 500)
TARGET_COMPUTES = 1_000_000


def workers_runs(size: tuple[int, float], rounds: int, timeout_s: float,
                 mem_cap: int) -> dict[int, list[dict]]:
    runs: dict[int, list[dict]] = {1: [], 2: []}
    for _ in range(rounds):
        for n in (1, 2):
            runs[n].append(run_point(*size, timeout_s, mem_cap, realistic_text, workers=n))
    return runs


def projection(sessions: float, r1: float, speedup: float) -> tuple[list[tuple], float]:
    """Hours for `sessions` on N workers: Amdahl with the serial share the 2-worker
    speed-up implies, and with the 2-worker efficiency held constant."""
    serial = min(1.0, max(0.0, 2.0 / speedup - 1.0))
    efficiency = speedup / 2.0
    t1 = sessions / r1
    rows = []
    for n in CLUSTER:
        amdahl = t1 * (serial + (1.0 - serial) / n)
        constant = t1 / (n * efficiency)
        rows.append((f"{n}", f"{TARGET_COMPUTES // n:,}", f"{amdahl / 3600:,.2f}",
                     f"{constant / 3600:,.2f}", f"{constant / 60:,.1f}"))
    return rows, serial


def measure(quick: bool = False, *, scaling: bool = True, workers: bool = True,
            timeout_s: float | None = None, mem_cap_gib: float = 8.0) -> Report:
    timeout_s = timeout_s or (60.0 if quick else 600.0)
    if scaling:
        report = scale_report(TARGET, QUICK_POINTS if quick else FULL_POINTS, realistic_text,
                              FULL, GOAL_S, GOAL_BYTES, timeout_s, mem_cap_gib)
    else:
        report = Report(TARGET)
    if not workers:
        return report
    size = QUICK_WORKERS_SIZE if quick else WORKERS_SIZE
    probe = machine_speedup()  # what two CPU-bound processes get right now: 2.0 when idle
    runs = workers_runs(size, 1 if quick else 2, max(timeout_s, 120.0), int(mem_cap_gib * GIB))
    ok = {n: [r for r in rs if r["status"] == "ok"] for n, rs in runs.items()}
    report.data["workers"] = runs
    rows = [(n, i + 1, r["status"], f"{r.get('wall_s', 0):.1f}", f"{r.get('cpu_s', 0):.1f}",
             f"{r['sessions']:,}" if "sessions" in r else "-")
            for n, rs in runs.items() for i, r in enumerate(rs)]
    report.data["machine_speedup"] = probe
    report.lines.append(f"\nsim run --workers 1 / 2 on {size[0]:,} computes x {size[1]:g} d "
                        f"(machine probe just before: two CPU loops at once ran {probe:.2f}x "
                        "one alone; 2.0 on two idle CPUs):")
    report.lines.append(table(rows, ("workers", "run", "status", "wall s",
                                     "cpu s (with workers)", "sessions")))
    if not ok[1] or not ok[2]:
        report.add("a workers run failed", "-", None, ">= 1.7x", False, name=f"{TARGET} workers")
        return report
    one = min(r["wall_s"] for r in ok[1])
    two = min(r["wall_s"] for r in ok[2])
    speedup = one / two
    report.add(f"2 workers: {two:.1f} s", f"1 worker: {one:.1f} s", speedup, ">= 1.7x",
               speedup >= GOAL_SPEEDUP, name=f"{TARGET} workers")
    # per CPU second of the 1-worker run (its worker and client): what a dedicated worker
    # gives per wall second, whatever else this machine was doing
    r1 = ok[1][0]["sessions"] / min(r["cpu_s"] for r in ok[1])
    _, _, per_10k = fleet_size(realistic_text(*FULL))
    sessions = per_10k * TARGET_COMPUTES / FULL[0]
    rows, serial = projection(sessions, r1, speedup)
    report.data["projection"] = {"sessions": sessions, "r1": r1, "speedup": speedup,
                                 "serial_share": serial}
    report.lines.append(
        f"\n{TARGET_COMPUTES:,} computes x 30 d (~{sessions / 1e9:.2f} G sessions) on N dask "
        f"workers, on paper: r1 = {r1:,.0f} sessions/s per worker (the 1-worker run's "
        "sessions per CPU second), "
        f"S2 = {speedup:.2f} (serial share s = 2/S2 - 1 = {serial:.2f}, "
        f"efficiency e = S2/2 = {speedup / 2:.2f})")
    report.lines.append(table(rows, ("N workers", "computes/worker", "Amdahl h",
                                     "constant-e h", "constant-e min")))
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller fleets (see above)")
    parser.add_argument("--skip-scaling", action="store_true", help="workers and projection only")
    parser.add_argument("--skip-workers", action="store_true", help="the scaling table only")
    parser.add_argument("--timeout", type=float, help="seconds per run (default 600; quick 60)")
    parser.add_argument("--mem-cap", type=float, default=8.0, metavar="GIB",
                        help="kill a run whose resident set passes this (default 8)")
    args = parser.parse_args(argv)
    print_report(measure(args.quick, scaling=not args.skip_scaling,
                         workers=not args.skip_workers, timeout_s=args.timeout,
                         mem_cap_gib=args.mem_cap))
    return 0


if __name__ == "__main__":
    sys.exit(main())

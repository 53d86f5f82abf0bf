"""Recommendation: a 1,000-computes x 7-day fleet of three templates, with 95 % intervals.

What it measures: `sim.recommend` on scenarios/tenants.yaml (busy, office,
hobby: 100 + 400 + 500 computes, 7 days, ~4.9 M sessions) with its default
space, 5 replications and the targets of notebook 04, on an embedded dask
LocalCluster of --workers processes (default 2). Timed: everything
`sim recommend` does before writing files, cluster start-up included. Also
printed: the CPU seconds of this process and of its reaped children (the
dask workers), which do not depend on what else the machine runs, and the
load average.

Baseline: one run of the same fleet as it is today (`sim.run_fleet`, in this
process), in the same invocation: the ratio recommendation / run says how
many runs' worth of work the recommendation costs. Goal: under 180 s of wall
time on 2 cores. --quick shrinks the fleet tenfold (and the goal with it).

    python benchmarks/recommend_fleet.py [--quick] [--workers N]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # run as a script or imported
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import REPO, Report, print_report

TARGET = "recommend"
GOAL_S = 180.0
SLO = ["cold_starts_per_1000=20", "refused=0.1%", "busy.wake_p99=2s",
       "hobby.cold_starts_per_1000=1000"]


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def fleet(quick: bool) -> dict:
    from sim.sweep.fleet import read_source

    doc = dict(read_source(REPO / "scenarios" / "tenants.yaml").document)
    if quick:
        doc["projects"] = [dict(p, count=max(1, p["count"] // 10)) for p in doc["projects"]]
    return doc


def measure(quick: bool, workers: int = 2) -> Report:
    import sim

    report = Report(TARGET)
    doc = fleet(quick)
    t0, c0 = time.perf_counter(), _cpu()
    sim.run_fleet(doc)
    run_wall, run_cpu = time.perf_counter() - t0, _cpu() - c0
    t0, c0 = time.perf_counter(), _cpu()
    rec = sim.recommend(doc, SLO, replications=5, workers=workers)
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    goal = GOAL_S / (10 if quick else 1)
    report.add(f"{wall:.1f} s wall, {cpu:.1f} CPU s ({rec.runs} runs, {rec.rounds} rounds)",
               f"{run_wall:.1f} s wall, {run_cpu:.1f} CPU s: one run", wall / run_wall,
               f"< {goal:g} s", wall < goal)
    report.lines.append(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; "
                        f"{workers} dask workers")
    report.lines.append(sim.recommendation_tables(rec))
    report.data = {"wall_s": wall, "cpu_s": cpu, "run_wall_s": run_wall, "run_cpu_s": run_cpu,
                   "runs": rec.runs, "rounds": rec.rounds, "saving": rec.cost_now - rec.cost_after}
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a fleet ten times smaller")
    parser.add_argument("--workers", type=int, default=2, help="dask worker processes")
    args = parser.parse_args(argv)
    print_report(measure(args.quick, args.workers))
    return 0


if __name__ == "__main__":
    sys.exit(main())

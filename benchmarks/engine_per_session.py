"""Engine cost per session: sessions simulated per second / bare SimPy timeouts per second.

What it measures: `run_scenario` (build the fleet, run it, collect the rows)
on a fleet where sessions dominate: 200 computes, Poisson 6 sessions an hour,
exponential sessions of 30 s mean, connection records off (benchmarks/fleet.yaml
at 200 computes x 7 days). Once with `fleet_path=False` (everything in the
SimPy engine) and with the fleet path on (best of 5: it takes well under a
second).

Baseline: one SimPy process doing `yield env.timeout(1)` in a loop, timed in
this same process just before and just after the runs (the faster of the two
is kept: the less disturbed). That is the floor of any SimPy model, one event
per step, so the ratio is one over the number of bare events a simulated
session costs (ratio 0.5: a session costs as much as two bare timeouts),
independent of the machine. Goal: at least 0.5, engine alone and with the
fleet path. --quick runs 20 computes (not fewer days: building the fleet
keeps its share of the run).

Both sides are timed in this process's CPU seconds (time.process_time; the
runs are single-threaded), so other work on a shared machine does not skew
the ratio; wall-clock rates are printed beside them.

    python benchmarks/engine_per_session.py [--quick] [--computes N] [--days D]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # run as a script or imported
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import Report, fleet_text, print_report

TARGET = "engine_per_session"
GOAL = 0.5
COMPUTES = 200
DAYS = 7.0


def simpy_timeouts_per_s(steps: int) -> tuple[float, float]:
    """(per CPU second, per wall second) of a bare `yield env.timeout(1)` loop."""
    import simpy

    def loop(env: simpy.Environment):
        for _ in range(steps):
            yield env.timeout(1)

    env = simpy.Environment()
    env.process(loop(env))
    cpu, wall = time.process_time(), time.perf_counter()
    env.run()
    return steps / (time.process_time() - cpu), steps / (time.perf_counter() - wall)


def baseline(steps: int, repeats: int = 3) -> tuple[float, float]:
    runs = [simpy_timeouts_per_s(steps) for _ in range(repeats)]
    return max(r[0] for r in runs), max(r[1] for r in runs)


def sessions_per_s(text: str, fleet_path: bool) -> dict:
    """Sessions per CPU second and per wall second of one run_scenario of `text`."""
    from sim.scenario.loader import parse_scenario
    from sim.scenario.runner import run_scenario

    scenario = parse_scenario(text)
    gc.collect()
    cpu, wall = time.process_time(), time.perf_counter()
    result = run_scenario(scenario, fleet_path=fleet_path)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    sessions = sum(row.sessions for row in result.computes)
    return {"sessions": sessions, "cpu_s": cpu, "wall_s": wall,
            "per_cpu_s": sessions / cpu, "per_wall_s": sessions / wall}


def measure(quick: bool = False, *, computes: int | None = None, days: float | None = None
            ) -> Report:
    # quick: 1/10 of the computes, not of the days, so that building the fleet keeps the
    # same share of the run as in the full target
    computes = computes or (COMPUTES // 10 if quick else COMPUTES)
    days = days if days is not None else DAYS
    steps = 200_000 if quick else 1_000_000
    text = fleet_text(computes, days)
    before = baseline(steps)
    engine = sessions_per_s(text, fleet_path=False)
    # the fleet path takes well under a second here: best of a few runs, like the baseline
    fleet = max((sessions_per_s(text, fleet_path=True) for _ in range(5)),
                key=lambda run: run["per_cpu_s"])
    after = baseline(steps)
    floor = max(before[0], after[0])
    report = Report(TARGET, data={"simpy_timeouts_per_s": [before, after], "engine": engine,
                                  "fleet_path": fleet, "computes": computes, "days": days})
    lines = [f"workload: {computes} computes x {days:g} d, Poisson 6/h, exp 30 s, records off",
             f"SimPy timeouts per CPU s: {before[0]:,.0f} before, {after[0]:,.0f} after "
             f"(per wall s: {before[1]:,.0f}, {after[1]:,.0f})"]
    for label, run in (("engine only", engine), ("with fleet path", fleet)):
        lines.append(f"{label + ':':<16} {run['sessions']:,} sessions in {run['cpu_s']:.1f} CPU s "
                     f"({run['wall_s']:.1f} wall s) = {run['per_cpu_s']:,.0f}/CPU s, "
                     f"{run['per_wall_s']:,.0f}/wall s")
    report.lines.append("\n".join(lines))
    for label, run in (("engine only", engine), ("fleet path", fleet)):
        ratio = run["per_cpu_s"] / floor
        report.add(f"{run['per_cpu_s']:,.0f} sessions/CPU s", f"{floor:,.0f} timeouts/CPU s",
                   ratio, ">= 0.5", ratio >= GOAL, name=f"{TARGET} ({label})")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1/10 of the computes")
    parser.add_argument("--computes", type=int)
    parser.add_argument("--days", type=float)
    args = parser.parse_args(argv)
    print_report(measure(args.quick, computes=args.computes, days=args.days))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Fleet scale: 10,000 computes for 30 simulated days, end to end, in under 60 s and 4 GiB.

What it measures: `sim run fleet.yaml --quiet --out DIR` in a child process
(load the scenario, simulate, write frames, Parquet, summary, charts and the
report: what a capacity planner waits for), timed from the parent; peak memory
is the child's own maximum resident set (os.wait4), not tracemalloc, which
misses numpy, Arrow and the interpreter. Every compute has Poisson arrivals of
6 sessions an hour and exponential sessions of 30 s (benchmarks/fleet.yaml).

Baseline: the goal is absolute (seconds, GiB), so the ratio is figure / goal.
What makes the figure comparable across machines is the scaling table printed
beside it, at 1,000 / 3,000 / 10,000 computes x 30 days and 1,000 computes x
7 / 30 days: seconds per million sessions should stay roughly constant (linear
growth). Small runs carry a fixed cost of a few seconds (interpreter, imports,
charts), so the column to read is "simulate s/M": the simulation alone, as
`sim run` times it. Sessions per second say how far the engine is from the
goal (43.2 M sessions in 60 s: 720,000 sessions/s), and the child's CPU
seconds are printed too: on a shared machine they move less than wall time.

Runs go from the smallest up; a run whose proportional projection from the
largest finished one exceeds the timeout is skipped, so a slow engine cannot
hold the harness for hours, and a child whose resident set passes the memory
cap is killed, so an oversized run cannot take the machine down. When the
10,000 x 30 d run is not made (--quick, --computes/--days, skipped), the
headline figures are projected to it along the line through the two largest
finished runs, and say "projected"; with one finished size there is no verdict.

    python benchmarks/fleet_scale.py                      # the full target
    python benchmarks/fleet_scale.py --quick              # 1/10 of the computes
    python benchmarks/fleet_scale.py --computes 1000 --days 7 --timeout 900
    python benchmarks/fleet_scale.py --scenario benchmarks/realistic.yaml --computes 1000 --days 7
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # run as a script or imported
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import (
    FLEET_YAML,
    GIB,
    REALISTIC_YAML,
    Report,
    fleet_size,
    fleet_text,
    print_report,
    python,
    realistic_text,
    run_child,
    table,
    write_fleet,
)

TARGET = "fleet_scale"
FULL = (10_000, 30.0)  # the target: computes, days
GOAL_S = 60.0
GOAL_BYTES = 4 * GIB
# (computes, days), smallest first; the last is the headline
FULL_POINTS = [(1_000, 7.0), (1_000, 30.0), (3_000, 30.0), (10_000, 30.0)]
QUICK_POINTS = [(100, 7.0), (100, 30.0), (300, 30.0), (1_000, 30.0)]
_SIMULATED = re.compile(r"simulated [\d.]+ days? in ([\d.]+) s")


Sizer = Callable[[int, float], str]  # (computes, days) -> the scenario's YAML text


def sizer_for(path: str | Path | None) -> Sizer:
    """How to resize a scenario file: benchmarks/realistic.yaml through `realistic_text`
    (three templates and its PATCHes), any other file shaped like fleet.yaml (one
    `count:`, one `duration:`) by replacing those two lines."""
    if path is None or Path(path).resolve() == FLEET_YAML:
        return fleet_text
    if Path(path).resolve() == REALISTIC_YAML:
        return realistic_text
    base = Path(path).read_text(encoding="utf-8")
    return lambda computes, days: fleet_text(computes, days, base=base)


def run_point(computes: int, days: float, timeout_s: float, mem_cap: int,
              sizer: Sizer = fleet_text, workers: int | None = None) -> dict:
    """One `sim run` of the fleet at this size, in a child process (with `--workers N`
    when given: its peak memory is then the client's alone, not the workers')."""
    text = sizer(computes, days)
    _, _, expected = fleet_size(text)
    with tempfile.TemporaryDirectory(prefix="sim-bench-") as tmp:
        path = write_fleet(text, tmp)
        argv = [python(), "-m", "sim", "run", str(path), "--quiet", "--out", str(Path(tmp) / "out")]
        if workers is not None:
            argv += ["--workers", str(workers)]
        child = run_child(argv, timeout_s=timeout_s, mem_cap_bytes=mem_cap)
        point = {"computes": computes, "days": days, "expected_sessions": expected,
                 "wall_s": child.wall_s, "cpu_s": child.cpu_s, "maxrss_bytes": child.maxrss_bytes,
                 "status": "ok" if child.ok else (child.killed or f"exit {child.returncode}")}
        if child.ok:
            summary = json.loads((Path(tmp) / "out" / "summary.json").read_text())
            point["sessions"] = summary["sessions"]
            found = _SIMULATED.search(child.stdout)
            point["simulate_s"] = float(found[1]) if found else None
        elif child.killed is None:
            point["error"] = (child.stderr.strip().splitlines() or [""])[-1]
    return point


def run_points(points: list[tuple[int, float]], timeout_s: float, mem_cap: int,
               sizer: Sizer = fleet_text) -> list[dict]:
    done: list[dict] = []
    per_session = None  # wall seconds per session of the largest finished run
    for computes, days in points:
        _, _, expected = fleet_size(sizer(computes, days))
        if per_session is None:
            pass
        elif per_session == float("inf"):
            done.append({"computes": computes, "days": days, "expected_sessions": expected,
                         "status": "skipped (a smaller run failed)"})
            continue
        elif per_session * expected > timeout_s:
            done.append({"computes": computes, "days": days, "expected_sessions": expected,
                         "status": "skipped", "projected_s": per_session * expected})
            continue
        point = run_point(computes, days, timeout_s, mem_cap, sizer)
        done.append(point)
        if point["status"] == "ok":
            per_session = point["wall_s"] / point["sessions"]
        else:
            per_session = float("inf")  # bigger runs would fail the same way
    return done


def scaling_table(points: list[dict]) -> str:
    rows = []
    for p in points:
        if p["status"] != "ok":
            if "projected_s" in p:
                status = f"{p['status']} (projected {p['projected_s']:,.0f} s)"
            elif "wall_s" in p:
                status = f"{p['status']} after {p['wall_s']:.0f} s"
            else:
                status = p["status"]
            rows.append((f"{p['computes']:,}", f"{p['days']:g}",
                         f"~{p['expected_sessions'] / 1e6:.2f}", "-", "-", "-", "-", "-", "-", "-",
                         status))
            continue
        sim_s = p["simulate_s"]
        rows.append((
            f"{p['computes']:,}", f"{p['days']:g}", f"{p['sessions'] / 1e6:.2f}",
            f"{p['wall_s']:.1f}", f"{p['cpu_s']:.1f}", "-" if sim_s is None else f"{sim_s:.1f}",
            f"{p['maxrss_bytes'] / GIB:.2f}", f"{p['wall_s'] / p['sessions'] * 1e6:.1f}",
            "-" if sim_s is None else f"{sim_s / p['sessions'] * 1e6:.2f}",
            f"{p['sessions'] / p['wall_s']:,.0f}", "ok"))
    return table(rows, ("computes", "days", "M sessions", "wall s", "cpu s", "simulate s",
                        "peak GiB", "wall s/M", "simulate s/M", "sessions/s", "status"))


def project(points: list[dict], key: str, sessions: float) -> float | None:
    """`key` (wall_s, cpu_s, maxrss_bytes) at `sessions`, along the line through the two
    largest finished runs (its intercept is the fixed cost: interpreter, imports, charts).
    None without two finished runs of clearly different sizes: both time and memory have
    a large fixed part, so one point says nothing about the slope."""
    ok = sorted((p for p in points if p["status"] == "ok"), key=lambda p: p["sessions"])
    if len(ok) < 2 or ok[-1]["sessions"] < ok[-2]["sessions"] * 1.5:
        return None
    prev, last = ok[-2], ok[-1]
    slope = (last[key] - prev[key]) / (last["sessions"] - prev["sessions"])
    return last[key] + max(slope, 0.0) * (sessions - last["sessions"])


def measure(quick: bool = False, *, computes: int | None = None, days: float | None = None,
            timeout_s: float | None = None, mem_cap_gib: float = 8.0,
            scenario: str | Path | None = None) -> Report:
    """The headline run (the largest point) against 60 s and 4 GiB, plus the scaling table.

    `computes`/`days` run that one size only. When the headline did not run at
    10,000 x 30 d, its figures are projected there from the finished runs, and
    the row says so (with a single finished size: not projected, no verdict).
    `scenario` resizes another file instead of fleet.yaml (see `sizer_for`)."""
    if computes is not None or days is not None:
        points = [(computes or FULL[0], days if days is not None else FULL[1])]
    else:
        points = QUICK_POINTS if quick else FULL_POINTS
    return scale_report(TARGET, points, sizer_for(scenario), FULL, GOAL_S, GOAL_BYTES,
                        timeout_s or (40.0 if quick else 600.0), mem_cap_gib)


def scale_report(target: str, points: list[tuple[int, float]], sizer: Sizer,
                 full: tuple[int, float], goal_s: float, goal_bytes: float, timeout_s: float,
                 mem_cap_gib: float) -> Report:
    """Run `points` (smallest first) and judge the largest, or its projection to `full`."""
    done = run_points(points, timeout_s, int(mem_cap_gib * GIB), sizer)
    report = Report(target, data={"points": done, "timeout_s": timeout_s})
    report.lines.append(scaling_table(done))
    for p in done:
        if "error" in p:
            report.lines.append(f"{p['computes']:,} x {p['days']:g} d: {p['error']}")
    wall_goal, mem_goal = f"< {goal_s:g} s", f"< {goal_bytes / GIB:g} GiB"
    wall_base, mem_base = f"{goal_s:g} s (absolute)", f"{goal_bytes / GIB:g} GiB (absolute)"
    finished = [p for p in done if p["status"] == "ok"]
    if not finished:
        report.add(f"no run finished ({done[-1]['status']})", wall_base, None, wall_goal,
                   False, name=f"{target} wall")
        report.add("-", mem_base, None, mem_goal, False, name=f"{target} memory")
        return report
    _, _, full_sessions = fleet_size(sizer(*full))
    last = max(finished, key=lambda p: p["sessions"])
    rate = last["sessions"] / last["wall_s"]
    head = done[-1]
    if head["status"] == "ok" and (head["computes"], head["days"]) == full:
        wall, cpu, rss, how = head["wall_s"], head["cpu_s"], head["maxrss_bytes"], ""
    else:
        wall, cpu, rss = (project(done, key, full_sessions)
                          for key in ("wall_s", "cpu_s", "maxrss_bytes"))
        how = " projected"
        why = "not in this run" if head["status"] == "ok" else head["status"]
        report.lines.append(f"\n{full[0]:,} x {full[1]:g} d: {why}; its figures are projected "
                            "along the line through the two largest finished runs.")
    report.data.update(wall_s=wall, cpu_s=cpu, maxrss_bytes=rss, projected=bool(how),
                       full_sessions=full_sessions)
    if wall is None or cpu is None or rss is None:
        size = f"at {last['computes']:,} x {last['days']:g} d (one size: not projected)"
        report.add(f"{last['wall_s']:.1f} s {size}", wall_base, None, wall_goal, None,
                   name=f"{target} wall")
        report.add(f"{last['maxrss_bytes'] / GIB:.2f} GiB {size}", mem_base, None, mem_goal,
                   None, name=f"{target} memory")
        return report
    report.add(f"{wall:,.1f} s{how} ({cpu:,.1f} CPU s; {rate:,.0f} sessions/s)",
               wall_base, wall / goal_s, wall_goal, wall < goal_s, name=f"{target} wall")
    report.add(f"{rss / GIB:.2f} GiB{how}", mem_base, rss / goal_bytes, mem_goal,
               rss < goal_bytes, name=f"{target} memory")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1/10 of the computes")
    parser.add_argument("--computes", type=int, help="run this one size only")
    parser.add_argument("--days", type=float, help="run this one size only")
    parser.add_argument("--timeout", type=float, help="seconds per run (default 600; quick 40)")
    parser.add_argument("--mem-cap", type=float, default=8.0, metavar="GIB",
                        help="kill a run whose resident set passes this (default 8)")
    parser.add_argument("--scenario", metavar="FILE",
                        help="resize this file instead of benchmarks/fleet.yaml "
                             "(benchmarks/realistic.yaml, or a file with one count: line)")
    args = parser.parse_args(argv)
    report = measure(args.quick, computes=args.computes, days=args.days,
                     timeout_s=args.timeout, mem_cap_gib=args.mem_cap, scenario=args.scenario)
    print_report(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())

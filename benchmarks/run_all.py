"""Run every performance target and print one table: target, figure, baseline, ratio, goal.

    python benchmarks/run_all.py            # the full targets (long: see benchmarks/README.md)
    python benchmarks/run_all.py --quick    # every workload ~10x smaller: 3-5 minutes
    python benchmarks/run_all.py --only api_latency --json results.json

Each target is a script of its own (`measure(quick)`); a target that raises is
reported as an error row and the others still run. Exit status 1 when any row
fails or errors.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import platform
import sys
import time
import traceback
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # run as a script or imported
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import Report, Row, rows_table

TARGETS = ("fleet_scale", "versus_peer", "warm_up_cost", "realistic_scale", "sharding",
           "api_latency", "key_lookup", "state_restart", "keepalive_latency", "first_run")


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{os.cpu_count()} CPUs ({model}), Python {platform.python_version()}, "
            f"load average {load:.1f}")


def run_target(name: str, quick: bool) -> tuple[Report, float]:
    started = time.perf_counter()
    try:
        report = importlib.import_module(name).measure(quick)
    except Exception as err:  # one broken target must not hide the others' figures
        report = Report(name)
        report.lines.append(traceback.format_exc())
        report.add(f"error: {type(err).__name__}: {err}"[:100], "-", None, "-", False)
    gc.collect()
    return report, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="scale every workload down ~10x (3-5 minutes in all)")
    parser.add_argument("--only", action="append", choices=TARGETS, metavar="TARGET",
                        help=f"run only this target (repeatable): {', '.join(TARGETS)}")
    parser.add_argument("--json", metavar="FILE", help="also write every figure to FILE")
    args = parser.parse_args(argv)
    print(f"machine: {machine()}; mode: {'quick' if args.quick else 'full'}\n", flush=True)
    rows: list[Row] = []
    reports = []
    for name in args.only or TARGETS:
        print(f"== {name}", flush=True)
        report, seconds = run_target(name, args.quick)
        for line in report.lines:
            print(line)
        print(f"({seconds:.0f} s)\n", flush=True)
        rows += report.rows
        reports.append(report.as_dict() | {"seconds": seconds})
    print(rows_table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": machine(), "quick": args.quick,
                                               "targets": reports}, indent=2, default=str))
    return 0 if all(r.passed for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

"""`sim`: thin commands over the library. Each parses, calls one library function, prints.

Errors a user can cause (a bad scenario file, a refused size) print one line
and exit non-zero; no traceback reaches the terminal.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

EXIT_USAGE = 2


def _fail(message: str) -> int:
    print(f"sim: error: {message}", file=sys.stderr)
    return EXIT_USAGE


# -- commands -------------------------------------------------------------------


def cmd_validate(args: argparse.Namespace) -> int:
    """Check a scenario file; print what it declares."""
    from sim.scenario.loader import ScenarioError, load_scenario

    try:
        scenario = load_scenario(args.file)
    except ScenarioError as err:
        return _fail(str(err))
    instances = scenario.instances()
    computes = sum(len(b.computes) for inst in instances for b in inst.template.branches)
    print(f"{args.file}: ok: scenario {scenario.name!r}, {len(instances)} projects, "
          f"{computes} computes, {scenario.duration:g} s simulated")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """Run a scenario; write Parquet tables, summary and charts to --out."""
    from sim.metrics import draw_charts, frames, summary, summary_table, write_results
    from sim.scenario.loader import ScenarioError, load_scenario
    from sim.scenario.runner import ScenarioRunError, run_scenario

    try:
        scenario = load_scenario(args.file)
    except ScenarioError as err:
        return _fail(str(err))
    out = Path(args.out) if args.out else Path("results") / scenario.name
    started = time.perf_counter()
    try:
        with _progress(args.quiet, f"simulating {scenario.name}") as update:
            result = run_scenario(scenario, seed=args.seed, progress=update)
    except ScenarioRunError as err:
        return _fail(f"{args.file}: {err}")
    elapsed = time.perf_counter() - started
    tables = frames(result)
    totals = summary(tables, result)
    write_results(result, out, tables=tables)
    charts = draw_charts(tables, totals, out)
    print(summary_table(totals))
    print(f"\nsimulated {result.duration_s / 86_400:g} days in {elapsed:.1f} s; "
          f"results in {out}/ ({len(charts)} charts)")
    return 0


def cmd_limits(args: argparse.Namespace) -> int:
    """Print the size table: CU, vCPU, RAM, max_connections, Local File Cache, temp disk."""
    from sim.rules.connections import max_connections_fixed
    from sim.rules.sizes import VALID_CU, is_shared, lfc_gb, ram_gb, temp_disk_gib, vcpu

    header = f"{'CU':>6} {'vCPU':>6} {'RAM GB':>7} {'max_conn':>9} {'LFC GB':>7} {'temp GiB':>9}"
    print(header)
    print("-" * len(header))
    for cu in VALID_CU:
        shared = " shared" if is_shared(cu) else ""
        print(f"{cu:>6g} {vcpu(cu):>6g} {ram_gb(cu):>7g} {max_connections_fixed(cu):>9} "
              f"{lfc_gb(cu):>7g} {temp_disk_gib(cu):>9g}{shared}")
    print("\nautoscaling: 0.25 to 16 CU (min <= max); above 16 CU fixed sizes only; "
          "free plan: up to 2 CU")
    return 0


# -- plumbing -----------------------------------------------------------------------


class _progress:
    """A rich progress bar over simulated time, on stderr; nothing when quiet."""

    def __init__(self, quiet: bool, label: str):
        self.quiet = quiet
        self.label = label
        self.bar = None

    def __enter__(self) -> Callable[[float, float], None] | None:
        if self.quiet:
            return None
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

        self.bar = Progress(
            TextColumn("{task.description}"), BarColumn(),
            TextColumn("{task.fields[reached]}"), TimeRemainingColumn(),
            console=Console(stderr=True), transient=True,
        )
        self.bar.start()
        task = self.bar.add_task(self.label, total=1.0, reached="day 0")

        def update(reached: float, total: float) -> None:
            self.bar.update(task, completed=reached / total,
                            reached=f"day {reached / 86_400:.1f} of {total / 86_400:g}")

        return update

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


COMMANDS: dict[str, tuple[Callable[[argparse.Namespace], int], str]] = {
    "run": (cmd_run, "run a scenario file and write results, summary and charts"),
    "validate": (cmd_validate, "check a scenario file without running it"),
    "limits": (cmd_limits, "print the size table (CU, vCPU, RAM, max_connections, ...)"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sim", description="Discrete-event simulator of a serverless-Postgres control plane.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = sub.add_parser("run", help=COMMANDS["run"][1], description=COMMANDS["run"][1])
    run.add_argument("file", help="scenario YAML file")
    run.add_argument("--out", help="output directory (default: results/<scenario name>)")
    run.add_argument("--seed", type=int, help="override the scenario's seed")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    val = sub.add_parser("validate", help=COMMANDS["validate"][1],
                         description=COMMANDS["validate"][1])
    val.add_argument("file", help="scenario YAML file")
    sub.add_parser("limits", help=COMMANDS["limits"][1], description=COMMANDS["limits"][1])
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler, _ = COMMANDS[args.command]
    try:
        return handler(args)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

"""A run's results directory, written all or nothing.

`sim run` writes tables, summary, charts and report.html into a staging
directory beside the target (same parent, so the final move is a rename on one
file system) and moves it into place only once every file is there. A run that
is interrupted or fails leaves no partial directory behind, and the results of
an earlier run in the target stay as they were until the new ones are complete.
An existing, non-empty target is replaced whole, and only when asked
(`replace=True`): files of two runs never mix.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sim.engine.records import RunResult
    from sim.metrics.summary import WakeFigures
    from sim.scenario.schema import Scenario

#: (files written so far, files in all, the file just written)
Progress = Callable[[int, int, str], None]

#: everything that is not a result file: building the tables and the summary
PREPARING = "tables"


class ResultsExist(Exception):
    """The target holds files already and replacing it was not asked for."""


@dataclass
class WrittenRun:
    out: Path
    summary: dict[str, Any]
    charts: list[Path]
    report: Path


def check_target(out: Path, *, replace: bool) -> None:
    """Refuse a target that is a file, or that holds files when replacing was not asked."""
    if out.exists() and not out.is_dir():
        raise ResultsExist(f"{out} exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not replace:
        raise ResultsExist(f"{out} already holds files; pass --force to replace it whole, "
                           f"or choose another --out")


def staging_dir(out: Path, *, replace: bool) -> Path:
    """Check the target, then make the staging directory beside it."""
    check_target(out, replace=replace)
    out.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))


def publish(staging: Path, out: Path) -> None:
    """Move the complete staging directory to `out`, replacing what was there."""
    old = None
    try:
        with _interrupts_held():  # between the two renames, `out` would be missing
            if out.exists():
                old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
                os.replace(out, old / "results")
            os.replace(staging, out)
    finally:  # also when a Ctrl-C held above arrives: the new results are in place
        if old is not None and not staging.exists():
            shutil.rmtree(old, ignore_errors=True)


def discard(staging: Path) -> None:
    shutil.rmtree(staging, ignore_errors=True)


@contextmanager
def _interrupts_held() -> Iterator[None]:
    """Hold Ctrl-C (SIGINT) for a moment; it is delivered when the block ends."""
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    except (AttributeError, ValueError):  # no signal masks here, or not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def file_count() -> int:
    """How many steps `write_run` reports: the tables, each result file, chart, the
    scenario's copy and report.html."""
    from sim.metrics.charts import chart_files
    from sim.metrics.io import result_files

    return 1 + len(result_files()) + len(chart_files()) + 2


def write_run(result: RunResult, scenario: Scenario, scenario_file: Path, out: Path, *,
              progress: Progress | None = None) -> WrittenRun:
    """Every file of a run's results into `out` (a staging directory), in a fixed order."""
    from sim.metrics import draw_charts, summary, write_results
    from sim.metrics.report import SCENARIO_FILE, write_report

    total = file_count()
    done = 0

    def step(name: str) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total, name)

    tables, wakes = _frames_and_wake_figures(result)
    totals = summary(tables, result, wakes=wakes)
    step(PREPARING)
    write_results(result, out, tables=tables, totals=totals, on_saved=lambda p: step(p.name))
    charts = draw_charts(tables, totals, out, on_saved=lambda p: step(p.name), fork=True)
    # a copy of the scenario beside its results: the report describes the fleet from it
    shutil.copyfile(scenario_file, out / SCENARIO_FILE)
    step(SCENARIO_FILE)
    report = write_report(out, summary=totals, scenario=scenario)
    step(report.name)
    return WrittenRun(out, totals, charts, report)


def _frames_and_wake_figures(result: RunResult) -> tuple[dict[str, Any], WakeFigures]:
    """The run's frames and the fleet's wake figures. For a run that kept no wake rows the
    figures need no frame: their partition of (maybe tens of millions of) waits runs on a
    thread beside the frames, numpy's sorting and copying being free of the GIL."""
    from sim.metrics import frames
    from sim.metrics.summary import wake_figures

    if result.wake_waits is None:  # the waits are in the wakes frame
        tables = frames(result)
        return tables, wake_figures(tables, result)
    with ThreadPoolExecutor(1) as pool:
        wakes = pool.submit(wake_figures, None, result)
        tables = frames(result)
        return tables, wakes.result()

"""The progress bars of `sim`'s commands, on stderr with rich; nothing when quiet.

Each is a context manager that gives the callback the library's functions take as
`progress` (or None when quiet), and takes the bar away on leaving. When stderr is
not a terminal (a pipe, a file) there is no bar either: rich would draw nothing
there but a blank line on leaving, in front of an error message.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _terminal() -> Any:
    """rich's console on stderr, or None when stderr is not a terminal."""
    from rich.console import Console

    console = Console(stderr=True)
    return console if console.is_terminal else None


class SimulatedTime:
    """A rich progress bar over simulated time, on stderr; nothing when quiet."""

    def __init__(self, quiet: bool, label: str):
        self.quiet = quiet
        self.label = label
        self.bar = None

    def __enter__(self) -> Callable[[float, float], None] | None:
        console = None if self.quiet else _terminal()
        if console is None:
            return None
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

        self.bar = Progress(
            TextColumn("{task.description}"), BarColumn(),
            TextColumn("{task.fields[reached]}"), TimeRemainingColumn(),
            console=console, transient=True,
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


class FilesWritten(SimulatedTime):
    """Files written of all a run writes, and the one just written; nothing when quiet."""

    def __enter__(self) -> Callable[[int, int, str], None] | None:
        console = None if self.quiet else _terminal()
        if console is None:
            return None
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self.bar = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[file]}"), console=console, transient=True,
        )
        self.bar.start()
        task = self.bar.add_task(self.label, total=None, file="")

        def update(done: int, total: int, name: str) -> None:
            self.bar.update(task, completed=done, total=total, file=name)

        return update


class Batch(SimulatedTime):
    """Runs done, simulated time reached over all runs, and time left; nothing when quiet."""

    def __enter__(self) -> Callable[[int, int, float, float], None] | None:
        console = None if self.quiet else _terminal()
        if console is None:
            return None
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

        self.bar = Progress(
            TextColumn("{task.description}"), BarColumn(),
            TextColumn("{task.fields[runs]}"), TextColumn("{task.fields[reached]}"),
            TimeRemainingColumn(), console=console, transient=True,
        )
        self.bar.start()
        task = self.bar.add_task(self.label, total=1.0, runs="starting workers", reached="")

        def update(done: int, runs: int, reached: float, total: float) -> None:
            self.bar.update(task, completed=reached / total if total else 1.0,
                            runs=f"runs {done}/{runs}",
                            reached=f"simulated {reached / 86_400:.1f} of {total / 86_400:.1f} d")

        return update

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
        self.compiling: KernelCompile | None = None  # shows the kernel's compilation

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
        from sim.kernel.jit import watching

        self.compiling = KernelCompile(self.bar, task)
        self.watch = watching(self.compiling)
        self.watch.__enter__()

        def update(reached: float, total: float) -> None:
            self.bar.update(task, completed=reached / total,
                            reached=f"day {reached / 86_400:.1f} of {total / 86_400:g}")

        return update

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()
        watch, self.watch = getattr(self, "watch", None), None
        if watch is not None:
            watch.__exit__(None, None, None)


class KernelCompile:
    """The compiled kernel's compilation, shown on the bar of the run that waits for it.

    The first time: one line (it happens once per machine; where the cache is). Then, for
    as long as it lasts, a task of its own (functions compiled) in place of the
    simulated time, which would otherwise sit still with a time left that means nothing.
    `started` and `finished` may nest (compiling ahead spans several compilations).
    """

    def __init__(self, bar, task):  # noqa: ANN001 - a rich Progress and its task
        self.bar = bar
        self.task = task
        self.own = None
        self.told = False
        self.depth = 0

    def started(self) -> None:
        self.depth += 1
        if self.depth > 1:
            return
        # on a terminal, as the bars are: a log or a pipe gets the run's output unchanged
        if not self.told and self.bar.console.is_terminal:
            from sim.kernel.kernel_cache import notice

            self.bar.console.print(notice(), markup=False, highlight=False)
            self.told = True
        self.bar.update(self.task, visible=False)
        self.own = self.bar.add_task("compiling the kernel (once per machine)", total=None,
                                     reached="")

    def compiled(self, done: int, total: int) -> None:
        if self.own is not None:
            self.bar.update(self.own, reached=f"{done}/{total} functions")

    def finished(self) -> None:
        self.depth -= 1
        if self.depth > 0:
            return
        if self.own is not None:
            self.bar.remove_task(self.own)
            self.own = None
        # the time left is estimated afresh: the compilation was not simulating
        done = next(t.completed for t in self.bar.tasks if t.id == self.task)
        self.bar.reset(self.task, completed=done, visible=True)


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

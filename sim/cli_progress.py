"""The progress bars of `sim`'s commands, on stderr with rich; nothing when quiet.

Each is a context manager that gives the callback the library's functions take as
`progress` (or None when quiet), and takes the bar away on leaving.
"""

from __future__ import annotations

from collections.abc import Callable


class SimulatedTime:
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
        from sim.engine.jit import watching

        self.watch = watching(KernelCompile(self.bar, task))
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
    """

    def __init__(self, bar, task):  # noqa: ANN001 - a rich Progress and its task
        self.bar = bar
        self.task = task
        self.own = None
        self.told = False

    def started(self) -> None:
        if not self.told:
            from sim.engine.kernel_cache import notice

            self.bar.console.print(notice())
            self.told = True
        self.bar.update(self.task, visible=False)
        self.own = self.bar.add_task("compiling the kernel (once per machine)", total=None,
                                     reached="")

    def compiled(self, done: int, total: int) -> None:
        if self.own is not None:
            self.bar.update(self.own, reached=f"{done}/{total} functions")

    def finished(self) -> None:
        if self.own is not None:
            self.bar.remove_task(self.own)
            self.own = None
        # the time left is estimated afresh: the compilation was not simulating
        self.bar.reset(self.task, completed=self.bar.tasks[self._index()].completed,
                       visible=True)

    def _index(self) -> int:
        return next(k for k, t in enumerate(self.bar.tasks) if t.id == self.task)


class FilesWritten(SimulatedTime):
    """Files written of all a run writes, and the one just written; nothing when quiet."""

    def __enter__(self) -> Callable[[int, int, str], None] | None:
        if self.quiet:
            return None
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self.bar = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[file]}"), console=Console(stderr=True), transient=True,
        )
        self.bar.start()
        task = self.bar.add_task(self.label, total=None, file="")

        def update(done: int, total: int, name: str) -> None:
            self.bar.update(task, completed=done, total=total, file=name)

        return update


class Batch(SimulatedTime):
    """Runs done, simulated time reached over all runs, and time left; nothing when quiet."""

    def __enter__(self) -> Callable[[int, int, float, float], None] | None:
        if self.quiet:
            return None
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

        self.bar = Progress(
            TextColumn("{task.description}"), BarColumn(),
            TextColumn("{task.fields[runs]}"), TextColumn("{task.fields[reached]}"),
            TimeRemainingColumn(), console=Console(stderr=True), transient=True,
        )
        self.bar.start()
        task = self.bar.add_task(self.label, total=1.0, runs="starting workers", reached="")

        def update(done: int, runs: int, reached: float, total: float) -> None:
            self.bar.update(task, completed=reached / total if total else 1.0,
                            runs=f"runs {done}/{runs}",
                            reached=f"simulated {reached / 86_400:.1f} of {total / 86_400:.1f} d")

        return update

"""The kernel's compilation on `sim run`'s progress bar: one line, then its own task."""

from __future__ import annotations

import io

from rich.console import Console
from rich.progress import Progress, TextColumn

from sim.cli.progress import KernelCompile
from sim.kernel import kernel_cache


def test_the_compilation_replaces_the_simulated_time_while_it_lasts() -> None:
    out = io.StringIO()
    bar = Progress(TextColumn("{task.description} {task.fields[reached]}"),
                   console=Console(file=out, width=200, force_terminal=True,
                                   color_system=None))
    task = bar.add_task("simulating quickstart", total=1.0, reached="day 0")
    bar.update(task, completed=0.5)
    shown = KernelCompile(bar, task)
    shown.started()
    shown.started()  # nested (compiling ahead spans both kernels): still one task
    assert [t.description for t in bar.tasks if t.visible] == [
        "compiling the kernel (once per machine)"]
    shown.compiled(3, 20)
    assert bar.tasks[-1].fields["reached"] == "3/20 functions"
    shown.finished()
    assert len(bar.tasks) == 2
    shown.finished()
    assert [(t.description, t.completed) for t in bar.tasks if t.visible] == [
        ("simulating quickstart", 0.5)]
    assert len(bar.tasks) == 1
    shown.started()  # a second compilation in the same run: no second line
    shown.finished()
    assert out.getvalue().replace("\n", "").count(kernel_cache.notice()) == 1


def test_the_line_is_for_a_terminal_only() -> None:
    """A pipe or a log (and the shown outputs of the docs) get the run's output unchanged."""
    out = io.StringIO()
    bar = Progress(TextColumn("{task.description}"), console=Console(file=out, width=200))
    shown = KernelCompile(bar, bar.add_task("simulating", total=1.0))
    shown.started()
    shown.finished()
    assert out.getvalue() == ""

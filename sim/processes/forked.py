"""Work done in a forked copy of this process, while this process does other work.

Writing a big run's results is serial work on one CPU, with the other idle: the
simulation is over. A forked copy has every table in memory already (copied on
write), so it can draw half of the charts with no data sent anywhere and no module
loaded again, while this process draws the other half.

The copy only ever runs the given work and leaves with `os._exit`: it runs no exit
handler, and what it would print goes nowhere (this process's streams may be a
progress bar's, whose lock another thread may have held at the fork). What it did
shows only as the files it wrote; whether it finished is told by its exit status.
A caller treats a copy that did not finish as work not done, and does it itself: an
error in that work then surfaces here, in this process, as if there had been no copy.

Copies are made only on Linux (forking without exec is unsafe on macOS, and there is
no fork on Windows) and only with a second CPU to run them on.
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager

#: the exit status of a copy whose work completed
_DONE = 0


@contextmanager
def beside(work: Callable[[], object]) -> Iterator[Callable[[], bool]]:
    """Start `work` in a forked copy of this process, then run the block.

    The block gets `finished()`: it waits for the copy and says whether `work`
    completed there. Where no copy is made (see above, or the system refused one),
    `finished()` says False at once and nothing ran. A block that ends without
    asking (an error, Ctrl-C) stops the copy; either way no copy outlives the block.
    """
    if not _worth_a_copy():
        yield lambda: False
        return
    held = _hold_interrupts()  # a Ctrl-C now would leave a copy nobody knows of
    try:
        pid = _fork(work)
    except BaseException:
        _release_interrupts(held)
        raise
    status: bool | None = None

    def finished() -> bool:
        nonlocal status
        if status is None:
            status = pid is not None and _reap(pid) == _DONE
        return status

    try:
        _release_interrupts(held)  # a Ctrl-C held until here arrives inside the `try`
        yield finished
    finally:
        if status is None and pid is not None:
            _stop(pid)


def _worth_a_copy() -> bool:
    return (sys.platform.startswith("linux") and hasattr(os, "fork")
            and len(os.sched_getaffinity(0)) > 1)


def _hold_interrupts() -> set[signal.Signals]:
    """Block SIGINT for this thread; returns the mask to put back."""
    return signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


def _release_interrupts(held: set[signal.Signals]) -> None:
    signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _fork(work: Callable[[], object]) -> int | None:
    with warnings.catch_warnings():
        # Python 3.12+ warns when a process with threads forks: a lock another thread
        # held stays held in the copy. The copy runs only `work`, on objects of the
        # thread that forks, with streams of its own (see `_run_in_copy`).
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            pid = os.fork()
        except OSError:  # no memory or process slot for a copy: the caller does the work
            return None
    if pid == 0:
        _run_in_copy(work)
    return pid


def _run_in_copy(work: Callable[[], object]) -> None:
    status = 1
    try:
        # the copy dies on Ctrl-C rather than unwinding through the caller's handlers
        # (set while Ctrl-C is still held by `beside`, then let through)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        gc.freeze()  # the collector of the copy leaves the parent's objects (and pages) be
        sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - ends with the copy
        logging.disable(logging.CRITICAL)  # handlers hold streams of the parent's
        work()
        status = _DONE
    finally:  # also on BaseException: nothing of the caller's runs in the copy
        os._exit(status)


def _reap(pid: int) -> int:
    """The copy's exit code once it has ended (minus the signal's number if one ended it)."""
    _, wait_status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(wait_status)


def _stop(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)  # a copy that already ended is still ours to reap
        _reap(pid)
    except (ChildProcessError, ProcessLookupError):  # reaped by someone else meanwhile
        pass

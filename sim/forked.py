"""Work done in a forked copy of this process, while this process does other work.

Writing a big run's results is serial work on one CPU, with the other idle: the
simulation is over. A forked copy has every table in memory already (copied on
write), so it can draw half of the charts with no data sent anywhere and no module
loaded again, while this process draws the other half.

The copy only ever runs the given work and leaves with `os._exit`: it flushes no
buffer, runs no exit handler and prints nothing. What it did shows only as the files
it wrote; whether it finished is told by its exit status. A caller treats a copy that
did not finish as work not done, and does it itself: an error in that work then
surfaces here, in this process, as if there had been no copy.
"""

from __future__ import annotations

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
    completed there. Where this platform cannot fork, `finished()` says False at
    once and nothing ran. A block that ends without asking (an error, Ctrl-C)
    stops the copy; either way no copy outlives the block.
    """
    pid = _fork(work)
    status: bool | None = None

    def finished() -> bool:
        nonlocal status
        if status is None:
            status = pid is not None and _reap(pid) == _DONE
        return status

    try:
        yield finished
    finally:
        if status is None and pid is not None:
            _stop(pid)


def _fork(work: Callable[[], object]) -> int | None:
    if not hasattr(os, "fork"):
        return None
    for stream in (sys.stdout, sys.stderr):  # nothing buffered is written twice
        if stream is not None:
            stream.flush()
    with warnings.catch_warnings():
        # Python 3.12+ warns when a process with threads forks: a lock another thread
        # held stays held in the copy. The copy here runs only `work`, on objects of
        # the thread that forks, and never takes those threads' locks.
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
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        work()
        status = _DONE
    finally:  # also on BaseException: nothing of the caller's runs in the copy
        os._exit(status)


def _reap(pid: int) -> int:
    """The copy's exit code once it has ended (-1 when a signal ended it)."""
    _, wait_status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(wait_status)


def _stop(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    _reap(pid)

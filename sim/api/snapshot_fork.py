"""A periodic snapshot written off the request path: a forked copy encodes the world.

Encoding a large world takes seconds; under the server's lock that would hold
every request meanwhile. Instead, under the lock, the process forks (a few
milliseconds: the copy shares every page until one is written): the copy holds
the world exactly as it was at that instant, encodes it (`sim.api.snapshot`),
sends the bytes through a pipe and leaves with `os._exit`. The server goes on
at once; a thread of it reads the bytes, reaps the copy and tells the journal,
whose writer seals and commits the snapshot at the journal row it was taken
after (`Journal` keeps that position and the MAC chain's head at it).

Where no copy can be made (not Linux, fork refused) the snapshot is encoded
under the lock, as before. A copy that fails gives no snapshot (logged): the
journal still holds everything, a restart replays more rows.
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import sys
import threading
import warnings
from collections.abc import Callable

from sim.api import snapshot

log = logging.getLogger("sim.api.snapshot_fork")
#: seconds a copy may take to write a snapshot before it ends itself
COPY_LIMIT_S = 900


class Pending:
    """The bytes of a snapshot a forked copy is writing."""

    def __init__(self, pid: int, fd: int, on_ready: Callable[[], None]):
        self._pid, self._fd = pid, fd
        self._data: bytes | None = None
        self._done = threading.Event()
        self._on_ready = on_ready
        threading.Thread(target=self._collect, name="snapshot-copy", daemon=True).start()

    def _collect(self) -> None:
        chunks = []
        try:
            with os.fdopen(self._fd, "rb") as pipe:
                while chunk := pipe.read(1 << 20):
                    chunks.append(chunk)
            _, status = os.waitpid(self._pid, 0)
            if os.waitstatus_to_exitcode(status) == 0:
                self._data = b"".join(chunks)
            else:
                log.error("state file: the copy writing a snapshot failed (exit %s); the "
                          "next one is taken as due", os.waitstatus_to_exitcode(status))
        except OSError as err:
            log.error("state file: no snapshot from the copy (%s)", err)
        finally:
            self._done.set()
            self._on_ready()

    def done(self) -> bool:
        return self._done.is_set()

    def result(self, timeout: float | None = None) -> bytes | None:
        """The snapshot's bytes (None: the copy failed)."""
        self._done.wait(timeout)
        return self._data

    def stop(self) -> None:
        """No wait for it (a stop): the copy is ended."""
        if not self._done.is_set():
            try:
                os.kill(self._pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def capture(world: object, on_ready: Callable[[], None]) -> bytes | Pending:
    """Under the server's lock: a Pending written by a copy, or the bytes themselves."""
    if not (sys.platform.startswith("linux") and hasattr(os, "fork")):
        return snapshot.dumps(world)
    read, write = os.pipe()
    with warnings.catch_warnings():
        # Python 3.12+ warns when a process with threads forks; the copy only encodes
        # objects the forking thread holds the lock of, and writes to its own pipe
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            pid = os.fork()
        except OSError:
            os.close(read)
            os.close(write)
            return snapshot.dumps(world)
    if pid == 0:  # the copy
        status = 1
        try:
            os.close(read)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            # a lock another thread held at the fork (inside SQLite, say) would hang the
            # copy for good: it ends itself instead (no snapshot; the next one is due later)
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.alarm(COPY_LIMIT_S)
            gc.freeze()  # leave the parent's pages shared
            logging.disable(logging.CRITICAL)
            snapshot.IN_COPY = True
            data = snapshot.dumps(world)
            view = memoryview(data)
            while view:
                view = view[os.write(write, view):]
            status = 0
        finally:
            os._exit(status)
    os.close(write)
    return Pending(pid, read, on_ready)

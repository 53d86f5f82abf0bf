"""How a journal writes its snapshot: at once, or later when a forked copy delivers it.

A snapshot belongs after one journal row: its MAC binds the MAC of that row
(`sim.api.integrity`). One the server encoded itself is written with the rows
around it. One a copy is still encoding (`sim.api.snapshot_fork`) keeps its
place when the writer reaches it (the row before it and that row's MAC), and
is written in a commit of its own once its bytes arrive: the rows acknowledged
meanwhile are not held for it. A stop waits for it a little, then gives it up.
"""

from __future__ import annotations

import sqlite3
import time
from typing import TYPE_CHECKING, Any

from sim.api import integrity

if TYPE_CHECKING:
    from sim.api.journal import Entry

#: associated data of a sealed snapshot (with the file's id): a body cannot pass for one
SNAPSHOT = b"snapshot"


class SnapshotWriting:
    """The snapshot side of `sim.api.journal.Journal` (which holds the state used here)."""

    _deferred: tuple[int, bytes, Entry, Any] | None
    _trim: bool
    _snapshot_mac: bytes

    def _write_snapshot(self, conn: sqlite3.Connection, after: int, head: bytes, entry: Entry,
                        world: bytes) -> None:
        """The snapshot taken after journal row `after` (whose MAC is `head`)."""
        file_id = self.file_id
        row = (after, float(entry.t), entry.wall,
               self.seal.seal(world, SNAPSHOT + file_id.encode()))
        mac = integrity.snapshot_mac(self.seal, file_id, row, head)
        conn.execute("DELETE FROM snapshot")
        conn.execute("INSERT INTO snapshot VALUES (?, ?, ?, ?, ?)", (*row, mac))
        self._snapshot_mac = mac

    def _deferred_ready(self) -> bool:
        return self._deferred is not None and self._deferred[3].done()

    def poke(self) -> None:
        """A snapshot written by a copy has arrived: the writer commits it."""
        with self._cond:
            self._cond.notify_all()

    def _write_deferred(self, conn: sqlite3.Connection) -> None:
        if not self._deferred_ready():
            return
        after, head, entry, pending = self._deferred  # type: ignore[misc]
        self._deferred = None
        world = pending.result()
        if world is not None:
            self._write_snapshot(conn, after, head, entry, world)
            self._trim = True  # the snapshot's bytes are freed once committed

    def _finish_snapshot(self, wait_s: float) -> None:
        """Let a snapshot still being written by a copy land, or give it up after `wait_s`."""
        if self._thread is None or self._failed is not None:
            return
        deadline = time.monotonic() + wait_s
        with self._cond:  # the writer has taken every entry (a snapshot's place is known)
            while self._durable < self._appended and self._failed is None:
                if not self._cond.wait(max(0.0, deadline - time.monotonic())):
                    break
            deferred = self._deferred
        if deferred is None:
            return
        if deferred[3].result(timeout=max(0.0, deadline - time.monotonic())) is None:
            deferred[3].stop()  # not written in time: the journal holds what it would
            return
        with self._cond:  # committed by the writer once it arrived
            while self._deferred is deferred and self._failed is None:
                if not self._cond.wait(max(0.0, deadline - time.monotonic())):
                    break

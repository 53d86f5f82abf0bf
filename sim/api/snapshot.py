"""A snapshot of the world behind `sim serve --state`: what a restart starts from.

The journal alone would replay every request since the file was made, so a
restart would grow with history. A snapshot is the whole world at one journal
row (the control plane with its SimPy event heap, timers and random streams,
the injected faults, the scenario actions run so far) written as data
(`sim.api.world_codec`): a type-tagged tree of the engine's plain objects,
read back by rebuilding only classes and handlers that sim itself names, each
field checked. Nothing in a snapshot is unpickled or run.

A branch database (an in-memory SQLite connection) travels as the bytes of
its databases (`Connection.serialize`), the synced users schema included, and
is opened again from them (and checked: `PRAGMA quick_check`). The usage ledger
travels as columns (a cell a compute-hour would be as many entries of the tree).

A snapshot holds secrets (OAuth client secrets, SMTP passwords, generated SDK
keys): the state file keeps it sealed (`sim.api.sealing`), never in clear.
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from typing import Any

import numpy as np

from sim.api import world_codec, world_decode
from sim.api.world_codec import Refused, Stale
from sim.engine.auth_sql import SCHEMA_NAME, BranchDatabase
from sim.engine.usage import UsageLedger

_DB_FIELDS = ("project_id", "branch_id", "name")
#: in a forked copy writing a snapshot (`sim.api.snapshot_fork`): a lock another thread held
#: at the fork stays held there, and the copy has no other thread to wait for
IN_COPY = False


def _serialize(conn: sqlite3.Connection, name: str) -> bytes:
    try:
        return conn.serialize(name=name)
    except sqlite3.OperationalError:  # a database without a page yet (nothing created in it)
        return b""


def _db_parts(db: BranchDatabase) -> list[Any]:
    if db.path is not None:
        raise TypeError("a branch database kept in files cannot be snapshot")
    locked = db.lock.acquire(timeout=-1 if not IN_COPY else 0)
    try:
        main = _serialize(db.conn, "main")
        users = _serialize(db.conn, SCHEMA_NAME) if db._schema_attached() else None
    finally:
        if locked:
            db.lock.release()
    return [main, users, *(getattr(db, f) for f in _DB_FIELDS)]


def _db_from(parts: list[Any]) -> BranchDatabase:
    """A branch database opened again from the bytes of its databases."""
    main, users, *fields = parts
    if (len(fields) != len(_DB_FIELDS) or not all(isinstance(f, str) for f in fields)
            or not isinstance(main, bytes) or not (users is None or isinstance(users, bytes))):
        raise Refused("a branch database not as sim writes one")
    db = BranchDatabase.__new__(BranchDatabase)
    db.__dict__.update(zip(_DB_FIELDS, fields, strict=True))
    db.path = None
    db.lock = threading.Lock()
    db.conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None,
                              cached_statements=0)
    db._finalizer = weakref.finalize(db, db.conn.close)
    try:
        if main:
            db.conn.deserialize(main)
        if users is not None:
            db.conn.execute(f"ATTACH DATABASE ':memory:' AS {SCHEMA_NAME}")
            if users:
                db.conn.deserialize(users, name=SCHEMA_NAME)
        bad = [r[0] for r in db.conn.execute("PRAGMA quick_check")]
        if bad != ["ok"]:
            raise Refused(f"a branch database that fails its check ({bad[0][:80]})")
    except sqlite3.Error as err:
        raise Refused(f"a branch database that cannot be opened ({err})") from None
    db.conn.execute("PRAGMA query_only = ON")
    return db


world_codec.register_codec(BranchDatabase, "branch_database", _db_parts, _db_from)


def _ledger_parts(u: UsageLedger) -> list[Any]:
    """The usage ledger as three columns (a cell a compute-hour: tens of thousands of small
    lists would be as many entries of the tree), in the dicts' order."""
    ids = list(u.computes)
    counts = np.array([len(u.computes[c]) for c in ids], np.int64)
    hours = np.array([h for c in ids for h in u.computes[c]], np.int64)
    cells = np.array([cell for c in ids for cell in u.computes[c].values()],
                     np.float64).reshape(-1, 2)
    # the ids as one text: a list would reach the codec as a shell, filled later
    return [u.offset_s, u.count_from_s, u.next_prune, u.first_hour_of_day, "\n".join(ids),
            counts, hours, cells]


def _ledger_from(parts: list[Any]) -> UsageLedger:
    """The usage ledger again, from columns a file gave: checked before anything is built."""
    try:
        offset, count_from, next_prune, first, joined, counts, hours, cells = parts
        ids = joined.split("\n") if joined else []
    except (ValueError, AttributeError):
        raise Refused("a usage ledger not as sim writes one") from None
    n = len(hours) if isinstance(hours, np.ndarray) else -1
    if not (type(offset) is float and type(count_from) is float
            and (next_prune is None or type(next_prune) is int) and type(first) is int
            and len(set(ids)) == len(ids)
            and isinstance(counts, np.ndarray) and counts.dtype == np.int64
            and counts.shape == (len(ids),) and bool(np.all(counts >= 0))
            and hours.dtype == np.int64 and hours.ndim == 1 and int(counts.sum()) == n
            and isinstance(cells, np.ndarray) and cells.dtype == np.float64
            and cells.shape == (n, 2)):
        raise Refused("a usage ledger not as sim writes one")
    computes: dict[str, dict[int, list[float]]] = {}
    h, v, at = hours.tolist(), cells.tolist(), 0
    for cid, k in zip(ids, counts.tolist(), strict=True):
        computes[cid] = dict(zip(h[at:at + k], v[at:at + k], strict=True))
        at += k
    return UsageLedger(offset, count_from, computes, next_prune, first)


world_codec.register_codec(UsageLedger, "usage_ledger", _ledger_parts, _ledger_from)


def dumps(world: Any) -> bytes:
    """The world as bytes (call it under the server's lock: nothing may move meanwhile)."""
    return world_codec.dumps(world)


def loads(data: bytes) -> Any:
    """The world `dumps` wrote. `Stale`: written by another version of sim (replay the
    journal instead); `Refused`: not such data (nothing was run). A world holds one control
    plane: every timer and event that names one names it."""
    from sim.engine.control_plane import ControlPlane

    return world_decode.loads(data, single=(ControlPlane,))


__all__ = ["Refused", "Stale", "dumps", "loads"]

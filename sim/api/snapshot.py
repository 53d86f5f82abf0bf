"""A snapshot of the world behind `sim serve --state`: what a restart starts from.

The journal alone would replay every request since the file was made, so a
restart would grow with history. A snapshot is the whole world at one journal
row (the control plane with its SimPy event heap, timers and random streams,
the injected faults, the scenario actions run so far) pickled in one piece;
a restart loads the latest one and replays only the rows after it.

Pickling the world needs three things plain `pickle` lacks:

- the engine's callbacks are often lambdas and closures: `cloudpickle` pickles
  those by value;
- locks (the managed-auth maps, each branch database's) are rebuilt free;
- a branch database is an in-memory SQLite connection: it travels as the
  bytes of its databases (`Connection.serialize`), the synced users schema
  included, and is opened again from them.

A snapshot holds secrets (OAuth client secrets, SMTP passwords, generated SDK
keys): the state file keeps it sealed (`sim.api.sealing`), never in clear.
"""

from __future__ import annotations

import _thread
import io
import pickle
import sqlite3
import threading
import weakref
from typing import Any

import cloudpickle

from sim.engine.auth_sql import SCHEMA_NAME, BranchDatabase

_LOCK_TYPES = (type(threading.Lock()), type(threading.RLock()), _thread.LockType)


def _new_lock() -> Any:
    return threading.Lock()


def _new_rlock() -> Any:
    return threading.RLock()


def _serialize(conn: sqlite3.Connection, name: str) -> bytes:
    try:
        return conn.serialize(name=name)
    except sqlite3.OperationalError:  # a database without a page yet (nothing created in it)
        return b""


def _branch_database(state: dict[str, Any], main: bytes, users: bytes | None) -> BranchDatabase:
    """A branch database opened again from the bytes of its databases."""
    db = BranchDatabase.__new__(BranchDatabase)
    db.__dict__.update(state)
    db.lock = threading.Lock()
    db.conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None,
                              cached_statements=0)
    if main:
        db.conn.deserialize(main)
    if users is not None:
        db.conn.execute(f"ATTACH DATABASE ':memory:' AS {SCHEMA_NAME}")
        if users:
            db.conn.deserialize(users, name=SCHEMA_NAME)
    db.conn.execute("PRAGMA query_only = ON")
    db._finalizer = weakref.finalize(db, db.conn.close)
    return db


class _WorldPickler(cloudpickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, _LOCK_TYPES):
            return (_new_rlock if "RLock" in type(obj).__name__ else _new_lock), ()
        if isinstance(obj, BranchDatabase):
            return self._branch_database(obj)
        return super().reducer_override(obj)

    @staticmethod
    def _branch_database(db: BranchDatabase) -> Any:
        if db.path is not None:
            raise TypeError("a branch database kept in files cannot be snapshot")
        with db.lock:
            main = _serialize(db.conn, "main")
            users = _serialize(db.conn, SCHEMA_NAME) if db._schema_attached() else b""
        state = {k: v for k, v in db.__dict__.items()
                 if k not in ("lock", "conn", "_finalizer")}
        return _branch_database, (state, main, users)


def dumps(world: Any) -> bytes:
    """The world as bytes (call it under the server's lock: nothing may move meanwhile)."""
    buffer = io.BytesIO()
    _WorldPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(world)
    return buffer.getvalue()


def loads(data: bytes) -> Any:
    """Only for bytes this server sealed itself: unpickling runs code."""
    return pickle.loads(data)  # noqa: S301 (authenticated by the seal before it gets here)

"""A snapshot of the world behind `sim serve --state`: what a restart starts from.

The journal alone would replay every request since the file was made, so a
restart would grow with history. A snapshot is the whole world at one journal
row (the control plane with its SimPy event heap, timers and random streams,
the injected faults, the scenario actions run so far) pickled in one piece;
a restart loads the latest one and replays only the rows after it.

Pickling the world needs three things plain `pickle` lacks:

- the engine's callbacks are often lambdas and closures. One of `sim`'s own is
  pickled as a reference to its code (module, qualified name, first line) with
  its defaults and its cells (each pickled once, so closures sharing a cell
  still share it), and rebuilt around the same code object: faster to load
  than `cloudpickle`'s by-value functions, which remain the way for anything
  else (and the whole snapshot falls back to them if the fast way fails);
- locks (the managed-auth maps, each branch database's) are rebuilt free;
- a branch database is an in-memory SQLite connection: it travels as the
  bytes of its databases (`Connection.serialize`), the synced users schema
  included, and is opened again from them.

A snapshot holds secrets (OAuth client secrets, SMTP passwords, generated SDK
keys): the state file keeps it sealed (`sim.api.sealing`), never in clear.
"""

from __future__ import annotations

import _thread
import importlib
import io
import pickle
import sqlite3
import threading
import types
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


# ---- sim's own closures, by reference to their code ------------------------------------------

_CODES: dict[str, dict[tuple[str, int], types.CodeType]] = {}


def _codes_of(module_name: str) -> dict[tuple[str, int], types.CodeType]:
    """Every code object of a module, nested ones included, by (qualified name, first line)."""
    found = _CODES.get(module_name)
    if found is None:
        found = {}
        module = importlib.import_module(module_name)
        stack: list[Any] = list(vars(module).values())
        seen: set[int] = set()
        while stack:
            item = stack.pop()
            if id(item) in seen:
                continue
            seen.add(id(item))
            if isinstance(item, type) and item.__module__ == module_name:
                stack.extend(vars(item).values())
            elif isinstance(item, (staticmethod, classmethod)):
                stack.append(item.__func__)
            elif isinstance(item, property):
                stack.extend(f for f in (item.fget, item.fset, item.fdel) if f is not None)
            elif isinstance(item, types.FunctionType) and item.__module__ == module_name:
                stack.append(item.__code__)
            elif isinstance(item, types.CodeType):
                found[(item.co_qualname, item.co_firstlineno)] = item
                stack.extend(c for c in item.co_consts if isinstance(c, types.CodeType))
        _CODES[module_name] = found
    return found


def _closure(module_name: str, qualname: str, line: int, defaults: Any, kwdefaults: Any,
             closure: tuple[Any, ...] | None) -> types.FunctionType:
    code = _codes_of(module_name)[(qualname, line)]
    module = importlib.import_module(module_name)
    fn = types.FunctionType(code, vars(module), code.co_name, defaults, closure)
    fn.__kwdefaults__ = kwdefaults
    fn.__qualname__ = qualname
    return fn


def _own_closure(fn: types.FunctionType) -> Any:
    """The reduction of a local function of `sim`, or None for anything else."""
    module = getattr(fn, "__module__", None) or ""
    code = fn.__code__
    if not module.startswith("sim.") or "<locals>" not in code.co_qualname:
        return None
    if _codes_of(module).get((code.co_qualname, code.co_firstlineno)) != code:
        return None  # not as written in its module (made some other way, or another version)
    # the cells themselves (pickled once each): closures that share one still share it
    return _closure, (module, code.co_qualname, code.co_firstlineno, fn.__defaults__,
                      fn.__kwdefaults__, fn.__closure__)


# ---- the picklers ------------------------------------------------------------------------------


class _WorldPickler(cloudpickle.Pickler):
    """Locks, branch databases; every function by value (cloudpickle)."""

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


class _FastWorldPickler(_WorldPickler):
    """As `_WorldPickler`, with `sim`'s own closures by reference to their code."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, types.FunctionType):
            reduced = _own_closure(obj)
            if reduced is not None:
                return reduced
        elif isinstance(obj, types.CellType):
            try:
                return types.CellType, (obj.cell_contents,)
            except ValueError:  # an empty cell
                return types.CellType, ()
        return super().reducer_override(obj)


def dumps(world: Any) -> bytes:
    """The world as bytes (call it under the server's lock: nothing may move meanwhile).

    The fast way first; a closure whose cells lead back to itself through
    reduction arguments alone would recurse there, and then cloudpickle's way,
    which builds cells before filling them, is used for the whole snapshot."""
    for pickler in (_FastWorldPickler, _WorldPickler):
        buffer = io.BytesIO()
        try:
            pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(world)
        except RecursionError:
            continue
        return buffer.getvalue()
    raise RecursionError("the world cannot be pickled")


def loads(data: bytes) -> Any:
    """Only for bytes this server sealed itself: unpickling runs code."""
    return pickle.loads(data)  # noqa: S301 (authenticated by the seal before it gets here)

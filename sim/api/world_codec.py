"""The world as data: a type-tagged tree, read back without running anything it says.

A snapshot (`sim.api.snapshot`) is this module's bytes: `MAGIC`, the size of the
tree (8 bytes), then zlib of the msgpack of `[header, entries, root]` (`frame`).
Every value that is not None, a bool, an int of 64 bits, a float, a str or bytes
is an entry of the table, referred to by its
index (msgpack extension 0), so shared objects stay shared and cycles (a
compute and its runtime) come back as they were. An entry is `[tag, ...]`:

| tag    | what                        | rebuilt as                                      |
|--------|-----------------------------|-------------------------------------------------|
| l t d  | list, tuple, dict           | the same, from their items                      |
| nt     | a NamedTuple of an allowed module | the same, given as many items as its fields |
| s fs q | set, frozenset, deque       | the same                                        |
| o      | an object: its shape (class, field names: in the header), values | `cls.__new__`, fields checked |
| p      | a pydantic model of an allowed module | its fields, set as they were            |
| e      | an enum member              | `cls(value)`                                    |
| a ao   | numpy array (bytes, dtype, shape) / of objects | `frombuffer` / filled           |
| rng    | numpy Generator             | a PCG64 given its saved state                   |
| env    | the SimPy environment       | its clock, event counter and event heap as they were |
| f c m  | a function / closure / bound method of `sim` | a *named handler* (below)      |
| x      | a value with its own codec (a branch database: its SQLite bytes) | its codec   |

**What may be rebuilt.** Only classes and functions of the modules under
`ALLOWED` (the engine, rules, workload and scenario packages and a few api
modules), and of those only: dataclasses, enums, pydantic models, and the plain
classes registered in `PLAIN_CLASSES` (or by `register`). A name outside them is
refused before anything is built: the file says "call this function of sim
with these data" at most, never "run this".

**Named handlers.** The engine schedules its SimPy events with callbacks, many
of them lambdas and closures. Each is stored as the name of its code in its
module (`module:qualified.name#k`, k counting same-named lambdas in source
order) with its defaults and its closure cells (data, like everything else);
a bound method as (its object, the method's name). Only the kinds listed in
`sim.api.event_kinds` may be written or read, their fields checked against the
types listed there; restoring looks the name up among the code objects of that
module as this version of sim has them: the registry of handlers is sim's own
code, not the file.

**Versions.** The header lists, for every module named in the snapshot, a hash
of its source. A module changed since (another version of sim) makes the
snapshot `Stale`: the caller replays the journal instead. With the same sources
any fault in the data (an unknown name, a wrong field, a dangling reference) is
`Refused`.

**Registering a class** a snapshot meets (an error at snapshot time names it):
a dataclass, enum or pydantic model of an allowed module needs nothing; a plain
class needs its "module:QualName" in `PLAIN_CLASSES` (or `register(cls)`), and
its instance state must itself be data (fields of the kinds above).
"""

from __future__ import annotations

import collections
import dataclasses
import datetime as dt
import enum
import hashlib
import importlib
import itertools
import sys
import threading
import types
import zlib
from collections.abc import Callable
from typing import Any

import msgpack
import numpy as np
import simpy
import simpy.events

from sim.api.event_kinds import EVENT_KINDS, FUNCTIONS, METHODS

FORMAT = 1
MAGIC = b"sim-world\x02"  # then the tree's size (8 bytes, little-endian), then its zlib
#: the format before a snapshot said its size: read as another version's (`Stale`)
MAGIC_BEFORE = b"sim-world\x01"
#: a tree is at most this many times its compressed bytes (sim's own are 2 to 6 times):
#: a snapshot that says more, or inflates beyond what it says, is refused before its bytes
#: are inflated (`sim.api.world_decode.inflate`); a tree that would compress further is
#: written stored
MAX_INFLATION = 32
#: containers (lists, tuples, dicts, sets) inside one another, at most: sim's own nest 4 deep
MAX_NESTING = 32
_REF = 0  # msgpack extension code of a reference to an entry

#: modules whose classes and functions a snapshot may name (prefixes end with ".")
ALLOWED = ("sim.engine.", "sim.rules.", "sim.workload.", "sim.scenario.", "sim.kernel.",
           "sim.api.server", "sim.api.dispatch", "sim.api.keys")

#: plain (non-dataclass) classes whose instances a snapshot may hold, by "module:QualName"
PLAIN_CLASSES: set[str] = {
    "sim.engine.control_plane:ControlPlane", "sim.engine.executor:Executor",
    "sim.engine.records:Recorder", "sim.engine.streams:Streams", "sim.engine.ids:IdFactory",
    "sim.engine.clock:Clock", "sim.engine.runtime:ComputeRuntime",
    "sim.engine.runtime:SessionArrays", "sim.engine.feed:SessionFeed",
    "sim.engine.lifecycle:AvailabilityRound", "sim.engine.auth:ManagedAuth",
    "sim.engine.row_table:RowTable", "sim.engine.connection_table:ConnectionTable",
    "sim.engine.streams:_Derived",
    "sim.workload.arrivals:Delayed", "sim.workload.arrivals:Diurnal",
    "sim.workload.arrivals:Bursty", "sim.workload.arrivals:Poisson",
    "sim.workload.arrivals:Periodic", "sim.workload.sessions:SessionModel",
    "sim.workload.distributions:Distribution",
    "sim.scenario.runner:Fleet", "sim.engine.history_fold:HistoryFold",
    "sim.kernel.handover:RestOfSessions",
}

#: fields that are the running server's, never a snapshot's (paths: where the process keeps
#: files): not written; a snapshot naming one is refused; the restored object has None there
#: until the server that restores it sets its own
LOCAL_FIELDS: dict[str, frozenset[str]] = {
    "sim.engine.auth:ManagedAuth": frozenset({"data_dir"}),
}

#: the pydantic models a snapshot may hold (a scenario's scripted calls), validated again
MODELS = frozenset({"sim.scenario.schema:ActionSpec"})

#: SimPy's own classes a snapshot holds (its pending events)
_SIMPY = {"simpy.events:Event": simpy.events.Event, "simpy.events:Timeout": simpy.events.Timeout}
_BUILTIN_TYPES = {t.__name__: t for t in (int, float, str, bool, list, dict, set, tuple, bytes)}


class Refused(ValueError):
    """The snapshot is not data this version of sim would have written."""


class Stale(ValueError):
    """The snapshot was written by another version of sim (a module it names has changed)."""


def register(cls: type) -> type:
    """Allow a plain class of an allowed module in snapshots (usable as a decorator)."""
    PLAIN_CLASSES.add(_name(cls))
    return cls


#: values with a codec of their own: type -> (tag, encode(obj) -> list, decode(list) -> obj)
CODECS: dict[type, tuple[str, Callable[[Any], list[Any]], Callable[[list[Any]], Any]]] = {}
_CODEC_TAGS: dict[str, tuple[str, Callable[[Any], list[Any]], Callable[[list[Any]], Any]]] = {}


def register_codec(cls: type, tag: str, encode: Callable[[Any], list[Any]],
                   decode: Callable[[list[Any]], Any]) -> None:
    """A value kept its own way: `encode(obj)` gives its parts (any values of a snapshot);
    `decode(parts)` rebuilds it, and must check them (they come from the file)."""
    CODECS[cls] = _CODEC_TAGS[tag] = (tag, encode, decode)


# ---- names -------------------------------------------------------------------------------------


def _name(obj: Any) -> str:
    return f"{obj.__module__}:{obj.__qualname__}"


def _allowed_module(module: str) -> bool:
    return any(module == p.rstrip(".") or module.startswith(p) for p in ALLOWED)


_HASHES: dict[str, str] = {}


def _module_hash(module: str) -> str:
    found = _HASHES.get(module)
    if found is None:
        path = getattr(sys.modules.get(module) or importlib.import_module(module), "__file__", "")
        with open(path, "rb") as f:
            found = _HASHES[module] = hashlib.sha256(f.read()).hexdigest()[:16]
    return found


def _codes(module: str) -> dict[str, types.CodeType]:
    """Every code object of a module by `qualname#k` (k: among same names, in source order)."""
    found = _CODE_NAMES.get(module)
    if found is None:
        mod = importlib.import_module(module)
        codes: list[types.CodeType] = []
        stack: list[Any] = list(vars(mod).values())
        seen: set[int] = set()
        while stack:
            item = stack.pop()
            if id(item) in seen:
                continue
            seen.add(id(item))
            if isinstance(item, type) and item.__module__ == module:
                stack.extend(vars(item).values())
            elif isinstance(item, (staticmethod, classmethod)):
                stack.append(item.__func__)
            elif isinstance(item, property):
                stack.extend(f for f in (item.fget, item.fset, item.fdel) if f is not None)
            elif isinstance(item, types.FunctionType) and item.__module__ == module:
                stack.append(item.__code__)
            elif isinstance(item, types.CodeType):
                codes.append(item)
                stack.extend(c for c in item.co_consts if isinstance(c, types.CodeType))
        codes.sort(key=lambda c: (c.co_qualname, _where(c)))
        found = {}
        for qualname, group in itertools.groupby(codes, key=lambda c: c.co_qualname):
            for k, code in enumerate(group):
                found[f"{qualname}#{k}"] = code
        _CODE_NAMES[module] = found
        _CODE_KEYS[module] = {id(code): key for key, code in found.items()}
    return found


def _where(code: types.CodeType) -> tuple[int, int]:
    """Where a code object begins in its source (two lambdas on one line: by column)."""
    for line, _end, col, _end_col in code.co_positions():
        if line is not None and col is not None:
            return line, col
    return code.co_firstlineno, 0


_CODE_NAMES: dict[str, dict[str, types.CodeType]] = {}
_CODE_KEYS: dict[str, dict[int, str]] = {}


# ---- writing -----------------------------------------------------------------------------------


class _Encoder:
    def __init__(self) -> None:
        self.index: dict[int, int] = {}
        self.entries: list[Any] = []
        self.alive: list[Any] = []  # every object met stays alive: its id() is not reused
        self.todo: list[tuple[int, Any]] = []
        self.modules: set[str] = set()
        self.parent: list[int] = []  # the entry that first referred to each (for errors)
        #: (class, its field names) -> index: an object is its shape's index and its values
        self.shapes: dict[tuple[str, tuple[str, ...]], int] = {}
        self.current = -1

    def ref(self, obj: Any) -> Any:
        t = type(obj)
        if t is str or t is float or obj is None or t is bool or t is bytes:
            return obj
        if t is int and -(1 << 63) <= obj < (1 << 64):
            return obj
        i = self.index.get(id(obj))
        if i is None:
            i = self.index[id(obj)] = len(self.entries)
            self.entries.append(None)
            self.alive.append(obj)
            self.parent.append(self.current)
            self.todo.append((i, obj))
        return msgpack.ExtType(_REF, i.to_bytes(4, "little"))

    def run(self, root: Any) -> Any:
        top = self.ref(root)
        while self.todo:
            i, obj = self.todo.pop()
            self.current = i
            try:
                self.entries[i] = self.entry(obj)
            except TypeError as err:
                raise TypeError(f"{err} (held by {self.path(i)})") from None
        return top

    def path(self, i: int) -> str:
        """The chain of holders down to entry i, for an error message."""
        names = []
        while i >= 0 and len(names) < 12:
            names.append(type(self.alive[i]).__qualname__)
            i = self.parent[i]
        return " <- ".join(names)

    def cls(self, cls: type) -> str:
        name = _name(cls)
        if name in _SIMPY:
            return name
        if not _allowed_module(cls.__module__):
            raise TypeError(f"a snapshot cannot hold a {name} (not a class of sim's engine)")
        self.modules.add(cls.__module__)
        return name

    def entry(self, obj: Any) -> list[Any]:  # noqa: C901, PLR0911, PLR0912 - one case a kind
        r = self.ref
        t = type(obj)
        if t is list:
            return ["l", [r(x) for x in obj]]
        if t is tuple:
            return ["t", [r(x) for x in obj]]
        if t is dict:
            return ["d", [r(x) for kv in obj.items() for x in kv]]
        if t is set or t is frozenset:  # sorted where it can be: the same world, same bytes
            try:
                items = sorted(obj)
            except TypeError:
                items = list(obj)
            return ["s" if t is set else "fs", [r(x) for x in items]]
        if t is collections.deque:
            return ["q", [r(x) for x in obj], obj.maxlen]
        if t is int:
            return ["i", str(obj)]
        codec = CODECS.get(t)
        if codec is not None:
            return ["x", codec[0], [r(x) for x in codec[1](obj)]]
        if isinstance(obj, enum.Enum):
            return ["e", self.cls(t), r(obj.value)]
        if t is np.ndarray:
            if obj.dtype.hasobject:
                return ["ao", list(obj.shape), [r(x) for x in obj.ravel()]]
            if obj.dtype.fields is not None:
                raise TypeError("a snapshot cannot hold a structured numpy array")
            return ["a", obj.dtype.str, list(obj.shape), np.ascontiguousarray(obj).tobytes()]
        if isinstance(obj, np.generic):
            return ["ns", obj.dtype.str, obj.tobytes()]
        if isinstance(obj, np.dtype):
            return ["dtype", obj.str]
        if t is np.random.Generator:
            bits = obj.bit_generator
            if type(bits) is not np.random.PCG64:
                raise TypeError(f"a snapshot cannot hold a {type(bits).__name__} generator")
            return ["rng", r(bits.state)]
        if t is dt.datetime:
            return ["dt", obj.isoformat()]
        if t is dt.timedelta:
            return ["td", obj.days, obj.seconds, obj.microseconds]
        if t is dt.timezone:
            return ["tz", obj.utcoffset(None).total_seconds()]
        if t is itertools.count:
            args = obj.__reduce__()[1]
            if len(args) != 1 or type(args[0]) is not int:
                raise TypeError("a snapshot holds counters of integers by 1 only")
            return ["n", args[0]]
        if t is type(threading.Lock()):
            return ["lock"]
        if t is type(threading.RLock()):
            return ["rlock"]
        if t is types.CellType:
            try:
                return ["cell", r(obj.cell_contents)]
            except ValueError:
                return ["cell"]
        if t is types.FunctionType:
            return self.function(obj)
        if t is types.MethodType:
            name = obj.__func__.__name__
            if getattr(type(obj.__self__), name, None) is not obj.__func__:
                raise TypeError(f"a snapshot cannot hold the bound method {obj!r}")
            if name not in METHODS.get(self.cls(type(obj.__self__)), ()):
                raise TypeError(f"a snapshot cannot hold the method {name} of a "
                                f"{type(obj.__self__).__name__} (not in "
                                f"sim.api.event_kinds.METHODS)")
            return ["m", r(obj.__self__), name]
        if t is simpy.Environment:
            if obj.active_process is not None:
                raise TypeError("a snapshot cannot be taken while a SimPy process runs")
            return ["env", r(obj.now), next_count(obj), r(obj._queue)]  # noqa: SLF001
        if obj is simpy.events.PENDING:
            return ["pending"]
        if isinstance(obj, type):
            if obj.__module__ == "builtins" and obj.__name__ in _BUILTIN_TYPES:
                return ["bt", obj.__name__]
            return ["cls", self.cls(obj)]
        if isinstance(obj, types.GeneratorType) or t is simpy.events.Process:
            raise TypeError("a snapshot cannot hold a running generator (a SimPy process): "
                            "schedule callbacks instead")
        name = self.cls(t)
        if isinstance(obj, tuple) and hasattr(t, "_fields"):  # a NamedTuple
            return ["nt", name, [r(x) for x in obj]]
        if hasattr(obj, "__pydantic_fields_set__"):
            if name not in MODELS:
                raise TypeError(f"a snapshot cannot hold a {name} (not in world_codec.MODELS)")
            return ["p", name, r(obj.__dict__), r(set(obj.__pydantic_fields_set__)),
                    r(obj.__pydantic_extra__), r(obj.__pydantic_private__)]
        if not (dataclasses.is_dataclass(t) or name in PLAIN_CLASSES or name in _SIMPY):
            raise TypeError(f"a snapshot cannot hold a {name}: register it "
                            f"(sim.api.world_codec.PLAIN_CLASSES) if it is plain data")
        if _own_state(t):  # state of its own making (a session feed's)
            return ["g", name, r(obj.__getstate__())]
        local = LOCAL_FIELDS.get(name, ())
        fields = [(k, v) for k, v in _fields_of(obj) if k not in local]
        shape = (name, tuple(k for k, _v in fields))
        index = self.shapes.get(shape)
        if index is None:
            index = self.shapes[shape] = len(self.shapes)
        return ["o", index, [r(v) for _k, v in fields]]

    def function(self, fn: types.FunctionType) -> list[Any]:
        module = fn.__module__ or ""
        if not _allowed_module(module):
            raise TypeError(f"a snapshot cannot hold the function {module}.{fn.__qualname__}")
        self.modules.add(module)
        code = fn.__code__
        if "<locals>" not in fn.__qualname__:
            if _lookup(module, fn.__qualname__) is not fn:
                raise TypeError(f"a snapshot cannot hold {module}.{fn.__qualname__}: "
                                f"not the one its module names")
            if f"{module}:{fn.__qualname__}" not in FUNCTIONS:
                raise TypeError(f"a snapshot cannot hold the function {module}.{fn.__qualname__}"
                                f" (not in sim.api.event_kinds.FUNCTIONS)")
            return ["f", f"{module}:{fn.__qualname__}"]
        _codes(module)
        key = _CODE_KEYS[module].get(id(code))
        if key is None:
            raise TypeError(f"a snapshot cannot hold {module}.{fn.__qualname__}: its code is "
                            f"not its module's")
        if f"{module}:{key}" not in EVENT_KINDS:
            raise TypeError(f"a snapshot cannot hold the handler {module}:{key}: add it to "
                            f"sim.api.event_kinds.EVENT_KINDS with the types of its fields")
        r = self.ref
        return ["c", f"{module}:{key}", r(fn.__defaults__), r(fn.__kwdefaults__),
                [r(c) for c in (fn.__closure__ or ())]]


def next_count(env: simpy.Environment) -> int:
    """The id the environment gives its next event (what orders events due together)."""
    return env._eid.__reduce__()[1][0]  # noqa: SLF001


def _fields_of(obj: Any) -> list[tuple[str, Any]]:
    items = list(getattr(obj, "__dict__", {}).items())
    for klass in type(obj).__mro__:
        for slot in getattr(klass, "__slots__", ()):
            if slot not in ("__dict__", "__weakref__") and hasattr(obj, slot):
                items.append((slot, getattr(obj, slot)))
    return items


def _lookup(module: str, qualname: str) -> Any:
    found: Any = importlib.import_module(module)
    for part in qualname.split("."):
        if part.startswith("__") or not part.isidentifier():
            return None
        found = getattr(found, part, None)
    return found


def dumps(root: Any) -> bytes:
    """The tree of `root` as bytes (TypeError names a value a snapshot cannot hold)."""
    enc = _Encoder()
    top = enc.run(root)
    header = {"format": FORMAT, "modules": {m: _module_hash(m) for m in sorted(enc.modules)},
              "shapes": [[name, list(fields)] for name, fields in enc.shapes]}
    return frame(msgpack.packb([header, enc.entries, top], use_bin_type=True))


def frame(tree: bytes) -> bytes:
    """A packed tree as a snapshot's bytes: its size, then its zlib (stored, when it would
    compress beyond `MAX_INFLATION`: the reader refuses more)."""
    packed = zlib.compress(tree, 1)
    if len(tree) > MAX_INFLATION * len(packed):
        packed = zlib.compress(tree, 0)
    return MAGIC + len(tree).to_bytes(8, "little") + packed


def _own_state(cls: type) -> bool:
    """A plain class that keeps its state its own way (not a dataclass: slotted ones have
    generated __setstate__, and are rebuilt field by field)."""
    return hasattr(cls, "__setstate__") and not dataclasses.is_dataclass(cls)


def _frozen(cls: type) -> bool:
    params = getattr(cls, "__dataclass_params__", None)
    return params is not None and params.frozen

"""The world as data: a type-tagged tree, read back without running anything it says.

A snapshot (`sim.api.snapshot`) is this module's bytes: `MAGIC`, then zlib of
the msgpack of `[header, entries, root]`. Every value that is not None, a bool, an int of 64
bits, a float, a str or bytes is an entry of the table, referred to by its
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
a bound method as (its object, the method's name). Restoring looks the name up
among the code objects of that module as this version of sim has them: the
registry of handlers is sim's own code, not the file.

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

FORMAT = 1
MAGIC = b"sim-world\x01"  # then zlib of the msgpack tree
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
}

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
            self.cls(type(obj.__self__))
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
            return ["p", name, r(obj.__dict__), r(set(obj.__pydantic_fields_set__)),
                    r(obj.__pydantic_extra__), r(obj.__pydantic_private__)]
        if not (dataclasses.is_dataclass(t) or name in PLAIN_CLASSES or name in _SIMPY):
            raise TypeError(f"a snapshot cannot hold a {name}: register it "
                            f"(sim.api.world_codec.PLAIN_CLASSES) if it is plain data")
        if _own_state(t):  # state of its own making (a session feed's)
            return ["g", name, r(obj.__getstate__())]
        fields = _fields_of(obj)
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
            return ["f", f"{module}:{fn.__qualname__}"]
        _codes(module)
        key = _CODE_KEYS[module].get(id(code))
        if key is None:
            raise TypeError(f"a snapshot cannot hold {module}.{fn.__qualname__}: its code is "
                            f"not its module's")
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
    return MAGIC + zlib.compress(msgpack.packb([header, enc.entries, top], use_bin_type=True), 1)


# ---- reading -----------------------------------------------------------------------------------


class _Ref:
    __slots__ = ("i",)

    def __init__(self, i: int):
        self.i = i


def _ext(code: int, data: bytes) -> Any:
    if code != _REF or len(data) != 4:
        raise Refused(f"an unknown extension {code}")
    return _Ref(int.from_bytes(data, "little"))


_SIMPLE = {"int": (int,), "float": (int, float), "str": (str,), "bool": (bool,),
           "bytes": (bytes,)}
_FIELD_TYPES: dict[type, dict[str, tuple[type, ...] | None]] = {}


def _field_types(cls: type) -> dict[str, tuple[type, ...] | None]:
    """A dataclass's fields with, for those of simple declared types, the types allowed."""
    found = _FIELD_TYPES.get(cls)
    if found is None:
        found = {}
        for f in dataclasses.fields(cls):
            ann = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
            parts = [p.strip() for p in str(ann).split("|")]
            allowed: tuple[type, ...] = ()
            for p in parts:
                if p == "None":
                    allowed += (type(None),)
                elif p in _SIMPLE:
                    allowed += _SIMPLE[p]
                else:
                    allowed = ()
                    break
            # bool is an int; a numpy scalar may stand for a float or an int
            if allowed and (int in allowed or float in allowed):
                allowed += (np.integer, np.floating)
            found[f.name] = allowed or None
        _FIELD_TYPES[cls] = found
    return found


class _Decoder:
    def __init__(self, header: Any, entries: Any):
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise Stale("another snapshot format")
        modules = header.get("modules")
        if not isinstance(modules, dict):
            raise Refused("no module list")
        for module in modules:
            if not isinstance(module, str) or not _allowed_module(module):
                raise Refused(f"it names the module {str(module)[:80]!r}, which a snapshot "
                              f"may not")
        for module, digest in modules.items():
            try:
                ours = _module_hash(module)
            except (ImportError, OSError):
                raise Stale(f"no module {module}") from None
            if ours != digest:
                raise Stale(f"{module} has changed since")
        self.modules = set(modules)
        shapes = header.get("shapes")
        if not isinstance(shapes, list) or not all(
                isinstance(sh, list) and len(sh) == 2 and isinstance(sh[0], str)
                and isinstance(sh[1], list) and all(isinstance(f, str) for f in sh[1])
                for sh in shapes):
            raise Refused("no list of object shapes")
        self.shapes = shapes
        self.shape_info: dict[int, tuple[type, list[str], list[Any]]] = {}
        if not isinstance(entries, list):
            raise Refused("no table of values")
        self.entries = entries
        self.objs: list[Any] = [_UNBUILT] * len(entries)

    # -- names
    def cls(self, name: Any) -> type:
        if name in _SIMPY:
            return _SIMPY[name]
        module, _, qualname = str(name).partition(":")
        if module not in self.modules:
            raise Refused(f"it names {str(name)[:80]!r}, outside the modules it lists")
        cls = _lookup(module, qualname)
        if not isinstance(cls, type) or _name(cls) != name:
            raise Refused(f"it names {name!r}, which is no class")
        return cls

    def data_class(self, name: Any) -> type:
        cls = self.cls(name)
        if not (dataclasses.is_dataclass(cls) or name in PLAIN_CLASSES or name in _SIMPY
                or (issubclass(cls, tuple) and hasattr(cls, "_fields"))):
            raise Refused(f"it holds a {name}, which a snapshot may not")
        return cls

    def shape(self, i: Any) -> tuple[type, list[str], list[Any]]:
        """The class, field names and allowed types of object shape i (checked once)."""
        found = self.shape_info.get(i) if type(i) is int else None
        if found is None:
            if type(i) is not int or not 0 <= i < len(self.shapes):
                raise Refused(f"an object of no shape {str(i)[:20]}")
            name, names = self.shapes[i]
            cls = self.data_class(name)
            types_ = _field_types(cls) if dataclasses.is_dataclass(cls) else None
            allowed: list[Any] = []
            for k in names:
                if k.startswith("__") or not k.isidentifier():
                    raise Refused(f"a {cls.__name__} with a field of no name")
                if types_ is not None and k not in types_ and not k.startswith("_"):
                    raise Refused(f"a {cls.__name__} with a field {k[:40]!r} it does not have")
                allowed.append(None if types_ is None else types_.get(k))
            found = self.shape_info[i] = (cls, names, allowed)
        return found

    # -- values
    def r(self, x: Any) -> Any:
        if type(x) is _Ref:
            i = x.i
            if not 0 <= i < len(self.objs):
                raise Refused(f"a reference to entry {i} of {len(self.objs)}")
            obj = self.objs[i]
            if obj is _UNBUILT:
                obj = self.build(i)
            elif obj is _BUILDING:
                raise Refused("a value that contains itself")
            return obj
        if x is None or type(x) in (bool, int, float, str, bytes):
            return x
        raise Refused(f"a value of type {type(x).__name__} where a value belongs")

    def build(self, i: int) -> Any:  # noqa: C901, PLR0911, PLR0912 - one case a tag
        """Entry i: an empty shell for what is filled later, whole for values."""
        e = self.entries[i]
        if not isinstance(e, list) or not e or not isinstance(e[0], str):
            raise Refused(f"entry {i} is not a tagged value")
        self.objs[i] = _BUILDING  # a value that refers to itself is refused (see r)
        tag = e[0]
        obj: Any
        if tag == "l":
            obj = []
        elif tag == "d":
            obj = {}
        elif tag == "s":
            obj = set()
        elif tag == "q":
            obj = collections.deque(maxlen=e[2])
        elif tag == "cell":
            obj = types.CellType()
        elif tag in ("o", "g"):
            cls = self.shape(e[1])[0] if tag == "o" else self.data_class(e[1])
            if (tag == "g") != _own_state(cls):
                raise Refused(f"a {e[1]} not given as sim writes it")
            obj = cls.__new__(cls)
            if tag == "o" and _frozen(cls):  # a value: whole before anything hashes it
                self.objs[i] = obj
                self.fill_object(obj, e)
        elif tag == "p":
            cls = self.cls(e[1])
            if not hasattr(cls, "model_fields"):
                raise Refused(f"{e[1]} is not a model")
            obj = cls.__new__(cls)
        elif tag == "ao":
            if not (isinstance(e[1], list) and isinstance(e[2], list)
                    and int(np.prod(e[1])) == len(e[2])):
                raise Refused("an array of objects not of its shape")
            obj = np.empty(tuple(e[1]), dtype=object)
        elif tag == "rng":
            obj = np.random.Generator(np.random.PCG64(0))
        elif tag == "env":
            now = e[1]
            if type(now) not in (int, float):
                raise Refused("an environment without a clock")
            obj = simpy.Environment(now)
        elif tag == "lock":
            obj = threading.Lock()
        elif tag == "rlock":
            obj = threading.RLock()
        elif tag == "x":  # its own codec: given its parts (shells of what is filled later)
            codec = _CODEC_TAGS.get(e[1])
            if codec is None:
                raise Refused(f"an unknown kind of value {str(e[1])[:40]!r}")
            obj = codec[2]([self.r(x) for x in e[2]])
        else:
            obj = self.value(tag, e)
        self.objs[i] = obj
        return obj

    def value(self, tag: str, e: list[Any]) -> Any:  # noqa: C901, PLR0911, PLR0912
        r = self.r
        if tag == "t":
            return tuple(r(x) for x in e[1])
        if tag == "fs":
            return frozenset(r(x) for x in e[1])
        if tag == "i":
            return int(e[1])
        if tag == "e":
            cls = self.cls(e[1])
            if not issubclass(cls, enum.Enum):
                raise Refused(f"{e[1]} is not an enum")
            return cls(r(e[2]))
        if tag == "a":
            dtype = np.dtype(e[1])
            if dtype.hasobject or dtype.fields is not None:
                raise Refused("an array of objects given as bytes")
            return np.frombuffer(e[3], dtype=dtype).reshape(tuple(e[2])).copy()
        if tag == "ns":
            dtype = np.dtype(e[1])
            if dtype.hasobject:
                raise Refused("a scalar of objects")
            return np.frombuffer(e[2], dtype=dtype)[0]
        if tag == "dtype":
            return np.dtype(e[1])
        if tag == "dt":
            return dt.datetime.fromisoformat(e[1])
        if tag == "td":
            return dt.timedelta(days=e[1], seconds=e[2], microseconds=e[3])
        if tag == "tz":
            return dt.timezone(dt.timedelta(seconds=e[1]))
        if tag == "n":
            if type(e[1]) is not int:
                raise Refused("a counter of no integer")
            return itertools.count(e[1])
        if tag == "pending":
            return simpy.events.PENDING
        if tag == "bt":
            return _BUILTIN_TYPES[e[1]]
        if tag == "cls":
            return self.data_class(e[1])
        if tag == "f":
            return self.function(e[1])
        if tag == "nt":
            cls = self.cls(e[1])
            if not (issubclass(cls, tuple) and hasattr(cls, "_fields")
                    and len(e[2]) == len(cls._fields)):
                raise Refused(f"{e[1]} is not a record of {len(e[2])} fields")
            return tuple.__new__(cls, [r(x) for x in e[2]])
        if tag == "c":
            return self.closure(e)
        if tag == "m":
            return self.method(e)
        raise Refused(f"an unknown kind of value {tag[:20]!r}")

    def function(self, name: Any) -> Any:
        module, _, qualname = str(name).partition(":")
        if module not in self.modules or "<locals>" in qualname:
            raise Refused(f"it names the function {str(name)[:80]!r}, which it may not")
        fn = _lookup(module, qualname)
        if not isinstance(fn, types.FunctionType) or fn.__module__ != module:
            raise Refused(f"it names {name!r}, which is no function of sim")
        return fn

    def closure(self, e: list[Any]) -> types.FunctionType:
        module, _, key = str(e[1]).partition(":")
        if module not in self.modules:
            raise Refused(f"it names the handler {str(e[1])[:80]!r}, which it may not")
        code = _codes(module).get(key)
        if code is None:
            raise Refused(f"it names the handler {e[1]!r}, which sim does not have")
        defaults, kwdefaults = self.r(e[2]), self.r(e[3])
        cells = tuple(self.r(c) for c in e[4])
        if (len(cells) != len(code.co_freevars)
                or not all(type(c) is types.CellType for c in cells)
                or not (defaults is None or type(defaults) is tuple)
                or not (kwdefaults is None or type(kwdefaults) is dict)):
            raise Refused(f"the handler {e[1]!r} is not given what its code takes")
        fn = types.FunctionType(code, vars(sys.modules[module]), code.co_name, defaults,
                                cells or None)
        fn.__kwdefaults__ = kwdefaults
        fn.__qualname__ = code.co_qualname
        return fn

    def method(self, e: list[Any]) -> types.MethodType:
        obj, name = self.r(e[1]), e[2]
        if not isinstance(name, str) or name.startswith("__"):
            raise Refused(f"it names the method {str(name)[:80]!r}, which it may not")
        fn = getattr(type(obj), name, None)
        if (not isinstance(fn, types.FunctionType)
                or not _allowed_module(fn.__module__)):
            raise Refused(f"it names the method {str(name)[:80]!r}, which it may not")
        return types.MethodType(fn, obj)

    # -- filling
    def fill(self) -> None:  # noqa: C901, PLR0912
        """The shells' contents: objects first, then what hashes them (dicts, sets)."""
        r = self.r
        later: list[int] = []
        for i, e in enumerate(self.entries):
            if self.objs[i] is _UNBUILT:
                self.r(_Ref(i))
            tag = e[0]
            obj = self.objs[i]
            if tag == "l":
                obj.extend(r(x) for x in e[1])
            elif tag == "q":
                obj.extend(r(x) for x in e[1])
            elif tag == "cell":
                if len(e) > 1:
                    obj.cell_contents = r(e[1])
            elif tag == "o" and not _frozen(type(obj)):
                self.fill_object(obj, e)
            elif tag == "p":
                for attr, x in zip(("__dict__", "__pydantic_fields_set__",
                                    "__pydantic_extra__", "__pydantic_private__"), e[2:6],
                                   strict=True):
                    object.__setattr__(obj, attr, r(x))
            elif tag == "ao":
                obj.ravel()[:] = [r(x) for x in e[2]]
            elif tag == "rng":
                later.append(i)
            elif tag == "env":
                queue = r(e[3])
                if type(e[2]) is not int or not isinstance(queue, list):
                    raise Refused("an environment without its events")
                obj._eid = itertools.count(e[2])  # noqa: SLF001
                obj._queue = queue  # noqa: SLF001
                later.append(i)
            elif tag in ("d", "s", "g"):
                later.append(i)
        # what hashes its items (dicts, sets) once every object has its fields; then what
        # reads whole dicts (a generator's state), checks the event heap; last, objects
        # that rebuild themselves from their state (which may draw from those generators)
        order = {"d": 0, "s": 0, "rng": 1, "env": 1, "g": 2}
        later.sort(key=lambda i: order[self.entries[i][0]])
        for i in later:
            e, obj = self.entries[i], self.objs[i]
            tag = e[0]
            if tag == "d":
                items = e[1]
                if len(items) % 2:
                    raise Refused("a dict of an odd number of items")
                obj.update(zip((r(k) for k in items[::2]), (r(v) for v in items[1::2]),
                               strict=True))
            elif tag == "s":
                obj.update(r(x) for x in e[1])
            elif tag == "rng":
                state = r(e[1])
                if not isinstance(state, dict) or state.get("bit_generator") != "PCG64":
                    raise Refused("a random generator of no PCG64 state")
                obj.bit_generator.state = state
            elif tag == "env":
                _check_queue(obj)
            elif tag == "g":
                try:
                    obj.__setstate__(r(e[2]))
                except (RuntimeError, StopIteration) as err:
                    raise Refused(f"a {e[1]} that cannot be rebuilt ({err})") from None

    def fill_object(self, obj: Any, e: list[Any]) -> None:
        cls, names, allowed = self.shape(e[1])
        values = e[2]
        if not isinstance(values, list) or len(values) != len(names):
            raise Refused(f"a {cls.__name__} not of its shape")
        r = self.r
        for k, x, types_ in zip(names, values, allowed, strict=True):
            v = r(x)
            if types_ is not None and not isinstance(v, types_):
                raise Refused(f"{cls.__name__}.{k} is a {type(v).__name__}")
            object.__setattr__(obj, k, v)


_UNBUILT, _BUILDING = object(), object()


def _own_state(cls: type) -> bool:
    """A plain class that keeps its state its own way (not a dataclass: slotted ones have
    generated __setstate__, and are rebuilt field by field)."""
    return hasattr(cls, "__setstate__") and not dataclasses.is_dataclass(cls)


def _frozen(cls: type) -> bool:
    params = getattr(cls, "__dataclass_params__", None)
    return params is not None and params.frozen


def _check_queue(env: simpy.Environment) -> None:
    """The event heap: (time, priority, id, event), none before now, ids below the next one."""
    queue, now, top = env._queue, env.now, next_count(env)  # noqa: SLF001
    seen = set()
    for item in queue:
        if not (type(item) is tuple and len(item) == 4 and type(item[0]) in (int, float)
                and type(item[1]) is int and type(item[2]) is int
                and isinstance(item[3], simpy.events.Event)
                and item[0] >= now and 0 <= item[2] < top and item[2] not in seen):
            raise Refused("an event heap that is not one SimPy keeps")
        seen.add(item[2])
        if not all(callable(c) for c in item[3].callbacks or ()):
            raise Refused("an event with a callback that is not a handler")
    for k in range(1, len(queue)):  # a heap: each entry no earlier than its parent
        if queue[k][:3] < queue[(k - 1) // 2][:3]:
            raise Refused("an event heap out of order")


def loads(data: bytes) -> Any:
    """The tree `dumps` wrote. Stale: another version of sim; Refused: not such data."""
    if not data.startswith(MAGIC):
        raise Refused("not a snapshot of this kind (no world tree)")
    try:
        header, entries, top = msgpack.unpackb(zlib.decompress(data[len(MAGIC):]),
                                               ext_hook=_ext, raw=False, strict_map_key=True)
    except Refused:
        raise
    except (ValueError, TypeError, zlib.error, msgpack.exceptions.ExtraData) as err:
        raise Refused(f"not a snapshot ({err})") from None
    except Exception as err:  # noqa: BLE001 - msgpack's own errors
        raise Refused(f"not a snapshot ({type(err).__name__})") from None
    decoder = _Decoder(header, entries)
    try:
        root = decoder.r(top)
        decoder.fill()
    except (Refused, Stale):
        raise
    except (IndexError, KeyError, TypeError, ValueError, AttributeError, OverflowError,
            RecursionError) as err:
        raise Refused(f"not a snapshot of sim ({type(err).__name__}: {str(err)[:120]})") from None
    if any(o is _BUILDING for o in decoder.objs):
        raise Refused("a value that refers to itself")
    return root

"""Reading a snapshot's tree back (`sim.api.world_codec` says what it holds).

Nothing in the bytes is run: every entry is a tagged value, every class and
handler it names is looked up among sim's own (`world_codec.ALLOWED`, the plain
classes registered, the code objects of those modules) and refused otherwise;
objects are made with `cls.__new__` and given their fields, checked against
their shapes and declared types. `Stale`: written by another version of sim;
`Refused`: not data sim writes.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime as dt
import enum
import itertools
import math
import sys
import threading
import types
import zlib
from typing import Any

import msgpack
import numpy as np
import simpy
import simpy.events

from sim.api.declared_fields import declared
from sim.api.event_kinds import EVENT_KINDS, FUNCTIONS, METHODS
from sim.api.world_codec import (
    _BUILTIN_TYPES,
    _CODEC_TAGS,
    _REF,
    _SIMPY,
    FORMAT,
    LOCAL_FIELDS,
    MAGIC,
    MAGIC_BEFORE,
    MAX_INFLATION,
    MAX_NESTING,
    MODELS,
    PLAIN_CLASSES,
    Refused,
    Stale,
    _allowed_module,
    _codes,
    _frozen,
    _lookup,
    _module_hash,
    _name,
    _own_state,
    next_count,
)


class _Ref:
    __slots__ = ("i",)

    def __init__(self, i: int):
        self.i = i


def _ext(code: int, data: bytes) -> Any:
    if code != _REF or len(data) != 4:
        raise Refused(f"an unknown extension {code}")
    return _Ref(int.from_bytes(data, "little"))


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
        self.classes: dict[str, type] = {}  # names already looked up and checked
        self.shape_info: dict[int, tuple[type, list[str], list[Any]]] = {}
        self.local: dict[int, frozenset[str]] = {}  # shape -> its fields of the running server
        if not isinstance(entries, list):
            raise Refused("no table of values")
        self.entries = entries
        self.objs: list[Any] = [_UNBUILT] * len(entries)
        #: every event rebuilt: its kind, its defaults and its cells by name (checked once
        #: the cells are filled)
        self.handlers: list[tuple[str, dict[str, Any], dict[str, types.CellType]]] = []

    # -- names
    def cls(self, name: Any) -> type:
        found = self.classes.get(name) if type(name) is str else None
        if found is None:
            found = self.classes[str(name)] = self._cls(name)
        return found

    def _cls(self, name: Any) -> type:
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
            types_ = declared(cls) if name not in _SIMPY else None
            allowed: list[Any] = []
            for k in names:
                if k.startswith("__") or not k.isidentifier():
                    raise Refused(f"a {cls.__name__} with a field of no name")
                if k in LOCAL_FIELDS.get(name, ()):
                    raise Refused(f"a {cls.__name__} given its {k[:40]}, a path: a snapshot "
                                  f"never gives one (the running server's is used)")
                if types_ is not None and k not in types_:
                    raise Refused(f"a {cls.__name__} with a field {k[:40]!r} its class does "
                                  f"not declare")
                allowed.append(None if types_ is None else types_[k])
            found = self.shape_info[i] = (cls, names, allowed)
            self.local[i] = LOCAL_FIELDS.get(name, frozenset())
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
            if e[1] not in MODELS or not hasattr(cls, "model_fields"):
                raise Refused(f"it holds a {str(e[1])[:80]}, which a snapshot may not")
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
        if name not in FUNCTIONS or module not in self.modules:
            raise Refused(f"it names the function {str(name)[:80]!r}, which it may not")
        fn = _lookup(module, qualname)
        if not isinstance(fn, types.FunctionType) or fn.__module__ != module:
            raise Refused(f"it names {name!r}, which is no function of sim")
        return fn

    def closure(self, e: list[Any]) -> types.FunctionType:
        module, _, key = str(e[1]).partition(":")
        fields = EVENT_KINDS.get(e[1]) if type(e[1]) is str else None
        if fields is None or module not in self.modules:
            raise Refused(f"an event of no known kind {str(e[1])[:80]!r}")
        code = _codes(module).get(key)
        if code is None:
            raise Refused(f"it names the handler {e[1]!r}, which sim does not have")
        defaults, kwdefaults = self.r(e[2]), self.r(e[3])
        cells = tuple(self.r(c) for c in e[4])
        named = _defaulted(code, defaults)
        if (len(cells) != len(code.co_freevars)
                or not all(type(c) is types.CellType for c in cells)
                or not (defaults is None or type(defaults) is tuple)
                or kwdefaults is not None or named is None
                or set(fields) != {*code.co_freevars, *named}):
            raise Refused(f"the event {e[1]!r} is not given the fields of its kind")
        self.handlers.append((e[1], dict(zip(named, defaults or (), strict=True)),
                              dict(zip(code.co_freevars, cells, strict=True))))
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
        if (name not in METHODS.get(_name(type(obj)), ()) or not isinstance(fn, types.FunctionType)
                or not _allowed_module(fn.__module__)):
            raise Refused(f"it names the method {str(name)[:80]!r} of a "
                          f"{type(obj).__name__}, which is no event of the world")
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
            elif tag in ("d", "s", "g", "p"):
                later.append(i)
        # what hashes its items (dicts, sets) once every object has its fields; then what
        # reads whole dicts (a generator's state), checks the event heap; last, objects
        # that rebuild themselves from their state (which may draw from those generators)
        order = {"d": 0, "s": 0, "rng": 1, "env": 1, "p": 1, "g": 2}
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
            elif tag == "p":
                _fill_model(obj, *(r(x) for x in e[2:6]))
            elif tag == "g":
                try:
                    obj.__setstate__(r(e[2]))
                except (RuntimeError, StopIteration) as err:
                    raise Refused(f"a {e[1]} that cannot be rebuilt ({err})") from None

    def check_nesting(self) -> None:
        """Containers nest at most `MAX_NESTING` deep, and none holds itself (read from the
        table, before anything is built)."""
        entries, depth = self.entries, [0] * len(self.entries)  # 0: not yet, -1: on the way
        for root in range(len(entries)):
            if depth[root]:
                continue
            stack = [(root, _contained(entries[root]), 0)]
            depth[root] = -1
            while stack:
                i, kids, at = stack[-1]
                if at < len(kids):
                    stack[-1] = (i, kids, at + 1)
                    k = kids[at]
                    if not 0 <= k < len(entries):
                        raise Refused(f"a reference to entry {k} of {len(entries)}")
                    if depth[k] == -1:
                        raise Refused("a container that holds itself")
                    if depth[k] == 0:
                        if len(stack) >= MAX_NESTING:
                            raise Refused(f"containers nested more than {MAX_NESTING} deep")
                        depth[k] = -1
                        stack.append((k, _contained(entries[k]), 0))
                    continue
                stack.pop()
                depth[i] = 1 + max((depth[k] for k in kids), default=0)
                if depth[i] > MAX_NESTING:
                    raise Refused(f"containers nested more than {MAX_NESTING} deep")

    def check_single(self, single: tuple[type, ...]) -> None:
        for cls in single:
            if sum(1 for o in self.objs if type(o) is cls) > 1:
                raise Refused(f"more than one {cls.__name__} (a world has one)")

    def check_restored(self) -> None:
        """Objects whose class checks itself once whole (`check_restored`, ValueError to
        refuse): what field types cannot say (a timer's verb is one of the known ones);
        every event's fields against the types of its kind."""
        for kind, defaults, cells in self.handlers:
            spec = EVENT_KINDS[kind]
            for name, cell in cells.items():
                try:
                    value = cell.cell_contents
                except ValueError:
                    raise Refused(f"the event {kind!r} without its {name}") from None
                _check_field(kind, name, spec[name], value)
            for name, value in defaults.items():
                _check_field(kind, name, spec[name], value)
        checks: dict[type, Any] = {}
        for obj in self.objs:
            t = type(obj)
            check = checks.get(t, _UNBUILT)
            if check is _UNBUILT:
                check = checks[t] = getattr(t, "check_restored", None)
            if check is not None:
                try:
                    check(obj)
                except ValueError as err:  # the class's own reason, as the refusal
                    raise Refused(str(err)[:200]) from None

    def fill_object(self, obj: Any, e: list[Any]) -> None:
        cls, names, allowed = self.shape(e[1])
        values = e[2]
        if not isinstance(values, list) or len(values) != len(names):
            raise Refused(f"a {cls.__name__} not of its shape")
        r = self.r
        for k, x, check in zip(names, values, allowed, strict=True):
            v = r(x)
            if check is not None and not check(v):
                nan = isinstance(v, float) and v != v  # noqa: PLR0124 - NaN is not itself
                what = "NaN" if nan else f"a {type(v).__name__}"
                raise Refused(f"{cls.__name__}.{k} is {what}, not of its declared type")
            object.__setattr__(obj, k, v)
        for k in self.local[e[1]]:
            object.__setattr__(obj, k, None)


_UNBUILT, _BUILDING = object(), object()
_CONTAINERS = frozenset({"l", "t", "d", "s", "fs", "q"})


def _contained(e: Any) -> list[int]:
    """The entries a container entry holds (none for anything else)."""
    if not (type(e) is list and len(e) > 1 and e[0] in _CONTAINERS and type(e[1]) is list):
        return []
    return [x.i for x in e[1] if type(x) is _Ref]


def _fill_model(obj: Any, fields: Any, fields_set: Any, extra: Any, private: Any) -> None:
    """A model of a snapshot, validated as any other input of its kind would be."""
    cls = type(obj)
    if (type(fields) is not dict or type(fields_set) is not set
            or not fields_set <= set(cls.model_fields) or extra not in (None, {})
            or private is not None):
        raise Refused(f"a {cls.__name__} not as sim writes one")
    valid = cls.model_validate(fields)  # a ValidationError is a ValueError: refused
    object.__setattr__(obj, "__dict__", valid.__dict__)
    object.__setattr__(obj, "__pydantic_fields_set__", fields_set)
    object.__setattr__(obj, "__pydantic_extra__", extra)
    object.__setattr__(obj, "__pydantic_private__", None)


def _defaulted(code: types.CodeType, defaults: Any) -> tuple[str, ...] | None:
    """The names of the parameters `defaults` are the defaults of (None: more than it has)."""
    n = 0 if defaults is None else len(defaults) if type(defaults) is tuple else -1
    if not 0 <= n <= code.co_argcount:
        return None
    return code.co_varnames[code.co_argcount - n:code.co_argcount]


def _check_field(kind: str, name: str, spec: str, value: Any) -> None:
    """One field of an event against its declared type (`sim.api.event_kinds`)."""
    if spec.startswith("?"):
        if value is None:
            return
        spec = spec[1:]
    ok: bool
    if spec == "id":
        ok = type(value) is str
    elif spec == "number":
        ok = type(value) in (int, float) and math.isfinite(value)
    elif spec == "bool":
        ok = type(value) is bool
    elif spec == "handler":
        ok = type(value) in (types.FunctionType, types.MethodType)
    elif spec in ("list", "dict"):
        ok = type(value) is (list if spec == "list" else dict)
    elif spec == "row":
        ok = type(value) is dict and all(type(k) is str for k in value)
    elif spec == "id_pair":
        ok = type(value) is tuple and len(value) == 2 and all(type(v) is str for v in value)
    elif spec == "project_or_branch":
        ok = _name(type(value)) in ("sim.engine.model:Project", "sim.engine.model:Branch")
    else:
        ok = _name(type(value)) == spec
    if not ok:
        shown = "NaN" if isinstance(value, float) and value != value else type(value).__name__  # noqa: PLR0124
        raise Refused(f"the event {kind.rpartition(':')[2]} has a {shown} as its {name}, "
                      f"not a {spec}")


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
        # events of the closed list only (a class or a builtin type is callable too)
        if not all(type(c) in (types.FunctionType, types.MethodType)
                   for c in item[3].callbacks or ()):
            raise Refused("an event with a callback that is not an event of the world")
    for k in range(1, len(queue)):  # a heap: each entry no earlier than its parent
        if queue[k][:3] < queue[(k - 1) // 2][:3]:
            raise Refused("an event heap out of order")


def inflate(data: bytes) -> bytearray:
    """A snapshot's tree, inflated no further than the size it says, which is at most
    `MAX_INFLATION` times its compressed bytes: a zlib bomb is refused having allocated
    no more than that."""
    if data.startswith(MAGIC_BEFORE):
        raise Stale("a snapshot of an earlier format (before it said its size)")
    if not data.startswith(MAGIC):
        if data[:1] == b"\x80":  # pickle's protocol byte: an earlier sim's snapshot, or worse
            raise Refused("a pickle, which is never loaded (snapshots of sim before they were "
                          "data were pickles: such a file is started over with --new)")
        raise Refused("not a snapshot of this kind (no world tree)")
    body = memoryview(data)[len(MAGIC) + 8:]
    size = int.from_bytes(data[len(MAGIC):len(MAGIC) + 8], "little")
    if size > MAX_INFLATION * len(body):
        raise Refused(f"a tree of {size} bytes from {len(body)} compressed: more than "
                      f"{MAX_INFLATION} times, which no world sim writes is")
    tree, done = bytearray(size), 0  # what it says, no more: filled a piece at a time
    inflater, tail = zlib.decompressobj(), body
    try:
        while not inflater.eof and (tail or done < size):
            piece = inflater.decompress(tail, min(_PIECE, size + 1 - done))
            tail = inflater.unconsumed_tail
            if done + len(piece) > size:
                raise Refused(f"a tree that inflates beyond the {size} bytes it says")
            tree[done:done + len(piece)] = piece
            done += len(piece)
            if not piece and not tail:
                break
    except zlib.error as err:
        raise Refused(f"not a snapshot ({err})") from None
    if done != size or not inflater.eof or tail or inflater.unused_data:
        raise Refused(f"a tree of {done} bytes, not the {size} it says")
    return tree


#: how much of a tree is inflated at a time
_PIECE = 1 << 20


def loads(data: bytes, *, single: tuple[type, ...] = ()) -> Any:
    """The tree `dumps` wrote. Stale: another version of sim; Refused: not such data.
    `single`: classes a world holds one object of at most (its control plane)."""
    tree = inflate(data)
    try:
        header, entries, top = msgpack.unpackb(tree, ext_hook=_ext, raw=False,
                                               strict_map_key=True)
    except Refused:
        raise
    except (ValueError, TypeError, zlib.error, msgpack.exceptions.ExtraData) as err:
        raise Refused(f"not a snapshot ({err})") from None
    except Exception as err:  # noqa: BLE001 - msgpack's own errors
        raise Refused(f"not a snapshot ({type(err).__name__})") from None
    del tree
    decoder = _Decoder(header, entries)
    try:
        decoder.check_nesting()
        root = decoder.r(top)
        decoder.fill()
        decoder.check_restored()
        decoder.check_single(single)
    except (Refused, Stale):
        raise
    except (IndexError, KeyError, TypeError, ValueError, AttributeError, OverflowError,
            RecursionError) as err:
        raise Refused(f"not a snapshot of sim ({type(err).__name__}: {str(err)[:120]})") from None
    if any(o is _BUILDING for o in decoder.objs):
        raise Refused("a value that refers to itself")
    return root

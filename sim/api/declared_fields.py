"""The fields a class of the world declares, and the types it declares for them.

A snapshot (`sim.api.world_decode`) gives an object only the fields its class
declares, each of a type its declaration allows. What a class declares is read
from sim's own code, never from the file:

- a dataclass: its fields and their annotations;
- a plain class: what its methods (its own and those of the classes it is made
  of, in sim) assign to `self.<name>`, and its `__slots__`; the type is the
  annotation of the class or of the assignment, else that of the method's
  parameter assigned as is (`self.cp = cp` with `cp: ControlPlane`).

A type is checked at its outer level (a `list[Operation]` is a list; its items
are checked where they are objects of their own). A field whose declaration
names no type that can be checked here (`Any`, a type variable) is taken as
declared. A float field never holds NaN (no instant, size or rate of a world
is one); infinity is a value the engine uses (a timer never armed).
"""

from __future__ import annotations

import ast
import collections
import dataclasses
import dis
import importlib
import re
import textwrap
import types
import typing
from collections.abc import Callable
from typing import Any

import numpy as np

#: a check of one value: None when it may be held, else what it is instead
Check = Callable[[Any], bool]

_DECLARED: dict[type, dict[str, Check | None]] = {}
_NAMESPACES: dict[str, dict[str, Any]] = {}


def declared(cls: type) -> dict[str, Check | None]:
    """Field name -> a check of its values (None: any value of a snapshot)."""
    found = _DECLARED.get(cls)
    if found is None:
        found = _DECLARED[cls] = (_of_dataclass(cls) if dataclasses.is_dataclass(cls)
                                  else _of_plain(cls))
    return found


def _of_dataclass(cls: type) -> dict[str, Check | None]:
    module = cls.__module__
    return {f.name: _check_of(f.type, module) for f in dataclasses.fields(cls)}


def _of_plain(cls: type) -> dict[str, Check | None]:
    annotated: dict[str, Check | None] = {}
    #: each field assigned in a method: the types of what it is given (None: not told)
    assigned: dict[str, list[tuple[type, ...] | None]] = {}
    for klass in reversed(cls.__mro__):
        if not klass.__module__.startswith("sim."):
            continue
        module = klass.__module__
        for name, ann in vars(klass).get("__annotations__", {}).items():
            annotated[name] = _check_of(ann, module)
        for slot in vars(klass).get("__slots__", ()):
            assigned.setdefault(slot, []).append(None)
        for item in vars(klass).values():
            fn = getattr(item, "__func__", item)
            if isinstance(fn, types.FunctionType) and fn.__module__ == module:
                _assigned(fn, module, assigned)
    fields: dict[str, Check | None] = {}
    for name, given in assigned.items():  # typed only when every assignment is typed
        fields[name] = (None if any(t is None for t in given)
                        else _make_check(tuple(x for t in given for x in t)))  # type: ignore[union-attr]
    fields.update(annotated)  # the class's own annotation says it all
    return fields


def _assigned(fn: types.FunctionType, module: str,
              assigned: dict[str, list[tuple[type, ...] | None]]) -> None:
    """`self.<name> = ...` in one method (read from its bytecode: a load of `self`, then a
    store of the attribute): the name, typed as the method's parameter it is given as is
    (`self.cp = cp`), if it is one."""
    code = fn.__code__
    if code.co_argcount == 0:
        return
    params = getattr(fn, "__annotations__", {})
    n_params = code.co_argcount + code.co_kwonlyargcount
    raw, ext = code.co_code, 0
    last = second = (-1, -1)
    for i in range(0, len(raw), 2):
        op, arg = raw[i], raw[i + 1] | ext
        if op == _EXTENDED_ARG:
            ext = arg << 8
            continue
        ext = 0
        if op == _CACHE:
            continue
        if op == _STORE_ATTR and last == (_LOAD_FAST, 0):
            ann = None
            if second[0] == _LOAD_FAST and 0 < second[1] < n_params:
                ann = params.get(code.co_varnames[second[1]])
            assigned.setdefault(code.co_names[arg], []).append(
                _types_of_annotation(ann, module) if ann is not None else None)
        second, last = last, (op, arg)


_LOAD_FAST, _STORE_ATTR = dis.opmap["LOAD_FAST"], dis.opmap["STORE_ATTR"]
_EXTENDED_ARG, _CACHE = dis.opmap["EXTENDED_ARG"], dis.opmap.get("CACHE", -1)


# ---- annotations as checks -----------------------------------------------------------------


def _namespace(module: str) -> dict[str, Any]:
    """The names a module's annotations use: its globals and what it imports only for
    type checkers (`if TYPE_CHECKING:`), imported here."""
    found = _NAMESPACES.get(module)
    if found is None:
        mod = importlib.import_module(module)
        found = dict(vars(mod))
        try:
            with open(getattr(mod, "__file__", None) or "", encoding="utf-8") as f:
                source = f.read()
        except OSError:
            source = ""
        for block in _TYPE_CHECKING.findall(source):
            try:
                body = ast.parse(textwrap.dedent(block)).body
            except SyntaxError:
                continue
            for imp in body:
                if isinstance(imp, ast.ImportFrom) and imp.module and imp.level == 0:
                    for alias in imp.names:
                        try:
                            found[alias.asname or alias.name] = getattr(
                                importlib.import_module(imp.module), alias.name)
                        except (ImportError, AttributeError):
                            pass
        _NAMESPACES[module] = found
    return found


#: a module's `if TYPE_CHECKING:` block: its indented lines
_TYPE_CHECKING = re.compile(r"^if TYPE_CHECKING:\n((?:(?:[ \t]+.*)?\n)+)", re.MULTILINE)


def _check_of(ann: Any, module: str) -> Check | None:
    allowed = _types_of_annotation(ann, module)
    return None if allowed is None else _make_check(allowed)


def _types_of_annotation(ann: Any, module: str) -> tuple[type, ...] | None:
    if not isinstance(ann, str):
        ann = getattr(ann, "__name__", None) or repr(ann)
    try:
        node = ast.parse(ann, mode="eval").body
    except SyntaxError:
        return None
    return _types_of(node, _namespace(module))


_FLOAT = (float, int, np.floating, np.integer)
_INT = (int, np.integer)


def _types_of(node: ast.expr, ns: dict[str, Any]) -> tuple[type, ...] | None:
    """The types an annotation allows (None: it cannot be told here: any)."""
    if isinstance(node, ast.Constant):
        if node.value is None:
            return (type(None),)
        if isinstance(node.value, str):
            try:
                return _types_of(ast.parse(node.value, mode="eval").body, ns)
            except SyntaxError:
                return None
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left, right = _types_of(node.left, ns), _types_of(node.right, ns)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.Subscript):
        outer = _resolve(node.value, ns)
        if outer is typing.Optional:
            inner = _types_of(node.slice, ns)
            return None if inner is None else (*inner, type(None))
        if outer is typing.Union:
            parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            found: tuple[type, ...] = ()
            for p in parts:
                t = _types_of(p, ns)
                if t is None:
                    return None
                found += t
            return found
        if outer is typing.Annotated:
            first = node.slice.elts[0] if isinstance(node.slice, ast.Tuple) else node.slice
            return _types_of(first, ns)
        if outer in (typing.Literal, typing.ClassVar, typing.Final):
            return None
        return _as_types(typing.get_origin(outer) or outer)
    return _as_types(_resolve(node, ns))


def _resolve(node: ast.expr, ns: dict[str, Any]) -> Any:
    if isinstance(node, ast.Name):
        return ns.get(node.id, __builtins__.get(node.id) if isinstance(__builtins__, dict)
                      else getattr(__builtins__, node.id, None))
    if isinstance(node, ast.Attribute):
        base = _resolve(node.value, ns)
        return None if base is None else getattr(base, node.attr, None)
    return None


def _as_types(t: Any) -> tuple[type, ...] | None:
    if t is None or t is typing.Any or t is object:
        return None
    if t in (Callable, collections.abc.Callable) or t is typing.Callable:
        return (types.FunctionType, types.MethodType)
    origin = typing.get_origin(t)
    if origin is not None:
        return _as_types(origin)
    if t is float:
        return _FLOAT
    if t is int:
        return _INT
    if t is collections.abc.Sequence:
        return (list, tuple)
    if t in (collections.abc.Mapping, collections.abc.MutableMapping):
        return (dict,)
    if t in (collections.abc.Set, collections.abc.MutableSet):
        return (set, frozenset)
    if isinstance(t, type):
        if t.__module__ == "typing" or getattr(t, "_is_protocol", False):
            return None
        return (t,)
    return None


def _make_check(allowed: tuple[type, ...]) -> Check:
    allowed = tuple(dict.fromkeys(allowed))
    if float in allowed:
        def check(v: Any) -> bool:
            return isinstance(v, allowed) and (
                not isinstance(v, (float, np.floating)) or v == v)  # noqa: PLR0124 - NaN
        return check
    return lambda v: isinstance(v, allowed)

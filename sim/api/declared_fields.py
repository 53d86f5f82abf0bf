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
import importlib
import inspect
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
    fields: dict[str, Check | None] = {}
    for klass in reversed(cls.__mro__):
        if not klass.__module__.startswith("sim."):
            continue
        module = klass.__module__
        for name, ann in vars(klass).get("__annotations__", {}).items():
            fields[name] = _check_of(ann, module)
        for slot in vars(klass).get("__slots__", ()):
            fields.setdefault(slot, None)
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                _assigned(fn, module, fields)
    return fields


def _assigned(fn: ast.FunctionDef | ast.AsyncFunctionDef, module: str,
              fields: dict[str, Check | None]) -> None:
    """`self.<name> = ...` in one method: the name, with the type it shows."""
    params = {a.arg: a.annotation for a in (*fn.args.posonlyargs, *fn.args.args,
                                            *fn.args.kwonlyargs) if a.annotation is not None}
    for node in ast.walk(fn):
        targets: list[ast.expr] = []
        ann: ast.expr | None = None
        value: ast.expr | None = None
        if isinstance(node, ast.Assign):
            targets, value = list(node.targets), node.value
        elif isinstance(node, ast.AnnAssign):
            targets, ann, value = [node.target], node.annotation, node.value
        elif isinstance(node, ast.AugAssign):
            targets = [node.target]
        flat: list[ast.expr] = []
        for t in targets:
            flat.extend(t.elts if isinstance(t, ast.Tuple) else [t])
        for t in flat:
            if not (isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                    and t.value.id == "self"):
                continue
            if ann is None and isinstance(value, ast.Name) and value.id in params \
                    and len(flat) == 1:
                ann = params[value.id]
            check = _check_of(ast.unparse(ann), module) if ann is not None else None
            if t.attr not in fields or (fields[t.attr] is None and check is not None):
                fields[t.attr] = check


# ---- annotations as checks -----------------------------------------------------------------


def _namespace(module: str) -> dict[str, Any]:
    """The names a module's annotations use: its globals and what it imports only for
    type checkers (`if TYPE_CHECKING:`), imported here."""
    found = _NAMESPACES.get(module)
    if found is None:
        mod = importlib.import_module(module)
        found = dict(vars(mod))
        try:
            tree = ast.parse(inspect.getsource(mod))
        except (OSError, TypeError, SyntaxError):
            tree = ast.Module(body=[], type_ignores=[])
        for node in tree.body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                for imp in node.body:
                    if isinstance(imp, ast.ImportFrom) and imp.module and imp.level == 0:
                        for alias in imp.names:
                            try:
                                found[alias.asname or alias.name] = getattr(
                                    importlib.import_module(imp.module), alias.name)
                            except (ImportError, AttributeError):
                                pass
        _NAMESPACES[module] = found
    return found


def _check_of(ann: Any, module: str) -> Check | None:
    if not isinstance(ann, str):
        ann = getattr(ann, "__name__", None) or repr(ann)
    try:
        node = ast.parse(ann, mode="eval").body
    except SyntaxError:
        return None
    allowed = _types_of(node, _namespace(module))
    if allowed is None:
        return None
    return _make_check(allowed)


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

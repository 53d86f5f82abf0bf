"""A run's tables as blocks of columns, read as lists of rows.

The compute kernel gives what a compute did (its state intervals, its wakes,
its operations) as arrays. Turning each row into a tuple only to turn the
tuples back into columns for a frame is most of what a busy run would spend
on its rows, so a kernel's rows stay columns (a `RowBlock`) until someone
reads a row. The SimPy engine appends rows one by one as it goes; those stay
lists. A table holds both kinds of part in the order they were recorded and
reads like the list of rows it replaces (`len`, iteration, indexing,
equality, `append`, `+=`), building a row only for whoever asks for one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import islice, repeat
from typing import Any, Generic, TypeVar, overload

import numpy as np

from sim.engine.ids import ascii_strings

R = TypeVar("R", bound=tuple)

_KINDS = {"float": np.float64, "int": np.int64, "bool": np.bool_}


@cache  # a table is made for every project of a run; its row type's dtypes never change
def dtypes_of(row_type: type) -> dict[str, np.dtype]:
    """Each field's dtype as a column, from the row type's annotations: float, int and bool
    columns are numbers; anything else (ids, names, optional values) is an object column.
    One dict per row type, shared by its tables: read it, never change it."""
    return {name: np.dtype(_KINDS.get(_spelled(kind), object))
            for name, kind in row_type.__annotations__.items()}


def filled(n: int, value: Any, dtype: Any = object) -> np.ndarray:
    """n copies of value: `np.full`, which is ten times slower for an object column."""
    out = np.empty(n, dtype)
    out.fill(value)
    return out


def _spelled(kind: Any) -> str:
    """An annotation as written: 'float', 'str | None' (a string, a ForwardRef or a type)."""
    return getattr(kind, "__forward_arg__", getattr(kind, "__name__", str(kind)))


class Parts(Sequence[R]):
    """Rows in order, held as parts: lists of rows and blocks of columns (anything with a
    length and `records()`), read as one sequence."""

    def __init__(self, parts: Iterable[Any] = ()):
        self._parts: list[Any] = [p for p in parts if len(p)]

    def extend(self, rows: Iterable[R]) -> None:
        rows = list(rows)
        if rows:  # a part of its own: no list another table shares is changed, none copied
            self._parts.append(rows)

    @property
    def parts(self) -> tuple[Any, ...]:
        return tuple(self._parts)

    def with_parts(self, parts: Iterable[Any]) -> Any:
        """A table of the same kind holding `parts`."""
        return type(self)(parts)

    def add_block(self, block: Any) -> None:
        if len(block):
            self._parts.append(block)

    def __iadd__(self, rows: Iterable[R]) -> Any:
        self.extend(rows)
        return self

    @classmethod
    def joined(cls, tables: Iterable[Any]) -> Any:
        return cls(part for table in tables for part in table._parts)

    def __len__(self) -> int:
        return sum(len(p) for p in self._parts)

    def __iter__(self) -> Iterator[R]:
        for part in self._parts:
            yield from (part if isinstance(part, list) else part.records())

    @overload
    def __getitem__(self, index: int) -> R: ...

    @overload
    def __getitem__(self, index: slice) -> list[R]: ...

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return list(self)[index]
        n = len(self)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("row out of range")
        for part in self._parts:
            if index < len(part):
                return part[index] if isinstance(part, list) else next(
                    islice(part.records(), index, None))
            index -= len(part)
        raise IndexError("row out of range")  # unreachable

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Parts | list):
            return len(self) == len(other) and all(
                a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like the list it replaces

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)} rows)"


@dataclass(frozen=True)
class RowBlock(Generic[R]):
    """Rows of one type as columns: each field an array of the block's length, or one value
    that every row of the block has (a compute's id in the rows of that compute). Text may
    be held as fixed-width ASCII bytes (numpy `S<w>`, an operation's id): it is read as
    `str`."""

    row_type: type[R]
    n: int
    values: Mapping[str, Any]

    def __len__(self) -> int:
        return self.n

    def column(self, name: str, dtype: np.dtype) -> np.ndarray:
        value = self.values[name]
        if not isinstance(value, np.ndarray):
            return filled(self.n, value, dtype)
        return ascii_strings(value) if value.dtype.kind == "S" else value

    def between(self, start: int, stop: int) -> RowBlock[R]:
        """Rows start to stop (not included), as views."""
        return RowBlock(self.row_type, stop - start,
                        {name: value[start:stop] if isinstance(value, np.ndarray) else value
                         for name, value in self.values.items()})

    def records(self) -> Iterator[R]:
        n = self.n
        columns = [self.column(name, object).tolist() if isinstance(value, np.ndarray)
                   else repeat(value, n)
                   for name, value in ((name, self.values[name]) for name in self.row_type._fields)]
        return map(self.row_type._make, zip(*columns, strict=False))


class RowTable(Parts[R]):
    """The rows of one table of a run (state intervals, wakes, operations), in order."""

    def __init__(self, row_type: type[R], parts: Iterable[RowBlock[R] | list[R]] = ()):
        super().__init__(parts)
        self.row_type = row_type
        self.dtypes = dtypes_of(row_type)

    def with_parts(self, parts: Iterable[RowBlock[R] | list[R]]) -> RowTable[R]:
        return RowTable(self.row_type, parts)

    @classmethod
    def joined(cls, tables: Iterable[RowTable[R]], row_type: type[R] | None = None
               ) -> RowTable[R]:
        """The rows of `tables` one after another (`row_type`: theirs, if there may be none)."""
        tables = list(tables)
        row_type = tables[0].row_type if row_type is None else row_type
        return cls(row_type, (part for table in tables for part in table._parts))

    # -- building ----------------------------------------------------------------------------
    def append(self, row: R) -> None:
        parts = self._parts
        if not parts or not isinstance(parts[-1], list):
            parts.append([])
        parts[-1].append(row)

    def block(self, **values: Any) -> RowBlock[R]:
        """A block of this table's rows from its columns (arrays or one value each)."""
        n = next(len(v) for v in values.values() if isinstance(v, np.ndarray))
        return RowBlock(self.row_type, n, values)

    # -- reading as columns --------------------------------------------------------------------
    def column(self, name: str) -> np.ndarray:
        dtype = self.dtypes[name]
        pieces = [self._column_of(part, name, dtype) for part in self._parts]
        return np.concatenate(pieces) if pieces else np.empty(0, dtype)

    def columns(self) -> dict[str, np.ndarray]:
        return {name: self.column(name) for name in self.row_type._fields}

    def _column_of(self, part: RowBlock[R] | list[R], name: str, dtype: np.dtype) -> np.ndarray:
        if not isinstance(part, list):
            return part.column(name, dtype)
        at = self.row_type._fields.index(name)
        if dtype.kind == "O":
            out = np.empty(len(part), object)
            out[:] = [row[at] for row in part]
            return out
        return np.fromiter((row[at] for row in part), dtype, len(part))

    def codes(self, name: str, code_of: Mapping[Any, int]) -> np.ndarray:
        """Each row's value of `name` looked up in `code_of` (KeyError: a value it lacks)."""
        pieces = []
        for part in self._parts:
            value = None if isinstance(part, list) else part.values[name]
            if value is not None and not isinstance(value, np.ndarray):
                pieces.append(np.full(len(part), code_of[value], np.int64))
            else:
                column = self._column_of(part, name, self.dtypes[name]).tolist()
                pieces.append(np.fromiter(map(code_of.__getitem__, column), np.int64,
                                          len(column)))
        return np.concatenate(pieces) if pieces else np.empty(0, np.int64)

    def copy(self) -> RowTable[R]:
        """The same rows, in a table of their own (rows appended to this one stay out)."""
        return RowTable(self.row_type, [list(p) if isinstance(p, list) else p
                                        for p in self._parts])

    def take(self, order: np.ndarray) -> RowTable[R]:
        """The rows in `order` (positions), as one block."""
        if len(order) == len(self) and np.array_equal(order, np.arange(len(order))):
            return self.copy()
        taken = {name: column[order] for name, column in self.columns().items()}
        return RowTable(self.row_type, [RowBlock(self.row_type, len(order), taken)])

    def without(self, name: str, values: set[Any]) -> RowTable[R]:
        """The rows whose `name` is none of `values`."""
        if not values:
            return self.copy()
        at = self.row_type._fields.index(name)
        kept: list[RowBlock[R] | list[R]] = []
        for part in self._parts:
            if isinstance(part, list):
                kept.append([row for row in part if row[at] not in values])
                continue
            value = part.values[name]
            if not isinstance(value, np.ndarray):
                if value not in values:
                    kept.append(part)
                continue
            keep = np.fromiter((v not in values for v in part.column(name, object).tolist()),
                               np.bool_, part.n)
            kept.append(RowBlock(self.row_type, int(keep.sum()),
                                 {k: v[keep] if isinstance(v, np.ndarray) else v
                                  for k, v in part.values.items()}))
        return RowTable(self.row_type, kept)


def row_table(row_type: type[R], rows: Sequence[R] | RowTable[R] = ()) -> RowTable[R]:
    """`rows` as a table of `row_type` (a table is taken as it is)."""
    return rows if isinstance(rows, RowTable) else RowTable(row_type, [list(rows)])


__all__ = ["Parts", "RowBlock", "RowTable", "dtypes_of", "filled", "row_table"]

"""The connections of a run as columns: one row per connection attempt, no object per row.

A busy fleet makes tens of millions of connection rows. The compute kernel
gives a compute's rows as arrays, and they stay arrays (a `ColumnBlock`, with
the compute and project ids once for the block) until a DataFrame is built
from them, so a row costs a few bytes and no Python object. The SimPy
engine's per-session runtime appends `ConnectionRecord` tuples as it goes,
and may replace one when a session is cut; those stay a list until the run's
result is taken.

`ConnectionTable` reads like the list of `ConnectionRecord` it replaces
(`len`, iteration, indexing, equality: `sim.engine.row_table.Parts`),
building a record only for whoever asks for one.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import NamedTuple

import numpy as np

from sim.engine.row_table import Parts, filled


class ConnectionRecord(NamedTuple):
    compute_id: str
    project_id: str
    arrival_s: float
    wait_s: float  # cold start and pool queue wait before the session began
    duration_s: float  # session length; for a dropped session, up to the cut
    outcome: str  # see Outcome
    cold: bool  # found the compute not active


class Outcome:
    OK = "ok"
    REFUSED_TOO_MANY = "refused_53300"  # direct connection beyond max_connections
    REFUSED_POOLER_FULL = "refused_pooler_full"  # beyond 10,000 pooled clients
    QUEUE_TIMEOUT = "queue_timeout"  # waited in the pool queue past the timeout
    DISK_FULL = "failed_53100"  # temporary files beyond the local disk
    DROPPED = "dropped"  # cut by a restart, resize, suspend or delete
    REFUSED_DISABLED = "refused_disabled"  # compute disabled or deleted


#: outcome codes of the columns, in the order the kernel numbers them (see sim.kernel.physics)
OUTCOMES: tuple[str, ...] = (Outcome.OK, Outcome.REFUSED_TOO_MANY, Outcome.REFUSED_POOLER_FULL,
                             Outcome.QUEUE_TIMEOUT, Outcome.DISK_FULL, Outcome.DROPPED,
                             Outcome.REFUSED_DISABLED)
_CODE = {name: code for code, name in enumerate(OUTCOMES)}
_NAMES = np.array(OUTCOMES, dtype=object)
_FLOATS = ("arrival_s", "wait_s", "duration_s")


@dataclass(frozen=True)
class ColumnBlock:
    """Rows of one compute, as columns."""

    compute_id: str
    project_id: str
    arrival_s: np.ndarray
    wait_s: np.ndarray
    duration_s: np.ndarray
    outcome: np.ndarray  # codes into OUTCOMES
    cold: np.ndarray

    def __len__(self) -> int:
        return len(self.arrival_s)

    def where(self, keep: np.ndarray) -> ColumnBlock:
        """The rows where `keep` is true."""
        return ColumnBlock(self.compute_id, self.project_id, self.arrival_s[keep],
                           self.wait_s[keep], self.duration_s[keep], self.outcome[keep],
                           self.cold[keep])

    def between(self, start: int, stop: int) -> ColumnBlock:
        """Rows start to stop (not included), as views."""
        return ColumnBlock(self.compute_id, self.project_id, self.arrival_s[start:stop],
                           self.wait_s[start:stop], self.duration_s[start:stop],
                           self.outcome[start:stop], self.cold[start:stop])

    def records(self) -> Iterator[ConnectionRecord]:
        n = len(self)
        return map(ConnectionRecord._make, zip(
            repeat(self.compute_id, n), repeat(self.project_id, n), self.arrival_s.tolist(),
            self.wait_s.tolist(), self.duration_s.tolist(),
            map(OUTCOMES.__getitem__, self.outcome.tolist()), self.cold.tolist(), strict=True))


def block_of_rows(rows: Sequence[ConnectionRecord]) -> dict[str, np.ndarray]:
    """Records as columns (ids as object arrays)."""
    n = len(rows)
    return {
        "compute_id": np.array([r.compute_id for r in rows], dtype=object),
        "project_id": np.array([r.project_id for r in rows], dtype=object),
        "arrival_s": np.fromiter((r.arrival_s for r in rows), np.float64, n),
        "wait_s": np.fromiter((r.wait_s for r in rows), np.float64, n),
        "duration_s": np.fromiter((r.duration_s for r in rows), np.float64, n),
        "outcome": np.fromiter((_CODE[r.outcome] for r in rows), np.int8, n),
        "cold": np.fromiter((r.cold for r in rows), np.bool_, n),
    }


class ConnectionTable(Parts[ConnectionRecord]):
    """Connection rows in order: column blocks and lists of records, read as one sequence."""

    def without_projects(self, projects: set[str]) -> ConnectionTable:
        """The rows of every project but `projects`."""
        if not projects:
            return ConnectionTable(self._parts)
        kept: list[ColumnBlock | list[ConnectionRecord]] = []
        for part in self._parts:
            if isinstance(part, ColumnBlock):
                if part.project_id not in projects:
                    kept.append(part)
            else:
                kept.append([r for r in part if r.project_id not in projects])
        return ConnectionTable(kept)

    # -- reading as columns --------------------------------------------------------------------
    def codes(self, name: str, code_of: dict[str, int]) -> np.ndarray:
        """Each row's `name` (compute_id or project_id) looked up in `code_of` (KeyError:
        an id it lacks)."""
        pieces = [filled(len(part), code_of[getattr(part, name)], np.int64)
                  if isinstance(part, ColumnBlock) else
                  np.fromiter((code_of[getattr(r, name)] for r in part), np.int64, len(part))
                  for part in self._parts]
        return np.concatenate(pieces) if pieces else np.empty(0, np.int64)

    def column(self, name: str) -> np.ndarray:
        """One column of numbers (not an id) for every row."""
        pieces = [self._columns_of(part, False)[name] for part in self._parts]
        return np.concatenate(pieces) if pieces else np.empty(0, _DTYPES[name])

    def columns(self, ids: bool = True) -> dict[str, np.ndarray]:
        """Every row as columns: ids as object arrays (unless not `ids`), outcome as codes
        into OUTCOMES."""
        names = [n for n in _DTYPES if ids or n not in _IDS]
        pieces = [self._columns_of(part, ids) for part in self._parts]
        if not pieces:
            return {name: np.empty(0, _DTYPES[name]) for name in names}
        return {name: np.concatenate([p[name] for p in pieces]) for name in names}

    @staticmethod
    def _columns_of(part: ColumnBlock | list[ConnectionRecord], ids: bool
                    ) -> dict[str, np.ndarray]:
        if not isinstance(part, ColumnBlock):
            return block_of_rows(part)
        columns = {"arrival_s": part.arrival_s, "wait_s": part.wait_s,
                   "duration_s": part.duration_s, "outcome": part.outcome, "cold": part.cold}
        if ids:
            n = len(part)
            columns["compute_id"] = filled(n, part.compute_id)
            columns["project_id"] = filled(n, part.project_id)
        return columns

    def take(self, order: np.ndarray) -> ConnectionTable:
        """The rows in `order` (positions), a block for each run of one compute's rows."""
        taken = {name: column[order] for name, column in self.columns().items()}
        compute, n = taken["compute_id"], len(order)
        if n == 0:
            return ConnectionTable()
        starts = np.flatnonzero(np.r_[True, compute[1:] != compute[:-1]])
        ends = np.r_[starts[1:], n]
        return ConnectionTable(
            ColumnBlock(compute[a], taken["project_id"][a], *(taken[f][a:b] for f in _FLOATS),
                        taken["outcome"][a:b], taken["cold"][a:b])
            for a, b in zip(starts.tolist(), ends.tolist(), strict=True))

    @staticmethod
    def outcome_names(codes: np.ndarray) -> np.ndarray:
        return _NAMES[codes]


_IDS = ("compute_id", "project_id")
_DTYPES = {"compute_id": object, "project_id": object, "arrival_s": np.float64,
           "wait_s": np.float64, "duration_s": np.float64, "outcome": np.int8, "cold": np.bool_}

__all__ = ["OUTCOMES", "ColumnBlock", "ConnectionRecord", "ConnectionTable", "Outcome",
           "block_of_rows"]

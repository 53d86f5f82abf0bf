"""What a run counts when it keeps no event rows (`record_events: off`).

Recording decides which rows are written, never what is counted: every figure of
the summary and every chart must come out the same with events recorded or not.
The per-minute sums and the cold-start waits (`Recorder.on_ns`, `wake_waits`) are
two such tallies; these are the rest:

- `OperationTally`: operations by the hour they were created in, action and
  status, with their failed attempts: exact integers, added in any order;
- on-spans: when each compute was on, for the most computes on at one instant
  (the peak is not a sum over computes, so the spans themselves are kept: two
  floats per wake, where the rows they replace hold six fields per interval).

Both are kept per project, so that a project left out of a run's result
(handed to another run) leaves nothing in them either; a project's operation
counts join the fleet's once nothing can leave it out any more (`Recorder.settle`).

A tally is columns of integers, never an object per operation or per key: each
(hour, action, status) is one integer key (`cell_key`), and adding is appending
columns, summed (sorted and reduced) only when they grow long or are read.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from sim.rules.operations import Action
from sim.rules.states import OperationStatus

#: operations are counted per hour of their creation stamp (microseconds, as the rows')
HOUR_US = 3_600_000_000

#: (hour of creation, action, status, operations, failed attempts)
OperationCount = tuple[int, str, str, int, int]


def creation_us(created_s: np.ndarray) -> np.ndarray:
    """An operation's creation instant rounded to the microsecond, as its row's stamp is."""
    return np.round(np.asarray(created_s, dtype=np.float64) * 1_000_000).astype(np.int64)


class _Names:
    """Names (actions or statuses) as small integer codes, the same in every tally of a
    process: the specification's first, in sorted order, then any other a caller gives
    (hand-made rows), in the order they come. Rows are read back by name, so codes never
    leave the process."""

    def __init__(self, known: Iterable[str], capacity: int) -> None:
        self.names: list[str] = []
        self.codes: dict[str, int] = {}
        self.capacity = capacity
        for name in sorted(known):
            self.code(name)
        self._luts: dict[int, tuple[object, np.ndarray]] = {}

    def code(self, name: object) -> int:
        name = str(name)
        code = self.codes.get(name)
        if code is None:
            if len(self.names) == self.capacity:
                raise ValueError(f"more than {self.capacity} distinct names to count")
            code = self.codes[name] = len(self.names)
            self.names.append(name)
        return code

    def lut(self, names: Sequence) -> np.ndarray:
        """Codes of `names` by position: a caller's codes into `names` -> ours. The
        kernels pass the same few lists of names every time: each is looked up once."""
        cached = self._luts.get(id(names))
        if cached is not None and cached[0] is names:
            return cached[1]
        lut = np.array([self.code(n) for n in names], dtype=np.int64)
        self._luts[id(names)] = (names, lut)
        return lut

    def ranks(self) -> np.ndarray:
        """Each code's rank in the sorted order of the names."""
        ranks = np.empty(len(self.names), dtype=np.int64)
        ranks[np.argsort(np.array(self.names, dtype=object), kind="stable")] = \
            np.arange(len(self.names))
        return ranks


_ACTIONS = _Names((a.value for a in Action), 32)
_STATUSES = _Names((s.value for s in OperationStatus), 8)
#: keys per hour: every (action, status) code pair
CELLS = _ACTIONS.capacity * _STATUSES.capacity
#: a tally sums its columns once they hold this many entries (or twice as many as
#: the last sum left, so that summing costs a constant per entry added)
COMPACT_AT = 1 << 16


def cell_key(hours: np.ndarray, actions: np.ndarray, statuses: np.ndarray) -> np.ndarray:
    """One integer per (hour, action code, status code); keys sort by hour first."""
    return (np.asarray(hours, dtype=np.int64) * _ACTIONS.capacity + actions) \
        * _STATUSES.capacity + statuses


def _summed(keys: np.ndarray, counts: np.ndarray, failed: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One entry per key, in key order, counts and failed attempts summed (exactly)."""
    if not len(keys):
        return keys, counts, failed
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    firsts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    return (keys[firsts], np.add.reduceat(counts[order], firsts),
            np.add.reduceat(failed[order], firsts))


class OperationTally:
    """Operations counted by (hour created, action, status), with their failed attempts:
    columns of keys (`cell_key`), operations and failed attempts."""

    def __init__(self) -> None:
        self._parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._entries = 0
        self._summed = True  # `_parts` is one part with one entry per key (or none)
        self._limit = COMPACT_AT  # entries at which the parts are next summed

    def add(self, actions: np.ndarray, statuses: np.ndarray, failures: np.ndarray,
            created_s: np.ndarray, count_from_s: float = 0.0) -> None:
        """Count operations given as columns of names (or of anything `np.unique` sorts);
        `created_s` and `count_from_s` as for `add_codes`."""
        if not len(actions):
            return
        action_names, action_codes = np.unique(np.asarray(actions), return_inverse=True)
        status_names, status_codes = np.unique(np.asarray(statuses), return_inverse=True)
        self.add_codes(action_codes, action_names.tolist(), status_codes,
                       status_names.tolist(), np.asarray(failures), created_s, count_from_s)

    def add_codes(self, action_codes: np.ndarray, action_names: Sequence,
                  status_codes: np.ndarray, status_names: Sequence, failures: np.ndarray,
                  created_s: np.ndarray, count_from_s: float = 0.0) -> None:
        """Count operations given as codes into `action_names` and `status_names`, created
        at `created_s` of the engine's clock: only those from `count_from_s` on (the first
        instant), as the rows keep only those (`sim.engine.first_instant`)."""
        us = creation_us(created_s)
        t0_us = round(count_from_s * 1_000_000)
        failures = np.asarray(failures, dtype=np.int64)
        if count_from_s:
            kept = us >= t0_us
            action_codes, status_codes = action_codes[kept], status_codes[kept]
            failures, us = failures[kept], us[kept]
        if not len(action_codes):
            return
        keys = cell_key((us - t0_us) // HOUR_US, _ACTIONS.lut(action_names)[action_codes],
                        _STATUSES.lut(status_names)[status_codes])
        self._append(keys, np.ones(len(keys), dtype=np.int64), failures)

    def absorb(self, other: OperationTally | HourlyTally) -> None:
        """Add every count of `other` to this tally."""
        for part in other.parts():
            self._append(*part)

    def parts(self) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """The tally as columns (keys, operations, failed attempts), a key possibly in
        more than one part."""
        return self._parts

    def _append(self, keys: np.ndarray, counts: np.ndarray, failed: np.ndarray) -> None:
        self._parts.append((keys, counts, failed))
        self._entries += len(keys)
        self._summed = False
        if self._entries >= self._limit:
            self._compact()
            self._limit = max(COMPACT_AT, 2 * self._entries)

    def _compact(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if not self._summed or not self._parts:
            parts = self._parts or [(np.empty(0, np.int64),) * 3]
            self._parts = [_summed(*(np.concatenate([p[i] for p in parts]) for i in range(3)))]
            self._entries = len(self._parts[0][0])
            self._summed = True
        return self._parts[0]

    def columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(hour, action, status, operations, failed attempts), sorted by hour, action
        and status, one entry per triple counted."""
        keys, counts, failed = self._compact()
        rest, status = np.divmod(keys, _STATUSES.capacity)
        hour, action = np.divmod(rest, _ACTIONS.capacity)
        order = np.lexsort((_STATUSES.ranks()[status], _ACTIONS.ranks()[action], hour))
        hour, action, status = hour[order], action[order], status[order]
        return (hour, np.array(_ACTIONS.names, dtype=object)[action],
                np.array(_STATUSES.names, dtype=object)[status], counts[order], failed[order])

    def rows(self) -> list[OperationCount]:
        return list(zip(*(c.tolist() for c in self.columns()), strict=True))

    def add_rows(self, rows: Sequence[OperationCount]) -> None:
        """Add counts given as rows (another tally's, or another run's)."""
        if not rows:
            return
        hour, action, status, n, failed = zip(*rows, strict=True)
        actions = np.array([_ACTIONS.code(a) for a in action], dtype=np.int64)
        statuses = np.array([_STATUSES.code(s) for s in status], dtype=np.int64)
        self._append(cell_key(np.array(hour, dtype=np.int64), actions, statuses),
                     np.array(n, dtype=np.int64), np.array(failed, dtype=np.int64))


class HourlyTally:
    """A fleet's operation counts: one entry for every (hour, action, status) of the run
    so far, counted or not (a month is 720 x `CELLS` entries), so that adding a
    project's counts is a scatter-add, without sorting (a batch of projects at a time:
    one project's few keys spread over a month's entries would each miss the cache)."""

    def __init__(self) -> None:
        self.counts = np.zeros(0, np.int64)
        self.failed = np.zeros(0, np.int64)
        self._pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._pending_n = 0

    def absorb(self, other: OperationTally) -> None:
        for part in other.parts():
            if len(part[0]):
                self._pending.append(part)
                self._pending_n += len(part[0])
        if self._pending_n >= COMPACT_AT:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        keys, counts, failed = (np.concatenate([p[i] for p in self._pending]) for i in range(3))
        self._pending, self._pending_n = [], 0
        if int(keys.min()) < 0:
            raise ValueError("operations created before the first instant are not counted")
        size = int(keys.max()) + 1
        if size > len(self.counts):
            size = max(size, 2 * len(self.counts), 24 * CELLS)
            self.counts = np.concatenate((self.counts, np.zeros(size - len(self.counts), np.int64)))
            self.failed = np.concatenate((self.failed, np.zeros(size - len(self.failed), np.int64)))
        np.add.at(self.counts, keys, counts)
        np.add.at(self.failed, keys, failed)

    def parts(self) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        self._flush()
        keys = np.flatnonzero(self.counts)
        return [(keys, self.counts[keys], self.failed[keys])]


def summed_counts(parts: Iterable[Sequence[OperationCount]]) -> list[OperationCount]:
    """Operation counts of several tallies (or runs) as one, in a fixed order."""
    total = OperationTally()
    for rows in parts:
        total.add_rows(rows)
    return total.rows()


def joined_spans(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One compute's on-intervals (in time order, not overlapping) with the ones that
    follow each other without a gap made one: the same count of computes on at every
    instant, in fewer spans (a compute that changes size starts a new interval)."""
    if len(start) < 2:
        return start.copy(), end.copy()
    joined = start[1:] == end[:-1]
    return start[np.r_[True, ~joined]], end[np.r_[~joined, True]]

"""Per-minute integrals of intervals: the fleet time series, without a loop over minutes."""

from __future__ import annotations

import math

import numpy as np

MINUTE_S = 60.0
NS = 1_000_000_000  # per second


def per_minute_integrals(
    start: np.ndarray, end: np.ndarray, weights: list[np.ndarray], duration_s: float
) -> list[np.ndarray]:
    """For each weight w: the integral over each minute of sum(w_i over intervals i open).

    Intervals are [start, end) within [0, duration_s) (see `on_intervals`). A minute k is covered
    whole by every interval with ks < k < ke (ks, ke the minutes holding its start
    and end): those go to a difference array whose running sum counts them at
    60 s each. The partial minutes at both ends are corrected in place:
    minute ks loses (start - 60 ks), minute ke gains (end - 60 ke). When ks == ke
    the two cancel on the difference array and leave w (end - start).
    """
    n_minutes = math.ceil(duration_s / MINUTE_S)
    first = np.floor(start / MINUTE_S).astype(np.int64)
    last = np.floor(end / MINUTE_S).astype(np.int64)  # == n_minutes only when end == duration
    head = start - first * MINUTE_S
    tail = end - last * MINUTE_S
    size = n_minutes + 1
    out = []
    for w in weights:
        diff = np.bincount(first, weights=w, minlength=size) - np.bincount(
            last, weights=w, minlength=size
        )
        partial = np.bincount(last, weights=w * tail, minlength=size) - np.bincount(
            first, weights=w * head, minlength=size
        )
        out.append((np.cumsum(diff) * MINUTE_S + partial)[:n_minutes])
    return out


#: intervals added to minute sums together (see `MinuteSums`)
BATCH = 1 << 16


class MinutePositions:
    """Where intervals [start, end) fall on the minutes: the minutes holding their start
    and end, and the nanoseconds from those minutes' beginnings to the start and end."""

    def __init__(self, start: np.ndarray, end: np.ndarray) -> None:
        self.first = np.floor(start / MINUTE_S).astype(np.int64)
        self.last = np.floor(end / MINUTE_S).astype(np.int64)  # n_minutes only at the end
        self.head = np.rint((start - self.first * MINUTE_S) * NS).astype(np.int64)
        self.tail = np.rint((end - self.last * MINUTE_S) * NS).astype(np.int64)

    def __len__(self) -> int:
        return len(self.first)

    @classmethod
    def joined(cls, parts: list[MinutePositions]) -> MinutePositions:
        if len(parts) == 1:
            return parts[0]
        joined = object.__new__(cls)
        for name in ("first", "last", "head", "tail"):
            setattr(joined, name, np.concatenate([getattr(p, name) for p in parts]))
        return joined

    def take(self, mask: np.ndarray) -> MinutePositions:
        taken = object.__new__(MinutePositions)
        taken.first, taken.last = self.first[mask], self.last[mask]
        taken.head, taken.tail = self.head[mask], self.tail[mask]
        return taken


def quarters_of(cu: np.ndarray) -> np.ndarray:
    """CU sizes in quarters of a CU, as integers (every size is a multiple of 0.25)."""
    quarters = np.rint(cu * 4).astype(np.int64)
    if not np.array_equal(quarters, cu * 4):
        raise ValueError("CU levels must be multiples of 0.25")
    return quarters


class MinuteSums:
    """Per minute of a run: nanoseconds on and quarter-CU nanoseconds (CU sizes are
    multiples of 0.25) of intervals added a few at a time, in exact integers.

    The integrals of `per_minute_integrals`, rounded to the nanosecond per interval end:
    each interval adds its weight to a difference array at the minutes holding its
    start and end (a running sum at the end counts the whole minutes between, at 60 s
    each), and its partial minutes at both ends to a second array. Adding is integer
    addition, so the totals do not depend on the order the intervals come in: a fleet
    computed in any order, or split across processes, gives the same series to the
    last bit. Nothing grows with the intervals added: four arrays of one entry a
    minute, and the intervals of the last few computes: they are added `BATCH` at a
    time, since a compute's few thousand intervals spread over a month's arrays would
    each touch memory of their own (a cache miss apiece).
    """

    def __init__(self, duration_s: float = 0.0, with_cu: bool = True) -> None:
        size = math.ceil(duration_s / MINUTE_S) + 1  # an interval may end at the end itself
        self.whole = np.zeros(size, np.int64)  # intervals open over each minute, in steps
        self.partial = np.zeros(size, np.int64)
        self.with_cu = with_cu
        self.whole_q = np.zeros(size if with_cu else 0, np.int64)
        self.partial_q = np.zeros(size if with_cu else 0, np.int64)
        self._pending: list[tuple[MinutePositions, np.ndarray | None]] = []
        self._pending_n = 0

    def _fit(self, size: int) -> None:
        """Room for minutes up to `size` (a run's later stages reach further)."""
        if size <= len(self.whole):
            return
        size = max(size, 2 * len(self.whole))
        for name in ("whole", "partial", *(("whole_q", "partial_q") if self.with_cu else ())):
            grown = np.zeros(size, np.int64)
            old = getattr(self, name)
            grown[:len(old)] = old
            setattr(self, name, grown)

    def add(self, start: np.ndarray, end: np.ndarray, cu: np.ndarray | None = None) -> None:
        """Intervals [start, end) within [0, duration_s), at sizes `cu` (given when the
        sums have CU)."""
        self.add_at(MinutePositions(start, end), None if cu is None else quarters_of(cu))

    def add_at(self, at: MinutePositions, quarters: np.ndarray | None = None) -> None:
        """Intervals placed on the minutes (`MinutePositions`), at `quarters` quarter-CU
        (given when the sums have CU): the same intervals can go to several sums."""
        if not len(at):
            return
        if self.with_cu and quarters is None:
            raise ValueError("these minute sums have CU: give the intervals' sizes")
        self._pending.append((at, quarters))
        self._pending_n += len(at)
        if self._pending_n >= BATCH:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        at = MinutePositions.joined([p for p, _ in self._pending])
        quarters = np.concatenate([q for _, q in self._pending]) if self.with_cu else None
        self._pending, self._pending_n = [], 0
        self._fit(int(at.last.max()) + 1)
        np.add.at(self.whole, at.first, 1)
        np.subtract.at(self.whole, at.last, 1)
        np.add.at(self.partial, at.last, at.tail)
        np.subtract.at(self.partial, at.first, at.head)
        if quarters is None:
            return
        np.add.at(self.whole_q, at.first, quarters)
        np.subtract.at(self.whole_q, at.last, quarters)
        np.add.at(self.partial_q, at.last, quarters * at.tail)
        np.subtract.at(self.partial_q, at.first, quarters * at.head)

    def on_ns(self, duration_s: float) -> np.ndarray:
        """Per minute of a run of `duration_s`, nanoseconds on (over the intervals added)."""
        return self._series("whole", "partial", duration_s)

    def quarter_ns(self, duration_s: float) -> np.ndarray:
        """Per minute of a run of `duration_s`, quarter-CU nanoseconds (sums with CU)."""
        return self._series("whole_q", "partial_q", duration_s)

    def _series(self, whole_name: str, partial_name: str, duration_s: float) -> np.ndarray:
        self._flush()
        n_minutes = math.ceil(duration_s / MINUTE_S)
        self._fit(n_minutes + 1)
        whole, partial = getattr(self, whole_name), getattr(self, partial_name)
        return (np.cumsum(whole[:n_minutes]) * (60 * NS) + partial[:n_minutes])


def per_minute_ns(start: np.ndarray, end: np.ndarray, cu: np.ndarray, duration_s: float
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Per minute: nanoseconds on, and quarter-CU nanoseconds, of these intervals
    (`MinuteSums`)."""
    sums = MinuteSums(duration_s)
    sums.add(start, end, cu)
    return sums.on_ns(duration_s), sums.quarter_ns(duration_s)


def seconds_of(fleet_ns: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(compute-seconds on, CU-seconds) per minute from `per_minute_ns`'s integers."""
    on_ns, quarter_ns = fleet_ns
    return on_ns / NS, quarter_ns / (4 * NS)

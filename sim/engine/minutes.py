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
    minute.
    """

    def __init__(self, duration_s: float = 0.0, with_cu: bool = True) -> None:
        size = math.ceil(duration_s / MINUTE_S) + 1  # an interval may end at the end itself
        self.whole = np.zeros(size, np.int64)  # intervals open over each minute, in steps
        self.partial = np.zeros(size, np.int64)
        self.with_cu = with_cu
        self.whole_q = np.zeros(size if with_cu else 0, np.int64)
        self.partial_q = np.zeros(size if with_cu else 0, np.int64)

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
        self._fit(int(at.last.max()) + 1)
        np.add.at(self.whole, at.first, 1)
        np.subtract.at(self.whole, at.last, 1)
        np.add.at(self.partial, at.last, at.tail)
        np.subtract.at(self.partial, at.first, at.head)
        if not self.with_cu:
            return
        assert quarters is not None
        np.add.at(self.whole_q, at.first, quarters)
        np.subtract.at(self.whole_q, at.last, quarters)
        np.add.at(self.partial_q, at.last, quarters * at.tail)
        np.subtract.at(self.partial_q, at.first, quarters * at.head)

    def on_ns(self, duration_s: float) -> np.ndarray:
        """Per minute of a run of `duration_s`, nanoseconds on (over the intervals added)."""
        return self._series(self.whole, self.partial, duration_s)

    def quarter_ns(self, duration_s: float) -> np.ndarray:
        """Per minute of a run of `duration_s`, quarter-CU nanoseconds (sums with CU)."""
        return self._series(self.whole_q, self.partial_q, duration_s)

    def _series(self, whole: np.ndarray, partial: np.ndarray, duration_s: float) -> np.ndarray:
        n_minutes = math.ceil(duration_s / MINUTE_S)
        self._fit(n_minutes + 1)
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

"""Per-minute integrals of intervals: the fleet time series, without a loop over minutes."""

from __future__ import annotations

import math

import numpy as np

MINUTE_S = 60.0


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


NS = 1_000_000_000  # per second


def per_minute_ns(start: np.ndarray, end: np.ndarray, cu: np.ndarray, duration_s: float
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Per minute: nanoseconds on, and quarter-CU nanoseconds (CU sizes are multiples of 0.25).

    The same integrals as `per_minute_integrals`, rounded to the nanosecond per interval
    end and summed in integers: the totals do not depend on the order the intervals are
    added in, so a fleet computed in any order, or split across processes, gives the
    same series to the last bit.
    """
    n_minutes = math.ceil(duration_s / MINUTE_S)
    size = n_minutes + 1
    first = np.floor(start / MINUTE_S).astype(np.int64)
    last = np.floor(end / MINUTE_S).astype(np.int64)
    head = np.rint((start - first * MINUTE_S) * NS).astype(np.int64)
    tail = np.rint((end - last * MINUTE_S) * NS).astype(np.int64)
    quarters = np.rint(cu * 4).astype(np.int64)
    if not np.array_equal(quarters, cu * 4):
        raise ValueError("CU levels must be multiples of 0.25")
    out = []
    for w in (np.ones_like(quarters), quarters):
        whole = np.zeros(size, np.int64)
        np.add.at(whole, first, w)
        np.subtract.at(whole, last, w)
        partial = np.zeros(size, np.int64)
        np.add.at(partial, last, w * tail)
        np.subtract.at(partial, first, w * head)
        out.append((np.cumsum(whole) * (60 * NS) + partial)[:n_minutes])
    return out[0], out[1]


def seconds_of(fleet_ns: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(compute-seconds on, CU-seconds) per minute from `per_minute_ns`'s integers."""
    on_ns, quarter_ns = fleet_ns
    return on_ns / NS, quarter_ns / (4 * NS)

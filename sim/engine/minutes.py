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

"""The CU in use by a set of computes as a step function, for its peak at one instant.

Each on-interval [start, end) at c CU steps the level up by c at its start and down at
its end. Kept as the instants where the level changes and the change there, in quarter
CU (sizes are multiples of 0.25 CU, so the sums are exact integers), reduced to one
entry per instant: an end and a start at one instant net out (a compute that resizes
is never counted twice). Steps of two sets join by concatenation, so a fleet split
across processes has the peak a single process finds.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

Steps = tuple[np.ndarray, np.ndarray]  # (instants, sorted; quarter-CU changes, int64)
NO_STEPS: Steps = (np.empty(0, dtype=np.float64), np.empty(0, dtype=np.int64))


def quarters(cu: np.ndarray) -> np.ndarray:
    """CU as whole quarters; ValueError for a level that is not a multiple of 0.25."""
    q = np.asarray(cu, dtype=np.float64) * 4.0
    whole = np.rint(q)
    if not np.array_equal(whole, q):
        raise ValueError("CU levels that are not multiples of 0.25")
    return whole.astype(np.int64)


def steps_of(start: np.ndarray, end: np.ndarray, cu: np.ndarray) -> Steps:
    """The steps of on-intervals [start, end) at `cu` (empty intervals change nothing)."""
    keep = np.asarray(end) > np.asarray(start)
    q = quarters(np.asarray(cu)[keep])
    return reduced(np.concatenate((np.asarray(start, dtype=np.float64)[keep],
                                   np.asarray(end, dtype=np.float64)[keep])),
                   np.concatenate((q, -q)))


def reduced(instants: np.ndarray, changes: np.ndarray) -> Steps:
    """One entry per instant, in time order, the changes there summed; none that is 0."""
    if not len(instants):
        return NO_STEPS
    times, inverse = np.unique(instants, return_inverse=True)
    summed = np.zeros(len(times), dtype=np.int64)
    np.add.at(summed, inverse, changes)
    keep = summed != 0
    return times[keep], summed[keep]


def joined(parts: Iterable[Steps]) -> Steps:
    """The steps of the union of several sets of computes."""
    chosen = [p for p in parts if len(p[0])]
    if not chosen:
        return NO_STEPS
    if len(chosen) == 1:
        return chosen[0]
    return reduced(np.concatenate([t for t, _ in chosen]), np.concatenate([c for _, c in chosen]))


def peak_cu(steps: Steps) -> float:
    """The highest level the steps reach, in CU (0 for none)."""
    _, changes = steps
    return float(max(0, int(np.cumsum(changes).max()))) / 4.0 if len(changes) else 0.0

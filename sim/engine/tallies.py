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
(handed to another run) leaves nothing in them either.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

#: operations are counted per hour of their creation stamp (microseconds, as the rows')
HOUR_US = 3_600_000_000

#: (hour of creation, action, status, operations, failed attempts)
OperationCount = tuple[int, str, str, int, int]


def creation_us(created_s: np.ndarray) -> np.ndarray:
    """An operation's creation instant rounded to the microsecond, as its row's stamp is."""
    return np.round(np.asarray(created_s, dtype=np.float64) * 1_000_000).astype(np.int64)


class OperationTally:
    """Operations counted by (hour created, action, status), with their failed attempts."""

    def __init__(self) -> None:
        self.counts: dict[tuple[int, str, str], list[int]] = {}

    def add(self, actions: np.ndarray, statuses: np.ndarray, failures: np.ndarray,
            created_s: np.ndarray, count_from_s: float = 0.0) -> None:
        """Count operations given as columns of names (or of anything `np.unique` sorts);
        `created_s` and `count_from_s` as for `add_codes`."""
        if not len(actions):
            return
        action_names, action_codes = np.unique(np.asarray(actions), return_inverse=True)
        status_names, status_codes = np.unique(np.asarray(statuses), return_inverse=True)
        self.add_codes(action_codes, action_names, status_codes, status_names,
                       np.asarray(failures), created_s, count_from_s)

    def add_codes(self, action_codes: np.ndarray, action_names: Sequence,
                  status_codes: np.ndarray, status_names: Sequence, failures: np.ndarray,
                  created_s: np.ndarray, count_from_s: float = 0.0) -> None:
        """Count operations given as codes into `action_names` and `status_names`, created
        at `created_s` of the engine's clock: only those from `count_from_s` on (the first
        instant), as the rows keep only those (`sim.engine.first_instant`)."""
        us = creation_us(created_s)
        t0_us = round(count_from_s * 1_000_000)
        if count_from_s:
            kept = us >= t0_us
            action_codes, status_codes = action_codes[kept], status_codes[kept]
            failures, us = failures[kept], us[kept]
        if not len(action_codes):
            return
        hours = (us - t0_us) // HOUR_US
        n_actions, n_statuses = len(action_names), len(status_names)
        low = int(hours.min())
        key = ((hours - low) * n_actions + np.asarray(action_codes, dtype=np.int64)) \
            * n_statuses + np.asarray(status_codes, dtype=np.int64)
        keys, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
        failed = np.bincount(inverse, weights=np.asarray(failures, dtype=np.float64),
                             minlength=len(keys))
        for k, n, f in zip(keys.tolist(), counts.tolist(), failed.tolist(), strict=True):
            rest, status = divmod(k, n_statuses)
            hour, action = divmod(rest, n_actions)
            entry = self.counts.setdefault(
                (hour + low, str(action_names[action]), str(status_names[status])), [0, 0])
            entry[0] += n
            entry[1] += round(f)

    def rows(self) -> list[OperationCount]:
        return [(h, a, s, n, f) for (h, a, s), (n, f) in sorted(self.counts.items())]


def summed_counts(parts: Iterable[Sequence[OperationCount]]) -> list[OperationCount]:
    """Operation counts of several tallies (or runs) as one, in a fixed order."""
    total = OperationTally()
    for rows in parts:
        for hour, action, status, n, failed in rows:
            entry = total.counts.setdefault((hour, action, status), [0, 0])
            entry[0] += n
            entry[1] += failed
    return total.rows()


def joined_spans(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One compute's on-intervals (in time order, not overlapping) with the ones that
    follow each other without a gap made one: the same count of computes on at every
    instant, in fewer spans (a compute that changes size starts a new interval)."""
    if len(start) < 2:
        return start.copy(), end.copy()
    joined = start[1:] == end[:-1]
    return start[np.r_[True, ~joined]], end[np.r_[~joined, True]]

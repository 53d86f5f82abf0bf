"""The usage ledger: what each compute consumed, hour by hour, for the consumption history.

Fed from the state intervals of computes as they close (the SimPy engine's
`ComputeRuntime.close_interval` and the compute kernel's interval rows), so
both paths fill it alike and nothing rescans rows later. Per compute and per
UTC hour it keeps CU-seconds and active seconds: two numbers a compute-hour on,
and no more than about 13 months of hours a compute (older ones are folded into one);
a served world folds hours older than `HOURLY_S` into days.

Time before `count_from_s` (a served scenario's warm-up) is counted nowhere, as
in the run's own figures, so the ledger's total is the run's CU-seconds.

Plain data only (dicts of lists of floats): the world is saved as a data tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from sim.rules.states import ComputeState

if TYPE_CHECKING:
    from sim.engine.model import Compute

HOUR_S = 3600.0
#: hours kept one by one: the consumption history reaches a year back at most; older
#: hours are folded into one cell per compute (their sum still counts in the totals)
KEEP_HOURS = 367 * 24
PRUNE_EVERY_HOURS = 30 * 24
#: how far back a served world keeps hours one by one (hourly frames reach 168 hours)
HOURLY_S = 8 * 86_400.0
CU_S = 0  # index in a ledger cell: CU-seconds
ACTIVE_S = 1  # index in a ledger cell: seconds on (any size)
IDLE = ComputeState.IDLE.value


@dataclass
class UsageLedger:
    """Per compute id: hour index -> [CU-seconds, active seconds].

    Hour `h` is the UTC hour starting `h * 3600 - offset_s` simulated seconds
    after the clock's start (`offset_s`: how far past a whole hour the clock starts)."""

    offset_s: float
    count_from_s: float = 0.0
    computes: dict[str, dict[int, list[float]]] = field(default_factory=dict)
    next_prune: int | None = None  # the hour at which older hours are next folded
    first_hour_of_day: int = 0  # the UTC hour of day of hour 0

    def hour_of(self, t: float) -> int:
        return int((t + self.offset_s) // HOUR_S)

    def hour_start(self, h: int) -> float:
        """The simulated second at which hour `h` begins."""
        return h * HOUR_S - self.offset_s

    def add(self, compute_id: str, cu: float, start: float, end: float) -> None:
        """A compute on at size `cu` over [start, end), split at whole hours."""
        start = max(start, self.count_from_s)
        if end <= start:
            return
        hours = self.computes.setdefault(compute_id, {})
        h = self.hour_of(start)
        if self.next_prune is None:
            self.next_prune = h + PRUNE_EVERY_HOURS
        elif h >= self.next_prune:
            self._fold_before(h - KEEP_HOURS)
            self.next_prune = h + PRUNE_EVERY_HOURS
        while start < end:
            cut = min(end, self.hour_start(h + 1))
            if cut > start:
                cell = hours.get(h)
                if cell is None:
                    cell = hours[h] = [0.0, 0.0]
                span = cut - start
                cell[CU_S] += cu * span
                cell[ACTIVE_S] += span
            start = cut
            h += 1

    def _fold_before(self, cut: int) -> None:
        """Fold every compute's cells before hour `cut` into one cell at `cut - 1`."""
        for hours in self.computes.values():
            old = [h for h in hours if h < cut]
            if not old:
                continue
            cell = [0.0, 0.0]
            for h in sorted(old):
                cu_s, active_s = hours.pop(h)
                cell[CU_S] += cu_s
                cell[ACTIVE_S] += active_s
            hours[cut - 1] = cell

    def fold_days(self, before: float) -> None:
        """Fold the hours of whole UTC days that ended before simulated second `before` into
        one cell a day, at the day's first hour (a served world, once a day: hourly frames
        reach back a week at most, so older hours are only ever summed by whole days)."""
        cut = self.hour_of(before)
        cut -= (self.first_hour_of_day + cut) % 24  # the first hour of a day
        for hours in self.computes.values():
            old = [h for h in hours if h < cut and (h + self.first_hour_of_day) % 24]
            if not old:
                continue
            for h in sorted(old):
                cu_s, active_s = hours.pop(h)
                cell = hours.setdefault(h - (h + self.first_hour_of_day) % 24, [0.0, 0.0])
                cell[CU_S] += cu_s
                cell[ACTIVE_S] += active_s

    def add_many(self, compute_id: str, cu: np.ndarray, start: np.ndarray,
                 end: np.ndarray) -> None:
        """The on-intervals of one compute as columns (the kernel's rows)."""
        for size, a, b in zip(cu.tolist(), start.tolist(), end.tolist(), strict=True):
            self.add(compute_id, size, a, b)

    def hours(self, computes: list[Compute], now: float) -> dict[int, list[float]]:
        """The computes' cells summed per hour (hour -> [CU-seconds, active seconds]), with
        the interval each has open at `now` (closed only by its next change)."""
        still_open = UsageLedger(self.offset_s, self.count_from_s)
        for c in computes:
            rt = c.runtime
            if rt is not None and not c.deleted and not rt.external and rt.iv_state != IDLE:
                still_open.add(c.id, rt.iv_cu, rt.iv_start, now)
        total: dict[int, list[float]] = {}
        for ledger in (self, still_open):
            self._sum_into(total, ledger, [c.id for c in computes])
        return total

    @staticmethod
    def _sum_into(total: dict[int, list[float]], ledger: UsageLedger,
                  compute_ids: list[str]) -> None:
        for cid in compute_ids:
            for h, (cu_s, active_s) in ledger.computes.get(cid, {}).items():
                cell = total.setdefault(h, [0.0, 0.0])
                cell[CU_S] += cu_s
                cell[ACTIVE_S] += active_s


def whole_seconds(hours: dict[int, list[float]], index: int,
                  bounds: list[tuple[int, int]]) -> list[int]:
    """Whole seconds per time frame [first hour, end hour) of `bounds` (in order).

    Each frame gets round(sum up to its end) - round(sum up to its start), sums taken
    from the first hour on: frames of any width then add up to the rounded total, so
    hourly, daily and monthly answers agree to the second with the run's figure."""
    ordered = sorted(hours)
    values = [hours[h][index] for h in ordered]
    cum = np.concatenate(([0.0], np.cumsum(values))) if values else np.zeros(1)
    out = []
    for first, end in bounds:
        lo = int(np.searchsorted(ordered, first))
        hi = int(np.searchsorted(ordered, end))
        out.append(int(round(cum[hi])) - int(round(cum[lo])))
    return out

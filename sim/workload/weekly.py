"""A weekly cycle over any arrival kind: one factor per day of the week (UTC).

A business load that runs on weekdays only is the same daily profile with the
weekend's days at a fraction of it. `Weekly` multiplies the rate of the process
it wraps by the factor of each instant's day: the process is drawn at its rate
times the largest factor (`scaled`), then each arrival is kept with probability
factor / largest. Thinning a Poisson stream so is exact; for a bursty source it
thins the bursts; a periodic job or a trace can only be thinned, so their
factors are at most 1 (a day at 0.5 keeps each run or each traced arrival with
probability one half).

The thinning draws come from the arrival stream itself, block by block right
after the block's arrivals, so every road that reads the arrivals (the SimPy
engine's feed in windows, the compute kernel at once) gets the same instants.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from sim.workload.arrivals import Bursty, Diurnal, Poisson
from sim.workload.streams import DAY_S, ArrivalProcess, Block, check_number, grid

WEEK_S = 7 * DAY_S
DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def scaled(process: ArrivalProcess, k: float) -> ArrivalProcess:
    """`process` with every rate multiplied by `k` (>= 1 here): the kinds with a rate."""
    if k == 1.0:
        return process
    if isinstance(process, Poisson):
        return Poisson(process.per_hour * k)
    if isinstance(process, Diurnal):
        if process.hourly is not None:
            return dataclasses.replace(process, hourly=tuple(r * k for r in process.hourly))
        return dataclasses.replace(process, peak_per_hour=(process.peak_per_hour or 0.0) * k,
                                   trough_per_hour=(process.trough_per_hour or 0.0) * k)
    if isinstance(process, Bursty):
        return dataclasses.replace(process, on_per_hour=process.on_per_hour * k,
                                   off_per_hour=process.off_per_hour * k)
    raise ValueError(f"a {type(process).__name__.lower()} source can be thinned, not "
                     f"multiplied: its weekly factors must be at most 1")


@dataclass(frozen=True)
class Weekly(ArrivalProcess):
    """`process` with its rate times `factors[d]` on day d of the week (0: Monday, UTC).

    `start_week_offset_s` is the scenario start's seconds after Monday 00:00 UTC, so
    that t = 0 falls on the right day."""

    process: ArrivalProcess
    factors: tuple[float, ...]
    start_week_offset_s: float = 0.0
    #: derived in `__post_init__`: the process drawn at the top factor's rate (None: every
    #: factor 0), and each day's share of it kept
    _drawn: ArrivalProcess | None = field(init=False, repr=False, compare=False)
    _keep: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        factors = tuple(check_number("weekly factor", v) for v in self.factors)
        if len(factors) != 7:
            raise ValueError(f"a weekly cycle needs 7 factors (Monday first), got {len(factors)}")
        object.__setattr__(self, "factors", factors)
        offset = check_number("start_week_offset_s", self.start_week_offset_s)
        object.__setattr__(self, "start_week_offset_s", offset)
        top = max(factors)
        # drawn at the top factor's rate; the top day keeps every arrival (no draw)
        object.__setattr__(self, "_drawn", scaled(self.process, top) if top > 0 else None)
        keep = np.array([v / top if top > 0 else 0.0 for v in factors], dtype=np.float64)
        keep.setflags(write=False)
        object.__setattr__(self, "_keep", keep)

    def day(self, t: np.ndarray) -> np.ndarray:
        """The day of the week (0: Monday) of simulated instants t."""
        return (np.floor((np.asarray(t, dtype=np.float64) + self.start_week_offset_s) / DAY_S)
                % 7).astype(np.int64)

    def _blocks(self, rng: np.random.Generator, t0: float, t1: float) -> Iterator[Block]:
        drawn = self._drawn
        if drawn is None:  # every factor 0: nothing arrives, nothing is drawn
            for _, end in grid(t0, t1):
                yield end, np.empty(0, dtype=np.float64)
            return
        for end, arrivals in drawn._blocks(rng, t0, t1):
            if arrivals.size:
                keep = self._keep[self.day(arrivals)]
                thin = keep < 1.0
                n = int(np.count_nonzero(thin))
                if n:  # one draw per arrival of a day below the top, in order
                    kept = np.ones(arrivals.size, dtype=bool)
                    kept[thin] = rng.random(n) < keep[thin]
                    arrivals = arrivals[kept]
            yield end, arrivals

    def mean_rate_per_s(self, t0: float, t1: float) -> float:
        if t1 <= t0:
            return self.factors[int(self.day(np.array([t0]))[0])] * \
                self.process.mean_rate_per_s(t0, t0)
        total, a = 0.0, t0
        while a < t1:  # day by day of the scenario's week
            into = (a + self.start_week_offset_s) % DAY_S
            b = min(t1, a + DAY_S - into)
            if b <= a:  # rounding at a day's edge
                b = min(t1, math.nextafter(a, math.inf))
            factor = self.factors[int(self.day(np.array([a]))[0])]
            if factor:
                total += factor * self.process.mean_rate_per_s(a, b) * (b - a)
            a = b
        return total / (t1 - t0)


def weekly(process: ArrivalProcess, factors: tuple[float, ...] | None,
           start_week_offset_s: float) -> ArrivalProcess:
    """`process` with a weekly cycle, or itself when there is none (or every day is 1)."""
    if factors is None or all(v == 1.0 for v in factors):
        return process
    return Weekly(process, tuple(factors), start_week_offset_s)

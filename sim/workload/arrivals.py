"""Arrival processes: when connections reach a compute, in seconds since the scenario start.

Five kinds (Poisson, Diurnal, Bursty, Periodic, Replay), each a frozen
dataclass with `times(rng, t0, t1)` and `mean_rate_per_s(t0, t1)`; `chunks`
yields a long window piece by piece. How the Generator is consumed (and why
results do not depend on the chunk size) is told in `sim.workload.streams`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import numpy as np

from sim.workload.streams import (
    BLOCK_S,
    DAY_S,
    EMPTY,
    HOUR_S,
    ArrivalProcess,
    Block,
    MemorylessProcess,
    SpreadProcess,
    below,
    check_number,
    check_window,
    chunks,
    grid,
    sorted_uniform,
)
from sim.workload.traces import read_arrivals_csv

__all__ = [
    "BLOCK_S",
    "ArrivalProcess",
    "Bursty",
    "Delayed",
    "Diurnal",
    "Periodic",
    "Poisson",
    "Replay",
    "chunks",
]


@dataclass(frozen=True)
class Poisson(MemorylessProcess):
    """Homogeneous Poisson arrivals at `per_hour` on average."""

    per_hour: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "per_hour", check_number("per_hour", self.per_hour))

    def _draw(self, rng: np.random.Generator, a: float, b: float) -> np.ndarray:
        return sorted_uniform(rng, a, b, int(rng.poisson(self.per_hour / HOUR_S * (b - a))))

    def mean_rate_per_s(self, t0: float, t1: float) -> float:
        return self.per_hour / HOUR_S


@dataclass(frozen=True)
class Diurnal(MemorylessProcess):
    """A daily profile: a cosine from trough to peak (at `peak_hour` UTC), or 24 hourly rates.

    `start_hour_offset_s` is the scenario start's seconds after UTC midnight,
    so that t = 0 falls at the right hour of day. Drawn by thinning a Poisson
    stream at the peak rate, which is exact for a bounded rate.
    """

    peak_per_hour: float | None = None
    trough_per_hour: float | None = None
    peak_hour: float | None = None
    hourly: tuple[float, ...] | None = None
    start_hour_offset_s: float = 0.0

    def __post_init__(self) -> None:
        put = object.__setattr__
        offset = check_number("start_hour_offset_s", self.start_hour_offset_s)
        put(self, "start_hour_offset_s", offset)
        cosine = (self.peak_per_hour, self.trough_per_hour, self.peak_hour)
        if self.hourly is not None:
            if any(v is not None for v in cosine):
                raise ValueError("give either hourly rates or peak/trough/peak_hour, not both")
            rates = tuple(check_number("hourly rate", v) for v in self.hourly)
            if len(rates) != 24:
                raise ValueError(f"hourly needs 24 rates (one per UTC hour), got {len(rates)}")
            put(self, "hourly", rates)
            return
        if any(v is None for v in cosine):
            raise ValueError("give peak_per_hour, trough_per_hour and peak_hour, or hourly")
        peak = check_number("peak_per_hour", self.peak_per_hour)
        trough = check_number("trough_per_hour", self.trough_per_hour)
        hour = check_number("peak_hour", self.peak_hour)
        if trough > peak:
            raise ValueError(f"trough_per_hour {trough:g} is above peak_per_hour {peak:g}")
        if hour >= 24:
            raise ValueError(f"peak_hour must be in [0, 24), got {hour:g}")
        put(self, "peak_per_hour", peak)
        put(self, "trough_per_hour", trough)
        put(self, "peak_hour", hour)

    @functools.cached_property
    def _hour_table(self) -> np.ndarray:
        # a 25th entry, the last hour's rate again: the hour of day is 24.0 when
        # (t % DAY_S) / HOUR_S rounds up, and it is read as the last hour
        return np.asarray((*(self.hourly or ()), *(self.hourly or ())[-1:]), dtype=np.float64)

    @property
    def max_per_hour(self) -> float:
        return max(self.hourly) if self.hourly is not None else float(self.peak_per_hour or 0.0)

    def rate_per_hour(self, t: np.ndarray | float) -> np.ndarray:
        """The instantaneous rate (arrivals per hour) at simulated instants t."""
        t = np.asarray(t, dtype=np.float64)
        return self._rates(t.ravel()).reshape(t.shape)

    def _rates(self, t: np.ndarray, lo: float = -math.inf, hi: float = math.inf
               ) -> np.ndarray:
        """`rate_per_hour` of a 1-d array whose instants are in [lo, hi], as a new array.

        Each step runs in place, in the order of the formula (hence the same numbers):
        blocks are small, and numpy's fixed cost per call and per temporary is much of
        the cost."""
        h = t + self.start_hour_offset_s
        if max(-lo, hi) + self.start_hour_offset_s < _EXACT_BELOW:
            _day_remainder(h)  # numpy's % runs a libm fmod per number: the slowest step
        else:
            h %= DAY_S
        h /= HOUR_S  # the hour of day, in [0, 24]
        if self.hourly is not None:
            return self._hour_table[h.astype(np.int64)]
        peak, trough = float(self.peak_per_hour or 0.0), float(self.trough_per_hour or 0.0)
        # trough + (peak - trough) * 0.5 * (1 + cos(2 pi (hour - peak_hour) / 24))
        h -= float(self.peak_hour or 0.0)
        h *= 2.0 * np.pi
        h /= 24.0
        np.cos(h, out=h)
        h += 1.0
        h *= 0.5
        h *= peak - trough
        h += trough
        return h

    def _candidates(self, rng: np.random.Generator, a: float, b: float
                    ) -> tuple[np.ndarray, np.ndarray]:
        """A block's draws: the instants of a Poisson stream at the top rate, and for each a
        level in [0, top); an instant is kept where its level is below the rate there."""
        top = self.max_per_hour
        n = int(rng.poisson(top / HOUR_S * (b - a)))
        # the instants and then their levels in one call: numpy draws 2n numbers as n and n
        u = rng.random(2 * n)
        t, level = u[:n], u[n:]
        t *= b - a  # a + (b - a) * u, in place
        t += a
        level *= top
        return t, level

    def _draw(self, rng: np.random.Generator, a: float, b: float) -> np.ndarray:
        t, level = self._candidates(rng, a, b)
        return _thinned(a, b, t, level, self._rates(t, a, b))

    def times(self, rng: np.random.Generator, t0: float, t1: float) -> np.ndarray:
        # the blocks' candidates as `_blocks` draws them, one block after the other; then the
        # rate at all of them in one pass (it draws nothing), and each block thinned with it
        check_window(t0, t1)
        blocks = [(a, b, *self._candidates(rng, a, b)) for a, b in grid(t0, t1)]
        if not blocks:
            return EMPTY.copy()
        rates = self._rates(np.concatenate([t for _, _, t, _ in blocks]), t0, t1)
        parts, i = [], 0
        for a, b, t, level in blocks:
            parts.append(_thinned(a, b, t, level, rates[i : i + t.size]))
            i += t.size
        return np.concatenate(parts)

    def _expected(self, t: float) -> float:
        """Expected arrivals from UTC midnight of the start day to simulated instant t."""
        x = (t + self.start_hour_offset_s) / HOUR_S  # hours since that midnight
        if self.hourly is not None:
            days, rest = divmod(x, 24.0)
            i = min(int(rest), 23)
            return days * sum(self.hourly) + sum(self.hourly[:i]) + self.hourly[i] * (rest - i)
        peak, trough = float(self.peak_per_hour or 0.0), float(self.trough_per_hour or 0.0)
        amp, w, p = (peak - trough) / 2.0, 2.0 * math.pi / 24.0, float(self.peak_hour or 0.0)
        return (trough + amp) * x + amp / w * (math.sin(w * (x - p)) + math.sin(w * p))

    def mean_rate_per_s(self, t0: float, t1: float) -> float:
        if t1 == t0:
            return float(self.rate_per_hour(t0)) / HOUR_S
        return (self._expected(t1) - self._expected(t0)) / (t1 - t0)


#: below this, `_day_remainder` is numpy's % DAY_S to the bit (2**52 s: 142 million years)
_EXACT_BELOW = 2.0**52


def _day_remainder(x: np.ndarray) -> np.ndarray:
    """x % DAY_S in place, for |x| < 2**52: the same numbers at a sixth of the cost.

    With m the exact floor of x / D, numpy's x % D is x - m D rounded once (fmod is exact;
    below 0 it adds D, rounding once). Here k = floor(x / D) is m, or m + 1 when x / D
    rounds up to an integer; D k is an integer below 2**53, so exact. For k = m, x - D k
    is x - m D rounded once; for k = m + 1 it is exact (x is within a hair of D k,
    Sterbenz) and negative, and adding D gives x - m D rounded once."""
    k = x / DAY_S
    np.floor(k, out=k)
    k *= DAY_S
    np.subtract(x, k, out=x)
    return np.add(x, DAY_S, out=x, where=x < 0)


def _thinned(a: float, b: float, t: np.ndarray, level: np.ndarray, rates: np.ndarray
             ) -> np.ndarray:
    """A block's candidate instants kept where their level is below the rate, sorted."""
    t = t[level < rates]
    t.sort()
    return below(t, a, b)


@dataclass(frozen=True)
class Bursty(ArrivalProcess):
    """Markov-modulated Poisson: exponential on and off periods, each with its own rate.

    Each call starts in the stationary state (on with probability
    mean_on / (mean_on + mean_off)); exponential periods make that exact.
    """

    on_per_hour: float
    off_per_hour: float
    mean_on_s: float
    mean_off_s: float

    def __post_init__(self) -> None:
        for name in ("on_per_hour", "off_per_hour"):
            object.__setattr__(self, name, check_number(name, getattr(self, name)))
        for name in ("mean_on_s", "mean_off_s"):
            object.__setattr__(self, name, check_number(name, getattr(self, name), positive=True))

    @property
    def p_on(self) -> float:
        return self.mean_on_s / (self.mean_on_s + self.mean_off_s)

    def mean_rate_per_s(self, t0: float, t1: float) -> float:
        return (self.p_on * self.on_per_hour + (1 - self.p_on) * self.off_per_hour) / HOUR_S

    def _blocks(self, rng: np.random.Generator, t0: float, t1: float) -> Iterator[Block]:
        means = (self.mean_off_s, self.mean_on_s)  # by state, off (False) or on (True)
        rates = (self.off_per_hour / HOUR_S, self.on_per_hour / HOUR_S)
        unit_exp = _unit_exponentials(rng)
        on = bool(rng.random() < self.p_on)
        switch_at = t0 + means[on] * next(unit_exp)
        for a, b in grid(t0, t1):
            # the block's periods as (start, length, rate); a period at rate 0 draws nothing
            # (numpy's Poisson returns 0 for a mean of 0 without touching the generator), so
            # only the others are kept: the same numbers as drawing them all, and a block
            # that is off throughout costs no draw at all
            periods, s = [], a
            while True:
                e = min(switch_at, b)
                if e > s and rates[on] > 0:
                    periods.append((s, e - s, rates[on]))
                if switch_at >= b:
                    break
                s, on = switch_at, not on
                switch_at += means[on] * next(unit_exp)
            if not periods:
                yield b, EMPTY
                continue
            # one scalar draw per period, in order: the numbers an array of means gives, at a
            # fifteenth of the cost (numpy checks an array of means with reductions)
            counts = [rng.poisson(rate * length) for _, length, rate in periods]
            x = rng.random(sum(counts))  # then start + length * u, period by period
            if len(periods) == 1:  # mostly: in place, as sorted_uniform does
                x *= periods[0][1]
                x += periods[0][0]
            else:
                starts, lengths, _ = np.array(periods).T
                x = starts.repeat(counts) + lengths.repeat(counts) * x
            x.sort()
            yield b, below(x, a, b)


def _unit_exponentials(rng: np.random.Generator, batch: int = 256) -> Iterator[float]:
    # period lengths are drawn in batches: one numpy call per 256 periods, not per period;
    # each made a Python float when it is used (a week uses a handful of the 256)
    while True:
        yield from map(float, rng.standard_exponential(batch))


@dataclass(frozen=True)
class Periodic(SpreadProcess):
    """A cron-like job: arrivals at offset_s + k * every_s (k >= 0), each plus U[0, jitter_s)."""

    every_s: float
    offset_s: float = 0.0
    jitter_s: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "every_s", check_number("every_s", self.every_s, positive=True))
        for name in ("offset_s", "jitter_s"):
            object.__setattr__(self, name, check_number(name, getattr(self, name)))

    @property
    def spread(self) -> float:
        return self.jitter_s

    def anchors(self, lo: float, hi: float) -> np.ndarray:
        k0 = max(0, math.floor((lo - self.offset_s) / self.every_s))
        k1 = max(k0, math.ceil((hi - self.offset_s) / self.every_s) + 1)
        x = self.offset_s + self.every_s * np.arange(k0, k1, dtype=np.float64)
        i, j = np.searchsorted(x, (lo, hi))  # increasing: those in [lo, hi) are x[i:j]
        return x[i:j]


@dataclass(frozen=True, eq=False)
class Replay(SpreadProcess):
    """Arrivals read from a trace: exact instants, or per-minute counts spread in each minute.

    `times_s` are anchors in seconds since the scenario start (sorted on
    construction, an instant repeated once per arrival); `spread_s` is 0 for
    exact instants and 60 for per-minute counts.
    """

    times_s: np.ndarray = field(default_factory=lambda: EMPTY)
    spread_s: float = 0.0

    def __post_init__(self) -> None:
        t = np.sort(np.asarray(self.times_s, dtype=np.float64))
        if not np.isfinite(t).all():
            raise ValueError("replay times must be finite")
        t.setflags(write=False)
        object.__setattr__(self, "times_s", t)
        object.__setattr__(self, "spread_s", check_number("spread_s", self.spread_s))

    @property
    def spread(self) -> float:
        return self.spread_s

    def anchors(self, lo: float, hi: float) -> np.ndarray:
        i, j = np.searchsorted(self.times_s, [lo, hi], side="left")
        return self.times_s[i:j]

    @classmethod
    def from_csv(cls, path: str | Path, start: datetime, format: str | None = None) -> Replay:
        """Read a trace; see `sim.workload.traces.read_arrivals_csv` for the two layouts."""
        anchors, spread = read_arrivals_csv(path, start, format)
        return cls(times_s=anchors, spread_s=spread)


@dataclass(frozen=True)
class Delayed(ArrivalProcess):
    """`process` on a clock that started `by_s` seconds before the scenario's: a run that
    begins with a warm-up reads its workload so, and the warm-up gets the arrivals of the
    time before the start (a diurnal profile keeps its hours, a trace its instants)."""

    process: ArrivalProcess
    by_s: float

    def _blocks(self, rng: np.random.Generator, t0: float, t1: float) -> Iterator[Block]:
        by = self.by_s
        for end, arrivals in self.process._blocks(rng, t0 - by, t1 - by):
            yield end + by, arrivals + by

    def times(self, rng: np.random.Generator, t0: float, t1: float) -> np.ndarray:
        # the process's own `times` (a diurnal one draws its rates in one pass, not a
        # block at a time): the numbers of its blocks, moved alike
        check_window(t0, t1)
        return self.process.times(rng, t0 - self.by_s, t1 - self.by_s) + self.by_s

    def mean_rate_per_s(self, t0: float, t1: float) -> float:
        return self.process.mean_rate_per_s(t0 - self.by_s, t1 - self.by_s)

"""How arrival streams are drawn: the block grid, the base class, and `chunks`.

Every process draws its arrivals block by block on a fixed grid of simulated
time: blocks are [k * BLOCK_S, (k + 1) * BLOCK_S), cut to the requested
window. The grid, not the caller, decides how the Generator is consumed, so

- `chunks(..., chunk_s=X)` gives the same instants for every X, and `times()`
  is by definition their concatenation;
- for Poisson, Diurnal, Periodic without jitter and Replay of instants,
  `times(rng, t0, t2)` equals `times(rng, t0, t1)` followed by
  `times(rng, t1, t2)` on the same Generator whenever t1 is a multiple of
  BLOCK_S. Bursty starts each call afresh in its stationary on/off state, and
  the spread kinds (jittered Periodic, per-minute Replay) redraw the spread
  of the anchors just before t1, so for those two windows are only equal in
  distribution.

The grid only holds if nothing else draws from the Generator between chunks:
give arrivals a stream of their own (the design notes, one named stream per use).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterator

import numpy as np

#: One block of the drawing grid. Part of the definition of every stream:
#: changing it changes the instants a seed gives.
BLOCK_S = 86_400.0
DAY_S = 86_400.0
HOUR_S = 3_600.0

EMPTY = np.empty(0, dtype=np.float64)
Block = tuple[float, np.ndarray]  # (end of the block, its sorted arrivals)


def check_number(name: str, value: object, *, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    v = float(value)
    if not math.isfinite(v) or v < 0 or (positive and v == 0):
        bound = "> 0" if positive else ">= 0"
        raise ValueError(f"{name} must be a finite number {bound}, got {v!r}")
    return v


def check_window(t0: float, t1: float) -> None:
    if not (math.isfinite(t0) and math.isfinite(t1) and t0 <= t1):
        raise ValueError(f"the window [{t0!r}, {t1!r}) must be finite with t0 <= t1")


def grid(t0: float, t1: float) -> Iterator[tuple[float, float]]:
    k = math.floor(t0 / BLOCK_S) + 1
    a = t0
    while a < t1:
        b = min(t1, k * BLOCK_S)
        yield a, b
        a, k = b, k + 1


def sorted_uniform(rng: np.random.Generator, a: float, b: float, n: int) -> np.ndarray:
    x = rng.random(n)
    x *= b - a  # a + (b - a) * u, computed in place: the same numbers, no temporaries
    x += a
    x.sort()
    return below(x, a, b)


def below(x: np.ndarray, a: float, b: float) -> np.ndarray:
    """Sorted instants drawn in [a, b), those at b or past it moved just below b, in place.

    a + (b - a) * u can round up to b itself, and the window is half-open. Sorted, the
    last is the largest: looking at it is cheaper than clamping them all."""
    if x.size and x[-1] >= b:
        np.minimum(x, math.nextafter(b, a), out=x)
    return x


class ArrivalProcess(ABC):
    """Base of the arrival kinds: `times`, `mean_rate_per_s`, and the grid of blocks."""

    def times(self, rng: np.random.Generator, t0: float, t1: float) -> np.ndarray:
        """Sorted float64 arrival instants in [t0, t1) (seconds since the scenario start)."""
        check_window(t0, t1)
        parts = [arr for _, arr in self._blocks(rng, t0, t1)]
        return np.concatenate(parts) if parts else EMPTY.copy()

    @abstractmethod
    def _blocks(self, rng: np.random.Generator, t0: float, t1: float) -> Iterator[Block]:
        """Arrivals block by block on the grid; each block's end and its instants."""

    @abstractmethod
    def mean_rate_per_s(self, t0: float, t1: float) -> float:
        """Expected arrivals per second over [t0, t1) (the rate at t0 when t0 == t1)."""


def chunks(
    process: ArrivalProcess,
    rng: np.random.Generator,
    t0: float,
    t1: float,
    chunk_s: float = DAY_S,
) -> Iterator[np.ndarray]:
    """Arrivals of [t0, t1) as one sorted array per window [t0 + j chunk_s, t0 + (j+1) chunk_s).

    Draws lazily, at most one grid block ahead of the window being yielded, so
    a month of a busy compute is never in memory at once. Empty windows yield
    empty arrays, so the j-th array always belongs to the j-th window.
    """
    check_window(t0, t1)
    if not (math.isfinite(chunk_s) and chunk_s > 0):
        raise ValueError(f"chunk_s must be a finite number > 0, got {chunk_s!r}")
    blocks = process._blocks(rng, t0, t1)
    buf, covered = EMPTY, t0
    n = math.ceil((t1 - t0) / chunk_s)
    for j in range(n):
        end = t1 if j == n - 1 else min(t1, t0 + (j + 1) * chunk_s)
        while covered < end:
            covered, arr = next(blocks)
            buf = np.concatenate((buf, arr)) if buf.size else arr
        cut = int(np.searchsorted(buf, end, side="left"))
        yield buf[:cut]
        buf = buf[cut:]


class MemorylessProcess(ArrivalProcess):
    """A kind whose blocks are drawn independently of one another."""

    def _blocks(self, rng: np.random.Generator, t0: float, t1: float) -> Iterator[Block]:
        for a, b in grid(t0, t1):
            yield b, self._draw(rng, a, b)

    @abstractmethod
    def _draw(self, rng: np.random.Generator, a: float, b: float) -> np.ndarray: ...


class SpreadProcess(ArrivalProcess):
    """Arrivals at anchor instants, each moved later by a uniform draw in [0, spread)."""

    @property
    @abstractmethod
    def spread(self) -> float: ...

    @abstractmethod
    def anchors(self, lo: float, hi: float) -> np.ndarray:
        """Sorted anchors in [lo, hi), an anchor repeated once per arrival it carries."""

    def times(self, rng: np.random.Generator, t0: float, t1: float) -> np.ndarray:
        # the blocks' anchors are the slices of these, and a block's draws follow the
        # previous block's: drawn at once, the very numbers of the blocks, sorted alike
        check_window(t0, t1)
        if t0 == t1:
            return EMPTY.copy()
        x = self.anchors(t0 - self.spread, t1)
        if self.spread > 0:
            u = rng.random(x.size)
            u *= self.spread  # x + spread * u, in place
            u += x
            u.sort()
            x = u
        else:
            x = np.sort(x)  # a copy: the anchors may be the trace's own
        i, j = np.searchsorted(x, (t0, t1))  # sorted: those in [t0, t1) are x[i:j]
        return x[i:j]

    def _blocks(self, rng: np.random.Generator, t0: float, t1: float) -> Iterator[Block]:
        carry = EMPTY
        for i, (a, b) in enumerate(grid(t0, t1)):
            # the first block also takes the anchors just before t0 whose spread reaches it
            x = self.anchors(a - self.spread if i == 0 else a, b)
            if self.spread > 0:
                x = x + self.spread * rng.random(x.size)
            x = np.sort(np.concatenate((carry, x)))
            cut = int(np.searchsorted(x, b, side="left"))
            out, carry = x[:cut], x[cut:]
            yield b, out[out >= t0] if i == 0 else out

    def mean_rate_per_s(self, t0: float, t1: float) -> float:
        if t1 <= t0:
            return 0.0
        x = self.anchors(t0 - self.spread, t1)
        if self.spread == 0:
            count = float(np.count_nonzero(x >= t0))
        else:
            overlap = np.minimum(x + self.spread, t1) - np.maximum(x, t0)
            count = float(np.clip(overlap, 0.0, None).sum() / self.spread)
        return count / (t1 - t0)


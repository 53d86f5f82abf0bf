"""The fleet path: a compute's whole timeline computed in bulk, identical to the SimPy engine's.

Most computes of a large fleet are touched by nothing but their own workload:
no API call, no autoscaling (no load per session, or a fixed size), no pool
queue, no refused connection, no temporary files, no injected fault. For such
a compute the SimPy engine does the same few things over and over: admit a
session, suspend after the timeout, wake on the next connection. This module
computes that sequence with numpy and one short loop per suspend/wake cycle,
drawing the same random numbers from the same per-compute streams in the same
order, and doing the same floating-point operations, so that its rows equal the
engine's row for row. `tests/engine/test_fleetpath.py` compares the two on many
random workloads.

A compute it cannot reproduce exactly (a connection that would be refused or
queued, two events at the very same instant, an operation at the same
microsecond as another) raises `NotReproducible`; the caller then runs the
whole scenario in the SimPy engine instead.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import dataclass

import numpy as np

from sim.workload.distributions import DistKind, Distribution

INF = math.inf


class NotReproducible(Exception):
    """This compute's timeline needs the SimPy engine (the reason says why)."""


@dataclass(frozen=True)
class Inputs:
    """What decides a compute's timeline once it is first active."""

    arrivals: np.ndarray  # sorted arrival instants (s), all in [0, until)
    durations: np.ndarray  # session lengths (s), > 0
    activated_at: float  # when its creation start finished (the SimPy engine says)
    timeout: float | None  # seconds of inactivity before suspension; None: never
    until: float  # the run's end: events at or after it do not happen
    limits: tuple[float, float]  # refused at an arrival / queued at an admission (see _peak)
    start: Distribution  # start_compute duration (the cold start)
    suspend: Distribution  # suspend_compute duration
    ops_rng: np.random.Generator  # a copy of the compute's operation stream, after creation


@dataclass
class Timeline:
    """The cycles of a compute after its first activation, as arrays.

    Cycle k (k = 0, 1, ...) suspends at suspend_at[k] (the operation runs to
    suspended_at[k]); the compute wakes at wake_at[k] and is active again at
    active_at[k + 1]. active_at[0] is the first activation. Instants at or
    after `until` did not happen; they are +inf.
    """

    active_at: list[float]
    suspend_at: list[float]
    suspended_at: list[float]
    wake_at: list[float]
    admitted_at: np.ndarray  # per session, when it began (inf: still waiting at the end)
    ends: np.ndarray  # per session, when it ended
    cold: np.ndarray  # per session, whether it waited for a start
    peak_connections: int


class _Draws:
    """Durations of suspend, start, suspend, start, ... as the SimPy engine draws them."""

    def __init__(self, suspend: Distribution, start: Distribution, rng: np.random.Generator):
        self.suspend, self.start, self.rng = suspend, start, rng
        self.pairs: list[tuple[float, float]] = []
        self.next = 0

    def pair(self) -> tuple[float, float]:
        if self.next == len(self.pairs):
            self._more(max(16, len(self.pairs)))
        p = self.pairs[self.next]
        self.next += 1
        return p

    def _more(self, n: int) -> None:
        s, w = self.suspend, self.start
        draws_s = not (s.is_zero or s.dist is DistKind.FIXED)
        draws_w = not (w.is_zero or w.dist is DistKind.FIXED)
        if draws_s and draws_w and s.dist is w.dist:
            both = _sample_pattern(self.rng, s.dist, [s, w] * n)
            self.pairs += list(zip(both[0::2].tolist(), both[1::2].tolist(), strict=True))
        elif draws_s and draws_w:  # two kinds: one draw at a time, as the engine does
            self.pairs += [(s.sample_one(self.rng), w.sample_one(self.rng)) for _ in range(n)]
        else:
            xs = s.sample(self.rng, n).tolist() if draws_s else [s.mean_s] * n
            ws = w.sample(self.rng, n).tolist() if draws_w else [w.mean_s] * n
            self.pairs += list(zip(xs, ws, strict=True))


def _sample_pattern(rng: np.random.Generator, kind: DistKind, dists: list[Distribution]
                    ) -> np.ndarray:
    """Draws for a sequence of distributions of one kind, in one call.

    numpy draws element after element with the given parameters, which is the
    very sequence of single draws the engine makes.
    """
    if kind is DistKind.EXPONENTIAL:
        return rng.exponential(np.array([d.mean_s for d in dists]))
    mu = np.array([math.log(d.mean_s) - d.sigma**2 / 2.0 for d in dists])
    return rng.lognormal(mu, np.array([d.sigma for d in dists]))


def timeline(inp: Inputs) -> Timeline:
    a = inp.arrivals
    d = inp.durations
    n = len(a)
    if n and (np.any(d <= 0) or np.any(np.diff(a) == 0)):
        raise NotReproducible("sessions of zero length or arrivals at the same instant")
    until = inp.until
    base_end = a + d
    running_max = np.maximum.accumulate(base_end) if n else base_end
    al = a.tolist()
    rm = running_max.tolist()
    T = inp.timeout
    # j is a candidate for "the last session before a suspension" when nothing
    # but its own cycle's sessions keeps the compute up: a[j+1] > R[j] + T
    if T is None:
        cands: list[int] = []
    else:
        cands = np.flatnonzero(running_max[:-1] + T < a[1:]).tolist() if n > 1 else []
        cands.append(n - 1)  # the last arrival: compared with the end of the run
    draws = _Draws(inp.suspend, inp.start, inp.ops_rng)
    admitted = np.full(n, INF)
    ends = base_end.copy()
    cold = np.zeros(n, dtype=bool)
    active_at = [inp.activated_at]
    suspend_at: list[float] = []
    suspended_at: list[float] = []
    wake_at: list[float] = []
    i = 0  # first arrival of the current cycle
    A = inp.activated_at
    while True:
        if A >= until:  # the start did not finish within the run: they all still wait
            break
        w_end = bisect_left(al, A, lo=i)  # arrivals before the activation waited for it
        if w_end < n and al[w_end] == A:
            raise NotReproducible("an arrival at the instant of an activation")
        busy_w = -INF
        if w_end > i:
            admitted[i:w_end] = A
            ends[i:w_end] = A + d[i:w_end]
            cold[i:w_end] = True
            busy_w = float(ends[i:w_end].max())
        if T is None:
            admitted[w_end:] = a[w_end:]
            break
        # the deadline right after activation, before any later arrival
        D = max(busy_w, A) + T
        nxt = al[w_end] if w_end < n else until
        if not D < nxt:
            D = None
            k = bisect_left(cands, max(w_end, i))
            while k < len(cands):
                j = cands[k]
                limit = al[j + 1] if j + 1 < n else until
                candidate = max(busy_w, rm[j]) + T
                if candidate < limit:
                    D = candidate
                    break
                k += 1
            last = j if D is not None else n - 1
        else:
            last = w_end - 1
        admitted[w_end:last + 1] = a[w_end:last + 1]
        if D is None or not D < until:
            break
        s, w = draws.pair()
        S = D + s
        suspend_at.append(D)
        m = last + 1  # the arrival that ends the quiet period
        if not S < until:
            suspended_at.append(INF)
            i = m
            break
        suspended_at.append(S)
        if m < n and al[m] == S:
            raise NotReproducible("an arrival at the instant of a suspension")
        W = S if (m < n and al[m] < S) else (al[m] if m < n else INF)
        if not W < until:
            i = m
            break
        wake_at.append(W)
        A = W + w
        active_at.append(A)
        i = m
    return Timeline(active_at, suspend_at, suspended_at, wake_at, admitted, ends, cold,
                    _peak(admitted, ends, inp.limits, a))


def _peak(admitted: np.ndarray, ends: np.ndarray, limits: tuple[float, float], a: np.ndarray
          ) -> int:
    """The engine's peak of open connections; refuse the compute if one would be refused.

    limits: (connections open at an arrival that get it refused, sessions held at an
    admission that make it queue). A session still waiting at the end holds on forever.
    """
    if len(a) == 0:
        return 0
    done = np.isfinite(admitted)
    held_until = np.where(done, ends, INF)
    at_arrival = np.arange(len(a)) - np.searchsorted(np.sort(held_until), a, side="right")
    if at_arrival.max(initial=0) >= limits[0]:
        raise NotReproducible("a connection would be refused")
    t = admitted[done]  # admission order is arrival order
    if len(t) == 0:
        return 0
    held = np.arange(1, len(t) + 1) - np.searchsorted(np.sort(ends[done]), t, side="right")
    peak = int(held.max())
    if peak - 1 >= limits[1]:
        raise NotReproducible("a session would queue for the pool")
    return peak


def op_instants(tl: Timeline) -> list[tuple[str, float, float]]:
    """(action, created, ended) of every operation after the first activation; ended inf: running."""
    ops: list[tuple[str, float, float]] = []
    for k, D in enumerate(tl.suspend_at):
        ops.append(("suspend_compute", D, tl.suspended_at[k]))
        if k < len(tl.wake_at):
            end = tl.active_at[k + 1] if k + 1 < len(tl.active_at) else INF
            ops.append(("start_compute", tl.wake_at[k], end))
    return ops


def on_intervals(tl: Timeline, until: float) -> list[tuple[float, float]]:
    """[active_at, suspended_at) spans, the last cut at the end of the run."""
    spans = []
    for k, A in enumerate(tl.active_at):
        if not A < until:
            break
        end = tl.suspended_at[k] if k < len(tl.suspended_at) else until
        spans.append((A, min(end, until)))
    return spans


def longest_quiet(spans: list[tuple[float, float]], start: float, until: float) -> float:
    """The longest stretch in [start, until) covered by none of the spans."""
    gap, reach = 0.0, start
    for a, b in sorted(spans):
        if a > reach:
            gap = max(gap, a - reach)
        reach = max(reach, b)
    return max(gap, until - reach)


__all__ = [
    "Inputs",
    "NotReproducible",
    "Timeline",
    "longest_quiet",
    "on_intervals",
    "op_instants",
    "timeline",
]

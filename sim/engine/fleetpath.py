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
    """Durations of suspend, start, suspend, start, ... as the SimPy engine draws them.

    The engine draws one number per operation, alternately for a suspension and
    a start, from the compute's operation stream. numpy draws array elements one
    after another with each element's own parameters, so one call with the
    parameters tiled gives the very sequence of single draws.
    """

    def __init__(self, suspend: Distribution, start: Distribution, rng: np.random.Generator):
        self.suspend, self.start, self.rng = suspend, start, rng
        self.s = np.empty(0)
        self.w = np.empty(0)
        self.next = 0

    def pair(self) -> tuple[float, float]:
        if self.next == len(self.s):
            self._more(max(16, len(self.s)))
        k = self.next
        self.next += 1
        return float(self.s[k]), float(self.w[k])

    def first(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The first k pairs as two arrays (suspend durations, start durations)."""
        if k > len(self.s):
            self._more(max(k - len(self.s), len(self.s)))
        return self.s[:k], self.w[:k]

    def _more(self, n: int) -> None:
        s, w = self.suspend, self.start
        draws_s = not (s.is_zero or s.dist is DistKind.FIXED)
        draws_w = not (w.is_zero or w.dist is DistKind.FIXED)
        if draws_s and draws_w and s.dist is w.dist:
            both = _sample_pattern(self.rng, s.dist, s, w, n)
            xs, ws = both[0::2], both[1::2]
        elif draws_s and draws_w:  # two kinds: one draw at a time, as the engine does
            pairs = [(s.sample_one(self.rng), w.sample_one(self.rng)) for _ in range(n)]
            xs, ws = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
        else:
            xs = s.sample(self.rng, n) if draws_s else np.full(n, s.mean_s)
            ws = w.sample(self.rng, n) if draws_w else np.full(n, w.mean_s)
        self.s = np.concatenate((self.s, xs))
        self.w = np.concatenate((self.w, ws))


def _sample_pattern(rng: np.random.Generator, kind: DistKind, first: Distribution,
                    second: Distribution, n: int) -> np.ndarray:
    """2n draws alternating between two distributions of one kind, in one call."""
    if kind is DistKind.EXPONENTIAL:
        return rng.exponential(np.tile([first.mean_s, second.mean_s], n))
    mu = [math.log(x.mean_s) - x.sigma**2 / 2.0 for x in (first, second)]
    return rng.lognormal(np.tile(mu, n), np.tile([first.sigma, second.sigma], n))


def timeline_reference(inp: Inputs) -> Timeline:
    """One cycle at a time: the readable statement of what `timeline` computes in bulk."""
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


def timeline(inp: Inputs) -> Timeline:
    """The timeline of `timeline_reference`, computed for all cycles at once.

    Optimistic: every gap longer than the timeout after the running maximum of
    session ends (a candidate) is taken as a suspension, and each cycle's wake,
    activation, waiting group and deadline are computed with numpy. Then each
    cycle is checked against what the engine would do (the sessions that waited
    for the start may keep it up past the gap); the first cycle that fails loses
    its candidate and the pass is redone from there. Rare: a gap must be longer
    than the timeout by less than a cold start.
    """
    a, d, until, T = inp.arrivals, inp.durations, inp.until, inp.timeout
    n = len(a)
    if n and (np.any(d <= 0) or np.any(np.diff(a) == 0)):
        raise NotReproducible("sessions of zero length or arrivals at the same instant")
    A0 = inp.activated_at
    if T is None or A0 >= until or n == 0:  # at most one cycle: nothing to do in bulk
        return timeline_reference(inp)
    base_end = a + d
    R = np.maximum.accumulate(base_end) if n else base_end
    # cycle 0 (from the creation) in scalar code; it decides where the bulk starts
    g0 = int(np.searchsorted(a, A0, side="left"))
    if g0 < n and a[g0] == A0:
        raise NotReproducible("an arrival at the instant of an activation")
    busy0 = A0 + float(d[:g0].max()) if g0 else -INF
    cands = np.flatnonzero(R[:-1] + T < a[1:]) if n > 1 else np.empty(0, dtype=np.int64)
    if n and R[-1] + T < until:
        cands = np.append(cands, n - 1)
    # the creation cycle may suspend before any later arrival ("candidate" g0 - 1)
    first_D = max(busy0, A0) + T
    if first_D < (a[g0] if g0 < n else until):
        j0 = g0 - 1
        cands = cands[cands > j0]
    else:
        j0 = None
        while True:
            k = int(np.searchsorted(cands, g0, side="left"))
            if k >= len(cands):
                return timeline_reference(inp)  # never suspends within the run
            j = int(cands[k])
            limit = a[j + 1] if j + 1 < n else until
            if max(busy0, R[j]) + T < limit:
                j0, first_D = j, max(busy0, R[j]) + T
                cands = cands[k + 1:]
                break
            cands = np.delete(cands, k)
    draws = _Draws(inp.suspend, inp.start, inp.ops_rng)
    while True:
        out = _bulk_pass(a, d, R, T, until, A0, first_D, j0, cands, draws)
        if isinstance(out, Timeline):
            return _finish_bulk(out, a, d, A0, g0, inp)
        cands = np.delete(cands, out)  # a candidate that failed its check


def _bulk_pass(a, d, R, T, until, A0, D0, j0, cands, draws):
    """All cycles at once from the candidates: a Timeline, or the index of a failed candidate.

    Suspension k follows arrival J[k]; the next arrival wakes the compute at
    W[k] = max(that arrival, end of the suspension) and it is active at A[k];
    the sessions that arrived before A[k] waited for it, and the next deadline
    is D[k+1] = max(their ends, R[J[k+1]]) + T.
    """
    n = len(a)
    J = np.concatenate(([j0], cands)).astype(np.int64)
    K = len(J)
    s, w = draws.first(K)  # a redone pass uses the same draws
    has_next = J + 1 < n
    starts = np.where(has_next, J + 1, n)
    first = np.where(has_next, a[np.minimum(J + 1, n - 1)], INF)
    RJ = R[J]
    D = np.full(K, -INF)
    D[0] = D0
    W = first
    for _ in range(K + 1):  # fixpoint of the chain: a wake may wait for the suspension before
        S = D + s
        W = np.maximum(first, S)
        A = W + w
        g_end = np.searchsorted(a, A, side="left")
        size = np.where(has_next, g_end - starts, 0)
        maxd = np.where(has_next, d[np.minimum(starts, n - 1)], 0.0)
        for g in range(1, int(size.max(initial=1))):
            m = size > g
            maxd[m] = np.maximum(maxd[m], d[starts[m] + g])
        busy = A + maxd
        D_new = np.concatenate(([D0], np.maximum(busy[:-1], RJ[1:]) + T))
        if np.array_equal(D_new, D):
            break
        D = D_new
    S = D + s
    live = int(np.searchsorted(D, until, side="left"))  # suspensions that begin in the run
    nxt = np.where(has_next, first, until)
    ok = (D < nxt) & np.concatenate(([True], g_end[:-1] - 1 <= J[1:]))
    bad = np.flatnonzero(~ok[:live])
    if len(bad):
        return int(bad[0]) - 1  # J[k] is cands[k - 1]; cycle 0 was checked in scalar code
    woke = has_next[:live] & (S[:live] < until)
    if np.any(first[:live][woke] == S[:live][woke]):
        raise NotReproducible("an arrival at the instant of a suspension")
    hit = g_end[:live][woke]
    inside = hit < n
    if np.any(a[hit[inside]] == A[:live][woke][inside]):
        raise NotReproducible("an arrival at the instant of an activation")
    S_live = S[:live]
    suspended_at = np.where(S_live < until, S_live, INF).tolist()
    # wakes happen until the first that does not; activations likewise
    woke_ok = has_next[:live] & (S_live < until) & (W[:live] < until)
    n_wake = live if woke_ok.all() else int(np.argmin(woke_ok))
    act_ok = A[:n_wake] < until
    n_act = n_wake if act_ok.all() else int(np.argmin(act_ok))
    wake_at = W[:n_wake].tolist()
    active_at = [A0] + A[:n_act].tolist()
    tl = Timeline(active_at, D[:live].tolist(), suspended_at, wake_at,
                  np.empty(0), np.empty(0), np.empty(0, dtype=bool), 0)
    tl._bulk = (J, starts, g_end)  # type: ignore[attr-defined]
    return tl


def _finish_bulk(tl: Timeline, a, d, A0, g0, inp: Inputs) -> Timeline:
    """Per-session admission instants, ends and coldness, and the peak."""
    J, starts, g_end = tl._bulk  # type: ignore[attr-defined]
    n = len(a)
    admitted = a.astype(np.float64, copy=True)
    cold = np.zeros(n, dtype=bool)
    admitted[:g0] = A0
    cold[:g0] = True
    woke = len(tl.active_at) - 1  # activations after the creation
    st, size = starts[:woke], (g_end - starts)[:woke]
    act = np.array(tl.active_at[1:])
    for g in range(int(size.max(initial=0))):
        m = size > g
        admitted[st[m] + g] = act[m]
        cold[st[m] + g] = True
    if woke < len(tl.suspend_at):  # the run ended suspended, suspending or starting
        admitted[J[len(tl.suspend_at) - 1] + 1:] = INF
    ends = admitted + d
    tl.admitted_at, tl.ends, tl.cold = admitted, ends, cold
    tl.peak_connections = _peak(admitted, ends, inp.limits, a)
    return tl


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


def longest_quiet(starts: np.ndarray, ends: np.ndarray, until: float) -> float:
    """The longest stretch between the first start and `until` covered by no span [start, end)."""
    if len(starts) == 0:
        return 0.0
    order = np.argsort(starts, kind="stable")
    s, reach = starts[order], np.maximum.accumulate(ends[order])
    gaps = s[1:] - reach[:-1]
    return float(max(gaps.max(initial=0.0), until - reach[-1]))


__all__ = [
    "Inputs",
    "NotReproducible",
    "Timeline",
    "longest_quiet",
    "on_intervals",
    "op_instants",
    "timeline",
    "timeline_reference",
]

"""The storage lane's replay, compiled: idle clocks, rings, wakes and the lane in one call.

`sim.kernel.storage_replay` says what is replayed and why; this is the walk
itself, on plain arrays. A project's holders of idle clocks are numbered: 0 is
the project (its detach clock), 1.. its branches in order (their archive
clocks). The lane's operations run one at a time, in the order they were
submitted, as the engine's executor runs a lane; a wake supersedes queued
detach and archive work, brings the storage back first, and waits for
everything on the lane.

numba earns its place here for the same reason as in the compute kernel: the
walk is sequential (each step depends on the lane as the steps before left
it), and a project replays twice or more per run, so in Python its fixed cost
(a few hundred microseconds) outweighed the work.
"""

from __future__ import annotations

import math

import numpy as np

from sim.kernel.generator_typing import typed_once
from sim.kernel.jit import INTERNAL, njit
from sim.kernel.physics import _draw

INF = math.inf
# the lane's actions, by code
DETACH, REATTACH, ARCHIVE, UNARCHIVE = 0, 1, 2, 3
# an operation's status while replayed
SCHEDULING, RUNNING, FAILED, FINISHED, SKIPPED = 0, 1, 2, 3, 4
# why the replay cannot say what the engine does (0: it can)
TIE_RING_AT_WAKE, TIE_RING_AT_HANDOVER, TIE_QUIET_AT_WAKE, TIE_LANE_AT_EVENT = 1, 2, 3, 4
# the lane's pending event
DONE, RETRY = 0, 1


@njit(cache=True, **INTERNAL)
def _sorted_by(keys, n):
    """Positions 0..n-1 in lexicographic order of the keys (most significant first), ties
    kept in position order."""
    return _fixed_up(keys, np.argsort(keys[0]))


@njit(cache=True, **INTERNAL)
def _fixed_up(keys, order):
    """`order`, sorted on the first key, put right by insertion where the other keys (and
    then the positions) tell apart what shares a first key, which is rare."""
    n = len(order)
    for x in range(1, n):
        v = order[x]
        y = x - 1
        while y >= 0 and _before(keys, v, order[y]):
            order[y + 1] = order[y]
            y -= 1
        order[y + 1] = v
    return order


@njit(cache=True, **INTERNAL)
def _before(keys, a, b):
    for key in keys:
        if key[a] != key[b]:
            return key[a] < key[b]
    return a < b


@njit(cache=True)
def _merged(key, counts):
    """Positions 0..n-1 in ascending order of `key`, made of runs already in order
    (`counts[c]` items each, one run after another): merged, ties to the earlier run.
    A project has a few computes, each with its own events in order: merging their runs
    costs less than sorting them all."""
    k = len(counts)
    head = np.empty(k, np.int64)
    end = np.empty(k, np.int64)
    s = 0
    for c in range(k):
        head[c] = s
        s += counts[c]
        end[c] = s
    order = np.empty(s, np.int64)
    for x in range(s):
        best = -1
        for c in range(k):
            if head[c] < end[c] and (best < 0 or key[head[c]] < key[head[best]]):
                best = c
        order[x] = head[best]
        head[best] += 1
    return order


@njit(cache=True)
def clocks(until, start_at, since0, after, comp_holder, span_comp, span_start, span_end):
    """The idle clocks: per holder, whether quiet at `until` and since when (NaN: on), and
    the instants they ring (ring, since, holder) in the engine's order. `since0`: quiet
    already at the start (NaN: not); `after`: the clock's period (NaN: no clock);
    `start_at`: the hand-over the replay starts from (NaN: the computes' creation), the
    rings before which the engine took. The spans (`span_comp` their compute's index)
    come compute by compute, each compute's in order. Returns (tie code, idle_since,
    ring_t, ring_since, ring_holder)."""
    nh = len(since0)
    idle = np.full(nh, np.nan)
    cap = 2 * len(span_start) + nh + 1
    ring_t = np.empty(cap)
    ring_since = np.empty(cap)
    ring_holder = np.empty(cap, np.int64)
    nr = 0
    tie = 0
    counts = np.zeros(len(comp_holder), np.int64)
    for x in range(len(span_comp)):
        counts[span_comp[x]] += 1
    by_start = _merged(span_start, counts)
    qs = np.empty(len(span_start) + 1)
    rs = np.empty(len(span_start) + 1)
    for h in range(nh):
        # stretch candidates: (since, first start), (reach_i, start_{i+1}), (reach_last, until)
        since = since0[h]
        nq = 0
        if not math.isnan(since):
            qs[0] = since
            nq = 1
        reach = np.nan
        for s in by_start:
            if h != 0 and comp_holder[span_comp[s]] != h:
                continue
            if nq > 0:
                rs[nq - 1] = span_start[s]
            reach = span_end[s] if math.isnan(reach) else max(reach, span_end[s])
            qs[nq] = reach
            nq += 1
        if nq > 0:
            rs[nq - 1] = until
        last_q = np.nan
        last_r = np.nan
        for x in range(nq):
            q, r = qs[x], rs[x]
            if not r > q:
                continue
            last_q, last_r = q, r
            if math.isnan(after[h]):
                continue
            ring = q + after[h]
            if ring == r and r < until and tie == 0:
                tie = TIE_RING_AT_WAKE
            if not math.isnan(start_at) and ring == start_at and tie == 0:
                tie = TIE_RING_AT_HANDOVER
            if ring < r and ring < until and (math.isnan(start_at) or ring > start_at):
                ring_t[nr] = ring
                ring_since[nr] = q
                ring_holder[nr] = h
                nr += 1
        if not math.isnan(last_q) and last_r == until:
            idle[h] = last_q
    ring_t, ring_since, ring_holder = ring_t[:nr], ring_since[:nr], ring_holder[:nr]
    order = _sorted_by((ring_t, ring_since, ring_holder.astype(np.float64)), nr)
    return tie, idle, ring_t[order], ring_since[order], ring_holder[order]


# an operation's columns: floats (its order among the project's operations made at one
# instant: instant (= created), when scheduled, check rank, position) and integers
O_T, O_SCHED, O_RANK, O_POS, O_UPDATED, O_STARTED, O_FINISHED, O_RETRY, O_DONE = range(9)
I_ACTION, I_HOLDER, I_STATUS, I_FAILURES = range(4)


@njit(cache=True, **INTERNAL)
def _new_op(of, oi, no, action, holder, t, sched, rank, pos):
    """Submit an operation (scheduling) as row `no`, growing the columns when full."""
    if no == len(of):
        grown_f = np.empty((2 * no, of.shape[1]))
        grown_f[:no] = of
        grown_i = np.empty((2 * no, oi.shape[1]), np.int64)
        grown_i[:no] = oi
        of, oi = grown_f, grown_i
    of[no, O_T], of[no, O_SCHED], of[no, O_RANK], of[no, O_POS] = t, sched, rank, pos
    of[no, O_UPDATED] = t
    of[no, O_STARTED] = of[no, O_FINISHED] = of[no, O_RETRY] = np.nan
    of[no, O_DONE] = INF
    oi[no, I_ACTION], oi[no, I_HOLDER], oi[no, I_STATUS], oi[no, I_FAILURES] = (
        action, holder, SCHEDULING, 0)
    return of, oi


@njit(cache=True, **INTERNAL)
def _submit(of, oi, no, lane, ln, action, holder, t, sched, rank, pos, flags, event, dur_kind,
            dur_a, dur_b, rng):
    """The executor's submit: operation `no` joins the lane and starts if the lane was
    empty. Returns the (grown) columns, the lane's length and its pending event."""
    of, oi = _new_op(of, oi, no, action, holder, t, sched, rank, pos)
    lane[ln] = no
    if ln == 0:
        event = _start(no, t, flags, of, oi, dur_kind, dur_a, dur_b, rng)
    return of, oi, ln + 1, event


@njit(cache=True, **INTERNAL)
def _start(k, t, flags, of, oi, dur_kind, dur_a, dur_b, rng):
    """The head of the lane starts (its effect on the flags at once) and its first attempt
    is drawn; returns the lane's pending event."""
    oi[k, I_STATUS] = RUNNING
    of[k, O_UPDATED] = of[k, O_STARTED] = t
    a = oi[k, I_ACTION]
    if a == DETACH:
        flags[0] = True
    elif a == ARCHIVE:
        flags[oi[k, I_HOLDER]] = True
    return t + _draw(rng, dur_kind[a], dur_a[a], dur_b[a]), t, DONE


@typed_once
@njit(cache=True)
def replay(until, start_at, since0, after, flag0, default_holder, comp_holder, comp_rank,
           n_spans, n_closed, span_start, closed_end, n_ops, op_action, op_created, op_sched,
           start_code, dur_kind, dur_a, dur_b, fail_rate, backoff, rng):
    """Replay the project's storage lane to `until`.

    Holders (0: the project, 1..: its branches): `since0`, `after` as for `clocks`,
    `flag0` detached (holder 0) or archived at the start; `default_holder`: the project's
    default branch. Computes, one after another: their holder and check rank; their
    spans (on from `span_start`; the first `n_closed` of a compute's `n_spans` until
    `closed_end`, a last one still open at `until`) and their `n_ops` operations
    (action, created, scheduled at; `start_code` the action code of a wake's
    start_compute). The lane's
    durations by action code (`dur_*`, as the compute kernel draws them), its failure
    rate and retry backoff; `rng` the project's own stream.

    Returns (tie, idle_since, flags at the end, the operations' float and integer
    columns (O_*, I_*), gates: compute, at, until in wake order)."""
    span_comp = np.empty(len(span_start), np.int64)
    span_end = np.empty(len(span_start))
    span_closed = np.empty(len(span_start), np.bool_)
    s = e = 0
    for c in range(len(n_spans)):
        for x in range(n_spans[c]):
            span_comp[s] = c
            span_closed[s] = x < n_closed[c]
            if span_closed[s]:
                span_end[s] = closed_end[e]
                e += 1
            else:
                span_end[s] = until
            s += 1
    op_comp = np.empty(len(op_action), np.int64)
    op_j = np.empty(len(op_action))
    s = 0
    for c in range(len(n_ops)):
        for x in range(n_ops[c]):
            op_comp[s] = c
            op_j[s] = x
            s += 1
    tie, idle, ring_t, ring_since, ring_holder = clocks(
        until, start_at, since0, after, comp_holder, span_comp, span_start, span_end)
    nh = len(since0)
    flags = flag0.copy()
    of = np.empty((len(ring_t) + 8, 9))
    oi = np.empty((len(ring_t) + 8, 4), np.int64)
    no = 0
    g_comp = np.empty(0, np.int64)
    g_at = np.empty(0)
    g_until = np.empty(0)
    lane_empty = len(ring_t) == 0  # nothing rings and nothing is gone: the lane stays empty
    for h in range(nh):
        if flags[h]:
            lane_empty = False
    if tie or lane_empty:
        return tie, idle, flags, of[:0], oi[:0], g_comp, g_at, g_until
    # the wakes: every start_compute of the computes, in the engine's order
    nw = 0
    for x in range(len(op_action)):
        if op_action[x] == start_code:
            nw += 1
    w_t = np.empty(nw)
    w_sched = np.empty(nw)
    w_rank = np.empty(nw)
    w_j = np.empty(nw)
    w_comp = np.empty(nw, np.int64)
    y = 0
    for x in range(len(op_action)):
        if op_action[x] == start_code:
            w_t[y] = op_created[x]
            w_sched[y] = op_sched[x]
            w_rank[y] = comp_rank[op_comp[x]]
            w_j[y] = op_j[x]
            w_comp[y] = op_comp[x]
            y += 1
    w_counts = np.zeros(len(comp_holder), np.int64)
    for y in range(nw):
        w_counts[w_comp[y]] += 1
    order = _fixed_up((w_t, w_sched, w_rank, w_j), _merged(w_t, w_counts))
    w_t, w_sched, w_rank, w_j, w_comp = (w_t[order], w_sched[order], w_rank[order], w_j[order],
                                         w_comp[order])
    # a compute going quiet at the instant of another's wake: their order is not known
    ends = span_end[span_closed]
    ends = ends[_merged(ends, n_closed)]
    z = 0
    for y in range(nw):
        while z < len(ends) and ends[z] < w_t[y]:
            z += 1
        if z < len(ends) and ends[z] == w_t[y]:
            return TIE_QUIET_AT_WAKE, idle, flags, of[:0], oi[:0], g_comp, g_at, g_until
    g_comp = np.empty(nw, np.int64)
    g_at = np.empty(nw)
    g_until = np.empty(nw)
    ng = 0
    # each holder's wakes (positions in the table), for the next one on an archived branch
    w_holder = np.empty(nw, np.int64)
    for y in range(nw):
        w_holder[y] = comp_holder[w_comp[y]]
    first_of = np.zeros(nh + 1, np.int64)  # grouped by holder, in order: a counting sort
    for y in range(nw):
        first_of[w_holder[y] + 1] += 1
    first_of = np.cumsum(first_of)
    by_holder = np.empty(nw, np.int64)
    filled = first_of[:-1].copy()
    for y in range(nw):
        by_holder[filled[w_holder[y]]] = y
        filled[w_holder[y]] += 1
    lane = np.empty(2 * nw + len(ring_t) + 1, np.int64)
    ln = 0
    # what each gated wake waits for: the lane as it stood, in a growing buffer
    snap = np.empty(64, np.int64)
    n_snap = 0
    snap_at = np.empty(nw + 1, np.int64)
    ev_t = INF  # the lane's one pending event (the head's attempt or retry)
    ev_sched = 0.0
    ev_kind = DONE
    x = 0
    r = 0
    nr = len(ring_t)
    while True:
        # the next wake that meets storage work; the wakes before it change nothing
        if ln > 0 or flags[0]:
            y = x
        else:
            y = nw
            for h in range(1, nh):
                if flags[h]:
                    lo, hi = first_of[h], first_of[h + 1]
                    at = lo + np.searchsorted(by_holder[lo:hi], x)
                    if at < hi and by_holder[at] < y:
                        y = by_holder[at]
        # each source's next event as (instant, when scheduled, source): the engine takes
        # events at one instant in the order they were scheduled
        t, sched, source = INF, INF, -1
        if y < nw:
            t, sched, source = w_t[y], w_sched[y], 0
        if r < nr and (ring_t[r] < t or (ring_t[r] == t and ring_since[r] < sched)):
            t, sched, source = ring_t[r], ring_since[r], 1
        if ln > 0 and (ev_t < t or (ev_t == t and ev_sched < sched)):
            t, sched, source = ev_t, ev_sched, 2
        if source < 0 or not t < until:
            break
        same = 0
        if y < nw and w_t[y] == t and w_sched[y] == sched:
            same += 1
        if r < nr and ring_t[r] == t and ring_since[r] == sched:
            same += 1
        if ln > 0 and ev_t == t and ev_sched == sched:
            same += 1
        if same > 1:
            tie = TIE_LANE_AT_EVENT
            break
        if source == 0:
            c = w_comp[y]
            branch = comp_holder[c]
            # queued detach, and queued archive of this branch, are superseded
            kept = 0
            for z in range(ln):
                k = lane[z]
                if oi[k, I_STATUS] == SCHEDULING and (
                        oi[k, I_ACTION] == DETACH or (oi[k, I_ACTION] == ARCHIVE
                                                      and oi[k, I_HOLDER] == branch)):
                    oi[k, I_STATUS] = SKIPPED
                    of[k, O_UPDATED] = of[k, O_FINISHED] = of[k, O_DONE] = t
                else:
                    lane[kept] = k
                    kept += 1
            ln = kept
            for action, flag, part in ((REATTACH, flags[0], 0.0),
                                       (UNARCHIVE, flags[branch], 0.25)):
                if not flag:
                    continue
                of, oi, ln, (ev_t, ev_sched, ev_kind) = _submit(
                    of, oi, no, lane, ln, action, branch, t, sched, w_rank[y],
                    w_j[y] - 0.5 + part, flags, (ev_t, ev_sched, ev_kind), dur_kind, dur_a,
                    dur_b, rng)
                no += 1
            if ln > 0:
                if n_snap + ln > len(snap):
                    grown = np.empty(2 * len(snap) + ln, np.int64)
                    grown[:n_snap] = snap[:n_snap]
                    snap = grown
                snap[n_snap:n_snap + ln] = lane[:ln]
                snap_at[ng] = n_snap
                n_snap += ln
                g_comp[ng], g_at[ng] = c, t
                ng += 1
            x = y + 1
            continue
        # the wakes before this event are past
        at = np.searchsorted(w_t, t)
        while at < nw and w_t[at] == t and w_sched[at] < sched:
            at += 1
        x = max(x, at)
        if source == 1:
            h = ring_holder[r]
            since = ring_since[r]
            r += 1
            if not flags[h]:  # quiet since then (the clocks made sure): the storage goes
                of, oi, ln, (ev_t, ev_sched, ev_kind) = _submit(
                    of, oi, no, lane, ln, DETACH if h == 0 else ARCHIVE,
                    default_holder if h == 0 else h, t, since, -1.0, 0.0, flags,
                    (ev_t, ev_sched, ev_kind), dur_kind, dur_a, dur_b, rng)
                no += 1
            continue
        # the lane's event: the head's attempt ends, or its retry begins
        k = lane[0]
        a = oi[k, I_ACTION]
        if ev_kind == RETRY:
            oi[k, I_STATUS] = RUNNING
            of[k, O_UPDATED], of[k, O_RETRY] = t, np.nan
            ev_t, ev_sched, ev_kind = t + _draw(rng, dur_kind[a], dur_a[a], dur_b[a]), t, DONE
            continue
        if fail_rate > 0 and rng.random() < fail_rate:
            oi[k, I_STATUS] = FAILED
            oi[k, I_FAILURES] += 1
            of[k, O_UPDATED], of[k, O_RETRY] = t, t + backoff
            ev_t, ev_sched, ev_kind = t + backoff, t, RETRY
            continue
        oi[k, I_STATUS] = FINISHED
        of[k, O_UPDATED] = of[k, O_FINISHED] = of[k, O_DONE] = t
        of[k, O_RETRY] = np.nan
        for z in range(1, ln):
            lane[z - 1] = lane[z]
        ln -= 1
        if ln > 0:  # the next one starts before this one's own effect (as the executor does)
            ev_t, ev_sched, ev_kind = _start(lane[0], t, flags, of, oi, dur_kind, dur_a, dur_b,
                                             rng)
        if a == REATTACH:
            flags[0] = False
        elif a == UNARCHIVE:
            flags[oi[k, I_HOLDER]] = False
    snap_at[ng] = n_snap
    for g in range(ng):
        wait = -INF
        for z in range(snap_at[g], snap_at[g + 1]):
            wait = max(wait, of[snap[z], O_DONE])
        g_until[g] = wait
    return tie, idle, flags, of[:no], oi[:no], g_comp[:ng], g_at[:ng], g_until[:ng]

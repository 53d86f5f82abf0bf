"""One compute's whole life after its first start, advanced in bulk by a compiled kernel.

What happens inside a compute (arrivals, admission against max_connections,
the pooler's queue and its timeout, temporary files and 53100, the
autoscaler's goal and its reaction delay, the scale-to-zero countdown) and
what its own operations do to it (suspend_compute, start_compute and
check_availability: their durations, injected failures and retries) is one
sequential recurrence per compute: a session's fate depends on the sessions
before it. `advance` runs that recurrence for every session of a compute in
one call of a numba kernel, making the same decisions as the SimPy engine's
`ComputeRuntime`, `Lifecycle` and `Executor` in the same order, drawing the
same numbers from the same per-compute streams (numba's `Generator` shares
numpy's bit generators and algorithms), so its rows equal the engine's.

It serves computes that nothing but their own workload and their branch's
availability checks touch. Where the order of two things at the very same
instant would decide the outcome, it does not guess: it reports a tie and the
project is run by the SimPy engine instead.

numba earns its place here: the recurrence is sequential (a k-server queue, a
heap of session ends), so numpy cannot vectorise it, and in Python it costs
what the SimPy engine costs.

The loop works on arrays it is given and nothing else: its heaps are arrays
(`sim.kernel.row_heaps`: `heapq`'s own algorithms, so each heap holds its
items in the very order the engine's lists do), and it is compiled without
numba's reference counting. With it, every array handed to an inlined helper
costs an atomic increment and decrement, which took more time than the
simulation itself.
"""

from __future__ import annotations

import numpy as np

# the layout's names are the kernel's own vocabulary (positions in its state, its codes)
from sim.kernel.generator_typing import typed_once
from sim.kernel.jit import njit
from sim.kernel.physics_layout import *  # noqa: F403
from sim.kernel.physics_sessions import (  # the per-session steps, split off
    INF,
    _admit,
    _call,
    _close_interval,
    _expire,
    _expire_load,
    _goal,
    _load_changed,
    _load_due,
    _loop,
    _note_state,
    _record,
)


@_call
def _draw(rng, kind, a, b):
    if kind == ZERO:
        return 0.0
    if kind == FIXED:
        return a
    if kind == EXPONENTIAL:
        return rng.exponential(a)
    return rng.lognormal(a, b)


@_call
def _try_start(f, i, lane, op_action, op_status, op_updated, rng, dk, da, db):
    """Start the operation at the head of the lane: running, first attempt drawn."""
    k = lane[i[LANE_HEAD]]
    op_status[k] = RUNNING
    op_updated[k] = f[NOW]
    a = op_action[k]
    if a == START:
        i[PENDING] = ACTIVE  # on_start of a start: heading for active
    elif a == SUSPEND:
        if i[PENDING] != ACTIVE:
            i[PENDING] = IDLE
    f[OP_EVT_T] = f[NOW] + _draw(rng, dk[a], da[a], db[a])
    f[OP_SCHED] = f[NOW]
    i[OP_EVT_KIND] = ATTEMPT_DONE


@_call
def _enqueue(f, i, action, lane, op_action, op_created, op_status, op_failures, op_updated,
             op_finished, op_sched):
    """Executor.submit up to starting: the operation is created and joins the lane."""
    k = i[N_OPS]
    i[N_OPS] = k + 1
    op_action[k] = action
    op_created[k] = f[NOW]
    op_status[k] = SCHEDULING
    op_failures[k] = 0
    op_updated[k] = f[NOW]
    op_finished[k] = INF
    op_sched[k] = f[CUR_SCHED]  # when the event that created it was scheduled: ties' order
    lane[i[LANE_TAIL]] = k
    i[LANE_TAIL] += 1


@_call
def _submit(f, i, action, lane, op_action, op_created, op_status, op_failures, op_updated,
            op_finished, op_sched, rng, dk, da, db):
    _enqueue(f, i, action, lane, op_action, op_created, op_status, op_failures, op_updated,
             op_finished, op_sched)
    if i[LANE_TAIL] - i[LANE_HEAD] == 1:
        _try_start(f, i, lane, op_action, op_status, op_updated, rng, dk, da, db)


@_call
def _activated(f, i, p, valid, arr, dur, cpu, mem, tmp, waiting, H, rec_idx, rec_wait,
               rec_outcome, rec_cold):
    """ComputeRuntime.activated: the countdown restarts, everyone who waited is admitted."""
    now = f[NOW]
    f[QUIET_SINCE] = now
    _expire(f, i, p, valid, H, now)
    for w in range(i[WAITING]):
        s = waiting[w]
        _admit(f, i, p, valid, s, arr[s], now, dur[s], cpu[s], mem[s], tmp[s], True, H,
               rec_idx, rec_wait, rec_outcome, rec_cold)
    i[WAITING] = 0


@_call
def _wake(f, i, cause, sp_start, lane, op_action, op_created, op_status, op_failures,
          op_updated, op_finished, op_sched, rng, dk, da, db, gate_t, gate_g):
    """Lifecycle.wake: heading for active, a start_compute submitted.

    A wake at an instant of `gate_t` finds its project's storage lane busy (a reattach, an
    unarchive, another branch's work): its start waits, scheduled, until the matching
    instant of `gate_g`, and only then begins (and draws its duration)."""
    i[PENDING] = ACTIVE
    f[WAKE_AT] = f[NOW]
    i[WAKE_CAUSE] = cause
    if i[ON] == 0:  # the project's storage counts it as on from here
        sp_start[i[N_SPAN]] = f[NOW]
        i[ON] = 1
    j = i[GATE_NEXT]
    while j < len(gate_t) and gate_t[j] < f[NOW]:
        j += 1  # a gate for a wake that did not happen: the caller sees it and runs again
    if j < len(gate_t) and gate_t[j] == f[NOW]:
        i[GATE_NEXT] = j + 1
        if i[LANE_TAIL] != i[LANE_HEAD]:
            i[TIE] = 1  # never seen: a wake finds its own lane busy
        _enqueue(f, i, START, lane, op_action, op_created, op_status, op_failures,
                 op_updated, op_finished, op_sched)
        f[OP_EVT_T] = gate_g[j]
        f[OP_SCHED] = f[NOW]
        i[OP_EVT_KIND] = GATE_OPEN
        return
    i[GATE_NEXT] = j
    _submit(f, i, START, lane, op_action, op_created, op_status, op_failures, op_updated,
            op_finished, op_sched, rng, dk, da, db)


@typed_once
@njit(cache=True)
def advance(arr, dur, cpu, mem, tmp, p, valid, rng, dk, da, db, f, i, open0, server0, client0,
            temp0, load0, load_start0, leave0, gate_t, gate_g):
    """Run one compute to the end of the run, from its creation's start or from a state.

    From creation (p[P_RESUME] == 0): the start that creation began finishes at
    p[P_A0] (the SimPy engine ran it); sessions that arrive before then wait for it.
    Resumed (p[P_RESUME] == 1): at p[P_A0] the SimPy engine hands over a compute
    with no operation underway and nobody waiting; `f` and `i` hold its state and
    open0 ... load0 its heaps (lists in heap order, kept as they are). `f` and `i`
    carry the float and integer state in (the sums so far) and out. Returns the
    output arrays (`Out.RETURNED`; `Out.named` names them); i[TIE] = 1 when two things at one instant would
    need an order the kernel does not know (nothing after that instant is valid).
    """
    n = len(arr)
    every = p[P_EVERY]
    n_ticks = int((p[P_UNTIL] - p[P_TICK0]) / every) + 2 if every > 0 else 0
    cap_ops = 2 * (n + n_ticks + 2) + n_ticks + 4
    rec_idx = np.empty(n, np.int64)
    rec_wait = np.empty(n)
    rec_outcome = np.empty(n, np.int8)
    rec_cold = np.empty(n, np.bool_)
    # outputs of one length and kind are rows of one array (in the order of the packed
    # names of `Out.RETURNED`): numba boxes each array it returns, about a microsecond
    # apiece, and most calls are of quiet computes, where that was a third of the call
    op_floats = np.empty((8, cap_ops))
    op_created, op_updated, op_finished, op_sched = (op_floats[0], op_floats[1],
                                                     op_floats[2], op_floats[3])
    wk_at, wk_wait, sp_start, sp_end = op_floats[4], op_floats[5], op_floats[6], op_floats[7]
    op_codes = np.empty((3, cap_ops), np.int8)
    op_action, op_status, wk_cause = op_codes[0], op_codes[1], op_codes[2]
    op_failures = np.empty(cap_ops, np.int64)
    cap_iv = 2 * cap_ops + 4 * n + 8
    iv_state = np.empty(cap_iv, np.int8)
    iv_floats = np.empty((3, cap_iv))
    iv_cu, iv_start, iv_end = iv_floats[0], iv_floats[1], iv_floats[2]
    lane = np.empty(cap_ops, np.int64)
    waiting = np.empty(n, np.int64)
    # every heap can hold every session and what it was handed, plus a scratch row
    held = max(len(open0), len(server0), len(client0), len(temp0), len(load0),
               len(load_start0), len(leave0))
    # not zeroed: a heap reads only the rows it holds and its scratch row, written first
    # (zeroing the heaps of a busy compute was most of the memory a call touched)
    H = np.empty((N_HEAPS, n + held + 1, 3))
    for h, rows in ((OPEN_H, open0), (SERVER_H, server0), (CLIENT_H, client0),
                    (LEAVE_H, leave0)):
        H[h, :len(rows), 1:] = 0.0  # handed over as one number each
        H[h, :len(rows), 0] = rows
        i[N_OPEN + h] = len(rows)
    for h, rows3 in ((TEMP_H, temp0), (LOAD_H, load0), (LOAD_START_H, load_start0)):
        H[h, :len(rows3), :] = rows3
        i[N_OPEN + h] = len(rows3)
    i[WAITING] = 0
    i[GATE_NEXT] = 0
    _simulate(arr, dur, cpu, mem, tmp, p, valid, rng, dk, da, db, f, i, H, waiting, gate_t, gate_g,
              rec_idx, rec_wait, rec_outcome, rec_cold,
              op_action, op_created, op_status, op_failures, op_updated, op_finished, op_sched,
              iv_state, iv_cu, iv_start, iv_end, wk_at, wk_cause, wk_wait, sp_start, sp_end, lane)
    # the heaps as they stand, in heap order (what the engine's runtime takes over)
    open_f = H[OPEN_H, :i[N_OPEN], 0].copy()
    server_f = H[SERVER_H, :i[N_SERVER], 0].copy()
    client_f = H[CLIENT_H, :i[N_CLIENT], 0].copy()
    temp_f = H[TEMP_H, :i[N_TEMP], :].copy()
    load_f = H[LOAD_H, :i[N_LOAD], :].copy()
    load_start_f = H[LOAD_START_H, :i[N_LOAD_START], :].copy()
    leave_f = H[LEAVE_H, :i[N_LEAVE], 0].copy()
    return (f, i, rec_idx, rec_wait, rec_outcome, rec_cold, op_floats, op_codes, op_failures,
            iv_floats, iv_state, open_f, server_f, client_f, temp_f, load_f, load_start_f,
            leave_f)


@_loop
def _simulate(arr, dur, cpu, mem, tmp, p, valid, rng, dk, da, db, f, i, H, waiting, gate_t, gate_g,
              rec_idx, rec_wait, rec_outcome, rec_cold,
              op_action, op_created, op_status, op_failures, op_updated, op_finished, op_sched,
              iv_state, iv_cu, iv_start, iv_end, wk_at, wk_cause, wk_wait, sp_start, sp_end, lane):
    """The recurrence itself (see `advance`), on arrays `advance` allocated."""
    n = len(arr)
    until = p[P_UNTIL]
    every = p[P_EVERY]
    A0 = p[P_A0]
    T = p[P_TIMEOUT]
    f[STALE_T] = INF
    redo_arm = True
    if p[P_RESUME] > 0:
        f[NOW] = A0
        sp_start[0] = A0  # on from the hand-over, if it is on
        i[N_SPAN] = 0
        redo_arm = False  # the engine's timer stands as it was armed
    # sessions that arrive while the creation's start runs wait for it (or are refused)
    while p[P_RESUME] == 0 and i[NEXT_ARR] < n and arr[i[NEXT_ARR]] < A0:
        s = i[NEXT_ARR]
        i[NEXT_ARR] = s + 1
        limit = p[P_POOLER_MAX] if p[P_POOLED] > 0 else p[P_MAX_CONN]
        if i[WAITING] >= limit:
            if arr[s] < f[COUNT_FROM]:
                pass  # a client of the warm-up is in no figure
            elif p[P_POOLED] > 0:
                i[POOLER_FULLS] += 1
            else:
                i[REFUSED] += 1  # 53300
            _record(i, rec_idx, rec_wait, rec_outcome, rec_cold, s, 0.0,
                    REFUSED_POOLER_FULL if p[P_POOLED] > 0 else REFUSED_TOO_MANY, False)
        else:
            waiting[i[WAITING]] = s
            i[WAITING] += 1
    if p[P_RESUME] == 0:
        if ((i[NEXT_ARR] < n and arr[i[NEXT_ARR]] == A0)
                or (every > 0 and p[P_TICK0] + every <= A0)):
            i[TIE] = 1
            until = A0
        f[TICK_T] = p[P_TICK0] + every
        f[TICK_SCHED] = p[P_TICK0]
        f[NOW] = A0  # the first activation
        _activated(f, i, p, valid, arr, dur, cpu, mem, tmp, waiting, H, rec_idx, rec_wait,
                   rec_outcome, rec_cold)
        i[ON] = 1
        sp_start[0] = -INF  # the creation's span: the caller knows where it began
        i[N_SPAN] = 0
    d_given = False
    d_val = INF
    while True:
        # -- arm(): the runtime's timer at the next instant something can change
        if redo_arm:
            t = arr[i[NEXT_ARR]] if i[NEXT_ARR] < n else INF
            if d_given:
                d = d_val
            else:
                d = INF
                if (T >= 0 and i[CUR] == ACTIVE and i[PENDING] == NONE and i[WAITING] == 0
                        and i[LANE_TAIL] == i[LANE_HEAD]):
                    d = max(f[BUSY_UNTIL], f[QUIET_SINCE]) + T
            if d < t:
                t = d
            if i[N_LOAD] > 0 and f[CU] > p[P_MIN_CU] and H[LOAD_H, 0, 0] < t:
                t = H[LOAD_H, 0, 0]
            if i[N_LOAD_START] > 0 and H[LOAD_START_H, 0, 0] < t:
                t = H[LOAD_START_H, 0, 0]
            if f[RESIZE_AT] < t:
                t = f[RESIZE_AT]
            if t < f[ARMED_AT]:
                # SimPy keeps a superseded timer; firing at the same instant as a new one,
                # the older fires first: what orders simultaneous events of two computes
                if f[ARMED_AT] < INF:
                    f[STALE_T] = f[ARMED_AT]
                    f[STALE_SCHED] = f[FIRE_SCHED]
                f[FIRE_SCHED] = f[STALE_SCHED] if t == f[STALE_T] else f[NOW]
                f[ARMED_AT] = t
                f[FIRE_T] = max(t, f[NOW])
            redo_arm = False
            d_given = False
        # -- the next event, and a refusal to guess the order of simultaneous ones
        t_fire = f[FIRE_T] if f[ARMED_AT] < INF else INF
        t_op = f[OP_EVT_T] if i[OP_EVT_KIND] != NO_EVENT else INF
        t_tick = f[TICK_T] if every > 0 else INF
        t = min(t_fire, t_op, t_tick)
        if not t < until:
            break
        if (t == t_fire) + (t == t_op) + (t == t_tick) > 1:
            i[TIE] = 1
            break
        f[NOW] = t
        now = t
        if t == t_fire:
            f[CUR_SCHED] = f[FIRE_SCHED]
            # -- ComputeRuntime._fire
            f[ARMED_AT] = INF
            while i[NEXT_ARR] < n and arr[i[NEXT_ARR]] <= now:
                s = i[NEXT_ARR]
                i[NEXT_ARR] = s + 1
                a = arr[s]
                # connect(): every connection resets the countdown
                f[QUIET_SINCE] = a
                _expire(f, i, p, valid, H, a)
                if p[P_POOLED] > 0:
                    if i[N_CLIENT] + i[WAITING] >= p[P_POOLER_MAX]:
                        i[POOLER_FULLS] += 1 if a >= f[COUNT_FROM] else 0
                        _record(i, rec_idx, rec_wait, rec_outcome, rec_cold, s, 0.0,
                                REFUSED_POOLER_FULL, False)
                        continue
                elif i[N_OPEN] + i[N_SERVER] + i[WAITING] >= p[P_MAX_CONN]:
                    # the pool's server connections (open since the pooler was on) are
                    # Postgres connections too
                    i[REFUSED] += 1 if a >= f[COUNT_FROM] else 0  # 53300
                    _record(i, rec_idx, rec_wait, rec_outcome, rec_cold, s, 0.0,
                            REFUSED_TOO_MANY, False)
                    continue
                if i[CUR] != ACTIVE or i[PENDING] != NONE:
                    waiting[i[WAITING]] = s
                    i[WAITING] += 1
                    if i[CUR] == IDLE and i[PENDING] == NONE:
                        _wake(f, i, BY_CONNECTION, sp_start, lane, op_action, op_created,
                              op_status, op_failures, op_updated, op_finished, op_sched,
                              rng, dk, da, db, gate_t, gate_g)
                    continue
                _admit(f, i, p, valid, s, a, a, dur[s], cpu[s], mem[s], tmp[s], False, H,
                       rec_idx, rec_wait, rec_outcome, rec_cold)
            if _load_due(i, H, now):
                _expire_load(f, i, p, valid, H, now)
                _load_changed(f, p, valid)
            if f[RESIZE_AT] <= now:
                # an automatic resize: no restart, no dropped connection
                _expire_load(f, i, p, valid, H, now)
                f[RESIZE_AT] = INF
                if i[CUR] == ACTIVE:
                    g = _goal(f, p, valid)
                    if g != f[CU]:
                        f[CU] = g
                        _note_state(f, i, iv_state, iv_cu, iv_start, iv_end)
            d = INF
            if (T >= 0 and i[CUR] == ACTIVE and i[PENDING] == NONE and i[WAITING] == 0
                    and i[LANE_TAIL] == i[LANE_HEAD]):
                d = max(f[BUSY_UNTIL], f[QUIET_SINCE]) + T
            if d <= now:
                # scale to zero: suspend
                i[PENDING] = IDLE
                _submit(f, i, SUSPEND, lane, op_action, op_created, op_status, op_failures,
                        op_updated, op_finished, op_sched, rng, dk, da, db)
                redo_arm = True
            else:
                redo_arm = True
                d_given = True
                d_val = d
        elif t == t_op:
            f[CUR_SCHED] = f[OP_SCHED]
            k = lane[i[LANE_HEAD]]
            if i[OP_EVT_KIND] == GATE_OPEN:
                # the storage work it waited for ended: Executor._try_start
                _try_start(f, i, lane, op_action, op_status, op_updated, rng, dk, da, db)
                continue
            if i[OP_EVT_KIND] == RETRY:
                # Executor._retry
                op_status[k] = RUNNING
                op_updated[k] = now
                a = op_action[k]
                f[OP_EVT_T] = now + _draw(rng, dk[a], da[a], db[a])
                f[OP_SCHED] = now
                i[OP_EVT_KIND] = ATTEMPT_DONE
                continue
            # Executor._attempt_done
            if p[P_FAIL_RATE] > 0 and rng.random() < p[P_FAIL_RATE]:
                op_status[k] = FAILED
                op_updated[k] = now
                op_failures[k] += 1
                f[OP_EVT_T] = now + p[P_BACKOFF]
                f[OP_SCHED] = now
                i[OP_EVT_KIND] = RETRY
                continue
            op_status[k] = FINISHED
            op_updated[k] = now
            op_finished[k] = now
            # _finish: free the lane, start what waited
            i[LANE_HEAD] += 1
            i[OP_EVT_KIND] = NO_EVENT
            if i[LANE_TAIL] > i[LANE_HEAD]:
                _try_start(f, i, lane, op_action, op_status, op_updated, rng, dk, da, db)
            a = op_action[k]
            if a == START:
                # Lifecycle._started, then ComputeRuntime.activated
                i[CUR] = ACTIVE
                i[PENDING] = NONE
                f[CU] = p[P_MIN_CU]
                _note_state(f, i, iv_state, iv_cu, iv_start, iv_end)
                i[COLD_STARTS] += 1 if f[WAKE_AT] >= f[COUNT_FROM] else 0
                w = i[N_WAKE]
                wk_at[w] = f[WAKE_AT]
                wk_cause[w] = i[WAKE_CAUSE]
                wk_wait[w] = now - f[WAKE_AT]
                i[N_WAKE] = w + 1
                f[WAKE_AT] = INF
                _activated(f, i, p, valid, arr, dur, cpu, mem, tmp, waiting, H, rec_idx,
                           rec_wait, rec_outcome, rec_cold)
            elif a == SUSPEND:
                # Lifecycle._suspended
                i[CUR] = IDLE
                if i[PENDING] == IDLE:
                    i[PENDING] = NONE
                f[CU] = 0.0
                i[SUSPENDS] += 1 if op_created[k] >= f[COUNT_FROM] else 0
                _note_state(f, i, iv_state, iv_cu, iv_start, iv_end)
                if i[WAITING] > 0 and i[LANE_TAIL] == i[LANE_HEAD]:
                    # clients arrived while it was suspending: it stays on for them
                    _wake(f, i, BY_CONNECTION, sp_start, lane, op_action, op_created,
                          op_status, op_failures, op_updated, op_finished, op_sched,
                          rng, dk, da, db, gate_t, gate_g)
                elif i[PENDING] != ACTIVE:
                    sp_end[i[N_SPAN]] = now  # went quiet: the project's idle clock starts
                    i[N_SPAN] += 1
                    i[ON] = 0
            redo_arm = True  # every compute operation re-arms the runtime when it ends
        else:
            # -- an availability check of the compute's branch
            f[CUR_SCHED] = f[TICK_SCHED]
            f[TICK_SCHED] = now
            f[TICK_T] = now + every
            if i[CUR] == IDLE and i[PENDING] == NONE:
                _wake(f, i, BY_CHECK, sp_start, lane, op_action, op_created, op_status,
                      op_failures, op_updated, op_finished, op_sched, rng, dk, da, db, gate_t, gate_g)
            f[QUIET_SINCE] = now  # background activity resets the countdown
            _submit(f, i, CHECK, lane, op_action, op_created, op_status, op_failures,
                    op_updated, op_finished, op_sched, rng, dk, da, db)
    f[NOW] = until
    if p[P_OPEN_END] == 0:  # the run ends here: close what is open
        _close_interval(f, i, iv_state, iv_cu, iv_start, iv_end, until)
        if i[ON] == 1:
            sp_end[i[N_SPAN]] = until
            i[N_SPAN] += 1

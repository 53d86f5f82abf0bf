"""The per-session steps of the kernel (`sim.kernel.physics`): its heaps, the autoscaler's
goal, load and temporary files, a session's departure and its admission. Split from
`physics.py` to keep each file readable; `advance` and the operations lane stay there."""

# ruff: noqa: F405
from __future__ import annotations

import math

from sim.kernel.jit import INTERNAL, njit
from sim.kernel.physics_layout import *  # noqa: F403
from sim.kernel.row_heaps import pop, push

INF = math.inf

# `_nrt=False`: no reference counting (see `sim.kernel.physics`); only `advance` allocates. Each helper
# compiles once, as a function of its own, except the heaps' push and pop (`_heap`),
# which numba inlines where they are called: they are the innermost work and a call each
# cost a quarter of the kernel's time. numba's inlining of every helper that runs for
# each session (admit, expire...) copied and retyped them, heaps and all, at every call:
# over half of the first compilation. `sim.kernel.jit` says where the code is cached.
_loop = njit(cache=True, _nrt=False, **INTERNAL)
_inline = njit(cache=True, _nrt=False, **INTERNAL)
_call = njit(cache=True, _nrt=False, **INTERNAL)
_heap = njit(cache=True, inline="always", _nrt=False)

@_heap
def _push(H, i, h, x0, x1, x2):
    push(H, h, i, N_OPEN + h, x0, x1, x2)


@_heap
def _pop(H, i, h):
    pop(H, h, i, N_OPEN + h)


@_inline
def _step_up(valid, cu):
    for v in valid:
        if v >= cu - 1e-12:
            return v
    return valid[-1]


@_inline
def _goal(f, p, valid):
    need = max(f[CPU_LOAD] / p[P_TCPU], f[MEM_LOAD] / p[P_RAM_TMEM], p[P_MIN_CU])
    return min(_step_up(valid, need), p[P_MAX_CU])


@_call
def _close_interval(f, i, o_state, o_cu, o_start, o_end, now):
    length = now - f[IV_START]
    if length > 0:
        k = i[N_IV]
        o_state[k] = i[IV_STATE]
        o_cu[k] = f[IV_CU]
        o_start[k] = f[IV_START]
        o_end[k] = now
        i[N_IV] = k + 1
        counted = now - max(f[IV_START], f[COUNT_FROM])  # the warm-up is in no figure
        if i[IV_STATE] != IDLE and counted > 0:
            f[ACTIVE_S] += counted
            f[CU_S] += f[IV_CU] * counted
    f[IV_START] = now


@_call
def _note_state(f, i, o_state, o_cu, o_start, o_end):
    if i[CUR] == i[IV_STATE] and f[CU] == f[IV_CU]:
        return
    _close_interval(f, i, o_state, o_cu, o_start, o_end, f[NOW])
    i[IV_STATE] = i[CUR]
    f[IV_CU] = f[CU]


@_inline
def _load_changed(f, p, valid):
    if f[RESIZE_AT] == INF and _goal(f, p, valid) != f[CU]:
        f[RESIZE_AT] = f[NOW] + p[P_DELAY]


@_inline
def _load_due(i, H, now):
    return ((i[N_LOAD_START] > 0 and H[LOAD_START_H, 0, 0] <= now)
            or (i[N_LOAD] > 0 and H[LOAD_H, 0, 0] <= now))


@_inline
def _expire_load(f, i, p, valid, H, now):
    """The load of sessions that started and ended by `now` (starts first)."""
    started = i[N_LOAD_START] > 0 and H[LOAD_START_H, 0, 0] <= now
    while i[N_LOAD_START] > 0 and H[LOAD_START_H, 0, 0] <= now:
        f[CPU_LOAD] += H[LOAD_START_H, 0, 1]
        f[MEM_LOAD] += H[LOAD_START_H, 0, 2]
        _pop(H, i, LOAD_START_H)
    while i[N_LOAD] > 0 and H[LOAD_H, 0, 0] <= now:
        f[CPU_LOAD] -= H[LOAD_H, 0, 1]
        f[MEM_LOAD] -= H[LOAD_H, 0, 2]
        _pop(H, i, LOAD_H)
    if i[N_LOAD] == 0:  # keep float sums exact at rest
        f[CPU_LOAD] = 0.0
        f[MEM_LOAD] = 0.0
    if started:  # a rise the autoscaler reacts to, whoever noticed it
        _load_changed(f, p, valid)


@_inline
def _expire(f, i, p, valid, H, now):
    for h in (OPEN_H, SERVER_H, CLIENT_H, LEAVE_H):
        while i[N_OPEN + h] > 0 and H[h, 0, 0] <= now:
            _pop(H, i, h)
    while i[N_TEMP] > 0 and H[TEMP_H, 0, 0] <= now:
        _pop(H, i, TEMP_H)
    if _load_due(i, H, now):
        _expire_load(f, i, p, valid, H, now)


@_inline
def _temp_at(i, H, t):
    """Bytes of temporary files held at `t` by the sessions admitted so far (ComputeRuntime.
    _temp_at: summed in heap order)."""
    used = 0.0
    for r in range(i[N_TEMP]):
        if H[TEMP_H, r, 2] <= t < H[TEMP_H, r, 0]:
            used += H[TEMP_H, r, 1]
    return used


@_inline
def _leave(H, i, at):
    """A pooled client that gets no session is a client of the pooler until `at`."""
    _push(H, i, CLIENT_H, at, 0.0, 0.0)
    _push(H, i, LEAVE_H, at, 0.0, 0.0)


@_inline
def _record(i, rec_idx, rec_wait, rec_outcome, rec_cold, s, wait, outcome, cold):
    k = i[N_REC]
    rec_idx[k] = s
    rec_wait[k] = wait
    rec_outcome[k] = outcome
    rec_cold[k] = cold
    i[N_REC] = k + 1


@_inline
def _next_slot(i, p, H):
    """ComputeRuntime._next_slot: the heap whose first end frees a pooled session's slot,
    or -1 when a server connection is free now. The pool holds at most pool_size server
    connections, and never more than the Postgres connections that direct sessions (open
    since the pooler was turned on) leave free."""
    if i[N_OPEN] == 0:
        return SERVER_H if i[N_SERVER] >= p[P_POOL_SIZE] else -1
    if i[N_SERVER] < min(p[P_POOL_SIZE], p[P_MAX_CONN] - i[N_OPEN]):
        return -1
    if i[N_SERVER] >= p[P_POOL_SIZE] or (i[N_SERVER] > 0
                                        and H[SERVER_H, 0, 0] <= H[OPEN_H, 0, 0]):
        return SERVER_H
    return OPEN_H


@_inline
def _admit(f, i, p, valid, s, arrival, now, d, c, m, t, cold, H, rec_idx, rec_wait,
           rec_outcome, rec_cold):
    # ComputeRuntime._admit: the client's fate is decided now; a queued session runs, and
    # holds its files and load, from its start
    counted = 1 if arrival >= f[COUNT_FROM] else 0  # a warm-up client is in no figure
    start = now
    slot = _next_slot(i, p, H) if p[P_POOLED] > 0 else -1
    queued = slot >= 0
    if queued:
        start = H[slot, 0, 0]
        if start - now > p[P_QUEUE_TIMEOUT]:
            i[QUEUE_TIMEOUTS] += counted
            _leave(H, i, now + p[P_QUEUE_TIMEOUT])
            _record(i, rec_idx, rec_wait, rec_outcome, rec_cold, s, now - arrival,
                    QUEUE_TIMEOUT, cold)
            return
    if t > 0.0 and _temp_at(i, H, start) + t > p[P_DISK]:
        i[DISK_FULLS] += counted  # SQLSTATE 53100: no space left on device, at its turn
        if start > now:
            _leave(H, i, start)
        _record(i, rec_idx, rec_wait, rec_outcome, rec_cold, s, start - arrival, DISK_FULL,
                cold)
        return
    if p[P_POOLED] > 0:
        if queued:
            _pop(H, i, slot)  # the slot passes to this session when it frees
            i[QUEUED] += counted
            if counted:
                f[QUEUE_WAIT_S] += start - now
        end = start + d
        _push(H, i, SERVER_H, end, 0.0, 0.0)
        _push(H, i, CLIENT_H, end, 0.0, 0.0)
    else:
        end = now + d
        _push(H, i, OPEN_H, end, 0.0, 0.0)
    # direct and pooled sessions both count, whatever the pooler setting is now
    held = i[N_OPEN] + i[N_CLIENT]
    if t > 0.0:
        _push(H, i, TEMP_H, end, t, start)
    i[SESSIONS] += counted
    if held > i[PEAK] and now >= f[COUNT_FROM]:
        i[PEAK] = held
    if end > f[BUSY_UNTIL]:
        f[BUSY_UNTIL] = end
    if (c > 0.0 or m > 0.0) and p[P_FIXED] == 0:
        _push(H, i, LOAD_H, end, c, m)
        if start > now:  # queued: the autoscaler sees it when it starts
            _push(H, i, LOAD_START_H, start, c, m)
        else:
            f[CPU_LOAD] += c
            f[MEM_LOAD] += m
            _load_changed(f, p, valid)
    _record(i, rec_idx, rec_wait, rec_outcome, rec_cold, s, start - arrival, OK, cold)

"""Run the compute kernel for one compute of a control plane, and write what it did.

`advance_compute` gathers a compute's settings, state and streams into the
kernel's arrays (`sim.kernel.physics`) and runs it; `apply_advanced` writes the
result into the control plane as the SimPy engine would have: the compute's
counters, connection records in the order the engine records them, state
intervals, wakes, and operations with ids drawn from the compute's id stream in
creation order. With `record_events` off no operation is built at all: only
the per-minute sums and the cold-start waits are kept.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from sim.engine.config import ConnectionRecording
from sim.engine.connection_table import ColumnBlock
from sim.engine.first_instant import counted_span
from sim.engine.model import Compute, Operation
from sim.engine.operation_rows import OperationColumns
from sim.engine.records import template_of
from sim.kernel import physics as k
from sim.rules.connections import POOLER_MAX_CLIENTS
from sim.rules.operations import Action
from sim.rules.sizes import RAM_GB_PER_CU, VALID_CU
from sim.rules.states import ComputeState, OperationStatus
from sim.workload.distributions import DistKind, Distribution

if TYPE_CHECKING:
    from sim.engine.control_plane import ControlPlane

INF = math.inf
_VALID = np.array(VALID_CU, dtype=np.float64)
_STATES = {k.ACTIVE: ComputeState.ACTIVE.value, k.IDLE: ComputeState.IDLE.value}
_STATUS = {k.SCHEDULING: OperationStatus.SCHEDULING.value, k.RUNNING: OperationStatus.RUNNING.value,
           k.FAILED: OperationStatus.FAILED.value, k.FINISHED: OperationStatus.FINISHED.value}
_ACTIONS = {k.START: Action.START_COMPUTE, k.SUSPEND: Action.SUSPEND_COMPUTE,
            k.CHECK: Action.CHECK_AVAILABILITY}
_CAUSES = {k.BY_CONNECTION: "connection", k.BY_CHECK: "check_availability"}
_NAMES = {code: action.value for code, action in _ACTIONS.items()}


def _by_code(names: dict[int, str]) -> np.ndarray:
    """The names of the kernel's codes, as an array to index with its columns of codes."""
    return np.array([names.get(code) for code in range(max(names) + 1)], dtype=object)


_STATE_NAMES, _CAUSE_NAMES = _by_code(_STATES), _by_code(_CAUSES)
_ACTION_NAMES, _STATUS_NAMES = _by_code(_NAMES), _by_code(_STATUS)


class Tie(Exception):
    """Two things at one instant whose order the kernel does not know: the engine's case."""


class Sessions(NamedTuple):
    """A compute's whole workload as columns, drawn as the engine's session feed draws it."""

    arrival_s: np.ndarray
    duration_s: np.ndarray
    cpu: np.ndarray
    memory_gb: np.ndarray
    temp_bytes: np.ndarray

    @classmethod
    def none(cls) -> Sessions:
        empty = np.empty(0)
        return cls(empty, empty, empty, empty, empty)


@dataclass
class Advanced:
    """What the kernel computed for one compute."""

    compute: Compute
    sessions: Sessions
    out: dict[str, np.ndarray]
    on_starts: np.ndarray  # when the compute was on (creation or wake) ...
    on_ends: np.ndarray  # ... until it was suspended (or the run ended)
    #: once written for the engine to take over: its records of sessions still open
    open_records: list[int] = field(default_factory=list)


def _distribution(d: Distribution) -> tuple[int, float, float]:
    if d.is_zero:
        return k.ZERO, 0.0, 0.0
    if d.dist is DistKind.FIXED:
        return k.FIXED, d.mean_s, 0.0
    if d.dist is DistKind.EXPONENTIAL:
        return k.EXPONENTIAL, d.mean_s, 0.0
    return k.LOGNORMAL, math.log(d.mean_s) - d.sigma**2 / 2.0, d.sigma


def durations_of(cp: ControlPlane, actions: tuple[Action, ...]
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The durations of `actions` as the kernels draw them: kind codes and two parameters
    (worked out once per control plane: its config does not change)."""
    table = cp.derived.get(actions)
    if table is None:
        kinds, a, b = zip(*(_distribution(cp.config.duration_of(x)) for x in actions),
                          strict=True)
        table = cp.derived[actions] = (np.array(kinds, dtype=np.int64), np.array(a),
                                       np.array(b))
    return table


_KERNEL_ACTIONS = tuple(_ACTIONS[code] for code in (k.START, k.SUSPEND, k.CHECK))


def _params(cp: ControlPlane, c: Compute, start: float, until: float,
            checks: tuple[float, float] | None, resume: bool) -> np.ndarray:
    rt = c.runtime
    assert rt is not None
    cfg = cp.config
    p = np.zeros(k.N_PARAMS)
    p[k.P_A0] = start
    p[k.P_UNTIL] = until
    p[k.P_TIMEOUT] = -1.0 if rt.idle_timeout is None else rt.idle_timeout
    p[k.P_MAX_CONN] = rt.max_conn
    p[k.P_POOLED] = 1.0 if c.pooler_enabled else 0.0
    p[k.P_POOL_SIZE] = rt.pool_size
    p[k.P_QUEUE_TIMEOUT] = cfg.pool_queue_timeout_s
    p[k.P_DISK] = rt.disk_bytes
    p[k.P_MIN_CU] = c.autoscaling_limit_min_cu
    p[k.P_MAX_CU] = c.autoscaling_limit_max_cu
    p[k.P_FIXED] = 1.0 if c.fixed_size else 0.0
    p[k.P_TCPU] = cfg.autoscaler.target_cpu_utilisation
    p[k.P_RAM_TMEM] = RAM_GB_PER_CU * cfg.autoscaler.target_memory_utilisation
    p[k.P_DELAY] = cfg.autoscaler.reaction_delay_s
    p[k.P_FAIL_RATE] = cp.executor.failure_rate  # a served world may change it (faults)
    p[k.P_BACKOFF] = cfg.retry_backoff_s
    p[k.P_POOLER_MAX] = POOLER_MAX_CLIENTS
    if checks is not None:
        p[k.P_TICK0], p[k.P_EVERY] = checks
    p[k.P_RESUME] = 1.0 if resume else 0.0
    return p


def _state(c: Compute, count_from: float) -> tuple[np.ndarray, np.ndarray]:
    """The kernel's float and integer state from the compute and its runtime."""
    rt = c.runtime
    assert rt is not None
    f = np.zeros(k.N_FLOATS)
    f[[k.ARMED_AT, k.FIRE_T, k.RESIZE_AT, k.WAKE_AT, k.OP_EVT_T]] = INF
    f[k.BUSY_UNTIL] = rt.busy_until
    f[k.QUIET_SINCE] = rt.quiet_since
    f[k.CU] = c.cu
    f[k.IV_CU] = rt.iv_cu
    f[k.IV_START] = rt.iv_start
    f[k.COUNT_FROM] = count_from
    s = c.stats
    f[k.ACTIVE_S], f[k.CU_S], f[k.QUEUE_WAIT_S] = s.active_s, s.cu_s, s.queue_wait_s
    i = np.zeros(k.N_INTS, dtype=np.int64)
    i[k.CUR], i[k.PENDING], i[k.IV_STATE] = k.ACTIVE, k.NONE, k.ACTIVE
    i[k.SESSIONS], i[k.REFUSED], i[k.QUEUED] = s.sessions, s.refused, s.queued
    i[k.QUEUE_TIMEOUTS], i[k.DISK_FULLS], i[k.PEAK] = s.queue_timeouts, s.disk_full, s.peak_connections
    i[k.COLD_STARTS], i[k.SUSPENDS] = s.cold_starts, s.suspends
    i[k.POOLER_FULLS] = s.refused_pooler_full
    return f, i


_NO_HEAPS = (np.empty(0), np.empty(0), np.empty(0), np.empty((0, 3)), np.empty((0, 3)),
             np.empty((0, 3)), np.empty(0))


class Gates(NamedTuple):
    """Wakes whose start waits for the project's storage lane: at wake instant `at[j]`, the
    start_compute stays scheduled until `until[j]` (both ascending)."""

    at: np.ndarray
    until: np.ndarray

    @classmethod
    def none(cls) -> Gates:
        return cls(np.empty(0), np.empty(0))


_NO_GATES = Gates.none()


def _run(cp: ControlPlane, c: Compute, sessions: Sessions, p: np.ndarray, f: np.ndarray,
         i: np.ndarray, heaps: tuple[np.ndarray, ...], gates: Gates | None = None
         ) -> dict[str, np.ndarray]:
    dk, da, db = durations_of(cp, _KERNEL_ACTIONS)
    gates = gates or _NO_GATES
    result = k.advance(*sessions, p, _VALID, cp.streams.get(f"ops/{c.key}"), dk, da, db, f, i,
                       *heaps, gates.at, gates.until)
    out = k.Out.named(result)
    if out["i"][k.TIE]:
        raise Tie("two events of a compute at the same instant")
    return out


def advance_compute(cp: ControlPlane, c: Compute, sessions: Sessions, until: float,
                    checks: tuple[float, float] | None, gates: Gates | None = None
                    ) -> Advanced:
    """Run compute `c` (started by its creation, then left alone by the engine) to `until`.

    `checks`: (when its branch's availability checks began, their period), when the
    checks of its branch fall on it; `gates`: its wakes that wait for storage work.
    Raises Tie."""
    rt = c.runtime
    assert rt is not None and rt.activated_at is not None
    assert c.current_state == _STATES[k.ACTIVE] and c.pending_state is None
    f, i = _state(c, cp.config.count_from_s)
    out = _run(cp, c, sessions, _params(cp, c, rt.activated_at, until, checks, False), f, i,
               _NO_HEAPS, gates)
    n_span = int(out["i"][k.N_SPAN])
    starts = out["sp_start"][:n_span].copy()
    starts[0] = c.created_at
    return Advanced(c, sessions, out, starts, out["sp_end"][:n_span].copy())


def advance_to_call(cp: ControlPlane, c: Compute, sessions: Sessions, until: float,
                    checks: tuple[float, float] | None, gates: Gates | None = None
                    ) -> Advanced:
    """Run compute `c` from its creation's start up to (not including) `until`, the instant
    of a scripted call, leaving what is open at `until` open (see `give_to_engine`).
    Raises Tie."""
    rt = c.runtime
    assert rt is not None and rt.activated_at is not None
    f, i = _state(c, cp.config.count_from_s)
    p = _params(cp, c, rt.activated_at, until, checks, False)
    p[k.P_OPEN_END] = 1.0
    out = _run(cp, c, sessions, p, f, i, _NO_HEAPS, gates)
    n_span = int(out["i"][k.N_SPAN])
    starts = out["sp_start"][:n_span + int(out["i"][k.ON])].copy()
    starts[0] = c.created_at
    return Advanced(c, sessions, out, starts, out["sp_end"][:n_span].copy())


def apply_advanced(cp: ControlPlane, adv: Advanced, engine_next: bool = False
                   ) -> list[Operation]:
    """Write the compute's counters and rows into `cp`; return its operations (not filed).
    `engine_next`: the engine takes the compute over from here."""
    if _apply_rows(cp, adv, engine_next):
        return _operations(cp, adv)
    return []


def apply_advanced_to_end(cp: ControlPlane, adv: Advanced, rank: int) -> OperationColumns | None:
    """`apply_advanced` for a compute the kernel ran to the end of the run: its operations
    as columns (`sim.engine.operation_rows`), None when events are not recorded."""
    return operation_columns(cp, adv, rank) if _apply_rows(cp, adv, False) else None


def operation_columns(cp: ControlPlane, adv: Advanced, rank: int) -> OperationColumns:
    """The compute's operations as columns (`sim.engine.operation_rows`), ids drawn in
    creation order; `rank`: its branch's availability-check rank."""
    c, out = adv.compute, adv.out
    n = int(out["i"][k.N_OPS])
    status = out["op_status"][:n]
    finished = np.where(status == k.FINISHED, out["op_finished"][:n], np.nan)
    return OperationColumns(
        cp.ids.operation_bytes(cp.streams.get(f"ids/{c.key}"), n), c.branch_id, c.id,
        _ACTION_NAMES[out["op_action"][:n]], _STATUS_NAMES[status], out["op_failures"][:n],
        out["op_created"][:n], out["op_updated"][:n], finished, out["op_sched"][:n],
        np.full(n, rank), np.arange(n, dtype=np.float64))


def _apply_rows(cp: ControlPlane, adv: Advanced, engine_next: bool) -> bool:
    """The counters, connections, intervals and wakes; True when events are recorded (the
    operations are then the caller's to build)."""
    c, out = adv.compute, adv.out
    f, i = out["f"], out["i"]
    s = c.stats
    s.sessions, s.refused, s.queued = int(i[k.SESSIONS]), int(i[k.REFUSED]), int(i[k.QUEUED])
    s.queue_timeouts, s.disk_full = int(i[k.QUEUE_TIMEOUTS]), int(i[k.DISK_FULLS])
    s.cold_starts, s.suspends = int(i[k.COLD_STARTS]), int(i[k.SUSPENDS])
    s.refused_pooler_full = int(i[k.POOLER_FULLS])
    s.peak_connections = int(i[k.PEAK])
    s.active_s, s.cu_s, s.queue_wait_s = float(f[k.ACTIVE_S]), float(f[k.CU_S]), float(f[k.QUEUE_WAIT_S])
    adv.open_records = _connections(cp, adv, engine_next)
    _queue_waits(cp, adv)
    n_iv, n_wake = int(i[k.N_IV]), int(i[k.N_WAKE])
    if cp.usage is not None:  # the consumption history, from the same intervals
        on_iv = out["iv_state"][:n_iv] != k.IDLE
        cp.usage.add_many(c.id, out["iv_cu"][:n_iv][on_iv], out["iv_start"][:n_iv][on_iv],
                          out["iv_end"][:n_iv][on_iv])
    if not cp.config.record_events:
        on = out["iv_state"][:n_iv] != k.IDLE
        t0 = cp.config.count_from_s
        start, end, counted = counted_span(out["iv_start"][:n_iv][on], out["iv_end"][:n_iv][on], t0)
        cp.recorder.add_minutes(start, end, out["iv_cu"][:n_iv][on][counted], cp.now - t0,
                                template=template_of(cp.projects[c.project_id].key))
        _tally(cp, adv, start, end)
        if n_wake:
            waits = cp.recorder.wake_waits
            new = out["wk_wait"][:n_wake][out["wk_at"][:n_wake] >= cp.config.count_from_s]
            waits[c.id] = np.concatenate((waits[c.id], new)) if c.id in waits else new
        return False
    # the rows stay columns (sim.engine.row_table): no object per row (a fleet has millions)
    rec = cp.recorder
    rec.intervals.add_block(rec.intervals.block(
        compute_id=c.id, project_id=c.project_id, state=_STATE_NAMES[out["iv_state"][:n_iv]],
        cu=out["iv_cu"][:n_iv].copy(), start_s=out["iv_start"][:n_iv].copy(),
        end_s=out["iv_end"][:n_iv].copy()))
    rec.wakes.add_block(rec.wakes.block(
        compute_id=c.id, project_id=c.project_id, at_s=out["wk_at"][:n_wake].copy(),
        cause=_CAUSE_NAMES[out["wk_cause"][:n_wake]], wait_s=out["wk_wait"][:n_wake].copy()))
    return True


def _tally(cp: ControlPlane, adv: Advanced, start: np.ndarray, end: np.ndarray) -> None:
    """What the rows not built would have counted (`sim.engine.tallies`): the compute's
    operations, and when it was on (`start`, `end`: from the first instant, as the rows)."""
    c, out = adv.compute, adv.out
    rec = cp.recorder
    n_ops = int(out["i"][k.N_OPS])
    rec.add_on_spans(c.project_id, start, end)
    if n_ops:
        rec.tally(c.project_id).add_codes(
            out["op_action"][:n_ops], _ACTION_NAMES, out["op_status"][:n_ops], _STATUS_NAMES,
            out["op_failures"][:n_ops], out["op_created"][:n_ops], cp.config.count_from_s)


def _queue_waits(cp: ControlPlane, adv: Advanced) -> None:
    """The queue waits of a pooled compute's connections, from all its records (kept
    whatever the connection rows keep)."""
    out = adv.out
    if not adv.compute.pooler_enabled:  # as the kernel ran it: a change goes by the engine
        return
    n = int(out["i"][k.N_REC])
    # a client of the warm-up is in no figure
    counted = adv.sessions.arrival_s[out["rec_idx"][:n]] >= cp.config.count_from_s
    cp.recorder.add_queue_waits(adv.compute.id, out["rec_wait"][:n][counted],
                                out["rec_outcome"][:n][counted], out["rec_cold"][:n][counted],
                                k.OK, k.QUEUE_TIMEOUT, cp.config.pool_queue_timeout_s)


def _connections(cp: ControlPlane, adv: Advanced, engine_next: bool) -> list[int]:
    """The compute's connection rows, as a block of columns. `engine_next`: the engine
    takes the compute over now and may cut the sessions still open, so their rows go on
    its list of records instead; returns where they are in it."""
    mode = cp.config.record_connections
    if mode is ConnectionRecording.OFF:
        return []
    c, out = adv.compute, adv.out
    n = int(out["i"][k.N_REC])
    idx = out["rec_idx"][:n]
    wait, outcome, cold = out["rec_wait"][:n], out["rec_outcome"][:n], out["rec_cold"][:n]
    if mode is ConnectionRecording.SAMPLED:  # one draw per record, in the engine's order
        keep = cp.streams.get(f"connection-sample/{c.key}").random(n) < cp.config.connection_sample_rate
        idx, wait, outcome, cold = idx[keep], wait[keep], outcome[keep], cold[keep]
    arrival, duration = adv.sessions.arrival_s[idx], adv.sessions.duration_s[idx]
    rows = ColumnBlock(c.id, c.project_id, arrival, wait.copy(), duration, outcome.copy(),
                       cold.copy())
    recorder = cp.recorder
    if not engine_next:
        recorder.add_connection_block(rows)
        return []
    # In record order (a burst's rows at one instant keep it through the canonical sort):
    # each run of rows that ended stays columns, each run of open ones becomes records.
    open_ = (outcome == k.OK) & (arrival + wait + duration > cp.now)
    bounds = [0, *(np.flatnonzero(open_[1:] != open_[:-1]) + 1).tolist(), len(open_)]
    open_at: list[int] = []
    for start, stop in zip(bounds[:-1], bounds[1:], strict=True):
        if start == stop:
            continue
        if open_[start]:
            open_at.extend(range(len(recorder.connections),
                                 len(recorder.connections) + stop - start))
            recorder.connections.extend(rows.between(start, stop).records())
        else:
            recorder.add_connection_block(rows.between(start, stop))
    return open_at


def op_order(*advanced: Advanced, at: np.ndarray | None = None) -> list[tuple[float, float]]:
    """Per operation, in creation order (compute after compute): (when it was created, when
    the event that created it was scheduled); `at`: only those created at one of these
    instants (sorted). Operations of several computes at one instant were created in the
    order their events were scheduled (SimPy's queue is first in, first out)."""
    if not advanced:  # a project without computes: its storage lane alone
        return []
    ns = [int(adv.out["i"][k.N_OPS]) for adv in advanced]
    created, sched = (np.concatenate([adv.out[name][:n] for adv, n in zip(advanced, ns,
                                                                           strict=True)])
                      for name in ("op_created", "op_sched"))
    if at is not None:  # sorted: a lookup, cheaper than np.isin on a few instants
        pos = np.minimum(np.searchsorted(at, created), len(at) - 1)
        keep = at[pos] == created
        created, sched = created[keep], sched[keep]
    return list(zip(created.tolist(), sched.tolist(), strict=True))


def _operations(cp: ControlPlane, adv: Advanced) -> list[Operation]:
    """The compute's operations, ids drawn in creation order; their creation stamps are
    given when they are filed (`file_operations`)."""
    c, out = adv.compute, adv.out
    n = int(out["i"][k.N_OPS])
    ids = cp.ids.operations(cp.streams.get(f"ids/{c.key}"), n)
    backoff = cp.config.retry_backoff_s
    pid, bid, cid = c.project_id, c.branch_id, c.id
    finished_code, failed_code = k.FINISHED, k.FAILED
    ops = []
    append = ops.append
    for ident, action, status, failures, updated, finished in zip(
            ids, out["op_action"][:n].tolist(), out["op_status"][:n].tolist(),
            out["op_failures"][:n].tolist(), out["op_updated"][:n].tolist(),
            out["op_finished"][:n].tolist(), strict=True):
        name = _NAMES[action]
        # positional: id, project, branch, endpoint, action, status, created_us, updated_at,
        # failures_count, error, retry_at, started_at, finished_at
        append(Operation(
            ident, pid, bid, cid, name, _STATUS[status], 0, updated, failures,
            f"{name} attempt {failures} failed (injected fault)" if failures else None,
            updated + backoff if status == failed_code else None, None,
            finished if status == finished_code else None))
    return ops


__all__ = ["Advanced", "Gates", "Sessions", "Tie", "advance_compute", "advance_to_call",
           "apply_advanced", "apply_advanced_to_end", "op_order", "operation_columns"]

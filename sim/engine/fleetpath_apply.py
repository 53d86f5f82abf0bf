"""Write a timeline computed by the fleet path into the control plane, as the engine would.

Stats, wake records, state intervals, connection records and operations are
produced with the same values, the same floating-point sums and the same
random draws (operation ids) as the SimPy engine's, in the order it would
append them for this compute.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from sim.engine.clock import to_us
from sim.engine.config import ConnectionRecording
from sim.engine.fleetpath import INF, Timeline, on_intervals, op_instants
from sim.engine.model import Compute, Operation
from sim.engine.records import ConnectionRecord, Outcome, StateInterval, WakeRecord
from sim.rules.states import ComputeState, OperationStatus

if TYPE_CHECKING:
    from sim.engine.control_plane import ControlPlane

ACTIVE = ComputeState.ACTIVE.value
IDLE = ComputeState.IDLE.value


def apply_timeline(cp: ControlPlane, c: Compute, tl: Timeline, arrivals: np.ndarray,
                   durations: np.ndarray, until: float) -> list[Operation]:
    """Patch `c` and the recorder; return the compute's new operations (not yet filed)."""
    stats = c.stats
    rt = c.runtime
    assert rt is not None
    admitted = np.isfinite(tl.admitted_at)
    stats.sessions += int(admitted.sum())
    stats.peak_connections = max(stats.peak_connections, tl.peak_connections)
    stats.cold_starts += len(tl.active_at) - 1  # the timeline holds activations within the run
    stats.suspends += int(np.count_nonzero(np.array(tl.suspended_at) < until))
    _connections(cp, c, tl, arrivals, durations)
    if not cp.config.record_events:
        _summarise(cp, c, tl, until)
        return []
    _intervals(cp, c, tl, until)
    _wakes(cp, c, tl, until)
    return _operations(cp, c, tl, until)


def _summarise(cp: ControlPlane, c: Compute, tl: Timeline, until: float) -> None:
    """Events not recorded: on-time per minute, running sums, cold-start waits."""
    A = np.array(tl.active_at, dtype=np.float64)
    A = A[A < until]
    ends = np.array(tl.suspended_at[: len(A)] + [until] * (len(A) - len(tl.suspended_at)),
                    dtype=np.float64)
    ends = np.minimum(ends, until)
    lengths = ends - A
    cu = c.autoscaling_limit_min_cu
    stats = c.stats
    keep = lengths > 0
    # the engine adds interval after interval: a cumulative sum adds in the same order
    stats.active_s = float(np.cumsum(np.concatenate(([stats.active_s], lengths[keep])))[-1])
    stats.cu_s = float(np.cumsum(np.concatenate(([stats.cu_s], cu * lengths[keep])))[-1])
    cp.recorder.add_minutes(A[keep], ends[keep], np.full(int(keep.sum()), cu), until)
    woke = len(A) - 1
    if woke > 0:
        cp.recorder.wake_waits[c.id] = A[1:] - np.array(tl.wake_at[:woke], dtype=np.float64)


def _intervals(cp: ControlPlane, c: Compute, tl: Timeline, until: float) -> None:
    """Active [A, S), idle [S, A'), ... with the engine's running sums of seconds."""
    spans: list[tuple[str, float, float, float]] = []
    cu = c.autoscaling_limit_min_cu
    on = on_intervals(tl, until)
    for k, (A, end) in enumerate(on):
        spans.append((ACTIVE, cu, A, end))
        nxt = on[k + 1][0] if k + 1 < len(on) else until
        if end < until:
            spans.append((IDLE, 0.0, end, nxt))
    stats = c.stats
    out = cp.recorder.intervals
    for state, level, start, end in spans:
        length = end - start
        if length > 0:
            out.append(StateInterval(c.id, c.project_id, state, level, start, end))
            if state != IDLE:
                stats.active_s += length
                stats.cu_s += level * length


def _wakes(cp: ControlPlane, c: Compute, tl: Timeline, until: float) -> None:
    out = cp.recorder.wakes
    for k, W in enumerate(tl.wake_at):
        A = tl.active_at[k + 1]
        if A < until:
            out.append(WakeRecord(c.id, c.project_id, W, "connection", A - W))


def _connections(cp: ControlPlane, c: Compute, tl: Timeline, arrivals: np.ndarray,
                 durations: np.ndarray) -> None:
    mode = cp.config.record_connections
    if mode is ConnectionRecording.OFF:
        return
    done = np.flatnonzero(np.isfinite(tl.admitted_at))
    if mode is ConnectionRecording.SAMPLED:
        rng = cp.streams.get(f"connection-sample/{c.key}")
        done = done[rng.random(len(done)) < cp.config.connection_sample_rate]
    a = arrivals[done].tolist()
    start = tl.admitted_at[done].tolist()
    d = durations[done].tolist()
    cold = tl.cold[done].tolist()
    cp.recorder.connections.extend(
        ConnectionRecord(c.id, c.project_id, ai, si - ai, di, Outcome.OK, ci)
        for ai, si, di, ci in zip(a, start, d, cold, strict=True)
    )


def _operations(cp: ControlPlane, c: Compute, tl: Timeline, until: float) -> list[Operation]:
    rng = cp.streams.get(f"ids/{c.key}")
    ops = []
    for action, created, ended in op_instants(tl):
        op = Operation(
            id=cp.ids.operation(rng), project_id=c.project_id, branch_id=c.branch_id,
            endpoint_id=c.id, action=action, status=OperationStatus.RUNNING.value,
            created_us=to_us(created), updated_at=created, started_at=created,
        )
        if ended < until:
            op.status = OperationStatus.FINISHED.value
            op.updated_at = op.finished_at = ended
        ops.append(op)
    return ops


def file_operations(cp: ControlPlane, project_id: str, ops: list[Operation]) -> None:
    """Merge a project's fleet-path operations into its list, in creation order.

    The caller has checked that no two operations of the project share a
    microsecond (the engine would have moved the later one)."""
    project = cp.projects[project_id]
    merged = sorted(project.operations + ops, key=lambda o: o.created_us)
    stamps = [o.created_us for o in merged]
    if any(b <= a for a, b in zip(stamps, stamps[1:], strict=False)):
        raise RuntimeError("two operations of a project in the same microsecond")
    project.operations = merged
    project.last_op_us = stamps[-1]
    for op in ops:
        cp.operations[op.id] = op


__all__ = ["INF", "apply_timeline", "file_operations"]

"""Plausible RunResults without the engine, from a seed.

For the tests of `sim.metrics`, demos and chart checks: each compute gets
Poisson sessions, scales to zero after its suspend timeout, cold-starts on the
next connection and resizes between its min and max CU. The rows agree with
one another (ComputeRow totals equal what the intervals, connections and wakes
add up to), which is what the metrics rely on; the numbers are not a model of
anything and must not be used for planning.
"""

from __future__ import annotations

import heapq
import uuid
from dataclasses import dataclass, field

import numpy as np

from sim.engine.records import (
    ActionRecord,
    ComputeRow,
    ConnectionRecord,
    OperationRow,
    Outcome,
    RunResult,
    StateInterval,
    WakeRecord,
)
from sim.engine.row_table import row_table
from sim.rules.connections import max_connections as max_connections_of

SIZES = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
SUSPEND_TIMEOUT_S = 300


@dataclass
class _Compute:
    """What one compute accumulates while its timeline is generated."""

    id: str
    project_id: str
    sizes: list[float]
    max_connections: int
    pooler: bool
    intervals: list[StateInterval] = field(default_factory=list)
    connections: list[ConnectionRecord] = field(default_factory=list)
    wakes: list[WakeRecord] = field(default_factory=list)
    suspend_times: list[float] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    peak: int = 0

    def add(self, state: str, cu: float, start: float, end: float) -> None:
        if end > start:
            self.intervals.append(StateInterval(self.id, self.project_id, state, cu, start, end))


def synthetic_result(
    seed: int = 0,
    *,
    projects: int = 20,
    duration_s: float = 86_400.0,
    start_iso: str = "2026-01-05T00:00:00Z",
    price_per_cu_hour: float = 0.16,
    name: str = "synthetic",
    max_per_hour: float = 120.0,
    operation_failure_rate: float = 0.02,
) -> RunResult:
    rng = np.random.default_rng(seed)
    result = RunResult(name, seed, start_iso, duration_s, price_per_cu_hour)
    result.assumptions = {"generator": "sim.metrics.synthetic (not a model)"}
    ops: list[OperationRow] = []
    for p in range(projects):
        project_id = f"p-{_hex(rng, 6)}"
        project_name = f"project-{p:03d}"
        branch_id = f"br-{_hex(rng, 6)}"
        created = 0.0 if rng.random() < 0.7 else float(rng.uniform(0, duration_s / 2))
        ops.append(_operation(rng, project_id, None, None, "create_timeline", created, 1.0, 0.0))
        kinds = ["read_write"] + (["read_only"] if rng.random() < 0.3 else [])
        for kind in kinds:
            compute, row = _compute(
                rng, project_id, project_name, branch_id, kind, created, duration_s, max_per_hour
            )
            result.computes.append(row)
            result.intervals += compute.intervals
            result.connections += compute.connections
            result.wakes += compute.wakes
            for wake in compute.wakes:
                ops.append(
                    _operation(
                        rng,
                        project_id,
                        branch_id,
                        compute.id,
                        "start_compute",
                        wake.at_s,
                        wake.wait_s,
                        operation_failure_rate,
                    )
                )
            for at in compute.suspend_times:
                ops.append(
                    _operation(
                        rng,
                        project_id,
                        branch_id,
                        compute.id,
                        "suspend_compute",
                        at,
                        0.2,
                        operation_failure_rate,
                    )
                )
            for at in np.sort(rng.uniform(created, duration_s, rng.poisson(1.0))):
                ops.append(
                    _operation(
                        rng,
                        project_id,
                        branch_id,
                        compute.id,
                        "apply_config",
                        float(at),
                        0.3,
                        operation_failure_rate,
                    )
                )
    result.operations = row_table(OperationRow,
                                  sorted(ops, key=lambda op: (op.created_s, op.id)))
    for at in np.sort(rng.uniform(0, duration_s, 3 if result.computes else 0)):
        first = result.computes[0]
        call = f"PATCH /projects/{first.project_id}/endpoints/{first.compute_id}"
        locked = rng.random() < 0.3  # another operation on the compute still running
        status, code = (423, "LOCKED") if locked else (200, "")
        result.actions.append(ActionRecord(float(at), call, status, code))
    return result


def _hex(rng: np.random.Generator, n: int) -> str:
    return rng.bytes(n).hex()


def _operation(
    rng: np.random.Generator,
    project_id: str,
    branch_id: str | None,
    endpoint_id: str | None,
    action: str,
    at: float,
    took_s: float,
    failure_rate: float,
) -> OperationRow:
    failures = int(rng.geometric(1 - failure_rate) - 1) if failure_rate > 0 else 0
    status = "failed" if failures >= 2 else "finished"  # gave up after the 2nd retry
    return OperationRow(
        id=str(uuid.UUID(bytes=rng.bytes(16), version=4)),
        project_id=project_id,
        branch_id=branch_id,
        endpoint_id=endpoint_id,
        action=action,
        status=status,
        failures_count=failures,
        created_s=at,
        updated_s=at + took_s + 5.0 * failures,
        total_duration_ms=int(round(took_s * 1000)),
        error="injected fault" if status == "failed" else None,
    )


def _compute(
    rng: np.random.Generator,
    project_id: str,
    project_name: str,
    branch_id: str,
    kind: str,
    created: float,
    duration_s: float,
    max_per_hour: float,
) -> tuple[_Compute, ComputeRow]:
    lo = int(rng.integers(0, 3))
    hi = min(lo + int(rng.integers(0, 4)), len(SIZES) - 1)
    sizes = list(SIZES[lo : hi + 1])
    pooler = bool(rng.random() < 0.5)
    max_connections = max_connections_of(sizes[0], sizes[-1])
    deleted = float(rng.uniform(created, duration_s)) if rng.random() < 0.05 else None
    compute = _Compute(f"ep-{_hex(rng, 8)}", project_id, sizes, max_connections, pooler)
    compute.counts = dict.fromkeys(
        ("sessions", "refused", "queued", "queue_timeouts", "disk_full", "dropped", "cold"), 0
    )
    queue_wait = _timeline(rng, compute, created, deleted or duration_s, max_per_hour)
    on = [iv for iv in compute.intervals if iv.state != "idle"]
    c = compute.counts
    row = ComputeRow(
        compute_id=compute.id,
        project_id=project_id,
        project_name=project_name,
        branch_id=branch_id,
        branch_name="main",
        type=kind,
        min_cu=sizes[0],
        max_cu=sizes[-1],
        suspend_timeout_seconds=SUSPEND_TIMEOUT_S,
        pooler_enabled=pooler,
        max_connections=max_connections,
        sessions=c["sessions"],
        refused=c["refused"],
        queued=c["queued"],
        queue_timeouts=c["queue_timeouts"],
        queue_wait_s=queue_wait,
        disk_full=c["disk_full"],
        dropped=c["dropped"],
        cold_starts=c["cold"],
        restarts=0,
        suspends=len(compute.suspend_times),
        peak_connections=compute.peak,
        active_s=sum(iv.end_s - iv.start_s for iv in on),
        cu_s=sum(iv.cu * (iv.end_s - iv.start_s) for iv in on),
        created_s=created,
        deleted_s=deleted,
    )
    return compute, row


def _timeline(
    rng: np.random.Generator, compute: _Compute, created: float, end: float, max_per_hour: float
) -> float:
    """Sessions, states and wakes of one compute over [created, end); returns total queue wait."""
    per_hour = float(np.exp(rng.uniform(np.log(0.5), np.log(max_per_hour))))
    arrivals = created + np.cumsum(
        rng.exponential(3600 / per_hour, int(per_hour * end / 1800) + 10)
    )
    arrivals = arrivals[arrivals < end]
    boot = float(rng.lognormal(np.log(1.5), 0.5))
    compute.wakes.append(WakeRecord(compute.id, compute.project_id, created, "create", boot))
    compute.add("init", compute.sizes[0], created, min(created + boot, end))
    on_since = busy_until = created + boot
    open_ends: list[float] = []  # end times of open sessions, a heap
    queue_wait = 0.0
    for a in arrivals:
        idle_at = busy_until + SUSPEND_TIMEOUT_S
        wait, cold = 0.0, False
        if a >= idle_at:  # scaled to zero before this connection: suspend, then cold-start
            _active(rng, compute, on_since, idle_at)
            compute.add("idle", 0.0, idle_at, a)
            compute.suspend_times.append(idle_at)
            wait, cold = float(rng.lognormal(np.log(0.5), 0.8)), True
            compute.wakes.append(WakeRecord(compute.id, compute.project_id, a, "connection", wait))
            compute.counts["cold"] += 1
            on_since, open_ends = a, []
        elif a < on_since:  # arrived during the first boot
            wait = on_since - a
        while open_ends and open_ends[0] <= a:
            heapq.heappop(open_ends)
        outcome = _outcome(rng, compute, len(open_ends))
        if outcome == Outcome.QUEUE_TIMEOUT:
            queue_wait += 120.0
        duration = float(rng.exponential(30.0))
        compute.connections.append(
            ConnectionRecord(
                compute.id, compute.project_id, float(a), wait, duration, outcome, cold
            )
        )
        if outcome in (Outcome.OK, Outcome.DISK_FULL, Outcome.DROPPED):
            compute.counts["sessions"] += 1
            heapq.heappush(open_ends, a + wait + duration)
            compute.peak = max(compute.peak, len(open_ends))
            busy_until = min(max(busy_until, a + wait + duration), end)
    idle_at = busy_until + SUSPEND_TIMEOUT_S
    if idle_at < end:
        _active(rng, compute, on_since, idle_at)
        compute.add("idle", 0.0, idle_at, end)
        compute.suspend_times.append(idle_at)
    else:
        _active(rng, compute, on_since, end)
    return queue_wait


def _outcome(rng: np.random.Generator, compute: _Compute, open_now: int) -> str:
    if not compute.pooler and open_now >= compute.max_connections:
        compute.counts["refused"] += 1
        return Outcome.REFUSED_TOO_MANY
    u = rng.random()
    if u < 0.01:
        compute.counts["queued"] += 1
        compute.counts["queue_timeouts"] += 1
        return Outcome.QUEUE_TIMEOUT
    if u < 0.012:
        compute.counts["disk_full"] += 1
        return Outcome.DISK_FULL
    if u < 0.015:
        compute.counts["dropped"] += 1
        return Outcome.DROPPED
    return Outcome.OK


def _active(rng: np.random.Generator, compute: _Compute, start: float, end: float) -> None:
    """An active period, resized every few minutes between the compute's min and max CU."""
    t = start
    while t < end:
        step = min(end, t + float(rng.exponential(600.0)))
        compute.add("active", float(rng.choice(compute.sizes)), t, step)
        t = step

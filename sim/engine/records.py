"""What a run leaves behind: plain tuples appended during the run.

The engine only appends; `sim.metrics` turns the lists into pandas frames in
bulk at the end (the SimPy monitoring idiom). Times are seconds of simulated
time since the scenario's start.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple


class StateInterval(NamedTuple):
    """A compute held `state` at size `cu` over [start_s, end_s)."""

    compute_id: str
    project_id: str
    state: str  # init | active | idle
    cu: float  # 0 while idle
    start_s: float
    end_s: float


class ConnectionRecord(NamedTuple):
    compute_id: str
    project_id: str
    arrival_s: float
    wait_s: float  # cold start and pool queue wait before the session began
    duration_s: float  # planned session length
    outcome: str  # see Outcome
    cold: bool  # found the compute not active


class Outcome:
    OK = "ok"
    REFUSED_TOO_MANY = "refused_53300"  # direct connection beyond max_connections
    REFUSED_POOLER_FULL = "refused_pooler_full"  # beyond 10,000 pooled clients
    QUEUE_TIMEOUT = "queue_timeout"  # waited in the pool queue past the timeout
    DISK_FULL = "failed_53100"  # temporary files beyond the local disk
    DROPPED = "dropped"  # cut by a restart, resize, suspend or delete
    REFUSED_DISABLED = "refused_disabled"  # compute disabled or deleted


class WakeRecord(NamedTuple):
    """One start of a compute from idle (or init), and what it cost the caller."""

    compute_id: str
    project_id: str
    at_s: float
    cause: str  # connection | api | check_availability | create
    wait_s: float  # start_compute plus any tenant_reattach / timeline_unarchive


class SampleRecord(NamedTuple):
    """Open connections of a compute, sampled when the count changes by a session arrival."""

    compute_id: str
    at_s: float
    open_connections: int
    max_connections: int


@dataclass
class Recorder:
    intervals: list[StateInterval] = field(default_factory=list)
    connections: list[ConnectionRecord] = field(default_factory=list)
    wakes: list[WakeRecord] = field(default_factory=list)


class ComputeRow(NamedTuple):
    """Per-compute totals at the end of a run (complete even when connections are not recorded)."""

    compute_id: str
    project_id: str
    project_name: str
    branch_id: str
    branch_name: str
    type: str
    min_cu: float
    max_cu: float
    suspend_timeout_seconds: int
    pooler_enabled: bool
    max_connections: int
    sessions: int  # connections that began a session
    refused: int  # refused at the door (53300, pooler full, disabled)
    queued: int  # waited in the pool queue
    queue_timeouts: int
    queue_wait_s: float  # total queue wait
    disk_full: int  # sessions failed with 53100
    dropped: int  # sessions cut by restart, resize, suspend or delete
    cold_starts: int
    restarts: int
    suspends: int
    peak_connections: int
    active_s: float  # seconds in init or active
    cu_s: float  # CU-seconds (multiply by price per CU-hour / 3600)
    created_s: float
    deleted_s: float | None


class OperationRow(NamedTuple):
    id: str
    project_id: str
    branch_id: str | None
    endpoint_id: str | None
    action: str
    status: str
    failures_count: int
    created_s: float
    updated_s: float
    total_duration_ms: int
    error: str | None


class ActionRecord(NamedTuple):
    """A scripted API call of the scenario and how the control plane answered it."""

    at_s: float
    call: str  # "PATCH /projects/.../endpoints/..." with ids filled in
    status: int
    code: str  # "" on success, else the error code


@dataclass
class RunResult:
    """Everything a run produced, as plain rows: what `sim.metrics` reads.

    Sharded runs give one RunResult per shard; `merge` concatenates them in a
    fixed order, so a merged result equals a single-process run row for row.
    """

    name: str
    seed: int
    start_iso: str  # the scenario's start instant, ISO 8601 UTC
    duration_s: float
    price_per_cu_hour: float
    computes: list[ComputeRow] = field(default_factory=list)
    operations: list[OperationRow] = field(default_factory=list)
    intervals: list[StateInterval] = field(default_factory=list)
    connections: list[ConnectionRecord] = field(default_factory=list)
    wakes: list[WakeRecord] = field(default_factory=list)
    actions: list[ActionRecord] = field(default_factory=list)
    #: human-readable assumptions in force (cold-start distribution, pool size, prices...)
    assumptions: dict[str, str] = field(default_factory=dict)

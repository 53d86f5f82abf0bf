"""The control plane's resources: plain state, no behaviour beyond small derived values.

Times are simulated seconds (floats); operations also carry integer
microseconds, which order them and page them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sim.rules.connections import AutoscalingConnections, max_connections
from sim.rules.sizes import Plan
from sim.rules.states import ComputeState, ComputeType, is_terminal
from sim.rules.timeouts import effective_suspend_timeout

if TYPE_CHECKING:
    from sim.engine.past_operations import PastOperations
    from sim.engine.runtime import ComputeRuntime


#: the one user of the simulated account (a UUID, as the real service's user ids are)
USER_ID = "4c2a6f3e-8d1b-4f6a-9e2c-5b7d0a1c3e9f"


@dataclass(slots=True, eq=False)
class Operation:
    id: str
    project_id: str
    branch_id: str | None
    endpoint_id: str | None
    action: str
    status: str
    created_us: int  # strictly increasing within a project: the pagination key
    updated_at: float
    failures_count: int = 0
    error: str | None = None
    retry_at: float | None = None
    started_at: float | None = None
    finished_at: float | None = None

    @property
    def created_at(self) -> float:
        return self.created_us / 1_000_000

    @property
    def done(self) -> bool:
        return is_terminal(self.status)

    @property
    def total_duration_ms(self) -> int:
        """Time from creation to the end (or to now, for the caller to pass) in ms."""
        end = self.finished_at if self.finished_at is not None else self.updated_at
        return max(0, int(round((end - self.created_at) * 1000)))


@dataclass(slots=True, eq=False)
class ComputeStats:
    """Per-compute counters, kept whatever the connection-recording option."""

    sessions: int = 0
    refused: int = 0  # 53300 only: every other refusal has its own count
    refused_pooler_full: int = 0
    refused_disabled: int = 0
    queued: int = 0
    queue_timeouts: int = 0
    queue_wait_s: float = 0.0
    disk_full: int = 0
    dropped: int = 0
    cold_starts: int = 0
    restarts: int = 0
    suspends: int = 0
    peak_connections: int = 0
    active_s: float = 0.0
    cu_s: float = 0.0


@dataclass(slots=True, eq=False)
class Compute:
    id: str
    project_id: str
    branch_id: str
    region_id: str
    type: str
    host: str
    proxy_host: str
    autoscaling_limit_min_cu: float
    autoscaling_limit_max_cu: float
    suspend_timeout_seconds: int
    pooler_enabled: bool
    created_at: float
    updated_at: float
    key: str  # stable name for random streams ("shop[3].main.read_write#0")
    current_state: str = ComputeState.INIT.value
    pending_state: str | None = ComputeState.ACTIVE.value
    pooler_mode: str = "transaction"
    settings: dict[str, Any] = field(default_factory=dict)
    disabled: bool = False
    passwordless_access: bool = True
    creation_source: str = "console"
    provisioner: str = "k8s-neonvm"
    name: str | None = None
    pool_size: int | None = None  # None: pool_share x max_connections
    last_active: float | None = None
    suspended_at: float | None = None
    deleted_at: float | None = None
    release: str | None = None
    cu: float = 0.0  # current size while on; 0 while idle
    stats: ComputeStats = field(default_factory=ComputeStats)
    runtime: ComputeRuntime | None = None

    @property
    def is_read_write(self) -> bool:
        return self.type == ComputeType.READ_WRITE.value

    @property
    def deleted(self) -> bool:
        return self.deleted_at is not None

    @property
    def fixed_size(self) -> bool:
        return self.autoscaling_limit_min_cu == self.autoscaling_limit_max_cu

    @property
    def idle_timeout_s(self) -> float | None:
        return effective_suspend_timeout(self.suspend_timeout_seconds)

    def max_connections(self, rule: AutoscalingConnections = AutoscalingConnections.MAX) -> int:
        return max_connections(self.autoscaling_limit_min_cu, self.autoscaling_limit_max_cu, rule)


@dataclass(slots=True, eq=False)
class Role:
    """A Postgres role of a branch.

    Its password is not kept: it is drawn, whenever it is shown, from the seeded
    stream named `secret` (a copy on a child branch names its parent's stream, a
    reset names a new one), so showing it changes no state."""

    branch_id: str
    name: str
    created_at: float
    updated_at: float
    secret: str  # name of the random stream the password is drawn from
    resets: int = 0
    protected: bool = False
    no_login: bool = False  # a role that cannot log in: it has no password to show


@dataclass(slots=True, eq=False)
class Database:
    id: int
    branch_id: str
    name: str
    owner_name: str
    created_at: float
    updated_at: float


@dataclass(slots=True, eq=False)
class Branch:
    id: str
    project_id: str
    name: str
    parent_id: str | None
    created_at: float
    updated_at: float
    default: bool = False
    archived: bool = False
    idle_since: float | None = None  # no compute of the branch on since then
    deleted_at: float | None = None
    computes: list[str] = field(default_factory=list)  # ids, creation order
    protected: bool = False
    annotation: dict[str, str] | None = None  # annotation_value of the creation request
    roles: dict[str, Role] = field(default_factory=dict)  # by name, creation order
    databases: dict[str, Database] = field(default_factory=dict)  # by name, creation order
    # request fields of the real API the simulator keeps but does not model (answered back)
    documented: dict[str, Any] = field(default_factory=dict)
    deletion_method: str | None = None  # "user" or "ttl" (its expiry), once deleted


@dataclass(slots=True, eq=False)
class Project:
    id: str
    name: str
    key: str  # stable name for random streams ("shop[3]")
    region_id: str
    plan: Plan
    created_at: float
    updated_at: float
    owner_id: str = USER_ID
    org_id: str | None = None
    history_retention_seconds: int = 86_400
    pg_version: int = 17
    default_branch_id: str = ""
    detached: bool = False
    idle_since: float | None = None  # no compute of the project on since then
    deleted_at: float | None = None
    branches: list[str] = field(default_factory=list)  # ids, creation order
    operations: list[Operation] = field(default_factory=list)  # by created_us ascending
    #: a served world's ended operations of past days, older than all of `operations`
    past_operations: PastOperations | None = None
    last_op_us: int = -1
    last_database_id: int = 0  # database ids count up within a project
    # request fields of the real API the simulator keeps but does not model (answered back)
    documented: dict[str, Any] = field(default_factory=dict)
    # who else the project is shared with: {id, granted_to_email, granted_at} (plain data)
    permissions: list[dict[str, str]] = field(default_factory=list)
    last_permission_id: int = 0

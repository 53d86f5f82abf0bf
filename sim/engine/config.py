"""Everything about the engine that a scenario may tune, with its defaults.

Defaults are the assumptions of docs/model.md; the scenario schema maps
its `engine:` and `faults:` sections onto these fields one to one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from sim.rules.connections import DEFAULT_POOL_SHARE, AutoscalingConnections
from sim.rules.operations import Action
from sim.workload.distributions import Distribution

DAY = 86_400.0
_INSTANT = Distribution.fixed(0.0)  # an action without a duration of its own (frozen: shared)


def _default_operation_durations() -> dict[Action, Distribution]:
    ln = Distribution.lognormal
    return {
        Action.APPLY_CONFIG: ln(0.3, 0.5),
        Action.APPLY_STORAGE_CONFIG: ln(0.5, 0.5),
        Action.CHECK_AVAILABILITY: ln(1.0, 0.5),
        Action.CREATE_BRANCH: ln(0.5, 0.5),
        Action.CREATE_TIMELINE: ln(1.0, 0.5),
        Action.DELETE_TENANT: ln(1.0, 0.5),
        Action.SUSPEND_COMPUTE: ln(0.2, 0.5),
        Action.TENANT_ATTACH: ln(2.0, 0.6),
        Action.TENANT_DETACH: ln(1.0, 0.5),
        Action.TENANT_REATTACH: ln(2.0, 0.6),
        Action.TIMELINE_ARCHIVE: ln(1.0, 0.5),
        Action.TIMELINE_UNARCHIVE: ln(1.5, 0.6),
    }


class ConnectionRecording(StrEnum):
    ALL = "all"
    SAMPLED = "sampled"
    OFF = "off"


@dataclass(frozen=True)
class AutoscalerConfig:
    #: CU goal = open sessions' vCPU / target_cpu_utilisation (and the memory rule below)
    target_cpu_utilisation: float = 0.8
    #: memory goal: open sessions' GB / (4 GB per CU x target_memory_utilisation)
    target_memory_utilisation: float = 0.75
    #: seconds between a change of load and the resize that answers it
    reaction_delay_s: float = 10.0


@dataclass(frozen=True)
class EngineConfig:
    #: start_compute from idle: the wait a connection sees on a cold start
    cold_start: Distribution = field(default_factory=lambda: Distribution.lognormal(0.5, 0.8))
    #: durations of every other action (start_compute uses cold_start)
    operation_durations: dict[Action, Distribution] = field(
        default_factory=_default_operation_durations
    )
    #: each attempt of an operation fails with this probability, then is retried
    operation_failure_rate: float = 0.0
    retry_backoff_s: float = 5.0
    #: pooler: server pool = pool_share x max_connections; clients wait at most this long
    pool_share: float = DEFAULT_POOL_SHARE
    pool_queue_timeout_s: float = 120.0
    autoscaling_connections: AutoscalingConnections = AutoscalingConnections.MAX
    autoscaler: AutoscalerConfig = field(default_factory=AutoscalerConfig)
    #: periodic check_availability of each branch that has a compute; None = off
    check_availability_every_s: float | None = None
    #: storage lifecycle: None turns the behaviour off
    detach_after_s: float | None = 7 * DAY
    archive_after_s: float | None = 14 * DAY
    #: managed auth: delay before a created/deleted user shows in users_sync
    user_sync_delay_s: float = 2.0
    #: per-connection records: all, a sample, or none (the summaries stay complete)
    record_connections: ConnectionRecording = ConnectionRecording.ALL
    #: operations, state intervals and wakes as rows (True), or only as the per-minute
    #: fleet series and per-compute waits (False: what a fleet of thousands wants)
    record_events: bool = True
    connection_sample_rate: float = 0.01
    #: the run's first instant: what happens before it (the warm-up) is in no counter
    count_from_s: float = 0.0

    def duration_of(self, action: Action) -> Distribution:
        if action is Action.START_COMPUTE:
            return self.cold_start
        return self.operation_durations.get(action, _INSTANT)

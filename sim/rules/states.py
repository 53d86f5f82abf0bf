"""State tables of the specification as data: compute current_state and operation status.

The engine moves resources only along these tables (`check_*` raise on any
other move) and the tests read the same tables, so a change to a row shows up
in both at once.
"""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple


class ComputeState(StrEnum):
    INIT = "init"
    IDLE = "idle"
    ACTIVE = "active"


class OperationStatus(StrEnum):
    SCHEDULING = "scheduling"
    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"
    CANCELLING = "cancelling"
    CANCELLED = "cancelled"
    SKIPPED = "skipped"


class ComputeType(StrEnum):
    READ_WRITE = "read_write"
    READ_ONLY = "read_only"  # the specification does not show the replica value; the design notes


class Transition(NamedTuple):
    source: str | None  # None: the resource does not exist yet
    trigger: str
    target: str
    also: str  # the operation(s) the transition produces, "" if none


#: the specification "Compute current_state", plus the design notes' fill-ins (init -> active,
#: suspend/start calls, autoscaling resize, restart of an idle compute refused).
COMPUTE_TRANSITIONS: tuple[Transition, ...] = (
    Transition(None, "create", ComputeState.INIT.value, "start_compute"),
    Transition(ComputeState.INIT.value, "start_finished", ComputeState.ACTIVE.value, ""),
    Transition(ComputeState.IDLE.value, "connection", ComputeState.ACTIVE.value, "start_compute"),
    Transition(ComputeState.IDLE.value, "start", ComputeState.ACTIVE.value, "start_compute"),
    Transition(ComputeState.ACTIVE.value, "inactivity", ComputeState.IDLE.value, "suspend_compute"),
    Transition(ComputeState.ACTIVE.value, "suspend", ComputeState.IDLE.value, "suspend_compute"),
    Transition(
        ComputeState.ACTIVE.value, "restart", ComputeState.ACTIVE.value,
        "suspend_compute,start_compute",
    ),
    Transition(
        ComputeState.ACTIVE.value, "resize", ComputeState.ACTIVE.value,
        "apply_config,suspend_compute,start_compute",
    ),
    Transition(ComputeState.ACTIVE.value, "autoscale", ComputeState.ACTIVE.value, ""),
)

#: Triggers that need the compute active (the specification Errors #2: restart of a
#: compute that is not active is unsupported; wake it first).
REQUIRES_ACTIVE = frozenset({"restart"})

#: the specification "Operation status" plus the design notes' flow.
OPERATION_TRANSITIONS: frozenset[tuple[str, str]] = frozenset(
    {
        ("scheduling", "running"),
        ("scheduling", "finished"),  # the specification: seen when polling start_compute
        ("scheduling", "cancelling"),
        ("scheduling", "skipped"),
        ("running", "finished"),
        ("running", "failed"),
        ("running", "cancelling"),
        ("failed", "running"),  # a failed operation is retried
        ("failed", "cancelling"),
        ("cancelling", "cancelled"),
    }
)

TERMINAL_STATUSES = frozenset(
    {OperationStatus.FINISHED.value, OperationStatus.SKIPPED.value, OperationStatus.CANCELLED.value}
)


def compute_transition(source: str | None, trigger: str) -> Transition | None:
    for t in COMPUTE_TRANSITIONS:
        if t.source == source and t.trigger == trigger:
            return t
    return None


def can_move_operation(source: str, target: str) -> bool:
    return (source, target) in OPERATION_TRANSITIONS


def check_operation_move(source: str, target: str) -> None:
    if source in TERMINAL_STATUSES or not can_move_operation(source, target):
        raise RuntimeError(f"operation status may not move {source} -> {target}")


def is_terminal(status: str) -> bool:
    return status in TERMINAL_STATUSES

"""Deterministic control planes for the behaviour tests, and a digest of their state.

Every duration is fixed, so each instant a test names can be worked out by
hand: start_compute takes COLD seconds, every other operation OP seconds.
"""

from __future__ import annotations

from typing import Any

import pytest

from sim.engine import ControlPlane, EngineConfig
from sim.engine.model import Compute, Operation, Project
from sim.rules.errors import ApiError
from sim.rules.operations import Action
from sim.testing.control_plane_machine import state_digest
from sim.workload import Distribution

COLD = 2.0  # start_compute
OP = 1.0  # every other operation
GIB = 1024**3


def config(**overrides: Any) -> EngineConfig:
    values: dict[str, Any] = dict(
        cold_start=Distribution.fixed(COLD),
        operation_durations={a: Distribution.fixed(OP) for a in Action},
        detach_after_s=None,
        archive_after_s=None,
    )
    values.update(overrides)
    return EngineConfig(**values)


def control_plane(seed: int = 7, **overrides: Any) -> ControlPlane:
    return ControlPlane(config(**overrides), seed=seed)


def running_compute(cp: ControlPlane, **endpoint: Any) -> tuple[Project, Compute]:
    """A project whose read_write compute has finished starting (at OP + COLD)."""
    created = cp.create_project("p", default_endpoint=endpoint)
    compute = created.computes[0]
    cp.advance(OP + COLD + 0.5)
    assert compute.current_state == "active" and compute.pending_state is None
    return created.project, compute


def ops_of(cp: ControlPlane, compute: Compute, action: str | None = None) -> list[Operation]:
    project = cp.projects[compute.project_id]
    return [o for o in project.operations
            if o.endpoint_id == compute.id and (action is None or o.action == action)]


def actions(ops: list[Operation]) -> list[str]:
    return [o.action for o in ops]


def refused(cp: ControlPlane, status: int, call, *args: Any, **kwargs: Any) -> ApiError:
    """Call, expect an ApiError with exactly `status`, and check nothing changed."""
    before = state_digest(cp)
    with pytest.raises(ApiError) as info:
        call(*args, **kwargs)
    assert info.value.status == status, info.value
    assert state_digest(cp) == before, "a refused request changed the state"
    return info.value


def auth_refused(cp: ControlPlane, status: int, field: str | None, verb, *args, **kwargs
                 ) -> ApiError:
    """The auth verb raises exactly (status, field) and leaves the auth state unchanged."""
    before = cp.auth.state()
    with pytest.raises(ApiError) as info:
        verb(*args, **kwargs)
    assert (info.value.status, info.value.field) == (status, field), info.value
    assert cp.auth.state() == before
    return info.value

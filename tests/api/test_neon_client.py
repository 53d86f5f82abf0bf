"""The official Python client of the real API parses every answer of `sim serve`."""

from __future__ import annotations

import pytest

neon_api = pytest.importorskip("neon_api")
from neon_api import NeonAPI, NeonAPIError, schema  # noqa: E402

from tests.api.conftest import Live  # noqa: E402


def advance(live: Live, seconds: float) -> None:
    live.server.advance(seconds)


def test_projects_branches_endpoints_operations(live: Live) -> None:
    neon = NeonAPI(live.key, base_url=f"{live.base}/api/v2/")

    made = neon.project_create(project={"name": "neon-client", "pg_version": 16})
    assert isinstance(made, schema.ProjectResponse)
    project = made.project
    assert (project.name, project.pg_version) == ("neon-client", 16)
    assert project.id in {p.id for p in neon.projects().projects}
    assert neon.project(project.id).project.id == project.id
    renamed = neon.project_update(project.id, project={"name": "renamed",
                                                       "history_retention_seconds": 3600})
    assert renamed.project.name == "renamed"
    assert renamed.project.history_retention_seconds == 3600

    branches = neon.branches(project.id).branches
    assert [b.default for b in branches] == [True]
    main = branches[0]
    created = neon.branch_create(project.id, branch={"name": "dev"},
                                 endpoints=[{"type": "read_write"}])
    assert isinstance(created, schema.BranchOperations)
    assert {o.action for o in created.operations} == {
        schema.OperationAction.create_branch, schema.OperationAction.start_compute}
    dev = created.branch
    assert neon.branch(project.id, dev.id).branch.name == "dev"

    endpoints = neon.endpoints(project.id).endpoints
    assert {e.branch_id for e in endpoints} == {main.id, dev.id}
    replica = neon.endpoint_create(project.id, endpoint={"branch_id": main.id,
                                                          "type": "read_only"})
    ep = replica.endpoint
    assert ep.type == schema.EndpointType.read_only
    assert ep.current_state == schema.EndpointState.init
    with pytest.raises(NeonAPIError):  # its start has not ended: 423
        neon.endpoint_suspend(project.id, ep.id)
    advance(live, 30)
    assert neon.endpoint(project.id, ep.id).endpoint.current_state == schema.EndpointState.active
    resized = neon.endpoint_update(project.id, ep.id, endpoint={"autoscaling_limit_max_cu": 4})
    assert resized.endpoint.autoscaling_limit_max_cu == 4
    advance(live, 30)
    suspended = neon.endpoint_suspend(project.id, ep.id)
    assert [o.action for o in suspended.operations] == [schema.OperationAction.suspend_compute]
    advance(live, 30)
    assert neon.endpoint(project.id, ep.id).endpoint.current_state == schema.EndpointState.idle
    started = neon.endpoint_start(project.id, ep.id)
    assert [o.action for o in started.operations] == [schema.OperationAction.start_compute]
    advance(live, 30)
    gone = neon.endpoint_delete(project.id, ep.id)
    assert gone.endpoint.id == ep.id

    first = neon.operations(project.id, limit=3)
    assert isinstance(first, schema.OperationsResponse) and len(first.operations) == 3
    raw = neon._request("GET", f"projects/{project.id}/operations", params={"limit": 3})
    rest = neon.operations(project.id, cursor=raw["pagination"]["cursor"], limit=1000)
    seen = [o.id for o in first.operations] + [o.id for o in rest.operations]
    everything = neon.operations(project.id, limit=1000).operations
    assert seen == [o.id for o in everything] and len(set(seen)) == len(seen)
    one = neon.operation(project.id, everything[-1].id).operation
    assert one.action == schema.OperationAction.create_timeline

    deleted_branch = neon.branch_delete(project.id, dev.id)
    assert deleted_branch.branch.id == dev.id
    advance(live, 30)
    assert neon.project_delete(project.id).project.id == project.id
    with pytest.raises(NeonAPIError):
        neon.project(project.id)


def test_unknown_key_is_refused(live: Live) -> None:
    with pytest.raises(NeonAPIError) as err:
        NeonAPI("not-a-key", base_url=f"{live.base}/api/v2/").projects()
    assert '"UNAUTHORIZED"' in str(err.value)

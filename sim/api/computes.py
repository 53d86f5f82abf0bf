"""Routes of computes (#17-#21 of the specification, start and suspend) and operations
(#22, #23).

Each handler parses, checks the key's reach, calls one ControlPlane verb under
the server's lock and serialises: the rules are the engine's.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Query

from sim.api import serialize as ser
from sim.api.deps import Key, Server, given
from sim.api.errors import ERRORS, STATE_ERRORS
from sim.api.routing import sim_router
from sim.api.schemas import (
    EndpointCreateRequest,
    EndpointOperations,
    EndpointResponse,
    EndpointsResponse,
    EndpointUpdateRequest,
    OperationResponse,
    OperationsPage,
)
from sim.engine.control_plane import MAX_LIST_LIMIT, ControlPlane
from sim.engine.model import Compute, Operation

router = sim_router(prefix="/api/v2", responses=ERRORS)
OUT: dict[str, Any] = {"response_model_exclude_none": True}
ENDPOINT = "/projects/{project_id}/endpoints/{endpoint_id}"


def endpoint_operations(cp: ControlPlane, c: Compute, ops: list[Operation]) -> dict[str, Any]:
    return {"endpoint": ser.endpoint(cp, c), "operations": ser.operations(cp, ops)}


# ---- computes --------------------------------------------------------------------------------


@router.post("/projects/{project_id}/endpoints", status_code=201, tags=["computes"],
             response_model=EndpointOperations, responses=STATE_ERRORS, **OUT)
def create_endpoint(project_id: str, body: EndpointCreateRequest, server: Server, key: Key):
    """Create a compute on a branch; it starts at once (a start_compute operation)."""
    spec = body.endpoint
    values = given(spec, exclude={"branch_id", "type"})
    with server.world() as cp:
        key.project(cp, project_id)
        c, ops = cp.create_compute(project_id, spec.branch_id, spec.type.value, **values)
        return endpoint_operations(cp, c, ops)


@router.get("/projects/{project_id}/endpoints", tags=["computes"],
            response_model=EndpointsResponse, **OUT)
def list_endpoints(project_id: str, server: Server, key: Key):
    with server.world() as cp:
        key.project(cp, project_id)
        return {"endpoints": ser.endpoints(cp, cp.list_computes(project_id))}


@router.get("/projects/{project_id}/branches/{branch_id}/endpoints", tags=["computes"],
            response_model=EndpointsResponse, **OUT)
def list_branch_endpoints(project_id: str, branch_id: str, server: Server, key: Key):
    with server.world() as cp:
        key.project(cp, project_id)
        return {"endpoints": ser.endpoints(cp, cp.list_computes(project_id, branch_id))}


@router.get(ENDPOINT, tags=["computes"], response_model=EndpointResponse, **OUT)
def get_endpoint(project_id: str, endpoint_id: str, server: Server, key: Key):
    with server.world() as cp:
        key.project(cp, project_id)
        return {"endpoint": ser.endpoint(cp, cp.get_compute(project_id, endpoint_id))}


@router.patch(ENDPOINT, tags=["computes"], response_model=EndpointOperations,
              responses=STATE_ERRORS, **OUT)
def update_endpoint(project_id: str, endpoint_id: str, body: EndpointUpdateRequest,
                    server: Server, key: Key):
    """Change settings; a size change or a move restarts an active compute."""
    changes = given(body.endpoint)
    with server.world() as cp:
        key.project(cp, project_id)
        return endpoint_operations(cp, *cp.update_compute(project_id, endpoint_id, **changes))


@router.delete(ENDPOINT, tags=["computes"], response_model=EndpointOperations,
               responses=STATE_ERRORS, **OUT)
def delete_endpoint(project_id: str, endpoint_id: str, server: Server, key: Key):
    with server.world() as cp:
        key.project(cp, project_id)
        return endpoint_operations(cp, *cp.delete_compute(project_id, endpoint_id))


def _compute_action(name: str, verb: str, doc: str) -> None:
    """POST .../endpoints/{endpoint_id}/<name>: one control-plane verb, {endpoint, operations}."""

    def action(project_id: str, endpoint_id: str, server: Server, key: Key):
        with server.world() as cp:
            key.project(cp, project_id)
            return endpoint_operations(cp, *getattr(cp, verb)(project_id, endpoint_id))

    action.__name__ = f"{name}_endpoint"
    action.__doc__ = doc
    router.post(ENDPOINT + f"/{name}", tags=["computes"], response_model=EndpointOperations,
                responses=STATE_ERRORS, **OUT)(action)


_compute_action("restart", "restart_compute",
                "Restart an active compute (suspend_compute, then start_compute); 422 unless active.")
_compute_action("start", "start_compute",
                "Wake an idle compute (start_compute); nothing to do for an active one.")
_compute_action("suspend", "suspend_compute",
                "Suspend an active compute now (suspend_compute); its connections drop.")


# ---- operations ------------------------------------------------------------------------------


@router.get("/projects/{project_id}/operations", tags=["operations"],
            response_model=OperationsPage, **OUT)
def list_operations(
    project_id: str, server: Server, key: Key,
    limit: Annotated[int | None, Query(ge=1, le=MAX_LIST_LIMIT)] = None,
    cursor: Annotated[str | None, Query(description="pagination.cursor of the last page")] = None,
):
    """Newest first; send the returned pagination.cursor to get the next page."""
    paging: dict[str, Any] = {"cursor": cursor}
    if limit is not None:
        paging["limit"] = limit
    with server.world() as cp:
        key.project(cp, project_id)
        ops, next_cursor = cp.list_operations(project_id, **paging)
        return {"operations": ser.operations(cp, ops), "pagination": {"cursor": next_cursor}}


@router.get("/projects/{project_id}/operations/{operation_id}", tags=["operations"],
            response_model=OperationResponse, **OUT)
def get_operation(project_id: str, operation_id: str, server: Server, key: Key):
    with server.world() as cp:
        key.project(cp, project_id)
        return {"operation": ser.operation(cp, cp.get_operation(project_id, operation_id))}

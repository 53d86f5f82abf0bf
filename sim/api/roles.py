"""Routes of a branch's roles and databases, and of a project's connection URI.

Every change answers with the apply_config operations it started on the
branch's computes (none when the branch has no compute); a change while one
of those computes has an operation that has not ended gets 423.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

from sim.api import serialize as ser
from sim.api.computes import OUT
from sim.api.deps import Key, Server, given
from sim.api.errors import ERRORS, STATE_ERRORS
from sim.api.routing import sim_router
from sim.api.schemas_roles import (
    ConnectionUriResponse,
    DatabaseCreateRequest,
    DatabaseOperations,
    DatabaseResponse,
    DatabasesResponse,
    DatabaseUpdateRequest,
    RoleCreateRequest,
    RoleOperations,
    RolePasswordResponse,
    RoleResponse,
    RolesResponse,
)

router = sim_router(prefix="/api/v2", responses=ERRORS)
BRANCH = "/projects/{project_id}/branches/{branch_id}"
ROLE = BRANCH + "/roles/{role_name}"
DATABASE = BRANCH + "/databases/{database_name}"

# ---- roles -----------------------------------------------------------------------------------


@router.get(BRANCH + "/roles", tags=["roles"], response_model=RolesResponse, **OUT)
def list_roles(project_id: str, branch_id: str, server: Server, key: Key):
    with server.world() as cp:
        key.project(cp, project_id)
        return {"roles": [ser.role(cp, r) for r in cp.list_roles(project_id, branch_id)]}


@router.post(BRANCH + "/roles", status_code=201, tags=["roles"], response_model=RoleOperations,
             responses=STATE_ERRORS, **OUT)
def create_role(project_id: str, branch_id: str, body: RoleCreateRequest, server: Server,
                key: Key):
    """A role with a new password (shown in this answer), applied to the branch's computes."""
    with server.world() as cp:
        key.project(cp, project_id)
        role, ops = cp.create_role(project_id, branch_id, body.role.name)
        role.no_login = body.role.documented.get("no_login", False)
        return {"role": ser.role(cp, role, with_password=True),
                "operations": ser.operations(cp, ops)}


@router.get(ROLE, tags=["roles"], response_model=RoleResponse, **OUT)
def get_role(project_id: str, branch_id: str, role_name: str, server: Server, key: Key):
    with server.world() as cp:
        key.project(cp, project_id)
        return {"role": ser.role(cp, cp.get_role(project_id, branch_id, role_name))}


@router.delete(ROLE, tags=["roles"], response_model=RoleOperations, responses=STATE_ERRORS,
               **OUT)
def delete_role(project_id: str, branch_id: str, role_name: str, server: Server, key: Key):
    """Refused (409) while the role owns a database."""
    with server.world() as cp:
        key.project(cp, project_id)
        role, ops = cp.delete_role(project_id, branch_id, role_name)
        return {"role": ser.role(cp, role), "operations": ser.operations(cp, ops)}


def reveal_password(project_id: str, branch_id: str, role_name: str, server: Server, key: Key):
    """The role's current password."""
    with server.world() as cp:
        key.project(cp, project_id)
        return {"password": cp.reveal_password(project_id, branch_id, role_name)}


router.get(ROLE + "/reveal_password", tags=["roles"], response_model=RolePasswordResponse,
           **OUT)(reveal_password)
# the official Python client (neon-api) asks with POST: the same read, served but left out
# of the OpenAPI document (the official document has only the GET)
router.post(ROLE + "/reveal_password", tags=["roles"], response_model=RolePasswordResponse,
            include_in_schema=False, **OUT)(reveal_password)


@router.post(ROLE + "/reset_password", tags=["roles"], response_model=RoleOperations,
             responses=STATE_ERRORS, **OUT)
def reset_password(project_id: str, branch_id: str, role_name: str, server: Server, key: Key):
    """A new password for the role (shown in this answer), applied to the branch's computes."""
    with server.world() as cp:
        key.project(cp, project_id)
        role, ops = cp.reset_password(project_id, branch_id, role_name)
        return {"role": ser.role(cp, role, with_password=True),
                "operations": ser.operations(cp, ops)}


# ---- databases -------------------------------------------------------------------------------


@router.get(BRANCH + "/databases", tags=["databases"], response_model=DatabasesResponse, **OUT)
def list_databases(project_id: str, branch_id: str, server: Server, key: Key):
    with server.world() as cp:
        key.project(cp, project_id)
        return {"databases": [ser.database(cp, d)
                              for d in cp.list_databases(project_id, branch_id)]}


@router.post(BRANCH + "/databases", status_code=201, tags=["databases"],
             response_model=DatabaseOperations, responses=STATE_ERRORS, **OUT)
def create_database(project_id: str, branch_id: str, body: DatabaseCreateRequest,
                    server: Server, key: Key):
    """A database owned by an existing role of the branch."""
    with server.world() as cp:
        key.project(cp, project_id)
        db, ops = cp.create_database(project_id, branch_id, body.database.name,
                                     body.database.owner_name)
        return {"database": ser.database(cp, db), "operations": ser.operations(cp, ops)}


@router.get(DATABASE, tags=["databases"], response_model=DatabaseResponse, **OUT)
def get_database(project_id: str, branch_id: str, database_name: str, server: Server,
                 key: Key):
    with server.world() as cp:
        key.project(cp, project_id)
        return {"database": ser.database(cp, cp.get_database(project_id, branch_id,
                                                             database_name))}


@router.patch(DATABASE, tags=["databases"], response_model=DatabaseOperations,
              responses=STATE_ERRORS, **OUT)
def update_database(project_id: str, branch_id: str, database_name: str,
                    body: DatabaseUpdateRequest, server: Server, key: Key):
    """Rename the database or give it another owner."""
    changes = given(body.database)
    with server.world() as cp:
        key.project(cp, project_id)
        db, ops = cp.update_database(project_id, branch_id, database_name, **changes)
        return {"database": ser.database(cp, db), "operations": ser.operations(cp, ops)}


@router.delete(DATABASE, tags=["databases"], response_model=DatabaseOperations,
               responses=STATE_ERRORS, **OUT)
def delete_database(project_id: str, branch_id: str, database_name: str, server: Server,
                    key: Key):
    with server.world() as cp:
        key.project(cp, project_id)
        db, ops = cp.delete_database(project_id, branch_id, database_name)
        return {"database": ser.database(cp, db), "operations": ser.operations(cp, ops)}


# ---- connection URI --------------------------------------------------------------------------


@router.get("/projects/{project_id}/connection_uri", tags=["projects"],
            response_model=ConnectionUriResponse, **OUT)
def get_connection_uri(
    project_id: str, server: Server, key: Key,
    branch_id: Annotated[str | None, Query(description="default: the default branch")] = None,
    endpoint_id: Annotated[str | None, Query(
        description="default: the branch's read_write compute")] = None,
    database_name: Annotated[str | None, Query(
        description="default: the branch's database, when it has only one")] = None,
    role_name: Annotated[str | None, Query(
        description="default: the branch's role, when it has only one")] = None,
    pooled: Annotated[bool, Query(description="through the compute's pooler host")] = False,
):
    """`postgresql://role:password@host/database?sslmode=require`."""
    with server.world() as cp:
        key.project(cp, project_id)
        return {"uri": cp.connection_uri(project_id, branch_id=branch_id,
                                         endpoint_id=endpoint_id, database_name=database_name,
                                         role_name=role_name, pooled=pooled)}

"""Routes of a project's permissions: who else it is shared with, by email.

    GET    /api/v2/projects/{project_id}/permissions                 {project_permissions}
    POST   /api/v2/projects/{project_id}/permissions  {email}        the grant
    DELETE /api/v2/projects/{project_id}/permissions/{permission_id} the grant, revoked_at set

A grant is kept on the project as plain data (id, email, instant) and listed until it is
revoked; granting an email that already has a grant answers that grant. The simulated
account has one user, so a grant reaches no one: no other key sees the project because
of it.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, Field, StrictStr, field_validator

from sim.api.computes import OUT
from sim.api.deps import Key, Server
from sim.api.errors import ERRORS
from sim.api.routing import sim_router
from sim.api.schemas import Body
from sim.engine.model import Project
from sim.rules.errors import not_found

router = sim_router(prefix="/api/v2", tags=["projects"], responses=ERRORS)
MAX_EMAIL = 256  # as the document
#: one @, something on each side, a dot in the domain, no spaces (what an address needs)
_EMAIL = re.compile(r"[^@\s]+@[^@\s.]+(\.[^@\s.]+)+")


class GrantRequest(Body):
    email: Annotated[StrictStr, Field(min_length=1, max_length=MAX_EMAIL)]

    @field_validator("email")
    @classmethod
    def _an_address(cls, value: str) -> str:
        if not _EMAIL.fullmatch(value):
            raise ValueError("must be an email address")
        return value


class ProjectPermission(BaseModel):
    id: str
    granted_to_email: str
    granted_at: str
    revoked_at: str | None = None


class ProjectPermissions(BaseModel):
    project_permissions: list[ProjectPermission]


def grant(project: Project, email: str, now: str) -> dict[str, str]:
    """The grant of `email`: the one it has, else a new one numbered within the project."""
    for given in project.permissions:
        if given["granted_to_email"].lower() == email.lower():
            return given
    project.last_permission_id += 1
    made = {"id": f"{project.id}-perm-{project.last_permission_id}", "granted_to_email": email,
            "granted_at": now}
    project.permissions.append(made)
    return made


def revoke(project: Project, permission_id: str, now: str) -> dict[str, str]:
    for i, given in enumerate(project.permissions):
        if given["id"] == permission_id:
            del project.permissions[i]
            return {**given, "revoked_at": now}
    raise not_found("permission", permission_id, "permission_id")


@router.get("/projects/{project_id}/permissions", response_model=ProjectPermissions, **OUT)
def list_permissions(project_id: str, server: Server, key: Key):
    with server.world() as cp:
        project = key.project(cp, project_id)
        return {"project_permissions": [dict(p) for p in project.permissions]}


@router.post("/projects/{project_id}/permissions", response_model=ProjectPermission, **OUT)
def grant_permission(project_id: str, body: GrantRequest, server: Server, key: Key):
    """Share the project with an email address (the grant it has if it has one)."""
    with server.world() as cp:
        project = key.project(cp, project_id)
        return dict(grant(project, body.email, cp.clock.iso(cp.now)))


@router.delete("/projects/{project_id}/permissions/{permission_id}",
               response_model=ProjectPermission, **OUT)
def revoke_permission(project_id: str, permission_id: str, server: Server, key: Key):
    """Stop sharing: the grant, with the instant it was revoked."""
    with server.world() as cp:
        project = key.project(cp, project_id)
        return revoke(project, permission_id, cp.clock.iso(cp.now))

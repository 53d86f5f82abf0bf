"""Routes that bring back what was deleted: a project (within 7 days), a branch (within its
project's history window). What may be recovered is listed by `GET /projects?recoverable=
true` and `GET /projects/{id}/branches?include_deleted=true`."""

from __future__ import annotations

from sim.api import serialize as ser
from sim.api.computes import OUT
from sim.api.deps import Key, Server
from sim.api.errors import ERRORS, STATE_ERRORS, error_docs
from sim.api.keys import KeyKind
from sim.api.routing import sim_router
from sim.api.schemas_restore import BranchRecovered, ProjectRecovered
from sim.rules.errors import forbidden, not_found

router = sim_router(prefix="/api/v2", responses=ERRORS)


@router.post("/projects/{project_id}/recover", tags=["projects"],
             response_model=ProjectRecovered, responses={**STATE_ERRORS, **error_docs(403)},
             **OUT)
def recover_project(project_id: str, server: Server, key: Key):
    """A deleted project back, with the branches and computes deleted with it (its
    computes idle); 404 once its recovery window (7 days) has passed."""
    with server.world() as cp:
        project = cp.projects.get(project_id)
        if project is None or not key.reaches(project):
            raise not_found("project", project_id, "project_id")
        if key.kind is KeyKind.PROJECT:
            raise forbidden("a project-scoped API key cannot recover its project")
        project = cp.recover_project(project_id)
        return {"project": ser.project(cp, project),
                "branches": ser.branches(cp, cp.list_branches(project_id), project_id)}


@router.post("/projects/{project_id}/branches/{branch_id}/recover", tags=["branches"],
             response_model=BranchRecovered, responses=STATE_ERRORS, **OUT)
def recover_branch(project_id: str, branch_id: str, server: Server, key: Key):
    """A deleted branch back, with its computes (idle); 409 when its parent is deleted or
    its name is taken, 404 once the project's history window has passed."""
    with server.world() as cp:
        key.project(cp, project_id)
        branch, computes = cp.recover_branch(project_id, branch_id)
        return {"branch": ser.branches(cp, [branch], project_id)[0],
                "endpoints": ser.endpoints(cp, computes)}

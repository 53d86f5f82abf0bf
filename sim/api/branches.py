"""Routes that edit a branch: rename or protect it, make it the project's default.

Neither touches a compute, so both answer with an empty `operations` list.
"""

from __future__ import annotations

from sim.api import serialize as ser
from sim.api.computes import OUT
from sim.api.deps import Key, Server, given
from sim.api.errors import ERRORS
from sim.api.projects import keep_documented
from sim.api.routing import sim_router
from sim.api.schemas import BranchOperations
from sim.api.schemas_roles import BranchUpdateRequest

router = sim_router(prefix="/api/v2", responses=ERRORS)
BRANCH = "/projects/{project_id}/branches/{branch_id}"


@router.patch(BRANCH, tags=["branches"], response_model=BranchOperations, **OUT)
def update_branch(project_id: str, branch_id: str, body: BranchUpdateRequest, server: Server,
                  key: Key):
    """Rename the branch (names are unique in a project) or protect it (a protected
    branch cannot be deleted, and its children get new role passwords)."""
    changes = given(body.branch)
    kept = dict(body.branch.documented)
    with server.world() as cp:
        key.project(cp, project_id)
        cp.get_branch(project_id, branch_id)
        expiry = cp.check_expiry("branch.expires_at", kept.get("expires_at"))
        branch, ops = cp.update_branch(project_id, branch_id, **changes)
        if "expires_at" in kept:  # null: the expiry removed
            cp.set_expiry(branch, expiry)
            del kept["expires_at"]
        keep_documented(branch, kept)
        return {"branch": ser.branches(cp, [branch], project_id)[0],
                "operations": ser.operations(cp, ops)}


def set_as_default(project_id: str, branch_id: str, server: Server, key: Key):
    """Make the branch the project's default (the former default becomes ordinary)."""
    with server.world() as cp:
        key.project(cp, project_id)
        branch, ops = cp.set_default_branch(project_id, branch_id)
        return {"branch": ser.branches(cp, [branch], project_id)[0],
                "operations": ser.operations(cp, ops)}


router.post(BRANCH + "/set_as_default", tags=["branches"], response_model=BranchOperations,
            **OUT)(set_as_default)
# the former name of the same call, still used by the official Python client (neon-api):
# served, but left out of the OpenAPI document (the official document has only set_as_default)
router.post(BRANCH + "/set_as_primary", tags=["branches"], response_model=BranchOperations,
            include_in_schema=False, **OUT)(set_as_default)

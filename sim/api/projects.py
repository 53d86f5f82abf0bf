"""Routes of projects and branches: the minimal real-shaped set of the design notes.

A project lists only where the key reaches; creating or deleting one needs a
personal or organization key (a project-scoped key gets 403).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import Query

from sim.api import serialize as ser
from sim.api.computes import OUT
from sim.api.deps import Key, Server, given
from sim.api.errors import ERRORS, STATE_ERRORS, error_docs
from sim.api.routing import sim_router
from sim.api.schemas import (
    BranchCreated,
    BranchCreateRequest,
    BranchOperations,
    BranchResponse,
    ProjectCreate,
    ProjectCreated,
    ProjectCreateRequest,
    ProjectOperations,
    ProjectResponse,
    ProjectsResponse,
    ProjectUpdateRequest,
)
from sim.api.schemas_roles import BranchesCount, BranchesPage
from sim.engine.control_plane import ControlPlane
from sim.engine.model import Branch, Project
from sim.rules.errors import not_found

router = sim_router(prefix="/api/v2", responses=ERRORS)
MAX_BRANCHES_PAGE = 10_000  # as the real API's limit parameter
BranchSortKey = Literal["updated_at", "created_at", "name"]
SortOrder = Literal["desc", "asc"]
MAX_PROJECTS_PAGE = 400  # as the real API's list of projects
DEFAULT_PROJECTS_PAGE = 10
ORG_ID_PATTERN = r"^[a-z0-9-]{1,60}$"  # as the document's organization ids
END_OF_LIST = "end"  # the cursor of an empty first page: sent back, it gives an empty page


def _default_endpoint(spec: ProjectCreate) -> dict[str, Any]:
    """default_endpoint_settings (and the older top-level size fields) as compute values."""
    values = given(spec, include={"autoscaling_limit_min_cu", "autoscaling_limit_max_cu",
                                  "provisioner"})
    defaults = given(spec.default_endpoint_settings)
    settings = {k: defaults.pop(k) for k in ("pg_settings", "pgbouncer_settings") if k in defaults}
    values.update(defaults)
    if settings:
        values["settings"] = settings
    return values


def keep_documented(thing: Project | Branch, fields: dict[str, Any]) -> None:
    """Keep documented fields the simulator does not model, to answer them back.

    Objects (a project's `settings`) are merged key by key, as a PATCH does."""
    for name, value in fields.items():
        old = thing.documented.get(name)
        if isinstance(old, dict) and isinstance(value, dict):
            value = {**old, **value}
        thing.documented[name] = value


# ---- projects --------------------------------------------------------------------------------


@router.post("/projects", status_code=201, tags=["projects"], response_model=ProjectCreated,
             responses=error_docs(403), **OUT)
def create_project(body: ProjectCreateRequest, server: Server, key: Key):
    """A project with its default branch and primary compute (create_timeline, start_compute)."""
    spec = body.project
    owner_id, org_id = key.owner_of_new_project(spec.org_id)
    args = given(spec, include={"name", "region_id", "pg_version", "plan",
                                     "history_retention_seconds"})
    if spec.branch is not None:
        named = given(spec.branch, include={"name", "role_name", "database_name"})
        if "name" in named:
            named["branch_name"] = named.pop("name")
        args.update(named)
    name = args.pop("name", None)
    with server.world() as cp:
        made = cp.create_project(name, owner_id=owner_id, org_id=org_id,
                                 default_endpoint=_default_endpoint(spec), **args)
        keep_documented(made.project, spec.documented)
        if spec.default_endpoint_settings is not None:  # applied to the compute above, and kept
            keep_documented(made.project, {"default_endpoint_settings":
                                           given(spec.default_endpoint_settings)})
        if spec.branch is not None:
            keep_documented(made.branch, spec.branch.documented)
        primary = made.computes[0] if made.computes else None
        return {
            "project": ser.project(cp, made.project),
            "connection_uris": ser.connection_uris(cp, made.branch, primary),
            "roles": ser.roles(cp, made.branch, with_password=True),
            "databases": ser.databases(cp, made.branch),
            "operations": ser.operations(cp, made.operations),
            "branch": ser.branch(cp, made.branch),
            "endpoints": ser.endpoints(cp, made.computes),
        }


@router.get("/projects", tags=["projects"], response_model=ProjectsResponse, **OUT)
def list_projects(
    server: Server, key: Key,
    limit: Annotated[int, Query(ge=1, le=MAX_PROJECTS_PAGE)] = DEFAULT_PROJECTS_PAGE,
    cursor: Annotated[str | None, Query(description="the id of the last project seen")] = None,
    search: Annotated[str | None, Query(description="part of a project's name or id")] = None,
    org_id: Annotated[str | None, Query(description="only the projects of this organization",
                                        pattern=ORG_ID_PATTERN)] = None,
    timeout: Annotated[int | None, Query(ge=100, le=30_000, description=(
        "milliseconds the real service may spend; checked, not needed here"))] = None,
    recoverable: Annotated[bool, Query(description="only deleted projects within their "
                                                   "recovery window")] = False,
):
    """The projects the key reaches, oldest first, a page at a time."""
    with server.world() as cp:
        listed = cp.recoverable_projects() if recoverable else cp.list_projects()
        reached = [p for p in listed if key.reaches(p)]
        if org_id is not None:
            reached = [p for p in reached if p.org_id == org_id]
        if search:
            wanted = search.lower()
            reached = [p for p in reached if wanted in p.name.lower() or wanted in p.id]
        if cursor == END_OF_LIST:
            reached = []
        elif cursor:
            ids = [p.id for p in reached]
            if cursor not in ids:
                raise not_found("project", cursor, "cursor")
            reached = reached[ids.index(cursor) + 1:]
        page = reached[:limit]
        none: dict[str, list[str]] = {p.id: [] for p in page}
        # the document wants a cursor on every page, the empty ones too
        return {"projects": ser.projects(cp, page),
                "pagination": {"cursor": page[-1].id if page else cursor or END_OF_LIST},
                "applications": none, "integrations": dict(none)}


@router.get("/projects/shared", tags=["projects"], response_model=ProjectsResponse, **OUT)
def list_shared_projects(
    server: Server, key: Key,
    limit: Annotated[int, Query(ge=1, le=MAX_PROJECTS_PAGE)] = DEFAULT_PROJECTS_PAGE,
    cursor: Annotated[str | None, Query()] = None,
    search: Annotated[str | None, Query()] = None,
):
    """Projects other accounts shared with the key's user: the simulator has no sharing,
    so none (declared before /projects/{project_id}, which would read `shared` as an id)."""
    with server.world():
        return {"projects": [], "pagination": {"cursor": END_OF_LIST},
                "applications": {}, "integrations": {}}


@router.get("/projects/{project_id}", tags=["projects"], response_model=ProjectResponse, **OUT)
def get_project(project_id: str, server: Server, key: Key):
    with server.world() as cp:
        return {"project": ser.project(cp, key.project(cp, project_id))}


@router.patch("/projects/{project_id}", tags=["projects"], response_model=ProjectOperations,
              **OUT)
def update_project(project_id: str, body: ProjectUpdateRequest, server: Server, key: Key):
    """Rename, or change the restore window (an apply_storage_config operation)."""
    changes = given(body.project)
    with server.world() as cp:
        key.project(cp, project_id)
        project, ops = cp.update_project(project_id, **changes)
        keep_documented(project, body.project.documented)
        return {"project": ser.project(cp, project), "operations": ser.operations(cp, ops)}


@router.delete("/projects/{project_id}", tags=["projects"], response_model=ProjectOperations,
               responses=error_docs(403), **OUT)
def delete_project(project_id: str, server: Server, key: Key):
    """Delete the project, its branches and computes (a delete_tenant operation).

    A project-scoped key may not delete its own project (403)."""
    with server.world() as cp:
        key.project_to_delete(cp, project_id)
        project, ops = cp.delete_project(project_id)
        return {"project": ser.project(cp, project), "operations": ser.operations(cp, ops)}


# ---- branches --------------------------------------------------------------------------------


def branch_history(cp: ControlPlane, project: Project, parent_id: str | None,
                   kept: dict[str, Any]) -> float | None:
    """Check a new branch's point in time on its parent and its expiry before anything
    is made; normalise `parent_timestamp` (in `kept`); the expiry's instant."""
    parent = cp.get_branch(project.id, parent_id or project.default_branch_id,
                           field="branch.parent_id")
    at = cp.point_in_time(project, parent, kept.get("parent_timestamp"),
                          kept.get("parent_lsn"),
                          fields=("branch.parent_timestamp", "branch.parent_lsn"))
    if at is not None and "parent_timestamp" in kept:
        kept["parent_timestamp"] = cp.clock.iso(at)
    return cp.check_expiry("branch.expires_at", kept.get("expires_at"))


@router.post("/projects/{project_id}/branches", status_code=201, tags=["branches"],
             response_model=BranchCreated, responses=STATE_ERRORS, **OUT)
def create_branch(project_id: str, server: Server, key: Key,
                  body: BranchCreateRequest | None = None):
    """A branch (create_branch) with the computes listed in `endpoints`."""
    body = body or BranchCreateRequest()
    spec = given(body.branch)
    endpoints = [given(e) for e in body.endpoints or []]
    kept = {**body.documented, **(body.branch.documented if body.branch else {})}
    with server.world() as cp:
        project = key.project(cp, project_id)
        expiry = branch_history(cp, project, spec.get("parent_id"), kept)
        made = cp.create_branch(project_id, spec.get("name"), spec.get("parent_id"), endpoints,
                                protected=spec.get("protected", False),
                                annotation=body.annotation_value)
        keep_documented(made.branch, kept)
        if "expires_at" in kept:
            cp.set_expiry(made.branch, expiry)
        primary = next((c for c in made.computes if c.is_read_write), None)
        return {"branch": ser.branch(cp, made.branch),
                "endpoints": ser.endpoints(cp, made.computes),
                "operations": ser.operations(cp, made.operations),
                "roles": ser.roles(cp, made.branch, with_password=True),
                "databases": ser.databases(cp, made.branch),
                "connection_uris": ser.connection_uris(cp, made.branch, primary)}


@router.get("/projects/{project_id}/branches", tags=["branches"],
            response_model=BranchesPage, **OUT)
def list_branches(
    project_id: str, server: Server, key: Key,
    search: Annotated[str | None, Query(description="part of a branch's name or id")] = None,
    sort_by: Annotated[BranchSortKey, Query()] = "updated_at",
    sort_order: Annotated[SortOrder, Query()] = "desc",
    limit: Annotated[int | None, Query(ge=1, le=MAX_BRANCHES_PAGE)] = None,
    cursor: Annotated[str | None, Query(description="pagination.next of the last page")] = None,
    include_deleted: Annotated[bool, Query(description="the deleted branches that may still "
                                                       "be recovered too")] = False,
):
    """The project's branches, newest change first unless sorted otherwise; every one
    unless `limit` is given."""
    with server.world() as cp:
        key.project(cp, project_id)
        page, next_cursor = cp.page_branches(project_id, search=search, sort_by=sort_by,
                                             sort_order=sort_order, limit=limit, cursor=cursor,
                                             include_deleted=include_deleted)
        return {"branches": ser.branches(cp, page, project_id),
                "annotations": ser.annotations(cp, page),
                "pagination": {"next": next_cursor, "sort_by": sort_by,
                               "sort_order": sort_order}}


@router.get("/projects/{project_id}/branches/count", tags=["branches"],
            response_model=BranchesCount, **OUT)
def count_branches(
    project_id: str, server: Server, key: Key,
    search: Annotated[str | None, Query(description="part of a branch's name or id")] = None,
):
    """How many branches the project has (those whose name or id contains `search`)."""
    with server.world() as cp:
        key.project(cp, project_id)
        page, _ = cp.page_branches(project_id, search=search, sort_by="name",
                                   sort_order="asc", limit=None, cursor=None)
        return {"count": len(page)}


@router.get("/projects/{project_id}/branches/{branch_id}", tags=["branches"],
            response_model=BranchResponse, **OUT)
def get_branch(project_id: str, branch_id: str, server: Server, key: Key):
    with server.world() as cp:
        key.project(cp, project_id)
        branch = cp.get_branch(project_id, branch_id)
        return {"branch": ser.branches(cp, [branch], project_id)[0],
                "annotation": ser.annotation(cp, branch)}


@router.delete("/projects/{project_id}/branches/{branch_id}", tags=["branches"],
               response_model=BranchOperations, responses=STATE_ERRORS, **OUT)
def delete_branch(project_id: str, branch_id: str, server: Server, key: Key,
                  hard_delete: Annotated[bool | None, Query(description=(
                      "checked; a deleted branch is never kept"))] = None):
    """Delete a branch and its computes; the default branch and parents are refused (409)."""
    with server.world() as cp:
        key.project(cp, project_id)
        branch, ops = cp.delete_branch(project_id, branch_id)
        return {"branch": ser.branch(cp, branch), "operations": ser.operations(cp, ops)}

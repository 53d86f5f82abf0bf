"""`create_app(server)`: the FastAPI application of `sim serve`.

    /api/v2/...   the management API (computes, operations, projects, branches, auth)
    /_sim/...     the simulation's control calls (clock, connections, faults, reset)
    /             the console page;  /docs  the OpenAPI document, browsable offline

Routes live in `computes`, `projects`, `branches`, `roles`, `users`, `auth`,
`control` and `console` (one route table each); `errors` turns every refusal
into the one error body.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi_offline import FastAPIOffline

from sim.api import (
    api_keys,
    auth,
    branch_restore,
    branches,
    computes,
    console,
    consumption,
    control,
    errors,
    held_file,
    journal,
    limits,
    org_admin,
    orgs,
    permissions,
    projects,
    recovery,
    roles,
    users,
)
from sim.api.server import SimServer

DESCRIPTION = """\
The management API of a serverless-Postgres control plane, served over
**simulated time**. Every call needs `authorization: Bearer <API key>`.
Errors are `{"code", "message", "request_id"}`.

With a manual clock, time moves only through `POST /_sim/advance`; with a
realtime clock the world runs at `speed` x wall time.
"""


#: where /docs finds Swagger UI's script, style sheet and icon
DOCS_ASSETS = "/docs/assets"


def create_app(server: SimServer) -> FastAPI:
    # /docs serves Swagger UI's files from an installed package, not a CDN: it works offline
    app = FastAPIOffline(
        title="sim: management API over simulated time",
        version="2",
        description=DESCRIPTION,
        docs_url="/docs",
        redoc_url=None,
        static_url=DOCS_ASSETS,
        # an id ending in an encoded "/" must get 404, not a redirect to another path
        redirect_slashes=False,
        openapi_tags=[
            {"name": "computes", "description": "compute endpoints: create, list, update, "
                                               "delete, start, suspend, restart"},
            {"name": "operations", "description": "operations: list (paginated), read, poll"},
            {"name": "auth", "description": "managed auth (beta): integrations, SDK keys, users, "
                                           "OAuth providers, redirect domains, email server"},
            {"name": "projects"},
            {"name": "branches"},
            {"name": "roles", "description": "Postgres roles of a branch (apply_config)"},
            {"name": "databases", "description": "Postgres databases of a branch (apply_config)"},
            {"name": "users", "description": "the current user and the regions"},
            {"name": "api keys"},
            {"name": "snapshots", "description": "snapshots of a branch, their restore and "
                                                "their schedule on the simulated clock"},
            {"name": "consumption", "description": "consumption history per project and "
                                                  "branch, from the simulated usage"},
            {"name": "organizations", "description": "the user's organization and its members"},
            {"name": "simulation", "description": "the simulator's own controls (/_sim)"},
        ],
    )
    app.state.server = server
    # middleware: the last installed runs first (request id, then limits, then a held
    # file's refusals, then journal)
    journal.install(app, server)
    held_file.install(app, server)  # before the journal: a held file refuses changes
    limits.install(app, server)
    errors.install(app, server)
    app.include_router(computes.router)
    app.include_router(projects.router)
    app.include_router(branches.router)
    app.include_router(roles.router)
    app.include_router(users.router)
    app.include_router(auth.router)
    app.include_router(control.router)
    app.include_router(api_keys.router)
    app.include_router(consumption.router)
    app.include_router(recovery.router)
    app.include_router(branch_restore.router)
    app.include_router(orgs.router)
    app.include_router(org_admin.router)
    app.include_router(permissions.router)
    app.include_router(console.router)
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    return app


def _openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI's document, less its default 422 validation answer: ours is a 400 ErrorBody."""
    if app.openapi_schema is None:
        doc = get_openapi(title=app.title, version=app.version, description=app.description,
                          routes=app.routes, tags=app.openapi_tags)
        for operations in doc.get("paths", {}).values():
            for op in operations.values():
                answer = op.get("responses", {}).get("422", {})
                schema = answer.get("content", {}).get("application/json", {}).get("schema", {})
                if schema.get("$ref", "").endswith("/HTTPValidationError"):
                    del op["responses"]["422"]
        schemas = doc.get("components", {}).get("schemas", {})
        for name in ("HTTPValidationError", "ValidationError"):
            schemas.pop(name, None)
        app.openapi_schema = doc
    return app.openapi_schema

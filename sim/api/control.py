"""The /_sim control namespace: the simulation's own knobs, beside the real API.

Clock (read, advance in manual mode), connections opened by a pretend client,
faults, reset; for managed auth, what happens outside the service (the
customer confirming an ownership transfer in a browser) and a read-only SQL
query of a branch database (the synced `svc_auth.users_sync`). Every call
needs an API key. Calls that change the whole world (advance the clock, set
faults, reset) need a personal or organization key: a project-scoped key gets
403, it must not stop or rewind what every other key sees. A project key may
read the clock and the faults, and use the calls that touch only its own
project (connections to its computes, its users_sync query, confirming its
ownership transfer). Outages and extra latency never apply here, so a test
can always move time past an outage.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from sim.api import serialize as ser
from sim.api.computes import OUT
from sim.api.deps import Key, Server
from sim.api.errors import error_docs
from sim.api.keys import ApiKey, KeyKind
from sim.api.routing import sim_router
from sim.api.schemas import (
    AdvanceRequest,
    ClockOut,
    ConnectionsOut,
    ConnectionsRequest,
    FaultsOut,
    FaultsRequest,
    ResetOut,
    StateOut,
)
from sim.api.schemas_auth import (
    AuthQueryRequest,
    ConfirmTransferRequest,
    IntegrationItemOut,
    QueryOut,
)
from sim.api.server import SimServer
from sim.engine.auth import transfer_token_of
from sim.engine.clock import to_us
from sim.engine.control_plane import ControlPlane
from sim.rules.errors import forbidden, invalid

router = sim_router(prefix="/_sim", tags=["simulation"], responses=error_docs(400, 401))


def world_wide(key: ApiKey, what: str) -> None:
    """403 for a project-scoped key: `what` changes the world of every key."""
    if key.kind is KeyKind.PROJECT:
        raise forbidden(f"{what} changes the whole simulated world: it needs a personal or "
                        f"organization API key, not a project-scoped one")


def clock_view(server: SimServer, cp: ControlPlane) -> dict[str, Any]:
    return {"now": cp.clock.iso_us(to_us(cp.now)), "seconds": cp.now,
            "start": cp.clock.iso(0.0), "mode": server.mode.value, "speed": server.speed}


def faults_view(server: SimServer, cp: ControlPlane) -> dict[str, Any]:
    iso = cp.clock.iso
    return {"operation_failure_rate": cp.executor.failure_rate,
            "extra_latency_ms": server.faults.extra_latency_ms,
            "outages": [{"start": iso(a), "end": iso(b)} for a, b in server.faults.outages]}


@router.get("/clock", response_model=ClockOut)
def get_clock(server: Server, key: Key):
    """Simulated now (ISO, and seconds since the start), the clock mode and speed."""
    with server.world(api=False) as cp:
        return clock_view(server, cp)


@router.get("/state", response_model=StateOut)
def get_state(server: Server, key: Key):
    """The state file (`sim serve --state`), or null; `held`: the journal row a restart could
    not apply, the world being served read only up to the row before it (null: none)."""
    held = server.held
    if held is not None:
        return {"file": Path(held.file).name, "held": held.view()}
    journal = server.journal
    return {"file": None if journal is None else journal.path.name, "held": None}


@router.post("/advance", response_model=ClockOut, responses=error_docs(403, 409))
def advance(body: AdvanceRequest, server: Server, key: Key):
    """Manual clock only: run the world `seconds` forward (409 with a realtime clock)."""
    world_wide(key, "advancing the clock")
    server.advance(body.seconds)  # in steps, leaving the lock between them
    with server.world(api=False) as cp:
        return clock_view(server, cp)


@router.post("/connections", response_model=ConnectionsOut, responses=error_docs(404),
             **OUT)
def open_connections(body: ConnectionsRequest, server: Server, key: Key):
    """Open `count` client connections to a compute now, each for `duration_seconds`.

    Outcomes count: ok, waiting (the compute is starting: the session follows),
    refused_53300 (beyond max_connections), refused_pooler_full, ...
    """
    with server.world(api=False) as cp:
        project = key.project(cp, body.project_id)
        before = len(project.operations)
        outcomes = cp.connect(body.project_id, body.endpoint_id, body.duration_seconds,
                              body.count)
        c = cp.get_compute(body.project_id, body.endpoint_id)
        return {"outcomes": dict(Counter(outcomes)), "endpoint": ser.endpoint(cp, c),
                "operations": ser.operations(cp, project.operations[before:])}


@router.get("/faults", response_model=FaultsOut)
def get_faults(server: Server, key: Key):
    with server.world(api=False) as cp:
        return faults_view(server, cp)


@router.post("/faults", response_model=FaultsOut, responses=error_docs(403))
def set_faults(body: FaultsRequest, server: Server, key: Key):
    """Operation failure rate, extra latency of API calls, an outage window (503)."""
    world_wide(key, "setting faults")
    outage = None
    if body.outage is not None:
        outage = (body.outage.start_in_seconds, body.outage.duration_seconds)
    server.set_faults(operation_failure_rate=body.operation_failure_rate,
                      extra_latency_ms=body.extra_latency_ms, outage=outage,
                      clear_outages=body.clear_outages)
    with server.world(api=False) as cp:
        return faults_view(server, cp)


@router.post("/reset", response_model=ResetOut, responses=error_docs(403, 409))
def reset(server: Server, key: Key):
    """A fresh control plane with the same seed, scenario and keys; the clock at 0."""
    world_wide(key, "a reset")
    server.reset()
    with server.world(api=False) as cp:
        return {"clock": clock_view(server, cp), "projects": len(cp.list_projects())}


@router.post("/auth/confirm_transfer", response_model=IntegrationItemOut,
             responses=error_docs(404))
def confirm_transfer(body: ConfirmTransferRequest, server: Server, key: Key):
    """The customer opened the URL of transfer_ownership and accepted: owned_by becomes `user`.

    Send the URL itself or its one-time code (`token`); answers the integration's list item.
    """
    token = _transfer_token(body)
    with server.world(api=False) as cp:
        key.project(cp, body.project_id)
        integ = cp.auth.confirm_transfer(body.project_id, token)
        return next(i for i in cp.auth.list_integrations(body.project_id)
                    if i["auth_provider"] == integ.auth_provider)


def _transfer_token(body: ConfirmTransferRequest) -> str:
    if (body.token is None) == (body.url is None):
        raise invalid("token", "give either token or url (the url transfer_ownership returned)")
    if body.token is not None:
        return body.token
    try:
        return transfer_token_of(body.url or "")
    except (KeyError, ValueError):
        raise invalid("url", "not a transfer confirmation URL (it has no code)") from None


@router.post("/auth/query", response_model=QueryOut, responses=error_docs(404))
def auth_query(body: AuthQueryRequest, server: Server, key: Key):
    """One read-only SELECT on a branch database, rows as objects, e.g.
    `SELECT id, email, name, created_at FROM svc_auth.users_sync`.

    Defaults: the branch and database of the project's integration. 404 for a
    database no integration created; 400 naming `sql` for anything but one SELECT.
    """
    with server.world(api=False) as cp:
        key.project(cp, body.project_id)
        return {"rows": cp.auth.query(body.project_id, body.sql, body.branch_id,
                                      body.database_name)}

"""The /_sim control namespace: the simulation's own knobs, beside the real API.

Clock (read, advance in manual mode), connections opened by a pretend client,
faults, reset. Every call needs an API key; any valid key may drive the
clock and the faults (the simulator serves one account), while connections
reach only projects within the key's reach. Outages and extra latency never
apply here, so a test can always move time past an outage.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from fastapi import APIRouter

from sim.api import serialize as ser
from sim.api.computes import OUT
from sim.api.deps import Key, Server
from sim.api.errors import error_docs
from sim.api.schemas import (
    AdvanceRequest,
    ClockOut,
    ConnectionsOut,
    ConnectionsRequest,
    FaultsOut,
    FaultsRequest,
    ResetOut,
)
from sim.api.server import SimServer
from sim.engine.clock import to_us
from sim.engine.control_plane import ControlPlane

router = APIRouter(prefix="/_sim", tags=["simulation"], responses=error_docs(400, 401))


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


@router.post("/advance", response_model=ClockOut, responses=error_docs(409))
def advance(body: AdvanceRequest, server: Server, key: Key):
    """Manual clock only: run the world `seconds` forward (409 with a realtime clock)."""
    with server.world(api=False) as cp:
        server.advance(body.seconds)
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


@router.post("/faults", response_model=FaultsOut)
def set_faults(body: FaultsRequest, server: Server, key: Key):
    """Operation failure rate, extra latency of API calls, an outage window (503)."""
    outage = None
    if body.outage is not None:
        outage = (body.outage.start_in_seconds, body.outage.duration_seconds)
    server.set_faults(operation_failure_rate=body.operation_failure_rate,
                      extra_latency_ms=body.extra_latency_ms, outage=outage,
                      clear_outages=body.clear_outages)
    with server.world(api=False) as cp:
        return faults_view(server, cp)


@router.post("/reset", response_model=ResetOut, responses=error_docs(409))
def reset(server: Server, key: Key):
    """A fresh control plane with the same seed, scenario and keys; the clock at 0."""
    server.reset()
    with server.world(api=False) as cp:
        return {"clock": clock_view(server, cp), "projects": len(cp.list_projects())}

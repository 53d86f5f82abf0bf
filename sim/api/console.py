"""The console page at `/`: computes and operations of every project the key reaches.

The page itself is public (plain HTML, a little JS, no external assets); its
data comes from `GET /_sim/console`, which needs the key like every other
call. The page takes the key from the address fragment (`/#key=...`, which a
browser never sends to the server, so it never reaches a log), keeps it in
localStorage, and otherwise asks for it. It refreshes itself every 2 seconds.

The labels are decided here, in Python, from the rules' own tables
(`action_words`, `STATUS_LABELS`), so the page's script only lays them out.
"""

from __future__ import annotations

from typing import Any

from fastapi.responses import HTMLResponse

from sim.api.console_page import PAGE
from sim.api.control import clock_view
from sim.api.deps import Key, Server
from sim.api.errors import error_docs
from sim.api.routing import sim_router
from sim.api.serialize import last_active
from sim.engine.control_plane import ControlPlane
from sim.engine.model import Compute, Operation
from sim.rules.operations import STATUS_LABELS, action_words
from sim.rules.states import ComputeState

router = sim_router()
OPERATIONS_SHOWN = 15
ACTIVE = ComputeState.ACTIVE.value
IDLE = ComputeState.IDLE.value


def role(c: Compute) -> str:
    return "Primary" if c.is_read_write else "Read Replica"


def status(c: Compute) -> str:
    if c.pending_state == ACTIVE:
        return "Starting…"
    if c.pending_state == IDLE:
        return "Suspending…"
    return "Active" if c.current_state == ACTIVE else "Idle"


def size(c: Compute) -> str:
    lo, hi = c.autoscaling_limit_min_cu, c.autoscaling_limit_max_cu
    return f"{lo:g} CU" if c.fixed_size else f"{lo:g} ↔ {hi:g} CU"


def ago(seconds: float) -> str:
    if seconds < 5:
        return "just now"
    for unit, width in (("d", 86_400), ("h", 3_600), ("min", 60)):
        if seconds >= width:
            return f"{int(seconds // width)} {unit} ago"
    return f"{int(seconds)} s ago"


def _when(cp: ControlPlane, t: float | None) -> dict[str, str]:
    if t is None:
        return {"at": "", "ago": "—"}
    at = cp.clock.instant(t).strftime("%Y-%m-%d %H:%M:%S UTC")
    return {"at": at, "ago": ago(cp.now - t)}


def _duration(op: Operation) -> str:
    """How long a finished operation took; nothing for one still running (its status says
    so, and the time it has run so far would read as its length)."""
    if op.finished_at is None:
        return ""
    seconds = max(0.0, op.finished_at - op.created_at)
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.1f} s"


def compute_row(cp: ControlPlane, c: Compute) -> dict[str, Any]:
    return {"id": c.id, "branch": cp.branches[c.branch_id].name, "role": role(c),
            "status": status(c), "size": size(c), "last_active": _when(cp, last_active(cp, c))}


def operation_row(cp: ControlPlane, op: Operation) -> dict[str, Any]:
    return {"id": op.id, "action": action_words(op.action),
            "status": STATUS_LABELS.get(op.status, op.status), "status_key": op.status,
            "endpoint_id": op.endpoint_id or "", "created": _when(cp, op.created_at),
            "duration": _duration(op), "error": op.error or ""}


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
def console_page() -> HTMLResponse:
    return HTMLResponse(PAGE)


@router.get("/_sim/console", tags=["simulation"], responses=error_docs(400, 401))
def console_data(server: Server, key: Key) -> dict[str, Any]:
    """What the console page shows, labels included, for the projects the key reaches."""
    with server.world(api=False) as cp:
        projects = []
        for p in cp.list_projects():
            if not key.reaches(p):
                continue
            computes = [cp.computes[i] for b in p.branches for i in cp.branches[b].computes]
            recent, _cursor = cp.list_operations(p.id, OPERATIONS_SHOWN)
            projects.append({
                "id": p.id, "name": p.name, "region_id": p.region_id,
                "computes": [compute_row(cp, c) for c in computes],
                "operations": [operation_row(cp, op) for op in recent],
                "operations_total": cp.operation_count(p),
            })
        outage = server.faults.in_outage(cp.now)
        return {"clock": clock_view(server, cp), "projects": projects, "outage": outage}

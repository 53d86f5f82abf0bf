"""Engine objects -> JSON dicts shaped like the real API v2 (see `schemas` for the shapes).

Pure reads of the control plane at its current instant: nothing here changes
state or decides a rule. Absent values are left out rather than sent as null
(`last_active` before the first activity, `suspended_at` before a suspension,
`pending_state` when nothing is underway, `endpoint_id` of project operations).
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from sim.engine.clock import to_us
from sim.engine.model import Branch, Compute, Operation, Project
from sim.rules.operations import Action
from sim.rules.states import ComputeState, OperationStatus

if TYPE_CHECKING:
    from sim.engine.control_plane import ControlPlane

IDLE = ComputeState.IDLE.value
#: documented request fields kept on a branch that its answers carry back as they are
BRANCH_ECHOED = ("expires_at", "init_source", "parent_lsn", "parent_timestamp")
#: ... and on a project
PROJECT_ECHOED = ("default_endpoint_settings",)
ROLE = "neondb_owner"
DATABASE = "neondb"
PLATFORM = "aws"
PROVISIONER = "k8s-neonvm"
CREATION_SOURCE = "console"


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


# ---- operations ------------------------------------------------------------------------------


def operation(cp: ControlPlane, op: Operation) -> dict[str, Any]:
    clock = cp.clock
    if op.done:
        duration = op.total_duration_ms
    else:
        duration = max(0, int(round((cp.now - op.created_at) * 1000)))
    failed = op.status == OperationStatus.FAILED.value
    return _drop_none({
        "id": op.id,
        "project_id": op.project_id,
        "branch_id": op.branch_id,
        "endpoint_id": op.endpoint_id,
        "action": op.action,
        "status": op.status,
        "failures_count": op.failures_count,
        "created_at": clock.iso_us(op.created_us),
        "updated_at": clock.iso_us(max(op.created_us, to_us(op.updated_at))),
        "total_duration_ms": duration,
        "error": op.error if failed else None,
        "retry_at": clock.iso_us(to_us(op.retry_at)) if failed and op.retry_at else None,
    })


def operations(cp: ControlPlane, ops: Iterable[Operation]) -> list[dict[str, Any]]:
    return [operation(cp, op) for op in ops]


# ---- computes --------------------------------------------------------------------------------


def last_active(cp: ControlPlane, c: Compute) -> float | None:
    return c.runtime.last_active(cp.now) if c.runtime is not None else c.last_active


def endpoint(cp: ControlPlane, c: Compute) -> dict[str, Any]:
    iso = cp.clock.iso
    return _drop_none({
        "id": c.id,
        "name": c.name,
        "host": c.host,
        "proxy_host": c.proxy_host,
        "project_id": c.project_id,
        "branch_id": c.branch_id,
        "region_id": c.region_id,
        "type": c.type,
        "current_state": c.current_state,
        "pending_state": c.pending_state,
        "autoscaling_limit_min_cu": c.autoscaling_limit_min_cu,
        "autoscaling_limit_max_cu": c.autoscaling_limit_max_cu,
        "settings": dict(c.settings),
        "pooler_enabled": c.pooler_enabled,
        "pooler_mode": c.pooler_mode,
        "disabled": c.disabled,
        "passwordless_access": c.passwordless_access,
        "creation_source": c.creation_source,
        "created_at": iso(c.created_at),
        "updated_at": iso(c.updated_at),
        "last_active": iso(last_active(cp, c)),
        "suspended_at": iso(c.suspended_at),
        "suspend_timeout_seconds": c.suspend_timeout_seconds,
        "provisioner": c.provisioner,
        "compute_release_version": c.release,
    })


def endpoints(cp: ControlPlane, computes: Iterable[Compute]) -> list[dict[str, Any]]:
    return [endpoint(cp, c) for c in computes]


# ---- usage -----------------------------------------------------------------------------------


@dataclass
class Usage:
    active_s: float = 0.0
    cu_s: float = 0.0
    last_active: float | None = None


def usage(cp: ControlPlane, project_id: str | None = None) -> dict[str, Usage]:
    """Active seconds and CU-seconds so far, by project id and by branch id (one pass)."""
    now = cp.now
    totals: dict[str, Usage] = {}
    for c in cp.computes.values():
        if project_id is not None and c.project_id != project_id:
            continue
        active, cu = c.stats.active_s, c.stats.cu_s
        rt = c.runtime
        if rt is not None and not c.deleted and rt.iv_state != IDLE:
            active += now - rt.iv_start  # the interval still open
            cu += rt.iv_cu * (now - rt.iv_start)
        seen = last_active(cp, c)
        for key in (c.project_id, c.branch_id):
            u = totals.setdefault(key, Usage())
            u.active_s += active
            u.cu_s += cu
            if seen is not None and (u.last_active is None or seen > u.last_active):
                u.last_active = seen
    return totals


# ---- branches --------------------------------------------------------------------------------


def _creation_op(project: Project, branch: Branch) -> Operation | None:
    """The operation that made the branch: create_timeline (default) or create_branch."""
    ops = project.operations
    start = to_us(branch.created_at)
    wanted = (Action.CREATE_TIMELINE if branch.default else Action.CREATE_BRANCH).value
    i = bisect.bisect_left(ops, start, key=lambda o: o.created_us)
    while i < len(ops) and ops[i].created_us <= start + 1_000_000:
        op = ops[i]
        if op.action == wanted and op.branch_id == branch.id:
            return op
        i += 1
    return None


def branch(cp: ControlPlane, b: Branch, use: Usage | None = None) -> dict[str, Any]:
    iso = cp.clock.iso
    project = cp.projects[b.project_id]
    made = _creation_op(project, b)
    if made is not None and not made.done:
        state, pending, changed = "init", "ready", b.created_at
    elif b.archived:
        state, pending, changed = "archived", None, b.updated_at
    else:
        finished = made.finished_at if made is not None else None
        state, pending, changed = "ready", None, finished or b.created_at
    use = use or Usage()
    kept = b.documented
    return _drop_none({
        "id": b.id,
        "project_id": b.project_id,
        "parent_id": b.parent_id,
        "name": b.name,
        "current_state": state,
        "pending_state": pending,
        "state_changed_at": iso(changed),
        "creation_source": CREATION_SOURCE,
        "default": b.default,
        "primary": b.default,
        "protected": kept.get("protected", False),
        "cpu_used_sec": int(use.cu_s),
        "compute_time_seconds": int(use.cu_s),
        "active_time_seconds": int(use.active_s),
        "written_data_bytes": 0,
        "data_transfer_bytes": 0,
        "created_at": iso(b.created_at),
        "updated_at": iso(b.updated_at),
        **{name: kept[name] for name in BRANCH_ECHOED if name in kept},
    })


def annotation(cp: ControlPlane, b: Branch) -> dict[str, Any]:
    """The branch's annotation (`annotation_value` at creation; empty when none was sent)."""
    return {"object": {"type": "console/branch", "id": b.id},
            "value": dict(b.documented.get("annotation_value", {})),
            "created_at": cp.clock.iso(b.created_at), "updated_at": cp.clock.iso(b.updated_at)}


def branches(cp: ControlPlane, items: Iterable[Branch], project_id: str) -> list[dict[str, Any]]:
    use = usage(cp, project_id)
    return [branch(cp, b, use.get(b.id)) for b in items]


# ---- projects --------------------------------------------------------------------------------


def _proxy_host(cp: ControlPlane, p: Project) -> str:
    for branch_id in p.branches:
        for compute_id in cp.branches[branch_id].computes:
            return cp.computes[compute_id].proxy_host
    return f"{p.region_id.removeprefix('aws-')}.aws.sim.internal"


def _month_bounds(at: datetime) -> tuple[str, str]:
    start = datetime(at.year, at.month, 1, tzinfo=UTC)
    end = datetime(at.year + at.month // 12, at.month % 12 + 1, 1, tzinfo=UTC)
    return start.strftime("%Y-%m-%dT%H:%M:%SZ"), end.strftime("%Y-%m-%dT%H:%M:%SZ")


def project(cp: ControlPlane, p: Project, use: Usage | None = None, *, full: bool = True
            ) -> dict[str, Any]:
    iso = cp.clock.iso
    use = use or usage(cp, p.id).get(p.id) or Usage()
    item = _drop_none({
        "id": p.id,
        "platform_id": PLATFORM,
        "region_id": p.region_id,
        "name": p.name,
        "provisioner": PROVISIONER,
        "pg_version": p.pg_version,
        "proxy_host": _proxy_host(cp, p),
        "branch_logical_size_limit": 0,
        "branch_logical_size_limit_bytes": 0,
        "store_passwords": p.documented.get("store_passwords", True),
        "active_time": int(use.active_s),
        "cpu_used_sec": int(use.cu_s),
        "creation_source": CREATION_SOURCE,
        "history_retention_seconds": p.history_retention_seconds,
        "created_at": iso(p.created_at),
        "updated_at": iso(p.updated_at),
        "owner_id": p.owner_id,
        "org_id": p.org_id,
        "compute_last_active_at": iso(use.last_active),
        "settings": dict(p.documented.get("settings", {})),
        **{name: p.documented[name] for name in PROJECT_ECHOED if name in p.documented},
    })
    if full:
        period_start, period_end = _month_bounds(cp.clock.instant(cp.now))
        item.update({
            "data_storage_bytes_hour": 0,
            "data_transfer_bytes": 0,
            "written_data_bytes": 0,
            "compute_time_seconds": int(use.cu_s),
            "active_time_seconds": int(use.active_s),
            "consumption_period_start": period_start,
            "consumption_period_end": period_end,
        })
    return item


def projects(cp: ControlPlane, items: Iterable[Project]) -> list[dict[str, Any]]:
    use = usage(cp)
    return [project(cp, p, use.get(p.id) or Usage(), full=False) for p in items]


# ---- what a new project also lists: its role, database and connection string -----------------


def _password(project_id: str) -> str:
    return "npg_" + hashlib.sha256(f"sim-password/{project_id}".encode()).hexdigest()[:16]


def owner_names(cp: ControlPlane, project_id: str) -> tuple[str, str]:
    """(role, database) of a project: `branch.role_name` / `database_name` at its creation,
    else the defaults; as the real API, the role defaults to `<database>_owner` when only
    the database is named."""
    p = cp.projects[project_id]
    kept = cp.branches[p.default_branch_id].documented if p.default_branch_id else {}
    database = kept.get("database_name", DATABASE)
    role = kept.get("role_name", ROLE if "database_name" not in kept else f"{database}_owner")
    return role, database


def connection_uris(cp: ControlPlane, p: Project, c: Compute | None) -> list[dict[str, Any]]:
    if c is None:
        return []
    role, database = owner_names(cp, p.id)
    password = _password(p.id)
    ident, _, rest = c.host.partition(".")
    pooler_host = f"{ident}-pooler.{rest}"
    return [{
        "connection_uri": (f"postgresql://{quote(role, safe='')}:{password}@{c.host}/"
                           f"{quote(database, safe='')}?sslmode=require"),
        "connection_parameters": {"database": database, "password": password, "role": role,
                                  "host": c.host, "pooler_host": pooler_host},
    }]


def roles(cp: ControlPlane, b: Branch) -> list[dict[str, Any]]:
    at = cp.clock.iso(b.created_at)
    role = owner_names(cp, b.project_id)[0]
    return [{"branch_id": b.id, "name": role, "protected": False, "created_at": at,
             "updated_at": at}]


def databases(cp: ControlPlane, b: Branch) -> list[dict[str, Any]]:
    at = cp.clock.iso(b.created_at)
    ident = int(hashlib.sha256(b.id.encode()).hexdigest()[:8], 16)
    role, database = owner_names(cp, b.project_id)
    return [{"id": ident, "branch_id": b.id, "name": database, "owner_name": role,
             "created_at": at, "updated_at": at}]

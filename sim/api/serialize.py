"""Engine objects -> JSON dicts shaped like the real API v2 (see `schemas` for the shapes).

Pure reads of the control plane at its current instant: nothing here changes
state or decides a rule. Absent values are left out rather than sent as null
(`last_active` before the first activity, `suspended_at` before a suspension,
`pending_state` when nothing is underway, `endpoint_id` of project operations).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sim.engine.clock import to_us
from sim.engine.model import Branch, Compute, Database, Operation, Project, Role
from sim.rules import roles as role_rules
from sim.rules.operations import Action
from sim.rules.states import ComputeState, OperationStatus

if TYPE_CHECKING:
    from sim.engine.control_plane import ControlPlane

IDLE = ComputeState.IDLE.value
#: documented request fields kept on a branch that its answers carry back as they are
BRANCH_ECHOED = ("expires_at", "init_source", "parent_lsn", "parent_timestamp",
                 "ttl_interval_seconds", "restored_from", "restored_as", "restore_status",
                 "last_reset_at")
#: ... and on a project
PROJECT_ECHOED = ("default_endpoint_settings",)
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
    past = project.past_operations
    if past is not None and (not ops or ops[0].created_us > start):  # made days ago
        k = past.count_before(start)
        while k < len(past) and past.created_us[k] <= start + 1_000_000:
            op = past.operation(k, project.id)
            if op.action == wanted and op.branch_id == branch.id:
                return op
            k += 1
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
        "protected": b.protected,
        "cpu_used_sec": int(use.cu_s),
        "compute_time_seconds": int(use.cu_s),
        "active_time_seconds": int(use.active_s),
        "written_data_bytes": 0,
        "data_transfer_bytes": 0,
        "created_at": iso(b.created_at),
        "updated_at": iso(b.updated_at),
        **{name: kept[name] for name in BRANCH_ECHOED if name in kept},
        "recovery": None if b.deleted_at is None else {
            "deleted_at": iso(b.deleted_at), "deletion_method": b.deletion_method or "user",
            "recoverable_until": iso(cp.recoverable_until(b))},
    })


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


# ---- roles, databases, connection URIs, annotations ---------------------------------------


def role(cp: ControlPlane, r: Role, *, with_password: bool = False) -> dict[str, Any]:
    """A role; its password only where the real API shows it (creation, reset)."""
    iso = cp.clock.iso
    return _drop_none({
        "branch_id": r.branch_id,
        "name": r.name,
        "password": cp.password_of(r) if with_password and not r.no_login else None,
        "protected": r.protected,
        "created_at": iso(r.created_at),
        "updated_at": iso(r.updated_at),
    })


def roles(cp: ControlPlane, b: Branch, *, with_password: bool = False) -> list[dict[str, Any]]:
    return [role(cp, r, with_password=with_password) for r in b.roles.values()]


def database(cp: ControlPlane, d: Database) -> dict[str, Any]:
    iso = cp.clock.iso
    return {"id": d.id, "branch_id": d.branch_id, "name": d.name, "owner_name": d.owner_name,
            "created_at": iso(d.created_at), "updated_at": iso(d.updated_at)}


def databases(cp: ControlPlane, b: Branch) -> list[dict[str, Any]]:
    return [database(cp, d) for d in b.databases.values()]


def connection_uris(cp: ControlPlane, b: Branch, c: Compute | None) -> list[dict[str, Any]]:
    """The URI of a new project or branch: given when it has a compute and exactly one
    role and one database (as the real API: with more, it cannot choose)."""
    if c is None or len(b.roles) != 1 or len(b.databases) != 1:
        return []
    r = next(iter(b.roles.values()))
    d = next(iter(b.databases.values()))
    password = cp.password_of(r)
    return [{
        "connection_uri": role_rules.connection_uri(c.host, r.name, password, d.name),
        "connection_parameters": {"database": d.name, "password": password, "role": r.name,
                                  "host": c.host,
                                  "pooler_host": role_rules.pooler_host(c.host, c.id)},
    }]


ANNOTATION_OBJECT = "console/branch"


def annotation(cp: ControlPlane, b: Branch) -> dict[str, Any]:
    """The branch's annotation: the annotation_value it was created with (or {})."""
    at = cp.clock.iso(b.created_at)
    return {"object": {"type": ANNOTATION_OBJECT, "id": b.id}, "value": dict(b.annotation or {}),
            "created_at": at, "updated_at": at}


def annotations(cp: ControlPlane, items: Iterable[Branch]) -> dict[str, Any]:
    """The annotation of every branch listed, by branch id (value {} when none was sent)."""
    return {b.id: annotation(cp, b) for b in items}

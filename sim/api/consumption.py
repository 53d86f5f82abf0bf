"""Routes of the consumption history: what projects and branches consumed, per time frame.

Answered from the control plane's hourly usage ledger (`sim.engine.usage`): compute
time in CU-seconds and active time, summed per hour, day or month (UTC). The
document's storage and transfer metrics answer 0: the simulator models no stored
or transferred bytes. Whole seconds per frame are rounded so that frames add up
to the rounded total of any longer span (`whole_seconds`).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from fastapi import Query

from sim.api.computes import OUT
from sim.api.deps import Key, Server
from sim.api.errors import ERRORS, error_docs
from sim.api.keys import ORG_ID
from sim.api.routing import sim_router
from sim.api.schemas_consumption import (
    BranchConsumptionPage,
    ProjectConsumptionPage,
    ProjectConsumptionV2Page,
)
from sim.engine.control_plane import ControlPlane
from sim.engine.model import Project
from sim.engine.usage import ACTIVE_S, CU_S, UsageLedger, whole_seconds
from sim.rules.errors import ApiError, invalid, not_found

router = sim_router(prefix="/api/v2", responses=ERRORS)
Granularity = Literal["hourly", "daily", "monthly"]
#: how far back each granularity reaches (the document's limits)
REACH = {"hourly": timedelta(hours=168), "daily": timedelta(days=60),
         "monthly": timedelta(days=366)}
#: the first instant the real service has a history for
HISTORY_START = datetime(2024, 3, 1, tzinfo=UTC)
V1_METRICS = ("active_time_seconds", "compute_time_seconds", "written_data_bytes",
              "synthetic_storage_size_bytes", "data_storage_bytes_hour", "logical_size_bytes",
              "logical_size_bytes_hour")
V1_DEFAULT = V1_METRICS[:4]
V2_METRICS = ("compute_unit_seconds", "root_branch_bytes_month", "child_branch_bytes_month",
              "instant_restore_bytes_month", "public_network_transfer_bytes",
              "private_network_transfer_bytes", "extra_branches_month",
              "snapshot_storage_bytes_month")
V2_BRANCH_METRICS = V2_METRICS[:6]
#: the metrics the ledger holds, and which of its columns; every other answers 0
MODELLED = {"compute_time_seconds": CU_S, "compute_unit_seconds": CU_S,
            "active_time_seconds": ACTIVE_S}
_PERIOD_NS = uuid.UUID("6f1d2c3a-5b4e-4f70-8a9b-0c1d2e3f4a5b")


def _range_out(reason: str) -> ApiError:
    return ApiError(406, "NOT_ACCEPTABLE", reason, "from")


def _floor(t: datetime, granularity: str) -> datetime:
    t = t.replace(minute=0, second=0, microsecond=0)
    if granularity != "hourly":
        t = t.replace(hour=0)
    if granularity == "monthly":
        t = t.replace(day=1)
    return t


def _next(t: datetime, granularity: str) -> datetime:
    if granularity == "hourly":
        return t + timedelta(hours=1)
    if granularity == "daily":
        return t + timedelta(days=1)
    return t.replace(year=t.year + t.month // 12, month=t.month % 12 + 1)


def frames(cp: ControlPlane, start: datetime, end: datetime, granularity: str
           ) -> list[tuple[datetime, datetime]]:
    """The time frames of `granularity` from `start` (rounded down) that begin before
    `end` and before now; 406 when `start` lies beyond the granularity's reach."""
    start, end = _as_utc(start), _as_utc(end)
    if end <= start:  # a range the document answers with 406, as one beyond the reach
        raise ApiError(406, "NOT_ACCEPTABLE", "to: must be after from", "to")
    now = cp.clock.instant(cp.now)
    first = _floor(start, granularity)
    if first < HISTORY_START:
        raise _range_out("from: the consumption history starts at 2024-03-01T00:00:00Z")
    if first < _floor(now - REACH[granularity], granularity):
        raise _range_out(f"from: {granularity} metrics reach back {REACH[granularity].days} "
                         f"days at most" if granularity != "hourly"
                         else "from: hourly metrics reach back 168 hours at most")
    out = []
    t = first
    while t < end and t <= now:
        out.append((t, _next(t, granularity)))
        t = out[-1][1]
    return out


def _as_utc(t: datetime) -> datetime:
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def _hour(cp: ControlPlane, usage: UsageLedger, t: datetime) -> int:
    seconds = (t - cp.clock.start).total_seconds()
    return usage.hour_of(seconds + 1e-6)  # frames begin on whole hours


def series(cp: ControlPlane, compute_ids: list[str], spans: list[tuple[datetime, datetime]],
           metrics: list[str]) -> list[dict[str, int]]:
    """Per time frame: each metric's whole value (0 for what the model lacks)."""
    usage = cp.usage
    values: dict[str, list[int]] = {}
    if usage is not None:
        hours = usage.hours([cp.computes[i] for i in compute_ids], cp.now)
        bounds = [(_hour(cp, usage, a), _hour(cp, usage, b)) for a, b in spans]
        for column in {MODELLED[m] for m in metrics if m in MODELLED}:
            values[str(column)] = whole_seconds(hours, column, bounds)
    return [{m: values[str(MODELLED[m])][i] if m in MODELLED and values else 0
             for m in metrics} for i in range(len(spans))]


def _listed(raw: list[str] | None, field: str, allowed: tuple[str, ...] | None = None,
            at_most: int = 100) -> list[str]:
    """Values given repeated or comma-separated, checked against `allowed`."""
    out = [v for item in raw or [] for v in item.split(",") if v]
    if len(out) > at_most:
        raise invalid(field, f"at most {at_most} values")
    if allowed is not None:
        for v in out:
            if v not in allowed:
                raise invalid(field, f"{v!r} is not one of {list(allowed)}")
    return list(dict.fromkeys(out))


def _period(cp: ControlPlane, project: Project) -> dict[str, Any]:
    """The one billing period a simulated project has: from its creation on."""
    return {"period_id": str(uuid.uuid5(_PERIOD_NS, project.id)),
            "period_plan": project.plan.value,
            "period_start": cp.clock.iso(project.created_at)}


def _projects(cp: ControlPlane, key: Key, ids: list[str], org_id: str | None,
              cursor: str | None, limit: int) -> tuple[list[Project], str | None]:
    if org_id is not None and org_id not in (ORG_ID, key.org_id):
        raise not_found("organization", org_id, "org_id")
    reached = [p for p in cp.projects.values() if key.reaches(p)]
    if ids:
        reached = [p for p in reached if p.id in set(ids)]
    reached.sort(key=lambda p: p.created_at, reverse=True)  # newest first, as the document
    if cursor:
        known = [p.id for p in reached]
        if cursor not in known:
            raise invalid("cursor", "must be the cursor of a previous page")
        reached = reached[known.index(cursor) + 1:]
    page = reached[:limit]
    return page, page[-1].id if len(reached) > limit else None


def _compute_ids(cp: ControlPlane, project_id: str, branch_id: str | None = None) -> list[str]:
    return [c.id for c in cp.computes.values() if c.project_id == project_id
            and (branch_id is None or c.branch_id == branch_id)]


def _timeframe(span: tuple[datetime, datetime]) -> dict[str, str]:
    return {"timeframe_start": span[0].strftime("%Y-%m-%dT%H:%M:%SZ"),
            "timeframe_end": span[1].strftime("%Y-%m-%dT%H:%M:%SZ")}


From = Annotated[datetime, Query(alias="from", description="start of the period (rounded "
                                 "down to the granularity)")]
To = Annotated[datetime, Query(description="end of the period: frames beginning before it")]
Ids = Annotated[list[str] | None, Query(description="repeated, or comma-separated")]


@router.get("/consumption_history/projects", tags=["consumption"],
            response_model=ProjectConsumptionPage, responses=error_docs(406), **OUT)
def project_consumption(
    server: Server, key: Key, from_: From, to: To, granularity: Granularity,
    cursor: str | None = None, limit: Annotated[int, Query(ge=1, le=100)] = 10,
    project_ids: Ids = None, org_id: str | None = None,
    include_v1_metrics: bool | None = None, metrics: Ids = None,
):
    """Active time and compute time (CU-seconds) per project and time frame; written data
    and storage answer 0 (not modelled)."""
    # the document's time frame always has the four default metrics: `metrics` adds to them
    listed = _listed(metrics, "metrics", V1_METRICS) or []
    wanted = [*V1_DEFAULT, *(m for m in listed if m not in V1_DEFAULT)]
    if metrics is None and include_v1_metrics:
        wanted.append("data_storage_bytes_hour")
    ids = _listed(project_ids, "project_ids")
    with server.world() as cp:
        spans = frames(cp, from_, to, granularity)
        page, next_cursor = _projects(cp, key, ids, org_id, cursor, limit)
        out = []
        for p in page:
            rows = series(cp, _compute_ids(cp, p.id), spans, wanted)
            out.append({"project_id": p.id, "periods": [{
                **_period(cp, p),
                "consumption": [{**_timeframe(s), **row} for s, row in zip(spans, rows, strict=True)]}]})
        return _paged({"projects": out}, next_cursor)


def _v2_consumption(cp: ControlPlane, compute_ids: list[str], project: Project,
                    spans: list[tuple[datetime, datetime]], wanted: list[str]
                    ) -> list[dict[str, Any]]:
    rows = series(cp, compute_ids, spans, wanted)
    return [{**_period(cp, project), "consumption": [
        {**_timeframe(s), "metrics": [{"metric_name": m, "value": row[m]} for m in wanted]}
        for s, row in zip(spans, rows, strict=True)]}]


def _paged(body: dict[str, Any], cursor: str | None) -> dict[str, Any]:
    if cursor is not None:
        body["pagination"] = {"cursor": cursor}
    return body


@router.get("/consumption_history/v2/projects", tags=["consumption"],
            response_model=ProjectConsumptionV2Page, responses=error_docs(406), **OUT)
def project_consumption_v2(
    server: Server, key: Key, from_: From, to: To, granularity: Granularity,
    org_id: str, metrics: Annotated[list[str], Query(description="repeated, or comma-separated")],
    cursor: str | None = None, limit: Annotated[int, Query(ge=1, le=100)] = 10,
    project_ids: Ids = None,
):
    """Compute-unit seconds per project and time frame; every other metric answers 0."""
    wanted = _listed(metrics, "metrics", V2_METRICS)
    if not wanted:
        raise invalid("metrics", "at least one metric is required")
    ids = _listed(project_ids, "project_ids")
    with server.world() as cp:
        spans = frames(cp, from_, to, granularity)
        page, next_cursor = _projects(cp, key, ids, org_id, cursor, limit)
        return _paged({"projects": [
            {"project_id": p.id,
             "periods": _v2_consumption(cp, _compute_ids(cp, p.id), p, spans, wanted)}
            for p in page]}, next_cursor)


@router.get("/consumption_history/v2/branches", tags=["consumption"],
            response_model=BranchConsumptionPage, responses=error_docs(406), **OUT)
def branch_consumption_v2(
    server: Server, key: Key, from_: From, to: To, granularity: Granularity,
    org_id: str, project_ids: Annotated[list[str], Query(description="repeated, or "
                                                         "comma-separated")],
    metrics: Annotated[list[str], Query(description="repeated, or comma-separated")],
    cursor: str | None = None, limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    branch_ids: Ids = None,
):
    """Compute-unit seconds per branch and time frame, ordered by project id then branch
    id; every other metric answers 0."""
    wanted = _listed(metrics, "metrics", V2_BRANCH_METRICS)
    if not wanted:
        raise invalid("metrics", "at least one metric is required")
    ids = _listed(project_ids, "project_ids")
    if not ids:
        raise invalid("project_ids", "at least one project id is required")
    only = set(_listed(branch_ids, "branch_ids"))
    with server.world() as cp:
        spans = frames(cp, from_, to, granularity)
        projects, _ = _projects(cp, key, ids, org_id, None, len(cp.projects))
        pairs = sorted((p.id, b.id) for p in projects for b in cp.branches.values()
                       if b.project_id == p.id and (not only or b.id in only))
        if cursor:
            at = [f"{p}/{b}" for p, b in pairs]
            if cursor not in at:
                raise invalid("cursor", "must be the cursor of a previous page")
            pairs = pairs[at.index(cursor) + 1:]
        page = pairs[:limit]
        next_cursor = f"{page[-1][0]}/{page[-1][1]}" if len(pairs) > limit else None
        return _paged({"branches": [
            {"project_id": pid, "branch_id": bid,
             "periods": _v2_consumption(cp, _compute_ids(cp, pid, bid), cp.projects[pid],
                                        spans, wanted)}
            for pid, bid in page]}, next_cursor)

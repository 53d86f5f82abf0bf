"""Response shapes of the consumption history (the official document's)."""

from __future__ import annotations

from sim.api.schemas import Out


class Cursor(Out):
    cursor: str


class Timeframe(Out):
    timeframe_start: str
    timeframe_end: str
    active_time_seconds: int
    compute_time_seconds: int
    written_data_bytes: int
    synthetic_storage_size_bytes: int
    data_storage_bytes_hour: int | None = None
    logical_size_bytes: int | None = None
    logical_size_bytes_hour: int | None = None


class Period(Out):
    period_id: str
    period_plan: str
    period_start: str
    period_end: str | None = None
    consumption: list[Timeframe]


class ProjectConsumption(Out):
    project_id: str
    periods: list[Period]


class ProjectConsumptionPage(Out):
    projects: list[ProjectConsumption]
    pagination: Cursor | None = None


class MetricValue(Out):
    metric_name: str
    value: int


class TimeframeV2(Out):
    timeframe_start: str
    timeframe_end: str
    metrics: list[MetricValue]


class PeriodV2(Out):
    period_id: str
    period_plan: str
    period_start: str
    period_end: str | None = None
    consumption: list[TimeframeV2]


class ProjectConsumptionV2(Out):
    project_id: str
    periods: list[PeriodV2]


class ProjectConsumptionV2Page(Out):
    projects: list[ProjectConsumptionV2]
    pagination: Cursor | None = None


class BranchConsumptionV2(Out):
    branch_id: str
    project_id: str
    periods: list[PeriodV2]


class BranchConsumptionV2Page(Out):
    branches: list[BranchConsumptionV2]
    pagination: Cursor | None = None


BranchConsumptionPage = BranchConsumptionV2Page

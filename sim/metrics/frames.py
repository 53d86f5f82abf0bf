"""A run's records -> pandas frames with a fixed schema.

Every table has an explicit column order and dtype, also when it is empty, so
that the Parquet files of two runs always share one schema and notebooks can
concatenate them. The per-minute fleet series is computed from the state
intervals with numpy in O(n): fleets produce millions of intervals.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from operator import itemgetter
from typing import Any

import numpy as np
import pandas as pd

from sim.engine.minutes import MINUTE_S, per_minute_integrals, per_minute_ns, seconds_of
from sim.engine.records import (
    NO_TEMPLATE,
    ActionRecord,
    ComputeRow,
    ConnectionTable,
    RunResult,
    template_of,
)
from sim.engine.row_table import RowTable
from sim.engine.tallies import OperationTally
from sim.metrics.quantiles import quantiles_in_place
from sim.rules.pricing import Pricing
from sim.rules.states import ComputeState

#: pandas' own string dtype (the pandas 3 default): missing values are NaN, as for floats.
STR = pd.StringDtype(na_value=np.nan)
F64 = np.dtype("float64")
I64 = np.dtype("int64")
BOOL = np.dtype("bool")
TIME = pd.DatetimeTZDtype("us", "UTC")

#: states in which a compute runs (and is billed); idle computes hold 0 CU
ON_STATES = (ComputeState.INIT.value, ComputeState.ACTIVE.value)
#: wakes that are not cold starts: a new compute's first start is provisioning
NOT_COLD = ("create",)

SCHEMAS: dict[str, dict[str, Any]] = {
    "computes": {
        "compute_id": STR,
        "project_id": STR,
        "project_name": STR,
        "branch_id": STR,
        "branch_name": STR,
        "type": STR,
        "min_cu": F64,
        "max_cu": F64,
        "suspend_timeout_seconds": I64,
        "pooler_enabled": BOOL,
        "max_connections": I64,
        "sessions": I64,
        "refused": I64,  # 53300 (too many connections) only
        "refused_pooler_full": I64,
        "refused_disabled": I64,
        "queued": I64,
        "queue_timeouts": I64,
        "queue_wait_s": F64,
        "disk_full": I64,
        "dropped": I64,
        "cold_starts": I64,
        "restarts": I64,
        "suspends": I64,
        "peak_connections": I64,
        "active_s": F64,
        "cu_s": F64,
        "created_s": F64,
        "deleted_s": F64,  # NaN while the compute exists
        # derived
        "cu_hours": F64,
        "cost": F64,
        "active_share": F64,
        "wake_p50_s": F64,
        "wake_p99_s": F64,
        "wake_max_s": F64,
        "template": STR,  # the template the project was made from (see sim.metrics.templates)
    },
    "intervals": {
        "compute_id": STR,
        "project_id": STR,
        "state": STR,
        "cu": F64,
        "start_s": F64,
        "end_s": F64,
    },
    "operations": {
        "id": STR,
        "project_id": STR,
        "branch_id": STR,
        "endpoint_id": STR,
        "action": STR,
        "status": STR,
        "failures_count": I64,
        "created_s": F64,
        "updated_s": F64,
        "total_duration_ms": I64,
        "error": STR,
    },
    "connections": {
        "compute_id": STR,
        "project_id": STR,
        "arrival_s": F64,
        "wait_s": F64,
        "duration_s": F64,
        "outcome": STR,
        "cold": BOOL,
    },
    "wakes": {
        "compute_id": STR,
        "project_id": STR,
        "at_s": F64,
        "cause": STR,
        "wait_s": F64,
    },
    "actions": {  # the scenario's scripted API calls
        "at_s": F64,
        "call": STR,
        "status": I64,
        "code": STR,  # "" on success
    },
    # counted in every run, whatever is recorded (`sim.engine.tallies`): the operations
    # chart and the summary's operations are drawn from these, never from the rows
    "operations_per_hour": {
        "hour": I64,  # of creation, from the first instant (the last may run past the end)
        "action": STR,
        "status": STR,
        "operations": I64,
        "failed_attempts": I64,
    },
    # the cold-start waits' cumulative distribution, at most CDF_POINTS + 1 rows: the
    # cold-start chart is drawn from it, whether the wake rows were kept or not
    "cold_start_cdf": {
        "wait_s": F64,
        "cold_starts": I64,  # that waited at most wait_s
        "share": F64,  # of all cold starts
    },
    "fleet": {
        "minute": I64,
        "time": TIME,
        "active_computes": F64,
        "total_cu": F64,
        "cu_seconds": F64,
    },
}

#: the order in which tables are listed, written and read
TABLES: tuple[str, ...] = tuple(SCHEMAS)

#: the computes-frame counts that add up to the connection attempts: every connection a
#: client tried has exactly one of these outcomes (a dropped session began one: `sessions`)
ATTEMPT_OUTCOMES: tuple[str, ...] = ("sessions", "refused", "refused_pooler_full",
                                     "refused_disabled", "queue_timeouts", "disk_full")


def frames(result: RunResult) -> dict[str, pd.DataFrame]:
    """All tables of a run, keyed by name (see `SCHEMAS` for their columns)."""
    intervals = table_frame(result.intervals, SCHEMAS["intervals"])
    wakes = table_frame(result.wakes, SCHEMAS["wakes"])
    operations = table_frame(result.operations, SCHEMAS["operations"])
    compute_rows = records_frame(result.computes, ComputeRow._fields, SCHEMAS["computes"])
    return {
        "computes": computes_frame(compute_rows, wakes, result),
        "intervals": intervals,
        "operations": operations,
        "connections": connections_frame(result.connections),
        "wakes": wakes,
        "actions": records_frame(result.actions, ActionRecord._fields, SCHEMAS["actions"]),
        "operations_per_hour": operations_per_hour(operations, result),
        "cold_start_cdf": cold_start_cdf(wakes, result),
        "fleet": fleet_frame(intervals, result.duration_s, result.start_iso,
                             fleet_seconds(intervals, result)),
    }


def fleet_seconds(intervals: pd.DataFrame, result: RunResult
                  ) -> tuple[np.ndarray, np.ndarray] | None:
    """Per minute: compute-seconds on and CU-seconds, as the same integer sums whether the
    interval rows were kept or not (None for hand-made intervals of other CU levels)."""
    if result.fleet_ns is not None:
        return seconds_of(result.fleet_ns)
    if result.duration_s <= 0:
        return None
    try:
        return seconds_of(per_minute_ns(*on_intervals(intervals, result.duration_s),
                                        result.duration_s))
    except ValueError:  # CU levels not multiples of 0.25: the float integrals
        return None


def operations_per_hour(operations: pd.DataFrame, result: RunResult) -> pd.DataFrame:
    """Operations by hour of creation, action and status, with their failed attempts:
    counted from the rows, or given by the run when it kept none."""
    if result.operation_counts is not None:
        rows = result.operation_counts
    else:
        tally = OperationTally()
        tally.add(operations["action"].to_numpy(dtype=object),
                  operations["status"].to_numpy(dtype=object),
                  operations["failures_count"].to_numpy(dtype=I64),
                  operations["created_s"].to_numpy(dtype=F64))
        rows = tally.rows()
    if not rows:
        return empty_frame(SCHEMAS["operations_per_hour"])
    columns = dict(zip(SCHEMAS["operations_per_hour"], map(np.array, zip(*rows, strict=True)),
                       strict=True))
    return columns_frame(columns, SCHEMAS["operations_per_hour"])


#: rows of the cold-start CDF at most: the waits at every 1/CDF_POINTS of the cold starts
CDF_POINTS = 1000


def cold_start_cdf(wakes: pd.DataFrame, result: RunResult) -> pd.DataFrame:
    """The cold-start waits' empirical CDF: for ranks r from the first and then spread
    evenly to the last, the r-th shortest wait. With CDF_POINTS waits or fewer, every
    wait is a row."""
    if result.wake_waits is None:
        waits = cold_start_waits(wakes)["wait_s"].to_numpy(dtype=F64)
    else:
        waits = np.concatenate([np.empty(0), *result.wake_waits.values()])
    n = len(waits)
    if n == 0:
        return empty_frame(SCHEMAS["cold_start_cdf"])
    # the shortest wait first, then every 1/CDF_POINTS of them
    steps = np.ceil(np.arange(1, CDF_POINTS + 1) / CDF_POINTS * n).astype(I64)
    ranks = np.unique(np.concatenate([[1], steps]))
    shortest = np.sort(waits)[ranks - 1]
    return pd.DataFrame({"wait_s": shortest.astype(F64), "cold_starts": ranks,
                         "share": ranks / n}).astype(SCHEMAS["cold_start_cdf"])


def connections_frame(table: ConnectionTable) -> pd.DataFrame:
    """The connections table, straight from its columns."""
    if not len(table):
        return empty_frame(SCHEMAS["connections"])
    columns = table.columns()
    columns["outcome"] = table.outcome_names(columns["outcome"])
    return columns_frame(columns, SCHEMAS["connections"])


def table_frame(table: RowTable, schema: dict[str, Any]) -> pd.DataFrame:
    """A table of the run (intervals, wakes, operations), straight from its columns."""
    return columns_frame(table.columns(), schema) if len(table) else empty_frame(schema)


def columns_frame(columns: dict[str, np.ndarray], schema: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame({name: pd.array(columns[name], dtype=dtype) if dtype is STR
                         else columns[name].astype(dtype, copy=False)
                         for name, dtype in schema.items()}, copy=False)


def empty_frame(schema: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame({name: pd.Series([], dtype=dtype) for name, dtype in schema.items()})


def records_frame(
    rows: Sequence[tuple], fields: Sequence[str], schema: dict[str, Any]
) -> pd.DataFrame:
    """Rows of NamedTuples -> a frame with the schema's columns (absent ones are NaN).

    Built column by column with an explicit dtype: faster than letting pandas
    infer from tuples, and a column of all-None stays a typed column.
    """
    if not rows:
        return empty_frame(schema)
    n = len(rows)
    columns: dict[str, Any] = {}
    for name, dtype in schema.items():
        if name not in fields:
            columns[name] = np.full(n, np.nan)
            continue
        values = map(itemgetter(fields.index(name)), rows)
        if dtype is STR:
            columns[name] = pd.array(list(values), dtype=STR)
        elif dtype == F64:
            # None (e.g. deleted_s of a live compute) becomes NaN
            columns[name] = np.array(list(values), dtype=F64)
        else:
            columns[name] = np.fromiter(values, dtype=dtype, count=n)
    return pd.DataFrame(columns, copy=False)


def computes_frame(
    compute_rows: pd.DataFrame, wakes: pd.DataFrame, result: RunResult
) -> pd.DataFrame:
    """ComputeRow totals plus cost, share of its life spent on, and cold-start waits."""
    df = compute_rows.copy()
    df["cu_hours"] = df["cu_s"] / 3600.0
    df["cost"] = 0.0  # below, once each compute's template is known
    end = df["deleted_s"].fillna(result.duration_s).clip(upper=result.duration_s)
    lifetime = end - df["created_s"].clip(lower=0.0)
    df["active_share"] = (df["active_s"] / lifetime).where(lifetime > 0)
    stats = wake_stats(wakes) if result.wake_waits is None else waits_stats(result.wake_waits)
    for column in ("wake_p50_s", "wake_p99_s", "wake_max_s"):
        df[column] = df["compute_id"].map(stats[column]).astype(F64)
    templates = project_templates(result)
    df["template"] = pd.array([templates.get(p, NO_TEMPLATE) for p in df["project_id"]],
                              dtype=STR)
    df["cost"] = compute_costs(df, result)
    return df.astype(SCHEMAS["computes"])


def compute_costs(computes: pd.DataFrame, result: RunResult) -> np.ndarray:
    """Each compute's share of its project's bill (`sim.rules.pricing`): its billed
    CU-hours (`billed_cu_hours`) at its template's price. A project of no template, or a
    template with no terms of its own, pays the scenario's price for every CU-hour."""
    default = Pricing(result.price_per_cu_hour)
    price = np.array([result.pricing.get(t, default).per_cu_hour
                      for t in computes["template"].tolist()], dtype=np.float64)
    return billed_cu_hours(computes, result) * price


def billed_cu_hours(computes: pd.DataFrame, result: RunResult) -> np.ndarray:
    """Each compute's CU-hours beyond its project's allowance: the project's allowance over
    the run is shared among its computes in proportion to their CU-hours."""
    hours = computes["cu_hours"].to_numpy(dtype=np.float64)
    run_hours = result.duration_s / 3600.0
    included = np.array([result.pricing[t].included_over(run_hours) if t in result.pricing
                         else 0.0 for t in computes["template"].tolist()], dtype=np.float64)
    if not included.any():  # nothing included: every CU-hour is billed
        return hours
    project = computes.groupby("project_id", sort=False)["cu_hours"].transform("sum")
    project_hours = project.to_numpy(dtype=np.float64)
    share = np.divide(np.maximum(0.0, project_hours - included), project_hours,
                      out=np.zeros_like(hours), where=project_hours > 0)
    return hours * share


def included_cu_hours(result: RunResult, template: str, projects: int) -> float:
    """The CU-hours a template's projects have included over the run (0 without terms)."""
    terms = result.pricing.get(template)
    return 0.0 if terms is None else projects * terms.included_over(result.duration_s / 3600.0)


def project_templates(result: RunResult) -> dict[str, str]:
    """Project id -> the template it was made from (`sim.engine.records.template_of`)."""
    return {pid: template_of(key) for pid, (key, _) in result.projects.items()}


def cold_start_waits(wakes: pd.DataFrame) -> pd.DataFrame:
    """Wakes that a caller waited for: every wake except a new compute's first start."""
    return wakes[~wakes["cause"].isin(NOT_COLD)]


def wake_stats(wakes: pd.DataFrame) -> pd.DataFrame:
    """Per compute: median, 99th percentile (linear, as numpy) and max cold-start wait,
    worked out as `waits_stats` works them out for a run that kept no wake rows."""
    waits = cold_start_waits(wakes)
    ids = waits["compute_id"].to_numpy(dtype=object)
    values = waits["wait_s"].to_numpy(dtype=F64)
    order = np.argsort(ids, kind="stable")
    ids, values = ids[order], values[order]
    if not len(ids):
        return waits_stats({})
    cuts = np.flatnonzero(ids[1:] != ids[:-1]) + 1
    firsts = np.concatenate([[0], cuts])
    return waits_stats(dict(zip(ids[firsts].tolist(), np.split(values, cuts), strict=True)))


def waits_stats(waits: dict[str, np.ndarray]) -> pd.DataFrame:
    """`wake_stats` from per-compute arrays of waits (a run that kept no wake rows): each
    compute's p50, p99 and max, as `np.quantile` gives them.

    Computes with as many waits are stacked and partitioned row by row in one call: a
    fleet's computes have a few hundred distinct counts, and numpy's quantile of a row
    is, to the bit, that of the row alone (the same indexes and interpolation)."""
    ids = sorted(k for k, v in waits.items() if len(v))
    by_count: dict[int, list[int]] = {}
    for row, compute_id in enumerate(ids):
        by_count.setdefault(len(waits[compute_id]), []).append(row)
    figures = np.empty((len(ids), 3), dtype=F64)
    for rows in by_count.values():
        block = np.stack([waits[ids[row]] for row in rows])  # a copy: ours to reorder
        figures[rows] = quantiles_in_place(block, [0.5, 0.99, 1.0]).T
    return pd.DataFrame(figures, index=pd.Index(ids, name="compute_id"),
                        columns=["wake_p50_s", "wake_p99_s", "wake_max_s"], dtype=F64)


def start_timestamp(start_iso: str) -> pd.Timestamp:
    """The scenario's start instant as a UTC timestamp (a naive one is taken as UTC)."""
    start = pd.Timestamp(start_iso)
    return start.tz_localize("UTC") if start.tzinfo is None else start.tz_convert("UTC")


def fleet_frame(intervals: pd.DataFrame, duration_s: float, start_iso: str,
                seconds: tuple[np.ndarray, np.ndarray] | None = None) -> pd.DataFrame:
    """Per-minute fleet series over [0, duration_s); the last minute may be partial.

    `seconds`: the engine's own per-minute sums, for a run that kept no interval rows."""
    n_minutes = math.ceil(duration_s / MINUTE_S) if duration_s > 0 else 0
    if n_minutes == 0:
        return empty_frame(SCHEMAS["fleet"])
    if seconds is not None:
        computes_s, cu_s = seconds
    else:
        start, end, cu = on_intervals(intervals, duration_s)
        computes_s, cu_s = per_minute_integrals(start, end, [np.ones_like(cu), cu], duration_s)
    minute = np.arange(n_minutes, dtype=I64)
    # seconds of each minute inside the run: 60, except perhaps the last
    length = np.minimum(MINUTE_S, duration_s - minute * MINUTE_S)
    time = start_timestamp(start_iso) + pd.to_timedelta(minute * 60, unit="s")
    fleet = pd.DataFrame(
        {
            "minute": minute,
            "time": time,
            "active_computes": computes_s / length,
            "total_cu": cu_s / length,
            "cu_seconds": cu_s,
        }
    )
    return fleet.astype(SCHEMAS["fleet"])


def on_intervals(
    intervals: pd.DataFrame, duration_s: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Start, end and CU of the intervals in which a compute is on, clipped to [0, duration_s).

    Intervals that lie wholly outside the run are dropped.
    """
    on = intervals["state"].isin(ON_STATES).to_numpy(dtype=bool)
    start = np.clip(intervals["start_s"].to_numpy(dtype=F64)[on], 0.0, duration_s)
    end = np.clip(intervals["end_s"].to_numpy(dtype=F64)[on], 0.0, duration_s)
    keep = end > start
    return start[keep], end[keep], intervals["cu"].to_numpy(dtype=F64)[on][keep]



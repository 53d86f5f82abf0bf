"""Fleet totals of a run: one dict of plain numbers (and, under `templates`, the same
figures per template: `sim.metrics.templates`), and a table for humans.

Counts of connections come from the per-compute totals (`computes`), which
stay complete when the engine records only a sample of connections. The dict
holds only JSON types (int, float, str, None for "no data"), so it can be
written as is.
"""

from __future__ import annotations

import io
import math
from collections import Counter
from collections.abc import Collection
from typing import Any

import numpy as np
import pandas as pd
from rich import box
from rich.console import Console
from rich.table import Table

from sim.engine.cu_steps import NO_STEPS, joined, peak_cu, steps_of
from sim.engine.records import RunResult, template_of
from sim.metrics.frames import (
    ATTEMPT_OUTCOMES,
    billed_cu_hours,
    cold_start_waits,
    fleet_seconds,
    included_cu_hours,
    on_intervals,
    start_timestamp,
)
from sim.metrics.quantiles import quantiles_in_place
from sim.rules.states import OperationStatus
from sim.scenario.durations import readable_duration as format_duration

#: computes-frame columns summed into the summary under the same (or a clearer) name
TOTALS = {
    "sessions": "sessions",
    "refused": "refused",
    "refused_pooler_full": "refused_pooler_full",
    "refused_disabled": "refused_disabled",
    "queued": "queued",
    "queue_timeouts": "queue_timeouts",
    "disk_full": "disk_full_53100",
    "dropped": "dropped",
    "cold_starts": "cold_starts",
    "suspends": "suspends",
    "restarts": "restarts",
}


#: the fleet's cold-start wait p50, p99 and max (None for a run without cold starts)
WakeFigures = list[float | None]


def summary(frames: dict[str, pd.DataFrame], result: RunResult, *,
            wakes: WakeFigures | None = None) -> dict[str, Any]:
    """The run's totals. `wakes`: `wake_figures(frames, result)` when already computed."""
    computes = frames["computes"]
    operations = frames["operations"]
    out: dict[str, Any] = {
        "name": result.name,
        "seed": int(result.seed),
        "start": start_timestamp(result.start_iso).isoformat(),
        "duration_s": float(result.duration_s),
        "warm_up_s": float(result.warm_up_s),
        "price_per_cu_hour": float(result.price_per_cu_hour),
        "computes": int(len(computes)),
        "projects": _project_count(computes, operations, result),
        "cu_hours": float(computes["cu_hours"].sum()),
        "cost": float(computes["cost"].sum()),
        "included_cu_hours": _included(result),
        "billed_cu_hours": float(billed_cu_hours(computes, result).sum()),
    }
    for column, key in TOTALS.items():
        out[key] = int(computes[column].sum())
    out.update(connection_rates(out))
    p50, p99, top = wake_figures(frames, result) if wakes is None else wakes
    out["wake_p50_s"], out["wake_p99_s"], out["wake_max_s"] = p50, p99, top
    out.update(_fleet_stats(frames["fleet"], frames["intervals"], result))
    out.update(_operation_stats(frames["operations_per_hour"]))
    actions = frames["actions"]
    out["scripted_actions"] = int(len(actions))
    out["scripted_actions_failed"] = int((actions["status"] >= 400).sum())
    out["templates"] = _templates(frames, result)
    return out


def _included(result: RunResult) -> float:
    """The CU-hours the fleet's projects had included by their templates' plans."""
    projects = Counter(template_of(key) for key, _ in result.projects.values())
    return float(sum(included_cu_hours(result, name, n) for name, n in projects.items()))


def _templates(frames: dict[str, pd.DataFrame], result: RunResult) -> list[dict[str, Any]]:
    from sim.metrics.templates import template_figures  # it builds on this module

    return template_figures(frames, result)


def connection_rates(counts: dict[str, Any]) -> dict[str, Any]:
    """Attempts, the refused share and cold starts per 1,000 sessions from the counts
    (`TOTALS`) of the fleet or of one template."""
    # every connection a client tried: it began a session, was refused (for one of three
    # causes), timed out in the pool queue or failed with 53100
    attempts = int(sum(counts[TOTALS[column]] for column in ATTEMPT_OUTCOMES))
    per_session = _ratio(counts["cold_starts"], counts["sessions"])
    return {"connection_attempts": attempts,
            "refused_share": _ratio(counts["refused"], attempts),
            "cold_starts_per_1000_sessions": None if per_session is None else 1000 * per_session}


def wake_figures(frames: dict[str, pd.DataFrame] | None, result: RunResult) -> WakeFigures:
    """The fleet's cold-start wait p50, p99 and max. A run that kept no wake rows has its
    waits in `result.wake_waits` and needs no frame (`frames` may be None)."""
    if result.wake_waits is None:
        assert frames is not None, "a run that kept its wake rows has its waits in the frame"
        waits = cold_start_waits(frames["wakes"])["wait_s"].to_numpy(dtype=float, copy=True)
    else:
        waits = np.concatenate([np.empty(0), *result.wake_waits.values()])
    # (maybe tens of millions of) waits, ours to reorder: partitioned around one rank at a time
    return quantiles_in_place(waits, [0.5, 0.99, 1.0]).tolist() if len(waits) else [None] * 3


def _ratio(numerator: float, denominator: float) -> float | None:
    return float(numerator / denominator) if denominator else None


def _max(series: pd.Series) -> float | None:
    return float(series.max()) if len(series) else None


def _p99(series: pd.Series) -> float | None:
    return float(np.quantile(series.to_numpy(dtype=float), 0.99)) if len(series) else None


def _minute_figures(fleet: pd.DataFrame) -> dict[str, Any]:
    """Peak and p99 of the minute means: a peak that lasts a minute, and the level that
    only 1 % of the minutes exceed."""
    return {
        "peak_active_computes_minute": _max(fleet["active_computes"]),
        "p99_active_computes_minute": _p99(fleet["active_computes"]),
        "peak_total_cu_minute": _max(fleet["total_cu"]),
        "p99_total_cu_minute": _p99(fleet["total_cu"]),
    }


def _project_count(computes: pd.DataFrame, operations: pd.DataFrame, result: RunResult) -> int:
    """Projects of the run: those it lists, and any a compute or an operation names."""
    ids = pd.concat([computes["project_id"], operations["project_id"],
                     pd.Series(list(result.projects), dtype=computes["project_id"].dtype)])
    return int(ids.nunique())


def _fleet_stats(fleet: pd.DataFrame, intervals: pd.DataFrame, result: RunResult
                 ) -> dict[str, Any]:
    """Computes on and CU from the per-minute integer sums, and the most computes on at one
    instant from the on-spans: the same figures whether the interval rows were kept or not."""
    duration_s = result.duration_s
    has_time = duration_s > 0
    seconds = fleet_seconds(intervals, result)
    if seconds is not None:
        on_s, cu_s = float(seconds[0].sum()), float(seconds[1].sum())
        start, end = on_spans(intervals, result)
    else:  # hand-made intervals of other CU levels
        start, end, cu = on_intervals(intervals, duration_s)
        on_s, cu_s = float((end - start).sum()), float((cu * (end - start)).sum())
    return {
        "peak_active_computes": peak_concurrent(start, end),
        "peak_total_cu": peak_total_cu(intervals, result),
        "mean_active_computes": on_s / duration_s if has_time else None,
        "mean_total_cu": cu_s / duration_s if has_time else None,
    } | _minute_figures(fleet)


def peak_total_cu(intervals: pd.DataFrame, result: RunResult,
                  projects: Collection[str] | None = None, template: str | None = None
                  ) -> float | None:
    """The most CU in use at one instant, from the interval rows or, when the run kept none,
    from its CU steps (`sim.engine.cu_steps`); `projects`/`template`: only those computes.
    None for hand-made intervals of CU levels that are not multiples of 0.25."""
    if result.cu_steps is not None:
        chosen = (result.cu_steps.values() if template is None
                  else [result.cu_steps.get(template, NO_STEPS)])
        return peak_cu(joined(chosen))
    if projects is not None:
        intervals = intervals[intervals["project_id"].isin(list(projects))]
    try:
        return peak_cu(steps_of(*on_intervals(intervals, result.duration_s)))
    except ValueError:
        return None


def on_spans(intervals: pd.DataFrame, result: RunResult,
             projects: Collection[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Start and end of the spans in which a compute was on, within [0, duration): from the
    interval rows, or from the run's own spans when it kept none. `projects`: only the
    computes of these projects (say, of one template)."""
    if result.on_spans is None:
        if projects is not None:
            intervals = intervals[intervals["project_id"].isin(list(projects))]
        start, end, _ = on_intervals(intervals, result.duration_s)
        return start, end
    wanted = None if projects is None else set(projects)
    chosen = [spans for p, spans in result.on_spans.items() if wanted is None or p in wanted]
    start = np.clip(np.concatenate([np.empty(0), *(s for s, _ in chosen)]),
                    0.0, result.duration_s)
    end = np.clip(np.concatenate([np.empty(0), *(e for _, e in chosen)]),
                  0.0, result.duration_s)
    keep = end > start
    return start[keep], end[keep]


def peak_concurrent(start: np.ndarray, end: np.ndarray) -> int:
    """Most intervals [start, end) open at one instant; one ending where another starts
    does not overlap it. The count only rises at a start, so it is enough to look there."""
    if len(start) == 0:
        return 0
    starts = np.sort(start)
    ends = np.sort(end)
    open_at = np.searchsorted(starts, starts, "right") - np.searchsorted(ends, starts, "right")
    return int(open_at.max())


def _operation_stats(per_hour: pd.DataFrame) -> dict[str, Any]:
    """Operations by action and status, from the counts every run keeps."""
    counts = per_hour.groupby(["action", "status"], sort=True)["operations"].sum()
    by_action: dict[str, dict[str, int]] = {}
    for (action, status), n in counts.items():
        by_action.setdefault(str(action), {})[str(status)] = int(n)
    failed = per_hour["status"] == OperationStatus.FAILED.value
    return {
        "operations": int(per_hour["operations"].sum()),
        "operations_failed": int(per_hour["operations"][failed].sum()),
        "failed_operation_attempts": int(per_hour["failed_attempts"].sum()),
        "operations_by_action": by_action,
    }


# --- the table -------------------------------------------------------------------------

_ROWS: list[tuple[str, list[tuple[str, str, str]]]] = [
    # section, [(label, key, format)]
    (
        "Run",
        [
            ("scenario", "name", "text"),
            ("seed", "seed", "text"),
            ("start", "start", "text"),
            ("duration", "duration_s", "duration"),
            ("warm-up before start (in no figure)", "warm_up_s", "duration"),
        ],
    ),
    (
        "Fleet",
        [
            ("projects", "projects", "int"),
            ("computes", "computes", "int"),
            ("peak active computes", "peak_active_computes", "int"),
            ("peak active computes (minute mean)", "peak_active_computes_minute", "num"),
            ("mean active computes", "mean_active_computes", "num"),
            ("p99 active computes (minute mean)", "p99_active_computes_minute", "num"),
            ("peak total CU (one instant)", "peak_total_cu", "num"),
            ("peak total CU (minute mean)", "peak_total_cu_minute", "num"),
            ("p99 total CU (minute mean)", "p99_total_cu_minute", "num"),
            ("mean total CU", "mean_total_cu", "num"),
            ("CU-hours", "cu_hours", "num"),
            # shown when a template has an allowance (`pricing:`)
            ("included CU-hours (plans' allowances)", "included_cu_hours", "num"),
            ("billed CU-hours (beyond them)", "billed_cu_hours", "num"),
            ("price per CU-hour", "price_per_cu_hour", "num"),
            # in no currency: the scenario's price per CU-hour, over the simulated period
            ("cost (CU-hours x price)", "cost", "money"),
        ],
    ),
    (
        "Connections",
        [
            ("attempts", "connection_attempts", "int"),
            ("sessions", "sessions", "int"),
            ("refused (53300)", "refused", "int"),
            ("refused share (53300 of the attempts)", "refused_share", "pct"),
            ("refused (pooler full)", "refused_pooler_full", "int"),
            ("refused (disabled or deleted)", "refused_disabled", "int"),
            ("queued (pooler)", "queued", "int"),
            ("queue timeouts", "queue_timeouts", "int"),
            ("failed 53100 (disk full)", "disk_full_53100", "int"),
            ("dropped", "dropped", "int"),
        ],
    ),
    (
        "Scale to zero",
        [
            ("cold starts", "cold_starts", "int"),
            ("cold starts per 1,000 sessions", "cold_starts_per_1000_sessions", "num"),
            ("cold-start wait p50", "wake_p50_s", "seconds"),
            ("cold-start wait p99", "wake_p99_s", "seconds"),
            ("cold-start wait max", "wake_max_s", "seconds"),
            ("suspends", "suspends", "int"),
            ("restarts", "restarts", "int"),
        ],
    ),
    (
        "Operations",
        [
            ("operations", "operations", "int"),
            ("ended failed", "operations_failed", "int"),
            ("failed attempts (retried)", "failed_operation_attempts", "int"),
        ],
    ),
    (
        "Scripted API calls",
        [
            ("calls", "scripted_actions", "int"),
            ("answered with an error", "scripted_actions_failed", "int"),
        ],
    ),
]


def priced(summary: dict[str, Any] | Any) -> bool:
    """Whether a template's compute terms differ from the scenario's price alone: one with
    a price of its own or an allowance (`pricing:`)."""
    price = summary.get("price_per_cu_hour")
    return any(t.get("price_per_cu_hour", price) != price or t.get("included_cu_hours")
               for t in summary.get("templates") or [])


def shown_rows(summary: dict[str, Any], rows: list[tuple[str, str, str]]
               ) -> list[tuple[str, str, str]]:
    """A section's rows as this summary shows them: the allowances only when a plan
    includes some, the price and cost named for what they are when templates have compute
    terms of their own."""
    out = []
    for label, key, kind in rows:
        if key in ("included_cu_hours", "billed_cu_hours") and not summary.get(
                "included_cu_hours"):
            continue  # no plan includes any: every CU-hour is billed
        if key == "price_per_cu_hour" and priced(summary):
            label += " (default)"  # of templates without terms of their own
        if key == "cost" and priced(summary):
            label = "cost (the templates' bills)"
        out.append((label, key, kind))
    return out


def summary_table(summary: dict[str, Any], width: int = 72) -> str:
    """The summary as a plain-text table (no colour codes), one section per topic."""
    table = Table(box=box.SIMPLE_HEAD, show_header=True, pad_edge=False)
    table.add_column("metric")
    table.add_column("value", justify="right")
    for section, rows in _ROWS:
        table.add_section()
        table.add_row(section.upper(), "")
        for label, key, kind in shown_rows(summary, rows):
            table.add_row("  " + label, format_value(summary.get(key), kind))
        if section == "Operations":
            for action, statuses in sorted(summary.get("operations_by_action", {}).items()):
                detail = ", ".join(f"{s} {n:,}" for s, n in sorted(statuses.items()))
                table.add_row(f"    {action}", detail)
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=width,
        color_system=None,
        force_terminal=False,
        force_jupyter=False,
        no_color=True,
        highlight=False,
        emoji=False,
    )
    console.print(table)
    lines = [line.rstrip() for line in buffer.getvalue().splitlines()]
    return "\n".join(lines).strip("\n") + "\n" + _templates_table(summary, width)


def _templates_table(summary: dict[str, Any], width: int) -> str:
    from sim.metrics.templates import template_table  # it builds on this module

    text = template_table(summary, width)
    return "\n" + text if text else ""


def format_value(value: Any, kind: str = "num") -> str:
    """A number as people read it: thousands separators, about three significant digits."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if kind == "text":
        return str(value)
    if kind == "int":
        return f"{int(value):,}"
    if kind == "pct":
        return f"{format_number(100 * value)} %"
    if kind == "money":
        return f"{value:,.2f}"
    if kind == "seconds":
        return f"{format_number(value)} s"
    if kind == "duration":
        return format_duration(value)
    return format_number(value)


def format_number(x: float) -> str:
    """3 significant digits below 1,000; whole numbers with separators above."""
    if x == 0:
        return "0"
    magnitude = abs(x)
    if magnitude >= 1000:
        return f"{x:,.0f}"
    decimals = max(0, 2 - math.floor(math.log10(magnitude)))
    return f"{x:,.{decimals}f}"


def summary_sections(summary: dict[str, Any]) -> list[tuple[str, list[tuple[str, str]]]]:
    """The rows of `summary_table` as data: [(section, [(label, formatted value)])].

    For other renderings of the same table (the HTML report); operations by
    action come last in their section, as "action" -> "status n, status n".
    """
    out = []
    for section, rows in _ROWS:
        cells = [(label, format_value(summary.get(key), kind))
                 for label, key, kind in shown_rows(summary, rows)]
        if section == "Operations":
            for action, statuses in sorted(summary.get("operations_by_action", {}).items()):
                cells.append((action, ", ".join(f"{s} {n:,}" for s, n in sorted(statuses.items()))))
        out.append((section, cells))
    return out

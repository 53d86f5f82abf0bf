"""Figures per template: a planner's fleet is a few kinds of tenant, each sized on its own.

A scenario's projects are made from templates (`projects[].name` with `count`);
each of the run's projects and computes belongs to the template it was made
from (`template` in the computes table; projects created by scripted API
calls to none, `NO_TEMPLATE`). Every figure here is counted from what a run
keeps whatever it records: the per-compute totals, the cold-start and queue
waits of every connection, and the per-minute sums of time on. So the figures
do not change with `record_connections` or `record_events`, and the counts
(projects, computes, CU-hours, cost, sessions, cold starts...) add up to the
fleet's.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from rich import box
from rich.console import Console
from rich.table import Table

from sim.engine.minutes import MINUTE_S, NS, per_minute_ns
from sim.engine.records import NO_TEMPLATE, QueueWaits, RunResult, template_of
from sim.metrics.frames import (
    billed_cu_hours,
    cold_start_waits,
    included_cu_hours,
    on_intervals,
    project_templates,
)
from sim.metrics.quantiles import quantiles_in_place
from sim.metrics.summary import TOTALS, connection_rates, format_value, peak_total_cu, priced
from sim.rules.pricing import Pricing

QUANTILE = 0.99


def template_names(result: RunResult, computes: pd.DataFrame) -> list[str]:
    """The run's templates in scenario order (projects are kept in instance order), then
    the projects of no template, when there are any."""
    names = dict.fromkeys(template_of(key) for key, _ in result.projects.values())
    names.update(dict.fromkeys(computes["template"].dropna().tolist()))
    if NO_TEMPLATE in names:  # last, wherever its first project was
        del names[NO_TEMPLATE]
        names[NO_TEMPLATE] = None
    return list(names)


def template_figures(frames: Mapping[str, pd.DataFrame], result: RunResult
                     ) -> list[dict[str, Any]]:
    """Per template, in scenario order: its figures as plain JSON numbers (None: nothing to
    measure). `docs/results.md` says what each counts."""
    computes = frames["computes"]
    names = template_names(result, computes)
    projects = pd.Series([template_of(key) for key, _ in result.projects.values()],
                         dtype=object).value_counts()
    by_template = dict(tuple(computes.groupby("template", sort=False)))
    wakes = _wake_waits(frames, result)
    on_s = _seconds_on(frames, result, names)
    billed = pd.Series(billed_cu_hours(computes, result), index=computes.index)
    of_template: dict[str, list[str]] = {}
    for pid, template in _templates_of_projects(result, computes).items():
        of_template.setdefault(template, []).append(pid)
    out = []
    for name in names:
        group = by_template.get(name, computes.iloc[:0])
        row: dict[str, Any] = {
            "template": name,
            "projects": int(projects.get(name, 0)) if len(result.projects)
            else int(group["project_id"].nunique()),
            "computes": int(len(group)),
            "cu_hours": float(group["cu_hours"].sum()),
            "cost": float(group["cost"].sum()),
        }
        row.update(_terms(result, name, row["projects"], float(billed[group.index].sum())))
        for column, key in TOTALS.items():  # the fleet's counts, per template
            row[key] = int(group[column].sum())
        row.update(connection_rates(row))
        ids = group["compute_id"].tolist()
        waits = [wakes[i] for i in ids if i in wakes]
        row["wake_p99_s"] = _p99(np.concatenate(waits)) if waits else None
        row["queue_wait_p99_s"] = queue_p99([result.queue_waits[i] for i in ids
                                             if i in result.queue_waits])
        row.update(_computes_on(on_s.get(name), result.duration_s))
        row["peak_total_cu"] = peak_total_cu(frames["intervals"], result,
                                             projects=of_template.get(name, ()), template=name)
        out.append(row)
    return out


def _templates_of_projects(result: RunResult, computes: pd.DataFrame) -> dict[str, str]:
    """Project id -> its template, for the run's projects and those of the computes."""
    templates = project_templates(result)
    templates.update({p: t for p, t in zip(computes["project_id"], computes["template"],
                                           strict=True) if p not in templates})
    return templates


def _terms(result: RunResult, name: str, projects: int, billed: float) -> dict[str, float]:
    """A template's price per CU-hour, the CU-hours its projects had included over the run,
    and those billed beyond (`sim.rules.pricing`)."""
    terms = result.pricing.get(name, Pricing(result.price_per_cu_hour))
    return {"price_per_cu_hour": terms.per_cu_hour,
            "included_cu_hours": included_cu_hours(result, name, projects),
            "billed_cu_hours": billed}


def _p99(values: np.ndarray) -> float | None:
    return float(quantiles_in_place(values, [QUANTILE])[0]) if len(values) else None


def _wake_waits(frames: Mapping[str, pd.DataFrame], result: RunResult
                ) -> dict[str, np.ndarray]:
    """Each compute's cold-start waits, from the rows or (none kept) from the run."""
    if result.wake_waits is not None:
        return result.wake_waits
    waits = cold_start_waits(frames["wakes"])
    return {str(k): g.to_numpy(dtype=np.float64)
            for k, g in waits.groupby("compute_id", sort=False)["wait_s"]}


def queue_p99(waits: list[QueueWaits]) -> float | None:
    """The 99th percentile (numpy's linear one) of every wait in `waits`, the zeros kept
    as a count (a busy fleet has tens of millions)."""
    zeros = sum(w.zeros for w in waits)
    positive = np.concatenate([w.positive() for w in waits]) if waits else np.empty(0)
    n = zeros + len(positive)
    if n == 0:
        return None
    virtual = (n - 1) * np.float64(QUANTILE)
    below = math.floor(virtual)
    ranks = (below, min(below + 1, n - 1))
    wanted = sorted({r - zeros for r in ranks if r >= zeros})
    if wanted:
        positive.partition(wanted)
    low, high = (0.0 if r < zeros else float(positive[r - zeros]) for r in ranks)
    return float(np.quantile(np.array([low, high]), float(virtual - below)))


def _seconds_on(frames: Mapping[str, pd.DataFrame], result: RunResult, names: list[str]
                ) -> dict[str, np.ndarray]:
    """Per template, per minute: compute-seconds on. From the run's own sums when it kept
    no interval rows, else from the rows, in the same integer nanoseconds either way."""
    if result.template_on_ns is not None:
        return {name: on / NS for name, on in result.template_on_ns.items()}
    intervals = frames["intervals"]
    templates = project_templates(result)
    computes = frames["computes"]
    templates.update({p: t for p, t in zip(computes["project_id"], computes["template"],
                                           strict=True) if p not in templates})
    out = {}
    of_row = np.array([templates.get(p, NO_TEMPLATE) for p in intervals["project_id"]],
                      dtype=object)
    for name in names:
        mine = intervals[of_row == name]
        start, end, _ = on_intervals(mine, result.duration_s)
        on, _ = per_minute_ns(start, end, np.ones(len(start)), result.duration_s)
        out[name] = on / NS
    return out


def _computes_on(seconds: np.ndarray | None, duration_s: float) -> dict[str, float | None]:
    """Mean computes on over the run, and the peak of the per-minute means."""
    if duration_s <= 0:
        return {"mean_active_computes": None, "peak_active_computes_minute": None,
                "p99_active_computes_minute": None}
    n_minutes = math.ceil(duration_s / MINUTE_S)
    if seconds is None:
        seconds = np.zeros(n_minutes)
    length = np.minimum(MINUTE_S, duration_s - np.arange(len(seconds)) * MINUTE_S)
    means = seconds / length
    return {"mean_active_computes": float(seconds.sum() / duration_s),
            "peak_active_computes_minute": float(means.max()),
            "p99_active_computes_minute": float(np.quantile(means, 0.99))}


#: the per-template table: (label, key, format of `sim.metrics.summary.format_value`)
TEMPLATE_ROWS: list[tuple[str, str, str]] = [
    ("projects", "projects", "int"),
    ("computes", "computes", "int"),
    ("mean computes on", "mean_active_computes", "num"),
    ("peak computes on (minute mean)", "peak_active_computes_minute", "num"),
    ("p99 computes on (minute mean)", "p99_active_computes_minute", "num"),
    ("peak CU (one instant)", "peak_total_cu", "num"),
    ("CU-hours", "cu_hours", "num"),
    ("cost (CU-hours x price)", "cost", "money"),
    # shown when a template has compute terms of its own (`pricing:`; `priced`)
    ("price per CU-hour", "price_per_cu_hour", "num"),
    ("included CU-hours (allowance)", "included_cu_hours", "num"),
    ("billed CU-hours (beyond it)", "billed_cu_hours", "num"),
    ("sessions", "sessions", "int"),
    ("cold starts", "cold_starts", "int"),
    ("cold starts per 1,000 sessions", "cold_starts_per_1000_sessions", "num"),
    ("cold-start wait p99", "wake_p99_s", "seconds"),
    ("refused share", "refused_share", "pct"),
    ("queue wait p99 (pooled)", "queue_wait_p99_s", "seconds"),
]


def template_cells(summary: Mapping[str, Any]) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """The per-template table as text: (template names, [(label, one cell per template)])."""
    rows = summary.get("templates") or []
    names = [str(r["template"]) for r in rows]
    shown = [row for row in TEMPLATE_ROWS if row[1] not in PRICING_KEYS or priced(summary)]
    if priced(summary):  # each template's bill: billed CU-hours at its price
        shown = [("cost (billed CU-hours x price)", key, kind) if key == "cost"
                 else (label, key, kind) for label, key, kind in shown]
    return names, [(label, [format_value(r.get(key), kind) for r in rows])
                   for label, key, kind in shown]


#: the rows of a template's compute terms, shown only when one has terms of its own
PRICING_KEYS = ("price_per_cu_hour", "included_cu_hours", "billed_cu_hours")


def template_table(summary: Mapping[str, Any], width: int = 72) -> str:
    """The per-template figures as a plain-text table, one column per template ("" for a
    summary without them)."""
    names, rows = template_cells(summary)
    if not names:
        return ""
    table = Table(box=box.SIMPLE_HEAD, show_header=True, pad_edge=False)
    table.add_column("PER TEMPLATE")
    for name in names:
        table.add_column(name, justify="right")
    for label, cells in rows:
        table.add_row("  " + label, *cells)
    needed = 36 + sum(max(len(name), 12) + 1 for name in names)
    buffer = io.StringIO()
    Console(file=buffer, width=max(width, needed), color_system=None, force_terminal=False,
            force_jupyter=False, no_color=True, highlight=False, emoji=False).print(table)
    lines = [line.rstrip() for line in buffer.getvalue().splitlines()]
    return "\n".join(lines).strip("\n") + "\n"

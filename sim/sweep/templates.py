"""Per-template figures of a sweep: one row per run and template, one per point and template.

A run's figures (`sim.sweep.run_point`) hold, under `TEMPLATES`, the summary's
per-template figures (`sim.metrics.templates`); these tables lay them out as
the sweep's `runs` and `points` lay out the fleet's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from sim.sweep import Setting, _column, label, point_row

#: the per-template figures kept per run (`sim.metrics.templates`), and their dtype
TEMPLATE_FIGURES: dict[str, str] = {
    "projects": "int64",
    "computes": "int64",
    "cu_hours": "float64",
    "cost": "float64",
    "billed_cu_hours": "float64",  # beyond the plan's allowance
    "mean_active_computes": "float64",
    "peak_active_computes_minute": "float64",
    "p99_active_computes_minute": "float64",
    "peak_total_cu": "float64",  # at one instant
    "sessions": "int64",
    "cold_starts": "int64",
    "cold_starts_per_1000_sessions": "float64",
    "wake_p99_s": "float64",
    "refused_share": "float64",
    "queue_wait_p99_s": "float64",
}
#: where a run's figures hold its per-template figures
TEMPLATES = "templates"


def template_runs_frame(settings: Sequence[Setting], points: Sequence[Mapping[str, Any]],
                        jobs: Sequence[tuple[int, int, int]],
                        figures: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per run and template: the run's columns of `runs_frame`, the template and
    its figures (`TEMPLATE_FIGURES`; NaN where the template had nothing to measure)."""
    rows = [(job, t) for job, f in zip(jobs, figures, strict=True) for t in f.get(TEMPLATES, [])]
    columns: dict[str, Any] = {"point": pd.Series([i for (i, _, _), _ in rows], dtype="int64")}
    for s in settings:
        columns[s.path] = _column([points[i][s.path] for (i, _, _), _ in rows])
    columns["label"] = pd.Series([label(points[i], settings) for (i, _, _), _ in rows],
                                 dtype="string")
    columns["replication"] = pd.Series([r for (_, r, _), _ in rows], dtype="int64")
    columns["seed"] = pd.Series([seed for (_, _, seed), _ in rows], dtype="int64")
    columns["template"] = pd.Series([t["template"] for _, t in rows], dtype="string")
    for key, dtype in TEMPLATE_FIGURES.items():
        values = [np.nan if t.get(key) is None else t[key] for _, t in rows]
        # a count is never missing; a ratio or a percentile may be
        columns[key] = pd.Series(values, dtype=dtype if dtype != "int64" or
                                 not any(np.isnan(v) for v in values) else "float64")
    return pd.DataFrame(columns)


def template_points_frame(runs: pd.DataFrame, settings: Sequence[Setting]) -> pd.DataFrame:
    """Per grid point and template (in the scenario's order): its values, label,
    replications, and mean / ci_low / ci_high per figure."""
    keep = ["point", *(s.path for s in settings), "label", "template"]
    order = {name: i for i, name in enumerate(dict.fromkeys(runs["template"].tolist()))}
    rows = []
    for _, group in runs.groupby(["point", "template"], sort=False):
        rows.append(point_row(group, keep, TEMPLATE_FIGURES))
    rows.sort(key=lambda r: (r["point"], order[r["template"]]))
    out = pd.DataFrame(rows, columns=[*keep, "replications",
                                      *(f"{key}_{part}" for key in TEMPLATE_FIGURES
                                        for part in ("mean", "ci_low", "ci_high"))])
    for column in keep:
        out[column] = out[column].astype(runs[column].dtype)
    out["replications"] = out["replications"].astype("int64")
    return out


#: the columns of the printed per-template table, as `sim.sweep._TABLE`
TEMPLATE_TABLE = [("cost", "cost", "money"), ("CU-hours", "cu_hours", "num"),
                  ("cold starts/1k", "cold_starts_per_1000_sessions", "num"),
                  ("wake p99", "wake_p99_s", "seconds"), ("refused", "refused_share", "pct"),
                  ("queue p99", "queue_wait_p99_s", "seconds"),
                  ("computes on", "mean_active_computes", "num")]

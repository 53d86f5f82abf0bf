"""Charts of a sweep: one point per grid setting, with 95% confidence intervals as error bars.

Built as `matplotlib.figure.Figure` objects without pyplot, like `sim.metrics.charts`.
`points` is the per-point table of `sim.sweep` (columns `<figure>_mean`,
`<figure>_ci_low`, `<figure>_ci_high`); `settings` are its swept paths.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.figure import Figure

from sim.metrics.charts import _figure, _no_data, save


def draw_sweep_charts(points: pd.DataFrame, settings: Sequence[Any], name: str,
                      out_dir: str | Path, template_points: pd.DataFrame | None = None
                      ) -> list[Path]:
    """cost_vs_cold_starts.png always; cost_vs_cold_starts_by_template.png with the
    per-template points; sizing.png when a size (cu, max_cu, min_cu) is swept."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [save(cost_cold_starts_chart(points, settings, name), out / "cost_vs_cold_starts.png")]
    if template_points is not None and len(template_points):
        paths.append(save(template_cost_cold_starts_chart(template_points, settings, name),
                          out / "cost_vs_cold_starts_by_template.png"))
    if any(s.is_size for s in settings):
        paths.append(save(sizing_chart(points, settings, name), out / "sizing.png"))
    return paths


def value_text(setting: Any, value: Any) -> str:
    """A swept value as a planner reads it (timeouts: 0 is the default, -1 never)."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "null"
    if setting.name == "suspend_timeout_seconds":
        seconds = int(value)
        if seconds == -1:
            return "never"
        if seconds == 0:
            return "default (5 min)"
        return f"{seconds // 60} min" if seconds % 60 == 0 else f"{seconds} s"
    if setting.is_size:
        return f"{float(value):g} CU"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _series(points: pd.DataFrame, settings: Sequence[Any], primary: Any
            ) -> list[tuple[str, pd.DataFrame]]:
    """Points grouped by the values of the settings other than `primary`, in grid order."""
    others = [s for s in settings if s is not primary]
    if not others:
        return [("", points)]
    out: dict[tuple, list[int]] = {}
    columns = [points[s.path].tolist() for s in others]
    for i, key in enumerate(zip(*columns, strict=True)):
        out.setdefault(key, []).append(i)
    return [
        (", ".join(f"{s.name}={value_text(s, v)}" for s, v in zip(others, key, strict=True)),
         points.iloc[rows])
        for key, rows in out.items()
    ]


def _errors(df: pd.DataFrame, figure: str, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Mean and the asymmetric error-bar extents; no bar where the CI is undefined (R = 1)."""
    mean = df[f"{figure}_mean"].to_numpy(dtype=float) * scale
    low = df[f"{figure}_ci_low"].to_numpy(dtype=float) * scale
    high = df[f"{figure}_ci_high"].to_numpy(dtype=float) * scale
    err = np.vstack([np.nan_to_num(mean - low), np.nan_to_num(high - mean)])
    return mean, np.clip(err, 0.0, None)


def _runs_note(points: pd.DataFrame) -> str:
    reps = int(points["replications"].min()) if len(points) else 0
    return "1 run per point, no CI" if reps < 2 else f"mean ± 95% CI of {reps} runs per point"


def cost_cold_starts_chart(points: pd.DataFrame, settings: Sequence[Any], name: str) -> Figure:
    """Cost against cold starts per 1,000 sessions, one point per setting of the first path."""
    fig, axes = _figure()
    ax = axes[0, 0]
    primary = settings[0]
    ax.set_title(f"Cost against cold starts — {name}: {primary.name} swept "
                 f"({_runs_note(points)})", fontsize=14)
    _cost_cold_starts_panel(ax, points, settings)
    return fig


def template_cost_cold_starts_chart(points: pd.DataFrame, settings: Sequence[Any],
                                    name: str) -> Figure:
    """`cost_cold_starts_chart` for each template on its own panel (its own scales: a tier
    of hobby projects and one of busy ones differ by orders of magnitude)."""
    templates = list(dict.fromkeys(points["template"].tolist()))
    ncols = min(len(templates), 3)
    nrows = -(-len(templates) // ncols)
    fig, axes = _figure(nrows, ncols)
    fig.set_size_inches(12.0, max(6.0, 4.5 * nrows))
    primary = settings[0]
    fig.suptitle(f"Cost against cold starts per template — {name}: {primary.name} swept "
                 f"({_runs_note(points)})", fontsize=14)
    for n, template in enumerate(templates):
        ax = axes[n // ncols, n % ncols]
        ax.set_title(template, fontsize=13)
        mine = points[points["template"] == template].reset_index(drop=True)
        _cost_cold_starts_panel(ax, mine, settings, compact=True)
    for n in range(len(templates), nrows * ncols):
        axes[n // ncols, n % ncols].set_visible(False)
    return fig


def _cost_cold_starts_panel(ax: Any, points: pd.DataFrame, settings: Sequence[Any],
                            compact: bool = False) -> None:
    primary = settings[0]
    if points.empty or points["cold_starts_per_1000_sessions_mean"].isna().all():
        _no_data(ax, "no sessions: nothing to compare")
        return
    colors = colormaps["tab10"]
    for n, (series_label, df) in enumerate(_series(points, settings, primary)):
        x, xerr = _errors(df, "cold_starts_per_1000_sessions")
        y, yerr = _errors(df, "cost")
        ax.errorbar(x, y, xerr=xerr, yerr=yerr, fmt="o-", color=colors(n % 10), lw=1.2,
                    ms=7, capsize=4, label=series_label or None)
        at: dict[tuple[float, float], list[str]] = {}  # one label for points that coincide
        for xi, yi, v in zip(x, y, df[primary.path], strict=True):
            if np.isfinite(xi) and np.isfinite(yi):
                at.setdefault((float(xi), float(yi)), []).append(value_text(primary, v))
        for (xi, yi), texts in at.items():
            ax.annotate(", ".join(texts), (xi, yi), xytext=(8, 6),
                        textcoords="offset points", fontsize=10, color=colors(n % 10))
    ax.set_xlabel("cold starts per 1,000 sessions" if compact else
                  "cold starts per 1,000 sessions (lower: fewer users wait for a wake-up)")
    ax.set_ylabel("cost (price × CU-hours)" if compact else "cost of the run (price × CU-hours)")
    ax.margins(x=0.08, y=0.12)
    ax.set_xlim(left=-0.02 * ax.get_xlim()[1])  # room for a point at 0 (never suspend)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    if len(settings) > 1:
        ax.legend(loc="best", fontsize=8 if compact else 10)


def sizing_chart(points: pd.DataFrame, settings: Sequence[Any], name: str) -> Figure:
    """Refused and queued connections (shares of attempts) against the swept size."""
    size = next(s for s in settings if s.is_size)
    fig, axes = _figure(1, 2)
    fig.suptitle(f"Connections refused and queued against {size.name} — {name} "
                 f"({_runs_note(points)})", fontsize=14)
    colors = colormaps["tab10"]
    panels = [(axes[0, 0], "refused_share", "refused (% of connection attempts)"),
              (axes[0, 1], "queued_share", "queued by the pooler (% of attempts)")]
    sizes = points[size.path].astype(float).to_numpy()
    for ax, figure, ylabel in panels:
        if points[f"{figure}_mean"].isna().all():
            _no_data(ax, "no connection attempts")
            continue
        for n, (series_label, df) in enumerate(_series(points, settings, size)):
            y, yerr = _errors(df, figure, 100.0)
            ax.errorbar(df[size.path].astype(float), y, yerr=yerr, fmt="o-", capsize=4,
                        color=colors(n % 10), lw=1.2, ms=6, label=series_label or None)
        positive = sizes[sizes > 0]
        if len(positive) and positive.max() / positive.min() >= 4:
            ax.set_xscale("log", base=2)
        ticks = sorted(set(sizes))
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax.minorticks_off()
        ax.set_xlabel(f"{size.name} (CU)")
        ax.set_ylabel(ylabel)
        ax.set_ylim(0, max(1.0, ax.get_ylim()[1]))  # no magnified noise near 0 %
        ax.grid(True, alpha=0.3)
        if len(settings) > 1:
            ax.legend(loc="best", fontsize=9)
    return fig

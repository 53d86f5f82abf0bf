"""Charts of a run, as PNG files readable at a glance.

Figures are built as `matplotlib.figure.Figure` objects, never through pyplot:
no GUI backend is chosen and no global figure registry is touched, so the
charts can be drawn from any thread, a notebook or a test run. Each chart
function returns its Figure; `draw_charts` saves them all.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib.dates as mdates
import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.figure import Figure

from sim.metrics.frames import start_timestamp
from sim.metrics.summary import format_number, priced
from sim.processes.forked import beside
from sim.rules.operations import Action

SIZE_IN = (12.0, 6.0)
DPI = 100  # 1200 x 600 px
TOP = 15
FAILED = "#d62728"


def draw_charts(
    frames: dict[str, pd.DataFrame], summary: dict[str, Any], out_dir: str | Path,
    *, on_saved: Callable[[Path], None] | None = None, fork: bool = False,
) -> list[Path]:
    """Draw every chart into out_dir; returns the PNG paths in a fixed order.

    `on_saved` hears of each file once it is on disk (a progress bar). With `fork`, a
    forked copy of this process draws some of the charts while this one draws the
    rest (`sim.processes.forked`): the same files, in about half the time where a second CPU
    is free; `on_saved` hears of the copy's files when it is done."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    charts = _charts()
    if not fork:
        _draw(charts, frames, summary, out, on_saved)
        return [out / filename for filename, _ in charts]
    theirs = [chart for chart in charts if chart[0] in _DRAWN_BESIDE]
    mine = [chart for chart in charts if chart[0] not in _DRAWN_BESIDE]
    with beside(lambda: _draw(theirs, frames, summary, out, None)) as finished:
        _draw(mine, frames, summary, out, on_saved)
        drawn_beside = finished()
    if drawn_beside:
        for filename, _ in theirs:
            if on_saved is not None:
                on_saved(out / filename)
    else:  # no copy, or it failed: draw them here (an error in a chart is raised here)
        _draw(theirs, frames, summary, out, on_saved)
    return [out / filename for filename, _ in charts]


#: the charts a forked copy draws. The costliest are the time series of the fleet and of
#: connections, one on each side; the bars of cost by project, next, go with the fleet's
#: (the other side draws the two light charts and waits less for the copy)
_DRAWN_BESIDE = frozenset({"fleet.png", "cost_by_project.png"})


def _draw(charts: list[tuple[str, Chart]], frames: dict[str, pd.DataFrame],
          summary: dict[str, Any], out: Path, on_saved: Callable[[Path], None] | None) -> None:
    for filename, draw in charts:
        path = save(draw(frames, summary), out / filename)
        if on_saved is not None:
            on_saved(path)


Chart = Callable[[dict[str, pd.DataFrame], dict[str, Any]], Figure]


def _charts() -> list[tuple[str, Chart]]:
    return [
        ("fleet.png", fleet_chart),
        ("cold_starts.png", cold_starts_chart),
        ("cost_by_project.png", cost_by_project_chart),
        ("cost_by_template.png", cost_by_template_chart),
        ("connections.png", connections_chart),
        ("operations.png", operations_chart),
    ]


def chart_files() -> list[str]:
    """The PNG files `draw_charts` writes, in order."""
    return [name for name, _ in _charts()]


def save(fig: Figure, path: Path) -> Path:
    # no Software tag (it names the matplotlib version): one install draws the same bytes
    fig.savefig(path, dpi=DPI, format="png", metadata={"Software": None})
    return path


def _figure(nrows: int = 1, ncols: int = 1, **kwargs: Any) -> tuple[Figure, Any]:
    fig = Figure(figsize=SIZE_IN, dpi=DPI, layout="constrained")
    return fig, fig.subplots(nrows, ncols, squeeze=False, **kwargs)


def _no_data(ax: Any, message: str) -> None:
    ax.text(
        0.5,
        0.5,
        message,
        transform=ax.transAxes,
        ha="center",
        va="center",
        fontsize=16,
        color="0.4",
    )
    ax.set_xticks([])
    ax.set_yticks([])


def _title(summary: dict[str, Any], what: str) -> str:
    name = summary.get("name")
    return f"{what} — {name}" if name else what


def _utc(times: pd.Series) -> np.ndarray:
    """tz-aware UTC timestamps -> naive datetime64 that matplotlib plots without converters."""
    return times.dt.tz_convert("UTC").dt.tz_localize(None).to_numpy()


def _time_axis(ax: Any) -> None:
    locator = mdates.AutoDateLocator(minticks=4, maxticks=12)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    ax.set_xlabel("time (UTC)")


# --- 1. fleet --------------------------------------------------------------------------


def fleet_chart(frames: dict[str, pd.DataFrame], summary: dict[str, Any]) -> Figure:
    """Active computes and total CU per minute, two panels on one time axis."""
    fleet = frames["fleet"]
    fig, axes = _figure(2, 1, sharex=True)
    top, bottom = axes[0, 0], axes[1, 0]
    fig.suptitle(
        _title(summary, "Fleet: computes on and CU in use (per-minute means)"), fontsize=14
    )
    if fleet.empty:
        _no_data(top, "no fleet data (zero-length run)")
        _no_data(bottom, "")
        return fig
    t = _utc(fleet["time"])
    top.plot(t, fleet["active_computes"], color="#1f77b4", lw=1.2, label="active computes")
    bottom.plot(t, fleet["total_cu"], color="#ff7f0e", lw=1.2, label="total CU")
    bottom.fill_between(t, 0, fleet["total_cu"], color="#ff7f0e", alpha=0.2, lw=0)
    peak = summary.get("peak_active_computes")
    if peak:
        top.axhline(peak, color="0.5", ls="--", lw=1, label=f"peak at any instant = {peak:,}")
        top.set_ylim(0, peak * 1.25)  # room for the legend above the peak line
    top.set_ylabel("computes (init or active)")
    bottom.set_ylabel("CU")
    for ax in (top, bottom):
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper left", ncols=2)
    _time_axis(bottom)
    return fig


# --- 2. cold starts --------------------------------------------------------------------


def cold_starts_chart(frames: dict[str, pd.DataFrame], summary: dict[str, Any]) -> Figure:
    """Empirical CDF of the wait a caller saw on each cold start, p50 and p99 marked.

    Drawn from the run's CDF table (`cold_start_cdf`), which every run keeps whether
    its wake rows were recorded or not; p50 and p99 are the summary's."""
    cdf = frames["cold_start_cdf"]
    waits = cdf["wait_s"].to_numpy(dtype=float)
    n = int(cdf["cold_starts"].iloc[-1]) if len(cdf) else 0
    fig, axes = _figure()
    ax = axes[0, 0]
    ax.set_title(_title(summary, f"Cold-start wait ({n:,} cold starts)"), fontsize=14)
    if n == 0:
        _no_data(ax, "no cold starts")
        return fig
    share = cdf["share"].to_numpy(dtype=float)
    ax.step(waits, share, where="post", color="#1f77b4", lw=1.5, label="share of cold starts")
    for q, key, color in ((0.5, "wake_p50_s", "#2ca02c"), (0.99, "wake_p99_s", FAILED)):
        value = float(summary[key])
        ax.axvline(value, color=color, ls="--", lw=1.2, label=f"p{round(q * 100)} = {value:.3g} s")
        ax.annotate(
            f"p{round(q * 100)} = {value:.3g} s",
            (value, q),
            xytext=(6, -14),
            textcoords="offset points",
            color=color,
            fontsize=11,
        )
    if waits[0] > 0 and waits[-1] / waits[0] > 100:
        ax.set_xscale("log")  # long tails: reattach and unarchive take far longer
    ax.set_ylim(0, 1.02)
    ax.set_xlabel(
        "wait before the session began (s)" + (", log scale" if ax.get_xscale() == "log" else "")
    )
    ax.set_ylabel("share of cold starts with wait ≤ x")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right")
    return fig


# --- 3. cost by project ----------------------------------------------------------------


def cost_by_project_chart(frames: dict[str, pd.DataFrame], summary: dict[str, Any]) -> Figure:
    """CU-hours of the TOP projects as bars, each labelled with its cost."""
    computes = frames["computes"]
    fig, axes = _figure()
    ax = axes[0, 0]
    price = float(summary.get("price_per_cu_hour") or 0.0)
    if computes.empty:
        ax.set_title(_title(summary, "CU-hours and cost by project"), fontsize=14)
        _no_data(ax, "no computes")
        return fig
    per_project = (
        computes.groupby(["project_id", "project_name"], sort=True, dropna=False)[
            ["cu_hours", "cost"]
        ]
        .sum()
        .reset_index()
        .sort_values(["cu_hours", "project_id"], ascending=[False, True], kind="stable")
    )
    total = per_project["cu_hours"].sum()
    top = per_project.head(TOP).iloc[::-1]  # largest at the top of the chart
    labels = _project_labels(top)
    shown = top["cu_hours"].sum() / total if total else 0.0
    ax.set_title(
        _title(
            summary,
            f"CU-hours and cost by project: top {len(top)} of "
            f"{len(per_project):,} ({shown:.0%} of all CU-hours)",
        ),
        fontsize=14,
    )
    y = np.arange(len(top))
    ax.barh(y, top["cu_hours"], color="#1f77b4")
    ax.set_yticks(y, labels)
    for yi, (hours, cost) in enumerate(zip(top["cu_hours"], top["cost"], strict=True)):
        money = f"{cost:,.2f}" if cost >= 1 else format_number(cost)
        label = f" {format_number(hours)} CU-h · {money}"
        ax.annotate(label, (hours, yi), va="center", fontsize=9)
    ax.set_xlabel(f"CU-hours (cost at {price:g} per CU-hour on the labels)" if not priced(summary)
                  else "CU-hours (on the labels, cost: each template's plan's bill)")
    ax.set_xlim(0, max(float(top["cu_hours"].max()) * 1.25, 1e-9))
    ax.grid(True, axis="x", alpha=0.3)
    return fig


def cost_by_template_chart(frames: dict[str, pd.DataFrame], summary: dict[str, Any]) -> Figure:
    """CU-hours of every template as bars, each labelled with its cost, its share of the
    fleet's and the cost per project: a tier of many small projects shows as one bar."""
    fig, axes = _figure()
    ax = axes[0, 0]
    price = float(summary.get("price_per_cu_hour") or 0.0)
    rows = summary.get("templates") or []
    ax.set_title(_title(summary, f"CU-hours and cost by template ({len(rows)} templates)"),
                 fontsize=14)
    if not rows:
        _no_data(ax, "no templates")
        return fig
    rows = rows[::-1]  # the scenario's first template at the top
    hours = np.array([float(r["cu_hours"]) for r in rows])
    total = hours.sum()
    y = np.arange(len(rows))
    ax.barh(y, hours, height=0.6, color="#1f77b4")
    ax.set_yticks(y, [f"{r['template']}\n{r['projects']:,} projects, {r['computes']:,} computes"
                      for r in rows])
    for yi, r in enumerate(rows):
        cost = float(r["cost"])
        share = f"{r['cu_hours'] / total:.0%}" if total else "–"
        per_project = cost / r["projects"] if r["projects"] else None
        label = (f" {format_number(r['cu_hours'])} CU-h · {cost:,.2f} ({share})"
                 + (f" · {format_number(per_project)} per project" if per_project else ""))
        ax.annotate(label, (float(r["cu_hours"]), yi), va="center", fontsize=10)
    ax.set_xlabel(f"CU-hours (cost at {price:g} per CU-hour on the labels)" if not priced(summary)
                  else "CU-hours (on the labels, cost: each template's plan's bill)")
    ax.set_xlim(0, max(float(hours.max()) * 1.6, 1e-9))  # room for the labels
    ax.grid(True, axis="x", alpha=0.3)
    return fig


def _project_labels(top: pd.DataFrame) -> list[str]:
    names = top["project_name"].fillna(top["project_id"])
    # several projects from one template may share a name: add the id then
    repeated = names.duplicated(keep=False)
    return [
        f"{n} ({p})" if r else str(n)
        for n, p, r in zip(names, top["project_id"], repeated, strict=True)
    ]


# --- 4. connections --------------------------------------------------------------------


def connections_chart(frames: dict[str, pd.DataFrame], summary: dict[str, Any]) -> Figure:
    """Peak open connections against max_connections for the TOP busiest computes."""
    computes = frames["computes"]
    fig, axes = _figure()
    ax = axes[0, 0]
    busiest = computes.sort_values(
        ["peak_connections", "compute_id"], ascending=[False, True], kind="stable"
    ).head(TOP)
    ax.set_title(
        _title(
            summary,
            f"Peak open connections vs max_connections (top {len(busiest)} computes by peak)",
        ),
        fontsize=14,
    )
    if busiest.empty:
        _no_data(ax, "no computes")
        return fig
    busiest = busiest.iloc[::-1]
    y = np.arange(len(busiest))
    ax.barh(y, busiest["max_connections"], height=0.8, color="0.85", label="max_connections")
    ax.barh(
        y, busiest["peak_connections"], height=0.45, color="#1f77b4", label="peak open connections"
    )
    labels = [
        f"{_short(str(n), 26)} ({_short_id(str(c))})"
        for c, n in zip(busiest["compute_id"], busiest["project_name"], strict=True)
    ]
    ax.set_yticks(y, labels)
    for yi, (peak, cap) in enumerate(
        zip(busiest["peak_connections"], busiest["max_connections"], strict=True)
    ):
        used = "–" if not cap else "<1%" if 0 < peak / cap < 0.01 else f"{peak / cap:.0%}"
        ax.annotate(f" {peak:,} / {cap:,} ({used})", (max(peak, cap), yi), va="center", fontsize=9)
    high, low = busiest["max_connections"].max(), busiest["peak_connections"].max()
    if low > 0 and high / low > 20:
        ax.set_xscale("log")  # peaks of a few against limits in the thousands
        ax.set_xlim(0.8, high * 8)
        ax.set_xlabel("connections (log scale)")
    else:
        ax.set_xlim(0, max(float(high), float(low), 1.0) * 1.3)
        ax.set_xlabel("connections")
    ax.grid(True, axis="x", which="both", alpha=0.3)
    # outside the axes: inside, it would hide the labels at the bars' ends
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
    return fig


def _short(text: str, width: int) -> str:
    """At most `width` characters: a long name keeps its start and its end (`-57`)."""
    if len(text) <= width:
        return text
    tail = max(4, width // 3)
    return f"{text[:width - tail - 1]}…{text[-tail:]}"


def _short_id(compute_id: str) -> str:
    """`ep-…pfomlm9k`: an endpoint id's random end tells computes apart, and is what a
    reader searches the tables for; its two words take a third of the chart's width."""
    prefix, _, rest = compute_id.partition("-")
    suffix = rest.rsplit("-", 1)[-1]
    if not rest or len(compute_id) <= 14 or len(suffix) < 4:
        return _short(compute_id, 14)
    return f"{prefix}-…{suffix}"


# --- 5. operations ---------------------------------------------------------------------


def operations_chart(frames: dict[str, pd.DataFrame], summary: dict[str, Any]) -> Figure:
    """Operations created per hour (per day for long runs): stacked by action above; below,
    on a log scale, each action's count and the failed attempts, so that an action of a
    handful of operations, or a few failures, stay visible beside thousands.

    Drawn from the run's counts per hour (`operations_per_hour`), which every run keeps
    whether its operation rows were recorded or not."""
    per_hour = frames["operations_per_hour"]
    if not per_hour["operations"].sum():
        fig, axes = _figure()
        ax = axes[0, 0]
        ax.set_title(_title(summary, "Operations"), fontsize=14)
        _no_data(ax, "no operations")
        return fig
    fig, axes = _figure(2, 1, sharex=True, height_ratios=[3, 2])
    ax, low = axes[0, 0], axes[1, 0]
    hours = per_hour["hour"].to_numpy(dtype=np.int64)
    duration = float(summary.get("duration_s") or (hours.max() + 1) * 3600.0)
    bin_s = 3600.0 if duration <= 21 * 86_400 else 86_400.0
    unit = "hour" if bin_s == 3600.0 else "day"
    bins = hours // round(bin_s / 3600.0)
    # every bin of the run, empty ones too: the failed-attempts step must drop to 0 there
    every_bin = np.arange(max(math.ceil(duration / bin_s), int(bins.max()) + 1))
    counts = (per_hour.groupby([bins, per_hour["action"].to_numpy()])["operations"].sum()
              .unstack(fill_value=0).reindex(every_bin, fill_value=0))
    failed = per_hour.groupby(bins)["failed_attempts"].sum().reindex(every_bin, fill_value=0)
    n_operations = int(per_hour["operations"].sum())
    start = start_timestamp(str(summary.get("start") or "1970-01-01T00:00:00Z"))
    left = _utc(pd.Series(start + pd.to_timedelta(counts.index.to_numpy() * bin_s, unit="s")))
    width = pd.Timedelta(seconds=bin_s * 0.9).to_pytimedelta()
    colors = _action_colors(list(counts.columns))
    base = np.zeros(len(counts))
    bars = []
    for action in counts.columns:
        total = int(counts[action].sum())
        bars.append(ax.bar(left, counts[action], width=width, bottom=base, align="edge",
                           color=colors[action], label=f"{action} ({total:,})"))
        base += counts[action].to_numpy()
    n_failed = int(failed.sum())
    # the steps hold each value over its bin: repeat the last value up to the last bin's end
    edges = np.append(left, left[-1] + np.timedelta64(int(bin_s), "s"))

    def steps(values: np.ndarray, **style: Any) -> Any:
        shown = np.where(values > 0, values, np.nan)  # log scale: an empty bin is a gap
        (line,) = low.step(edges, np.append(shown, shown[-1]), where="post", **style)
        return line

    for action in counts.columns:
        steps(counts[action].to_numpy(dtype=float), color=colors[action], lw=1.2)
    failed_line = steps(failed.to_numpy(dtype=float), color=FAILED, lw=2.2,
                        label=f"failed attempts ({n_failed:,})")
    # the counts on a line of their own: with a long scenario name one line would not fit
    ax.set_title(
        _title(summary, f"Operations per {unit} by action")
        + f"\n{n_operations:,} operations, {n_failed:,} failed attempts",
        fontsize=13,
    )
    ax.set_ylabel(f"operations per {unit}")
    ax.set_ylim(bottom=0)
    ax.grid(True, axis="y", alpha=0.3)
    low.set_yscale("log")
    low.set_ylim(0.7, max(float(counts.to_numpy().max()), float(failed.max()), 1.0) * 2.0)
    low.set_ylabel("each action (log)")
    low.grid(True, axis="y", which="major", alpha=0.3)
    if n_failed == 0:
        low.text(0.01, 0.95, "no failed attempts", transform=low.transAxes, ha="left",
                 va="top", fontsize=9, color=FAILED)
    # legend top-down as the stack reads top-down, failed attempts first
    ax.legend(handles=[failed_line, *bars[::-1]], loc="upper left", bbox_to_anchor=(1.01, 1.0),
              fontsize=9, frameon=False)
    if duration > 0:  # the whole run, to line up with the fleet chart
        low.set_xlim(*_utc(pd.Series([start, start + pd.Timedelta(seconds=duration)])))
    _time_axis(low)
    return fig


#: the most frequent actions first, so that they get the most distinct colours
_COLOR_ORDER = [
    Action.START_COMPUTE,
    Action.SUSPEND_COMPUTE,
    Action.CHECK_AVAILABILITY,
    Action.APPLY_CONFIG,
    Action.CREATE_BRANCH,
    Action.CREATE_TIMELINE,
    Action.TENANT_REATTACH,
    Action.TENANT_DETACH,
    Action.TIMELINE_ARCHIVE,
    Action.TIMELINE_UNARCHIVE,
    Action.TENANT_ATTACH,
    Action.APPLY_STORAGE_CONFIG,
    Action.DELETE_TENANT,
]


def _action_colors(actions: list[str]) -> dict[str, Any]:
    """One colour per action, the same in every run; never red, which means failure here."""
    tab10, tab20 = colormaps["tab10"], colormaps["tab20"]
    distinct = [tab10(i) for i in range(10) if i != 3]
    light = [tab20(i) for i in range(1, 20, 2) if i != 7]
    palette = distinct + light
    known = [a.value for a in _COLOR_ORDER]
    order = known + sorted(set(actions) - set(known))
    return {a: palette[order.index(a) % len(palette)] for a in actions}

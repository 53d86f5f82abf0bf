"""A recommendation, written down: table per template, JSON, Pareto chart, page, scenario file.

    paths = write_recommendation(rec, "results/tenants-recommend")

recommendation.json holds every figure with its 95 % interval (and every
choice of the space with its theory), so a reader can check the verdict
without rerunning; `<name>.recommended.yaml` is the scenario with the
recommended settings, ready for `sim run`; report.html holds the
recommendation section and the chart, readable offline.
"""

from __future__ import annotations

import base64
import html
import io
import json
import re
from pathlib import Path
from typing import Any

import yaml

from sim.metrics.summary import format_value
from sim.recommendation.search import Candidate, Recommendation, TemplateOutcome
from sim.recommendation.targets import METRICS, Target
from sim.sweep import CONFIDENCE

JSON_FILE = "recommendation.json"
CHART_FILE = "pareto.png"
REPORT_FILE = "report.html"


# ---- figures as data -------------------------------------------------------------------------


def _ci(c: Candidate, metric: str) -> dict[str, float] | None:
    ci = c.interval(metric)
    return None if ci is None else {"mean": ci[0], "ci_low": ci[1], "ci_high": ci[2]}


def candidate_data(c: Candidate, targets: list[Target]) -> dict[str, Any]:
    out: dict[str, Any] = {"label": c.choice.label(), "settings": c.choice.as_dict(),
                           "theory": {"cost": c.prediction.cost, **c.prediction.figures},
                           "pruned_by": [t.metric for t in c.pruned],
                           "replications": len(c.runs)}
    if c.simulated:
        out["simulated"] = {m: _ci(c, m) for m in ("cost", "cu_hours", *METRICS)}
        out["meets_targets"] = not c.misses(targets)
    return out


def template_data(o: TemplateOutcome, targets: list[Target]) -> dict[str, Any]:
    rec = o.recommended
    return {
        "projects": o.count,
        "current": candidate_data(o.current, targets),
        "recommended": None if rec is None else candidate_data(rec, targets),
        "binding_targets": [t.metric for t in o.binding],
        "cost_now": o.current.cost,
        "cost_after": None if rec is None else rec.cost,
        "saving": o.saving,
        "failure": None if o.failure is None else failure_text(o, targets),
        "closest": None if o.closest is None else candidate_data(o.closest, targets),
        "space": [candidate_data(c, targets) for c in o.candidates],
    }


def recommendation_data(rec: Recommendation) -> dict[str, Any]:
    return {
        "name": rec.name,
        "confidence": CONFIDENCE,
        "replications": rec.replications,
        "runs": rec.runs,
        "rounds": rec.rounds,
        "targets": [{"metric": t.metric, "limit": t.limit, "label": t.label,
                     "template": t.template} for t in rec.targets],
        "met": rec.met,
        "cost_now": rec.cost_now,
        "cost_after": rec.cost_after,
        "saving": rec.cost_now - rec.cost_after,
        "templates": {n: template_data(o, o.targets) for n, o in rec.templates.items()},
    }


# ---- words -----------------------------------------------------------------------------------


#: what a figure without a value means: the runs had nothing to measure it on
_NOTHING_MEASURED = {"wake_p99_s": "no cold start", "queue_wait_p99_s": "no queueing"}
#: a binding target's status: met, and what stops the saving going further
BINDS = "binds: cheaper choices miss it"


def _value(c: Candidate, metric: str, kind: str) -> str:
    ci = c.interval(metric) if c.simulated else None
    if ci is None:
        if c.simulated:
            return _NOTHING_MEASURED.get(metric, "none")
        return format_value(c.prediction.figures.get(metric), kind) + " (theory)"
    mean, low, high = ci
    low = max(low, 0.0)  # every figure here is a count, a share or a wait: none is negative
    return f"{format_value(mean, kind)} [{format_value(low, kind)}, {format_value(high, kind)}]"


def failure_text(o: TemplateOutcome, targets: list[Target]) -> str:
    c = o.closest
    if c is None:
        return o.failure or ""
    parts = []
    for t in c.misses(targets):
        value = c.upper(t.metric) if c.simulated else c.prediction.figures.get(t.metric)
        over = None if value is None else value - t.limit
        parts.append(f"{t.label} is {format_value(value, t.kind)} against at most "
                     f"{format_value(t.limit, t.kind)} ({format_value(over, t.kind)} over)")
    return (f"{o.failure}; closest: {c.choice.label()}: " + "; ".join(parts)
            if parts else f"{o.failure}; closest: {c.choice.label()}")


def saving_text(rec: Recommendation) -> str:
    """`saving 6,296.07 (71.4 %)`, or what meeting the targets costs on top of today."""
    saving = rec.cost_now - rec.cost_after
    share = abs(saving) / rec.cost_now if rec.cost_now else 0.0
    word = "saving" if saving >= 0 else "meeting the targets costs"
    more = "" if saving >= 0 else " more"
    return f"{word} {format_value(abs(saving), 'money')}{more} ({format_value(share, 'pct')})"


def verdict(o: TemplateOutcome) -> str:
    if o.recommended is None:
        return "no setting meets the targets"
    binds = ", ".join(t.label for t in o.binding) or "none (the cheapest setting in the space)"
    return f"binding: {binds}"


def table_rows(o: TemplateOutcome, targets: list[Target]) -> list[list[str]]:
    """[what, now, recommended, target] rows of one template's table."""
    rec = o.recommended or o.closest
    rows = [["settings", o.current.choice.label(), rec.choice.label() if rec else "–", ""]]
    rows.append(["cost", _value(o.current, "cost", "money"),
                 _value(rec, "cost", "money") if rec else "–", ""])
    for t in targets:
        status = ""
        if rec is not None:
            status = (BINDS if t in o.binding else "met") if t not in rec.misses(targets) \
                else "missed"
        rows.append([t.label, _value(o.current, t.metric, t.kind),
                     _value(rec, t.metric, t.kind) if rec else "–",
                     f"<= {format_value(t.limit, t.kind)} {status}".rstrip()])
    return rows


def recommendation_tables(rec: Recommendation, width: int = 150) -> str:
    """What `sim recommend` prints: a table per template (today, the recommendation or the
    closest choice, each target with its interval) and a closing line of the saving."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    buffer = io.StringIO()
    console = Console(file=buffer, width=width, color_system=None, no_color=True,
                      highlight=False, emoji=False)
    for name, o in rec.templates.items():
        table = Table(title=f"{name} ({o.count} projects): {verdict(o)}", box=box.SIMPLE_HEAD,
                      pad_edge=False, title_justify="left")
        for heading in ("", "now", "recommended" if o.recommended else "closest", "target"):
            table.add_column(heading)
        for row in table_rows(o, o.targets):
            table.add_row(*row)
        console.print(table)
        if o.failure is not None:
            console.print(f"  {failure_text(o, o.targets)}")
    console.print(f"cost now {format_value(rec.cost_now, 'money')}, after "
                  f"{format_value(rec.cost_after, 'money')}: {saving_text(rec)}; "
                  f"{counted(rec.runs, 'run')} in {counted(rec.rounds, 'round')}, "
                  f"{counted(rec.replications, 'replication')} each, "
                  f"{int(CONFIDENCE * 100)} % intervals")
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines()).strip("\n") + "\n"


def counted(n: int, noun: str) -> str:
    """`1 round`, `2 rounds`."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


# ---- the chart -------------------------------------------------------------------------------


def draw_pareto(rec: Recommendation, path: Path) -> Path:
    """Per template: cost against cold starts per 1,000 sessions for every choice.

    Hollow markers are the theory's prices of choices never run; filled ones
    were simulated (bars: 95 % intervals). Grey: misses a target.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(rec.templates)
    fig, axes = plt.subplots(1, n, figsize=(5.2 * n, 4.4), squeeze=False)
    for ax, (name, o) in zip(axes[0], rec.templates.items(), strict=True):
        for c in o.candidates:
            ok = not c.misses(o.targets)
            color = "#1f6fb4" if ok else "#b8bcc4"
            x = _x(c)
            if c.simulated:
                cost, cold = c.interval("cost"), c.interval("cold_starts_per_1000")
                xerr = None if cold is None else [[cold[0] - cold[1]], [cold[2] - cold[0]]]
                yerr = None if cost is None else [[cost[0] - cost[1]], [cost[2] - cost[0]]]
                ax.errorbar([x], [c.cost], xerr=xerr, yerr=yerr, fmt="o", color=color,
                            ms=5, lw=1, zorder=3)
            else:
                ax.plot([x], [c.prediction.cost], "o", mfc="none", color=color, ms=4, alpha=0.7)
        marks = [(o.current, "now", "#b26a00", "s")]
        if o.recommended is not None:
            marks.append((o.recommended, "recommended", "#1a8f3c", "*"))
        for c, text, color, marker in marks:  # never cut in half by an axis
            ax.plot([_x(c)], [c.cost], marker, color=color, ms=14 if marker == "*" else 10,
                    mfc="none" if marker == "s" else color, mew=2, zorder=4, label=text,
                    clip_on=False)
        _targets_on(ax, o)
        ax.set_xscale("symlog", linthresh=1.0)
        # room on both sides: choices without cold starts sit at 0, on the left edge otherwise
        xs = [_x(c) for c in o.candidates] + [_x(c) for c, *_ in marks] + \
            [t.limit for t in o.targets if t.metric == "cold_starts_per_1000"]
        ax.set_xlim(-0.5, max(max(xs, default=1.0), 1.0) * 2.0)
        ax.margins(y=0.08)
        ax.set_xlabel("cold starts per 1,000 sessions")
        ax.set_ylabel("cost")
        ax.set_title(f"{name}: {verdict(o)}", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="best")
    fig.suptitle(f"{rec.name}: cost against cold starts (hollow: theory; grey: misses a target)",
                 fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _targets_on(ax: Any, o: TemplateOutcome) -> None:
    """The cold-start target as a line; a binding target the axes do not show, in words."""
    cold = next((t for t in o.targets if t.metric == "cold_starts_per_1000"), None)
    if cold is not None:
        binds = " (binds)" if cold in o.binding else ""
        ax.axvline(cold.limit, color="#c0392b", ls="--", lw=1,
                   label=f"target{binds}: <= {format_value(cold.limit, cold.kind)}")
    off_axes = [t for t in o.binding if t.metric != "cold_starts_per_1000"]
    for t in off_axes:  # a legend entry without a mark: the legend finds room free of points
        ax.plot([], [], " ", label=f"binds, not on these axes:\n{t.label} "
                                   f"<= {format_value(t.limit, t.kind)}")


def _x(c: Candidate) -> float:
    ci = c.interval("cold_starts_per_1000") if c.simulated else None
    value = ci[0] if ci is not None else c.prediction.figures.get("cold_starts_per_1000")
    return float(value or 0.0)


# ---- the page --------------------------------------------------------------------------------


def recommendation_html(rec: Recommendation, chart: Path | None) -> str:
    """The recommendation section: targets, a table per template, the chart."""
    from sim.metrics.report import _table

    e = html.escape
    targets = ", ".join(e(t.text()) for t in rec.targets)
    parts = ['<h2 id="recommendation">Recommendation</h2>',
             f"<p>Targets: {targets}. A setting stands when the upper end of its "
             f"{int(CONFIDENCE * 100)} % interval over {rec.replications} replications meets "
             f"every target. Cost now {e(format_value(rec.cost_now, 'money'))}, after "
             f"{e(format_value(rec.cost_after, 'money'))}: {e(saving_text(rec))}.</p>"]
    for name, o in rec.templates.items():
        parts.append(f"<h3>{e(name)} ({o.count} projects): {e(verdict(o))}</h3>")
        head = "recommended" if o.recommended else "closest"
        parts.append(_table(["", "now", head, "target"], table_rows(o, o.targets), "kv wide"))
        if o.failure is not None:
            parts.append(f'<p class="muted">{e(failure_text(o, o.targets))}</p>')
    if chart is not None and chart.exists():
        data = base64.b64encode(chart.read_bytes()).decode("ascii")
        parts.append(f'<figure><figcaption><h3>Cost against cold starts</h3><p>Every choice '
                     f'of each template; hollow markers are theory, filled ones were simulated '
                     f'(bars: {int(CONFIDENCE * 100)} % intervals); grey ones miss a target.</p>'
                     f'</figcaption><img alt="Pareto chart" src="data:image/png;base64,{data}">'
                     f"</figure>")
    return "\n".join(parts)


def render_page(rec: Recommendation, chart: Path | None) -> str:
    from sim.metrics.report import CSS

    e = html.escape
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{e(rec.name)} — sim recommendation</title><style>{CSS}</style></head>"
            f'<body><main>\n<header><div class="eyebrow">sim · recommendation</div>'
            f"<h1>{e(rec.name)}</h1></header>\n{recommendation_html(rec, chart)}\n"
            f"<footer>{e(JSON_FILE)} beside this page holds every figure and interval; the "
            f"recommended scenario file is ready for <code>sim run</code>.</footer>"
            f"</main></body></html>\n")


# ---- the scenario file -----------------------------------------------------------------------


def recommended_yaml(rec: Recommendation) -> str:
    doc = rec.recommended_document()
    base = Path(rec.base_dir) if rec.base_dir else None
    for project in doc.get("projects", []):  # a replay trace stays readable from anywhere
        for branch in project.get("branches", []):
            for compute in branch.get("computes", []):
                arrivals = (compute.get("workload") or {}).get("arrivals") or {}
                if arrivals.get("kind") == "replay" and base is not None:
                    trace = Path(arrivals["path"])
                    if not trace.is_absolute():
                        arrivals["path"] = str((base / trace).resolve())
    lines = [f"# {rec.name}, with the settings `sim recommend` chose:"]
    for name, o in rec.templates.items():
        chosen = o.recommended.choice.label() if o.recommended else "unchanged (no setting " \
                                                                     "met the targets)"
        lines.append(f"#   {name}: {chosen}")
    return "\n".join(lines) + "\n" + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)


def write_recommendation(rec: Recommendation, out_dir: str | Path) -> dict[str, Path]:
    """recommendation.json, pareto.png, report.html, <name>.recommended.yaml; name -> path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / JSON_FILE, "chart": out / CHART_FILE, "report": out / REPORT_FILE,
             "scenario": out / f"{re.sub(r'[^A-Za-z0-9_.-]+', '-', rec.name)}.recommended.yaml"}
    paths["json"].write_text(json.dumps(recommendation_data(rec), indent=2, default=str) + "\n",
                             encoding="utf-8")
    draw_pareto(rec, paths["chart"])
    paths["report"].write_text(render_page(rec, paths["chart"]), encoding="utf-8")
    paths["scenario"].write_text(recommended_yaml(rec), encoding="utf-8")
    return paths

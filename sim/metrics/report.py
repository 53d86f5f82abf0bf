"""The run report: one self-contained HTML page a capacity planner opens first.

    write_report("results/quickstart", scenario=scenario)   # after write_results + draw_charts

The page holds the scenario (name, seed, start, duration, the fleet it
declares), the key figures at a glance, the charts (PNG files of the run's
directory, embedded as base64), the whole summary table and the assumptions
the run used. No scripts, fonts, styles or images are fetched from anywhere:
the file can be mailed, archived or opened offline. It holds no wall-clock
time, so the same results always give the same page.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from sim.metrics.io import read_run
from sim.metrics.summary import format_duration, format_value, priced, summary_sections
from sim.metrics.templates import template_cells
from sim.scenario.schema import ComputeSpec, ProjectSpec, Scenario

REPORT_FILE = "report.html"
SCENARIO_FILE = "scenario.yaml"  # the scenario as run, kept beside the results by `sim run`

#: the charts of `sim.metrics.draw_charts`, in page order: file, heading, what to read in it
CHARTS: list[tuple[str, str, str]] = [
    ("fleet.png", "Fleet over time",
     "Computes that are on (starting or active) and the CU they use, as per-minute means. "
     "The dashed line is the most computes on at any one instant."),
    ("cost_by_project.png", "Where the CU-hours go",
     "CU-hours of the projects that used the most, each labelled with its cost."),
    ("cost_by_template.png", "Cost by template",
     "CU-hours of each template of the scenario, labelled with its cost, its share of the "
     "fleet's and its cost per project."),
    ("cold_starts.png", "Cold-start wait",
     "How long a connection waited for a suspended compute to start, as a cumulative share; "
     "p50 and p99 are marked."),
    ("connections.png", "Connection headroom",
     "Peak open connections against max_connections for the busiest computes."),
    ("operations.png", "Control-plane operations",
     "Operations created per hour by action; the red line counts failed attempts."),
]


# ---- the fleet in words ----------------------------------------------------------------------


def _dur(seconds: float) -> str:
    return format_duration(float(seconds))


def _hour(hour: float) -> str:
    minutes = round(hour * 60)
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _num(x: float) -> str:
    """Three significant digits, whole numbers with separators from 1,000: 2, 2.67, 14,400."""
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}"


def _rate(per_hour: float) -> str:
    return f"{_num(per_hour)}/h"


def describe_arrivals(arrivals: Any) -> str:
    weekly = getattr(arrivals, "weekly", None)
    return _describe_kind(arrivals) + ("" if weekly is None else f", {describe_week(weekly)}")


def describe_week(factors: tuple[float, ...]) -> str:
    """A weekly cycle in words: "weekdays x1, weekends x0.2", or the seven factors."""
    if len(set(factors[:5])) == 1 and len(set(factors[5:])) == 1:
        return f"weekdays x{factors[0]:g}, weekends x{factors[5]:g}"
    days = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
    return "week " + " ".join(f"{d} x{v:g}" for d, v in zip(days, factors, strict=True))


def _describe_kind(arrivals: Any) -> str:
    kind = arrivals.kind
    if kind == "poisson":
        return f"Poisson {_rate(arrivals.per_hour)}"
    if kind == "diurnal":
        if arrivals.hourly is not None:
            rates = list(arrivals.hourly)
            peak = max(range(24), key=rates.__getitem__)
            return (f"daily profile, mean {_rate(sum(rates) / 24)}, "
                    f"peak {_rate(rates[peak])} at {peak:02d}:00 UTC")
        return (f"daily cycle {_rate(arrivals.trough_per_hour)} to "
                f"{_rate(arrivals.peak_per_hour)}, peak at {_hour(arrivals.peak_hour)} UTC")
    if kind == "bursty":
        return (f"bursts of {_rate(arrivals.on_per_hour)} for ~{_dur(arrivals.mean_on)}, "
                f"{_rate(arrivals.off_per_hour)} for ~{_dur(arrivals.mean_off)} between")
    if kind == "periodic":
        extra = f", jitter {_dur(arrivals.jitter)}" if arrivals.jitter else ""
        return f"every {_dur(arrivals.every)} from {_dur(arrivals.offset)}{extra}"
    return f"replay of {arrivals.path}"


def describe_sessions(session: Any) -> str:
    if session.dist == "fixed":
        return f"sessions of {_dur(session.mean_s)}"
    sigma = f", σ {session.sigma:g}" if session.dist == "lognormal" and session.sigma else ""
    return f"{session.dist} sessions, mean {_dur(session.mean_s)}{sigma}"


def describe_compute(c: ComputeSpec) -> dict[str, str]:
    size = (f"{c.min_cu:g} CU fixed" if c.size is not None
            else f"{c.min_cu:g} ↔ {c.max_cu:g} CU")
    timeout = c.suspend_timeout_seconds
    stz = ("never" if timeout == -1 else "after 5 min (default)" if timeout == 0
           else f"after {_dur(timeout)}")
    pooler = ("pooled" + (f", pool {c.pool_size}" if c.pool_size else "")
              if c.pooler_enabled else "direct")
    w = c.workload
    workload = ("no workload" if w is None
                else f"{describe_arrivals(w.arrivals)}; {describe_sessions(w.session)}")
    return {"compute": "primary" if c.type == "read_write" else "read replica", "size": size,
            "scale to zero": stz, "connections": pooler, "workload": workload}


def fleet_rows(scenario: Scenario) -> list[dict[str, str]]:
    """One row per declared compute (templates and branches named on their first row)."""
    rows = []
    for p in scenario.projects:
        for b in p.branches:
            computes: list[ComputeSpec | None] = list(b.computes) or [None]
            for i, c in enumerate(computes):
                row = {"template": _template_label(scenario, p) if b is p.branches[0] and i == 0
                       else "", "branch": b.name if i == 0 else ""}
                row.update(describe_compute(c) if c is not None else
                           {"compute": "no compute", "size": "", "scale to zero": "",
                            "connections": "", "workload": ""})
                rows.append(row)
    return rows


def _template_label(scenario: Scenario, p: ProjectSpec) -> str:
    return f"{p.name} × {p.count:,} ({scenario.plan_of(p).value})"


def fleet_line(scenario: Scenario) -> str:
    templates = ", ".join(f"{p.name} × {p.count:,}" for p in scenario.projects)
    return (f"{scenario.project_count():,} projects ({templates}), "
            f"{scenario.compute_count():,} computes")


# ---- the page --------------------------------------------------------------------------------


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _card(title: str, value: str, note: str, level: str = "") -> str:
    cls = f"card {level}".strip()
    return (f'<div class="{cls}"><div class="label">{_e(title)}</div>'
            f'<div class="value">{_e(value)}</div><div class="note">{_e(note)}</div></div>')


def key_cards(s: dict[str, Any]) -> str:
    refused = s.get("refused_share")
    level = "" if not refused else "bad" if refused > 0.01 else "warn"
    p99 = s.get("wake_p99_s")
    cards = [
        _card("Cost", format_value(s.get("cost"), "money"),
              ("the templates' bills (billed CU-hours at each one's price)" if priced(s) else
               f"CU-hours at {_num(s.get('price_per_cu_hour') or 0)} per CU-hour")
              + f", over {format_value(s.get('duration_s'), 'duration')} simulated "
              "(no currency)"),
        _card("CU-hours", format_value(s.get("cu_hours")),
              f"mean {format_value(s.get('mean_total_cu'))} CU in use"),
        _card("Peak computes on", format_value(s.get("peak_active_computes"), "int"),
              f"of {format_value(s.get('computes'), 'int')}; "
              f"mean {format_value(s.get('mean_active_computes'))}"),
        _card("Cold starts", format_value(s.get("cold_starts_per_1000_sessions")),
              f"per 1,000 sessions ({format_value(s.get('cold_starts'), 'int')} in all)"),
        _card("Cold-start wait p99", format_value(p99, "seconds"),
              f"p50 {format_value(s.get('wake_p50_s'), 'seconds')}",
              "warn" if p99 is not None and p99 > 5 else ""),
        _card("Connections refused", format_value(refused, "pct"),
              f"{format_value(s.get('refused'), 'int')} of "
              f"{format_value(s.get('connection_attempts'), 'int')}; "
              f"{format_value(s.get('queued'), 'int')} queued", level),
    ]
    return '<section class="cards">' + "".join(cards) + "</section>"


def templates_section(s: dict[str, Any]) -> list[str]:
    """The per-template figures: one column per template (none for an older summary)."""
    names, rows = template_cells(s)
    if not names:
        return []
    return ['<h2 id="templates">Per template</h2>',
            '<p class="muted">Each template\'s projects and computes on their own; '
            "the counts add up to the fleet's in the summary below.</p>",
            _table(["", *names], [[label, *cells] for label, cells in rows], "templates")]


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], cls: str = "") -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def summary_html(s: dict[str, Any]) -> str:
    blocks = []
    for section, cells in summary_sections(s):
        rows = "".join(f"<tr><th>{_e(label)}</th><td>{_e(value)}</td></tr>"
                       for label, value in cells)
        blocks.append(f'<div class="block"><h3>{_e(section)}</h3>'
                      f'<table class="kv">{rows}</table></div>')
    return '<div class="grid">' + "".join(blocks) + "</div>"


_SECONDS = re.compile(r"^(\d+(?:\.\d+)?(?:e[+-]?\d+)?) s$")


def readable_assumption(value: str) -> str:
    """`1.2096e+06 s` -> `14 d (1,209,600 s)`; anything else as given."""
    match = _SECONDS.fullmatch(value.strip())
    if match is None:
        return value
    seconds = float(match.group(1))
    if seconds < 120:
        return value
    return f"{format_duration(seconds)} ({seconds:,.0f} s)"


def _start_text(iso: str) -> str:
    try:
        start = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return iso
    return start.strftime("%a %d %b %Y, %H:%M UTC")


def chart_figures(out_dir: Path) -> list[tuple[str, str, str]]:
    """(heading, caption, data URI) of each chart PNG present in out_dir."""
    out = []
    for filename, heading, caption in CHARTS:
        path = out_dir / filename
        if path.exists():
            data = base64.b64encode(path.read_bytes()).decode("ascii")
            out.append((heading, caption, f"data:image/png;base64,{data}"))
    return out


def render_report(summary: dict[str, Any], run: dict[str, Any],
                  charts: Sequence[tuple[str, str, str]], scenario: Scenario | None = None) -> str:
    """The page as a string. `run` is run.json's content; `charts` (heading, caption, data URI)."""
    name = run.get("name") or summary.get("name") or "run"
    meta = [f"seed {run.get('seed', summary.get('seed'))}",
            f"starts {_start_text(str(run.get('start', summary.get('start', ''))))}",
            f"{format_duration(float(run.get('duration_s', 0.0)))} simulated"]
    if scenario is not None:
        meta.insert(0, f"{scenario.plan} plan")
    parts = [
        f'<header><div class="eyebrow">sim · capacity-planning report</div>'
        f"<h1>{_e(name)}</h1><p class=\"meta\">{_e(' · '.join(meta))}</p>",
        f'<p class="fleet">{_e(fleet_line(scenario))}</p>' if scenario is not None else "",
        '<nav><a href="#figures">Key figures</a><a href="#fleet">Fleet</a>'
        '<a href="#templates">Per template</a><a href="#charts">Charts</a>'
        '<a href="#summary">Summary</a>'
        '<a href="#assumptions">Assumptions</a></nav></header>',
        '<h2 id="figures">Key figures</h2>', key_cards(summary),
    ]
    if scenario is not None:
        headers = ["template", "branch", "compute", "size", "scale to zero", "connections",
                   "workload"]
        rows = [[r[h] for h in headers] for r in fleet_rows(scenario)]
        parts += ['<h2 id="fleet">Fleet</h2>', _table(headers, rows, "fleet")]
    parts += templates_section(summary)
    parts.append('<h2 id="charts">Charts</h2>')
    for heading, caption, uri in charts:
        parts.append(f'<figure><figcaption><h3>{_e(heading)}</h3><p>{_e(caption)}</p>'
                     f'</figcaption><img alt="{_e(heading)}" src="{uri}"></figure>')
    if not charts:
        parts.append('<p class="muted">No charts in this directory: run <code>sim plot</code>.</p>')
    shown = dict(summary, start=_start_text(str(summary.get("start", ""))))
    parts += ['<h2 id="summary">Summary</h2>', summary_html(shown)]
    assumptions = sorted((run.get("assumptions") or {}).items())
    parts += ['<h2 id="assumptions">Assumptions</h2>',
              '<p class="muted">What the engine took for the parts of the service it cannot '
              "observe: change them in the scenario's <code>engine:</code> and "
              "<code>faults:</code> sections.</p>",
              _table(["assumption", "value"],
                     [[k, readable_assumption(str(v))] for k, v in assumptions], "kv wide")]
    parts.append('<footer>Tables of this run sit beside this page as Parquet files '
                 "(computes, intervals, operations, connections, wakes, actions, "
                 "operations per hour, cold-start CDF, fleet); "
                 "<code>sim plot DIR</code> redraws the charts and this page.</footer>")
    body = "\n".join(p for p in parts if p)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{_e(name)} — sim report</title><style>{CSS}</style></head>"
            f"<body><main>\n{body}\n</main></body></html>\n")


def write_report(out_dir: str | Path, *, summary: dict[str, Any] | None = None,
                 scenario: Scenario | None = None) -> Path:
    """Write report.html into a run's directory, from the files `sim run` left there.

    Without `scenario`, the copy of the scenario file in the directory (if
    any) describes the fleet.
    """
    import json

    out = Path(out_dir)
    if summary is None:
        summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    if scenario is None and (out / SCENARIO_FILE).exists():
        from sim.scenario.loader import ScenarioError, load_scenario

        try:
            scenario = load_scenario(out / SCENARIO_FILE)
        except ScenarioError:
            scenario = None  # a relative replay path may not resolve from here
    page = render_report(summary, read_run(out), chart_figures(out), scenario)
    path = out / REPORT_FILE
    path.write_text(page, encoding="utf-8")
    return path


CSS = """
:root{--ink:#1b2230;--muted:#5d6678;--line:#e2e5eb;--bg:#f5f6f8;--card:#fff;
--accent:#1f6fb4;--warn:#b26a00;--bad:#c0392b}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);
font:15px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
font-variant-numeric:tabular-nums}
main{max-width:1260px;margin:0 auto;padding:36px 32px 72px}
header{border-bottom:1px solid var(--line);padding-bottom:18px;margin-bottom:8px}
.eyebrow{text-transform:uppercase;letter-spacing:.08em;font-size:12px;color:var(--accent);
font-weight:600}
h1{font-size:34px;line-height:1.15;margin:6px 0 6px;letter-spacing:-.01em}
h2{font-size:21px;margin:40px 0 14px;padding-top:4px}
h3{font-size:15px;margin:0 0 4px}
.meta{margin:0;color:var(--muted);font-size:16px}
.fleet{margin:4px 0 0;font-size:16px}
nav{margin-top:14px;display:flex;gap:18px;flex-wrap:wrap}
nav a{color:var(--accent);text-decoration:none;font-size:14px}
nav a:hover{text-decoration:underline}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(180px,1fr));gap:14px}
.card{background:var(--card);border:1px solid var(--line);border-radius:10px;
padding:14px 16px 12px;border-top:4px solid var(--accent)}
.card.warn{border-top-color:var(--warn)}.card.bad{border-top-color:var(--bad)}
.card .label{font-size:13px;color:var(--muted);font-weight:600}
.card .value{font-size:28px;font-weight:650;margin:2px 0;letter-spacing:-.01em}
.card.bad .value{color:var(--bad)}.card.warn .value{color:var(--warn)}
.card .note{font-size:13px;color:var(--muted)}
table{border-collapse:collapse;background:var(--card);border:1px solid var(--line);
border-radius:10px;overflow:hidden;width:100%}
th,td{text-align:left;padding:7px 12px;border-bottom:1px solid var(--line);vertical-align:top}
thead th{background:#eef1f5;font-size:13px;color:var(--muted);font-weight:600}
tbody tr:last-child td,tbody tr:last-child th{border-bottom:none}
table.fleet td:first-child{font-weight:600;white-space:nowrap}
table.fleet td:nth-child(-n+5){white-space:nowrap}
table.templates{width:auto;min-width:60%}
table.templates td{text-align:right;white-space:nowrap;padding-left:28px}
table.templates td:first-child{text-align:left;padding-left:12px}
table.templates thead th:not(:first-child){text-align:right}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(360px,1fr));gap:18px}
.block h3{margin:0 0 6px;color:var(--muted);text-transform:uppercase;font-size:12px;
letter-spacing:.06em}
table.kv th{font-weight:400;color:var(--ink);width:62%}
table.kv td{text-align:right;font-weight:600}
table.kv.wide th,table.kv.wide td{text-align:left}
table.kv.wide td:first-child{width:40%;font-weight:400}
figure{margin:0 0 22px;background:var(--card);border:1px solid var(--line);border-radius:10px;
padding:16px 18px 8px}
figcaption p{margin:0 0 8px;color:var(--muted);font-size:14px}
figure img{display:block;width:100%;height:auto}
code{font:13px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:#eef1f5;
padding:1px 5px;border-radius:4px}
.muted{color:var(--muted)}
footer{margin-top:40px;color:var(--muted);font-size:13px;border-top:1px solid var(--line);
padding-top:14px}
"""

"""Write the capacity-planning notebooks of this directory (outputs stripped).

    python notebooks/build_notebooks.py

The notebooks are generated so that they stay reviewable as code: edit the
cells here, run this script, commit both. Each notebook calls only the
public library (`import sim`) and reads its sizes from a cell tagged
`parameters`; with SIM_NOTEBOOK_SMALL=1 in the environment it runs a small
version in seconds (the tests execute every notebook that way).
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent


def md(text: str) -> nbformat.NotebookNode:
    return new_markdown_cell(text.strip())


def code(text: str, *tags: str) -> nbformat.NotebookNode:
    cell = new_code_cell(text.strip())
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def notebook(cells: list[nbformat.NotebookNode]) -> nbformat.NotebookNode:
    nb = new_notebook(cells=cells)
    for i, cell in enumerate(nb.cells):
        cell.id = f"cell-{i:02d}"  # stable ids: a rebuild changes nothing it need not
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    return nb


# ---- 1. choosing a scale-to-zero timeout ----------------------------------------------------

TIMEOUT = notebook([
    md("""
# Choosing a scale-to-zero timeout

A compute that has had no connection for `suspend_timeout_seconds` is suspended and
stops costing; the next connection waits for a cold start. A shorter timeout saves
CU-hours and costs cold starts. This notebook sweeps the timeout for **two workload
shapes with the same daily volume**:

* **steady**: Poisson arrivals all day long;
* **office hours**: a daily cycle from nothing at 02:00 UTC to twice the mean at 14:00 UTC.

Every point is the mean of several seeds with its 95% confidence interval. For the
steady shape the closed form is drawn too: a Poisson stream of rate λ with sessions of
mean E[D] finds the compute suspended with probability exp(−λ (T + E[D])).
"""),
    code("""
import os

SMALL = os.environ.get("SIM_NOTEBOOK_SMALL") == "1"  # the tests' quick version

PROJECTS = 2 if SMALL else 10            # identical projects per shape
DAYS = 1 if SMALL else 5
TIMEOUTS = [60, 300, -1] if SMALL else [60, 300, 900, 1800, 3600, -1]   # -1 = never suspend
REPLICATIONS = 2 if SMALL else 3         # seeds per point
MEAN_PER_HOUR = 12                       # connections per project and hour, over a day
SESSION_S = 30                           # mean session length
SIZE_CU = 0.25                           # fixed size: cost follows time on alone
WORKERS = 0 if SMALL else None           # 0: in this process; None: dask, one worker per CPU
""", "parameters"),
    code("""
import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import sim

SHAPES = {
    "steady": {"kind": "poisson", "per_hour": MEAN_PER_HOUR},
    "office hours": {"kind": "diurnal", "peak_per_hour": 2 * MEAN_PER_HOUR,
                     "trough_per_hour": 0, "peak_hour": 14},
}


def scenario(shape: str) -> dict:
    compute = {
        "type": "read_write",
        "size": {"cu": SIZE_CU},
        "workload": {"arrivals": SHAPES[shape],
                     "session": {"dist": "exponential", "mean_s": SESSION_S}},
    }
    return {
        "name": f"timeout-{shape.replace(' ', '-')}", "seed": 11, "duration": f"{DAYS}d",
        "price_per_cu_hour": 0.16, "record_connections": "off",
        "projects": [{"name": "app", "count": PROJECTS,
                      "branches": [{"name": "main", "computes": [compute]}]}],
    }


with sim.open_client(WORKERS) as client:  # None with WORKERS = 0: runs stay in this process
    sweeps = {
        shape: sim.run_sweep(scenario(shape), {"computes.suspend_timeout_seconds": TIMEOUTS},
                             replications=REPLICATIONS, client=client, workers=WORKERS)
        for shape in SHAPES
    }
"""),
    md("## The numbers per timeout"),
    code("""
def timeout_text(t: int) -> str:
    return "never" if t == -1 else "5 min (default)" if t == 0 else f"{t // 60} min"


def theory_cold_per_1000(t: int) -> float:
    # the steady shape only: P(suspended) = exp(-lam (T + E[D])); T = 0 means 300 s
    if t == -1:
        return 0.0
    seconds = 300 if t == 0 else t
    return 1000 * sim.p_suspended(MEAN_PER_HOUR / 3600, seconds, SESSION_S)


rows = []
for shape, result in sweeps.items():
    for p in result.points.to_dict("records"):
        t = int(p["computes.suspend_timeout_seconds"])
        rows.append({
            "shape": shape, "timeout": timeout_text(t),
            "cost": p["cost_mean"], "cost ±": p["cost_ci_high"] - p["cost_mean"],
            "cold starts / 1000 sessions": p["cold_starts_per_1000_sessions_mean"],
            "± ": p["cold_starts_per_1000_sessions_ci_high"]
                  - p["cold_starts_per_1000_sessions_mean"],
            "theory (steady)": theory_cold_per_1000(t) if shape == "steady" else math.nan,
            "wake p99 (s)": p["wake_p99_s_mean"],
            "computes on (mean)": p["mean_active_computes_mean"],
        })
table = pd.DataFrame(rows)
table.round(3)
"""),
    md("""
## Cost against cold starts

Left: the trade-off, one point per timeout. Right: how the cold-start rate falls with the
timeout; the dashed line is the closed form for the steady shape.
"""),
    code("""
def clustered(x, y, labels, tol=0.03):
    # one label for points drawn on top of each other (the long timeouts all sit near 0)
    spans = (np.nanmax(x) or 1.0, np.nanmax(y) or 1.0)
    groups = []
    for xi, yi, label in zip(x, y, labels, strict=True):
        last = groups[-1] if groups else None
        if last and abs(xi - last[0]) < tol * spans[0] and abs(yi - last[1]) < tol * spans[1]:
            last[2].append(label)
        else:
            groups.append((xi, yi, [label]))
    return [(xi, yi, " · ".join(names)) for xi, yi, names in groups]


fig, (ax, right) = plt.subplots(1, 2, figsize=(14, 6), layout="constrained",
                                gridspec_kw={"width_ratios": [3, 2]})
colors = {"steady": "tab:blue", "office hours": "tab:orange"}
offsets = {"steady": (8, 6), "office hours": (8, -16)}
for shape, result in sweeps.items():
    pts = result.points
    timeouts = pts["computes.suspend_timeout_seconds"].to_numpy()
    x = pts["cold_starts_per_1000_sessions_mean"].to_numpy()
    y = pts["cost_mean"].to_numpy()
    xerr = np.nan_to_num(pts["cold_starts_per_1000_sessions_ci_high"].to_numpy() - x)
    yerr = np.nan_to_num(pts["cost_ci_high"].to_numpy() - y)
    ax.errorbar(x, y, xerr=xerr, yerr=yerr, fmt="o-", capsize=4, color=colors[shape],
                label=f"{shape} (simulated, mean ± 95% CI)")
    for xi, yi, text in clustered(x, y, [timeout_text(int(t)) for t in timeouts]):
        ax.annotate(text, (xi, yi), xytext=offsets[shape], textcoords="offset points",
                    color=colors[shape])
    finite = timeouts > 0
    right.errorbar(timeouts[finite] / 60, x[finite], yerr=xerr[finite], fmt="o", capsize=4,
                   color=colors[shape], label=f"{shape} (simulated)")

lam = MEAN_PER_HOUR / 3600
T = np.geomspace(60, 2 * 3600, 80)
right.plot(T / 60, 1000 * np.exp(-lam * (T + SESSION_S)), "--", color="tab:blue", alpha=0.7,
           label="steady, closed form exp(−λ(T + E[D]))")
ax.set_xlabel("cold starts per 1,000 sessions")
ax.set_ylabel(f"cost of {PROJECTS} projects over {DAYS} days")
ax.set_title("Cost against cold starts, one point per timeout")
ax.set_xlim(left=-15)
ax.set_ylim(0, ax.get_ylim()[1] * 1.06)  # room for the labels of the top points
ax.grid(alpha=0.3)
ax.legend(loc="lower left")
right.set_xscale("log")
right.set_xticks([1, 5, 15, 30, 60], ["1", "5", "15", "30", "60"])
right.minorticks_off()
right.set_xlabel("suspend timeout (minutes, log scale)")
right.set_ylabel("cold starts per 1,000 sessions")
right.set_title("Cold starts against the timeout")
right.grid(alpha=0.3)
right.legend()
plt.show()
"""),
    md("## What it finds"),
    code("""
def point(shape: str, t: int) -> dict:
    pts = sweeps[shape].points
    return pts[pts["computes.suspend_timeout_seconds"] == t].iloc[0].to_dict()


for shape in SHAPES:
    never, default, short = point(shape, -1), point(shape, 300), point(shape, 60)
    print(f"{shape}: never suspending costs {never['cost_mean']:.2f}; "
          f"5 min saves {1 - default['cost_mean'] / never['cost_mean']:.0%} "
          f"with {default['cold_starts_per_1000_sessions_mean']:.0f} cold starts per 1000 "
          f"sessions; 1 min saves {1 - short['cost_mean'] / never['cost_mean']:.0%} "
          f"with {short['cold_starts_per_1000_sessions_mean']:.0f} per 1000.")
"""),
])


# ---- 2. sizing: refused and queued connections --------------------------------------------

SIZING = notebook([
    md("""
# Sizing: refused and queued connections against CU

`max_connections` grows with the compute size. With direct connections, a connection
beyond it is refused (SQLSTATE 53300); through the pooler it waits in a queue for one of
the pool's server connections (90% of `max_connections`) and gives up after the queue
timeout. For a given load this notebook sweeps the size, with and without the pooler,
and draws the queueing theory over the simulated points:

* direct: an M/G/c/c loss system, refused share = Erlang-B B(c, a), with c =
  max_connections and a = λ·E[D] the offered load in Erlangs;
* pooled: an M/M/k queue with k pool servers, share of connections that wait = Erlang-C
  C(k, a) (everyone waits once a ≥ k).

Computes never suspend here, so that cold starts do not blur the comparison.
"""),
    code("""
import os

SMALL = os.environ.get("SIM_NOTEBOOK_SMALL") == "1"  # the tests' quick version

ARRIVALS_PER_HOUR = 14_400    # connections per hour (4 per second)
SESSION_S = 50                # mean session length: offered load 200 Erlangs
SIZES = [0.25, 0.5, 1] if SMALL else [0.25, 0.5, 1, 2]
DURATION = "15m" if SMALL else "2h"
REPLICATIONS = 2 if SMALL else 3
WORKERS = 0 if SMALL else None           # 0: in this process; None: dask, one worker per CPU
""", "parameters"),
    code("""
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import sim

doc = {
    "name": "sizing", "seed": 7, "duration": DURATION, "record_connections": "off",
    "projects": [{"name": "db", "branches": [{"name": "main", "computes": [{
        "type": "read_write", "size": {"cu": SIZES[0]}, "suspend_timeout_seconds": -1,
        "workload": {"arrivals": {"kind": "poisson", "per_hour": ARRIVALS_PER_HOUR},
                     "session": {"dist": "exponential", "mean_s": SESSION_S}},
    }]}]}],
}
result = sim.run_sweep(doc, {"computes.size.cu": SIZES, "computes.pooler_enabled": [False, True]},
                       replications=REPLICATIONS, workers=WORKERS)
load = ARRIVALS_PER_HOUR / 3600 * SESSION_S
print(f"offered load a = {load:g} Erlangs")
"""),
    md("## Simulated against theory"),
    code("""
def erlang_c_or_one(k: int, a: float) -> float:
    return sim.erlang_c(k, a) if a < k else 1.0


rows = []
for p in result.points.to_dict("records"):
    cu, pooled = p["computes.size.cu"], bool(p["computes.pooler_enabled"])
    c = sim.max_connections_fixed(cu)
    k = sim.default_pool_size(c)
    rows.append({
        "CU": cu, "connections": "pooled" if pooled else "direct", "max_connections": c,
        "pool servers": k if pooled else None,
        "refused %": 100 * p["refused_share_mean"],
        "Erlang-B %": None if pooled else 100 * sim.erlang_b(c, load),
        "queued %": 100 * p["queued_share_mean"],
        "Erlang-C %": 100 * erlang_c_or_one(k, load) if pooled else None,
        "queue timeouts": p["queue_timeouts_mean"],
    })
table = pd.DataFrame(rows)
table.round(3)
"""),
    code("""
direct = result.points[~result.points["computes.pooler_enabled"]]
pooled = result.points[result.points["computes.pooler_enabled"]]
ticks = np.array(SIZES, dtype=float)
# max_connections grows linearly between the sizes of the table: draw theory as a curve
table_cu = np.array([0.25, 0.5, 1, 2, 3, 4])
fine = np.geomspace(ticks.min(), ticks.max(), 120)
caps = np.interp(fine, table_cu, [sim.max_connections_fixed(v) for v in table_cu]).astype(int)

fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5.5), layout="constrained")
for ax, pts, column, title in ((left, direct, "refused_share", "direct: refused (53300)"),
                               (right, pooled, "queued_share", "pooled: waited in the queue")):
    x = pts["computes.size.cu"].to_numpy(dtype=float)
    y = 100 * pts[f"{column}_mean"].to_numpy()
    err = np.nan_to_num(100 * pts[f"{column}_ci_high"].to_numpy() - y)
    ax.errorbar(x, y, yerr=err, fmt="o", ms=8, capsize=5, zorder=3,
                label="simulated (mean ± 95% CI)")
    for xi, yi in zip(x, y, strict=True):
        ax.annotate(f"{yi:.3g} %", (xi, yi), xytext=(8, 8), textcoords="offset points")
    ax.set_title(title)
    ax.set_xscale("log", base=2)
    ax.set_xticks(ticks, [f"{v:g}" for v in ticks])
    ax.minorticks_off()
    ax.set_xlabel("compute size (CU)")
    ax.set_ylabel("% of connection attempts")
    ax.grid(alpha=0.3)
left.plot(fine, [100 * sim.erlang_b(c, load) for c in caps], "--", color="0.3",
          label=f"Erlang-B, a = {load:g}")
right.plot(fine, [100 * erlang_c_or_one(sim.default_pool_size(c), load) for c in caps], "--",
           color="0.3", label=f"Erlang-C, a = {load:g}")
for ax in (left, right):
    ax.set_ylim(-3, 105)
    ax.legend()
fig.suptitle(f"{ARRIVALS_PER_HOUR:,} connections/h of {SESSION_S} s: what size keeps them out of the queue")
plt.show()
"""),
    md("## What it finds"),
    code("""
ok_direct = direct[direct["refused_share_mean"] < 0.001]["computes.size.cu"].min()
ok_pooled = pooled[pooled["queued_share_mean"] < 0.01]["computes.size.cu"].min()
for p in direct.to_dict("records"):
    c = sim.max_connections_fixed(p["computes.size.cu"])
    print(f"direct {p['computes.size.cu']:g} CU (max_connections {c}): refused "
          f"{p['refused_share_mean']:.2%}, Erlang-B {sim.erlang_b(c, load):.2%}")
for p in pooled.to_dict("records"):
    k = sim.default_pool_size(sim.max_connections_fixed(p["computes.size.cu"]))
    print(f"pooled {p['computes.size.cu']:g} CU ({k} servers): queued "
          f"{p['queued_share_mean']:.2%}, Erlang-C {erlang_c_or_one(k, load):.2%}, "
          f"timeouts {p['queue_timeouts_mean']:.0f}")
print(f"smallest size refusing < 0.1% (direct): {ok_direct:g} CU; "
      f"queueing < 1% (pooled): {ok_pooled:g} CU")
"""),
])


# ---- 3. a month's fleet forecast ---------------------------------------------------------

FORECAST = notebook([
    md("""
# A month's fleet forecast

A fleet with a daily cycle: a few busy applications that follow the European working day
and a long tail of small tenants that work office hours and scale to zero at night. One
run over a month gives the CU-hours, the bill, and the peak number of computes running at
once: what the control plane and the compute hosts must carry.

The fleet is split by project across dask workers (`sim.run_fleet(..., workers=N)`); the
result is row for row the one a single process gives for the same seed. The workload
model has a daily cycle but no weekly one: weekends look like weekdays.
"""),
    code("""
import os

SMALL = os.environ.get("SIM_NOTEBOOK_SMALL") == "1"  # the tests' quick version

DAYS = 2 if SMALL else 30
APPS = 2 if SMALL else 8           # busy applications (autoscaling 0.25-4 CU, pooled)
TENANTS = 6 if SMALL else 60       # small tenants (0.25-1 CU, office hours)
PRICE = 0.16                       # per CU-hour
WORKERS = 0 if SMALL else None     # 0: in this process; None: dask, one worker per CPU
""", "parameters"),
    code("""
import matplotlib.pyplot as plt
import pandas as pd

import sim

office = [0, 0, 0, 0, 0, 0, 0.5, 2, 6, 10, 11, 10, 8, 10, 11, 10, 7, 4, 2, 1, 0.5, 0.5, 0, 0]
doc = {
    "name": "month-forecast", "seed": 2026, "start": "2026-02-02T00:00:00Z",
    "duration": f"{DAYS}d", "plan": "scale", "price_per_cu_hour": PRICE,
    "record_connections": "off",
    "projects": [
        {"name": "app", "count": APPS, "branches": [{"name": "main", "computes": [{
            "type": "read_write", "autoscaling": {"min_cu": 0.25, "max_cu": 4},
            "pooler_enabled": True,
            "workload": {"arrivals": {"kind": "diurnal", "peak_per_hour": 360,
                                      "trough_per_hour": 6, "peak_hour": 15},
                         "session": {"dist": "lognormal", "mean_s": 12, "sigma": 1.0},
                         "cpu_per_session": 0.15, "memory_gb_per_session": 0.05}}]}]},
        {"name": "tenant", "count": TENANTS, "plan": "launch", "branches": [{"name": "main", "computes": [{
            "type": "read_write", "autoscaling": {"min_cu": 0.25, "max_cu": 1},
            "workload": {"arrivals": {"kind": "diurnal", "hourly": office},
                         "session": {"dist": "exponential", "mean_s": 20},
                         "cpu_per_session": 0.05}}]}]},
    ],
}
result = sim.run_fleet(doc, workers=WORKERS)
tables = sim.frames(result)
totals = sim.summary(tables, result)
print(sim.summary_table(totals))
"""),
    md("## Day by day"),
    code("""
fleet = tables["fleet"].set_index("time")
# the fleet already exists at the first minute: the run's warm-up is in no figure
peak_on = totals["peak_active_computes_minute"]
peak_cu = totals["peak_total_cu_minute"]
daily = pd.DataFrame({
    "CU-hours": fleet["cu_seconds"].resample("1D").sum() / 3600,
    "peak computes on (minute mean)": fleet["active_computes"].resample("1D").max(),
    "peak CU (minute mean)": fleet["total_cu"].resample("1D").max(),
})
daily["cost"] = daily["CU-hours"] * PRICE
computes = tables["computes"]
by_template = computes.groupby("template")[["cu_hours", "cost"]].sum()
by_template["share of cost"] = by_template["cost"] / by_template["cost"].sum()
display(by_template.round(2))
daily.head(7).round(2)
"""),
    code("""
hourly = fleet[["active_computes", "total_cu"]].resample("1h").mean()
fig, (top, bottom) = plt.subplots(2, 1, figsize=(13, 8), sharex=True, layout="constrained")
top.plot(hourly.index, hourly["active_computes"], lw=1, label="computes on (hourly mean)")
top.plot(hourly.index, hourly["total_cu"], lw=1, label="CU in use (hourly mean)")
top.axhline(peak_on, ls="--", color="0.4", label=f"peak computes on: {peak_on:.0f} (minute mean)")
top.set_ylim(0, max(peak_on, totals["computes"] * 0.5) * 1.25)
top.set_ylabel("computes / CU")
top.set_title(f"{APPS + TENANTS} projects over {DAYS} days")
top.legend(loc="upper left", ncols=3)
top.grid(alpha=0.3)
days = daily.index.tz_convert(None)
bottom.bar(days, daily["cost"], width=0.85, align="edge", label="cost per day")
bottom.set_ylabel("cost per day")
twin = bottom.twinx()
ends = days + pd.Timedelta("1D")
twin.plot([days[0], *ends], [0, *daily["cost"].cumsum()], color="tab:red")
twin.set_ylim(bottom=0)
twin.set_ylabel("cumulative cost", color="tab:red")
bottom.grid(alpha=0.3)
bottom.set_title(f"cost: {totals['cost']:,.2f} in all at {PRICE} per CU-hour")
plt.show()
"""),
    md("## What it finds"),
    code("""
print(f"{DAYS} days, {APPS} apps + {TENANTS} tenants: {totals['cu_hours']:,.0f} CU-hours, "
      f"cost {totals['cost']:,.2f} ({totals['cost'] / DAYS * 30:,.2f} per 30 days)")
print(f"peak computes on {peak_on:.0f} of {totals['computes']} (minute mean; p99 "
      f"{totals['p99_active_computes_minute']:.1f}; {totals['peak_active_computes']} at any "
      f"instant); mean {totals['mean_active_computes']:.1f}; peak CU {peak_cu:.1f}, "
      f"mean {totals['mean_total_cu']:.1f} CU")
print(f"cold starts {totals['cold_starts']:,} "
      f"({totals['cold_starts_per_1000_sessions']:.1f} per 1000 sessions), "
      f"wake p99 {totals['wake_p99_s']:.2f} s; busiest day {daily['cost'].idxmax():%a %d %b} "
      f"costs {daily['cost'].max():,.2f}")
"""),
])


# ---- 4. recommending settings for three kinds of tenants -----------------------------------

RECOMMEND = notebook([
    md("""
# Recommending settings for three kinds of tenants

A platform hosts three kinds of tenants, each with the settings it runs today:

* **busy**: SaaS back ends, busy all day and quieter at night; sized at 2 CU "to be safe",
  never suspended, pooled;
* **office**: internal tools used in office hours; the default 5-minute timeout,
  autoscaling 0.25-2 CU;
* **hobby**: side projects visited now and then; a one-hour timeout, 0.25-2 CU.

The service level: at most 20 cold starts per 1,000 sessions and 0.1 % refused
connections; busy tenants' connections must not wait more than 2 s for a cold start
(p99); hobby tenants accept a cold start on every visit. `sim.recommend` prices every
setting of each template's space with the closed forms (scale to zero
exp(−λ (T + E[D] + w)) hour by hour, Erlang-B, Erlang-C), prunes the hopeless ones,
and simulates the cheapest candidates with several seeds on dask. A setting stands only
when the upper end of the 95 % interval of every figure meets its target.

The simulator has no model of query latency, so CPU needs are not a target: the space of
busy tenants is held to 1 CU and up (`--space busy.cu=1,2`), what their queries need.
"""),
    code("""
import os

SMALL = os.environ.get("SIM_NOTEBOOK_SMALL") == "1"  # the tests' quick version

BUSY, OFFICE, HOBBY = (3, 6, 10) if SMALL else (100, 400, 500)   # projects of each kind
DAYS = 2 if SMALL else 7
REPLICATIONS = 3 if SMALL else 5         # seeds per candidate setting
WORKERS = 0 if SMALL else None           # 0: in this process; None: dask, one worker per CPU
SLO = ["cold_starts_per_1000=20", "refused=0.1%", "busy.wake_p99=2s",
       "hobby.cold_starts_per_1000=1000"]
SPACE = ["busy.cu=1,2"]
""", "parameters"),
    code("""
import tempfile
from pathlib import Path

import pandas as pd
from IPython.display import Image, display

import sim

office_hours = [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 2, 10, 40, 40, 40, 40,
                30, 40, 40, 40, 40, 20, 5, 2, 1, 0.5, 0.5, 0.5]


def template(name, count, compute, arrivals, session, plan=None):
    compute = dict(compute, type="read_write",
                   workload={"arrivals": arrivals, "session": session})
    out = {"name": name, "count": count,
           "branches": [{"name": "main", "computes": [compute]}]}
    return out if plan is None else dict(out, plan=plan)


doc = {
    "name": "tenants", "seed": 4, "start": "2026-01-05T00:00:00Z", "duration": f"{DAYS}d",
    "plan": "launch", "price_per_cu_hour": 0.16,
    "record_connections": "off", "record_events": "off",
    "projects": [
        template("busy", BUSY,
                 {"size": {"cu": 2}, "suspend_timeout_seconds": -1, "pooler_enabled": True},
                 {"kind": "diurnal", "peak_per_hour": 400, "trough_per_hour": 40, "peak_hour": 15},
                 {"dist": "lognormal", "mean_s": 30, "sigma": 1.0}),
        template("office", OFFICE,
                 {"autoscaling": {"min_cu": 0.25, "max_cu": 2}, "suspend_timeout_seconds": 0},
                 {"kind": "diurnal", "hourly": office_hours},
                 {"dist": "exponential", "mean_s": 60}),
        template("hobby", HOBBY, {"suspend_timeout_seconds": 3600},
                 {"kind": "poisson", "per_hour": 1},
                 {"dist": "exponential", "mean_s": 20}, plan="free"),
    ],
}
rec = sim.recommend(doc, SLO, SPACE, replications=REPLICATIONS, workers=WORKERS)
print(sim.recommendation_tables(rec))
"""),
    md("## Today against the recommendation"),
    code("""
rows = []
for name, t in rec.templates.items():
    chosen = t.recommended or t.closest
    rows.append({
        "template": name, "projects": t.count,
        "today": t.current.choice.label(),
        "recommended": t.recommended.choice.label() if t.recommended else "none meets the targets",
        "cost today": t.current.cost,
        "cost after": chosen.cost if t.recommended else None,
        "binding targets": ", ".join(x.label for x in t.binding) or "none",
        "choices priced": len(t.candidates),
        "choices simulated": sum(c.simulated for c in t.candidates),
    })
table = pd.DataFrame(rows).set_index("template")
table.round(2)
"""),
    md("""
## Cost against cold starts

Every choice of each template's space: hollow markers are the theory's price of choices
never simulated, filled ones were simulated (bars: 95 % intervals); grey ones miss a
target. The square is today, the star the recommendation.
"""),
    code("""
out = Path(tempfile.mkdtemp(prefix="recommend-"))
paths = sim.write_recommendation(rec, out)
display(Image(filename=str(paths["chart"])))
"""),
    md("## What it finds"),
    code("""
saving = rec.cost_now - rec.cost_after
print(f"{BUSY + OFFICE + HOBBY} computes over {DAYS} days: cost today {rec.cost_now:,.2f}, "
      f"recommended {rec.cost_after:,.2f}: saving {saving:,.2f} "
      f"({saving / rec.cost_now:.1%}); {rec.runs} runs in {rec.rounds} rounds")
for name, t in rec.templates.items():
    if t.recommended is None:
        print(f"{name}: no setting meets the targets")
        continue
    binds = ", ".join(x.label for x in t.binding) or "none (the cheapest choice of the space)"
    missed = ", ".join(x.label for x in t.current.misses(t.targets))
    today = f"today misses {missed}" if missed else "today meets every target"
    print(f"{name}: recommended {t.recommended.choice.label()} "
          f"(today {t.current.choice.label()}: {today}); cost {t.current.cost:,.2f} -> "
          f"{t.recommended.cost:,.2f}; binding: {binds}")
"""),
])


NOTEBOOKS = {
    "01_scale_to_zero_timeout.ipynb": TIMEOUT,
    "02_sizing_connections.ipynb": SIZING,
    "03_month_forecast.ipynb": FORECAST,
    "04_recommend_settings.ipynb": RECOMMEND,
}


def main() -> None:
    for name, nb in NOTEBOOKS.items():
        nbformat.validate(nb)
        nbformat.write(nb, HERE / name)
        print(f"wrote notebooks/{name}")


if __name__ == "__main__":
    main()

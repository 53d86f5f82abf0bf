"""What a planner could misread in operations.png, connections.png and the Pareto chart."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
from matplotlib.figure import Figure

from sim.metrics import frames, summary
from sim.metrics.charts import connections_chart, operations_chart
from sim.recommendation.output import BINDS, _targets_on, _value, draw_pareto, table_rows
from sim.recommendation.targets import as_targets

from .helpers import compute_row, operation, run


def _ops_figure(ops: list) -> Figure:
    result = run(duration_s=2 * 3600.0, operations=ops)
    tables = frames(result)
    return operations_chart(tables, summary(tables, result))


def test_a_few_failed_attempts_and_a_rare_action_stand_out_beside_thousands() -> None:
    ops = [operation("start_compute", at=float(i % 3600), id=f"op-s{i}") for i in range(2000)]
    ops += [operation("apply_config", at=4000.0, failures=2)]
    fig = _ops_figure(ops)
    top, low = fig.axes[0], fig.axes[1]
    labels = [t.get_text() for t in top.get_legend().get_texts()]
    assert "failed attempts (2)" in labels and "apply_config (1)" in labels
    assert "start_compute (2,000)" in labels
    # the lower panel is logarithmic: 2 failures take a visible share of its height
    assert low.get_yscale() == "log"
    bottom, top_y = low.get_ylim()
    share = (math.log(2) - math.log(bottom)) / (math.log(top_y) - math.log(bottom))
    assert share > 0.1
    [failed] = [line for line in low.get_lines() if line.get_linewidth() > 2]
    assert np.nanmax(failed.get_ydata()) == 2


def test_long_endpoint_ids_and_names_are_shortened_but_told_apart() -> None:
    computes = [compute_row(f"ep-throbbing-star-{i:03d}pfomlm9k", f"p-{i}",
                            project_name=f"customer-facing-storefront-backend-{i}",
                            peak_connections=10 + i) for i in range(20)]
    result = run(computes=computes)
    tables = frames(result)
    fig = connections_chart(tables, summary(tables, result))
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert len(labels) == 15 and len(set(labels)) == 15
    assert max(len(label) for label in labels) <= 44
    assert "customer-facing-s…ckend-19 (ep-…019pfomlm9k)" in labels


# ---- the Pareto chart and table of `sim recommend` ----------------------------------------


def _candidate(cold: float, cost: float, wake: float | None, misses: list) -> SimpleNamespace:
    figures = {"cold_starts_per_1000": (cold, cold, cold), "cost": (cost, cost, cost),
               "wake_p99_s": None if wake is None else (wake, wake, wake)}
    return SimpleNamespace(
        simulated=True, cost=cost, interval=lambda m: figures.get(m),
        misses=lambda targets: [t for t in targets if t.metric in misses],
        prediction=SimpleNamespace(cost=cost, figures={"cold_starts_per_1000": cold}),
        choice=SimpleNamespace(label=lambda: f"cost {cost}"))


def _busy_template() -> SimpleNamespace:
    """Today never suspends (no cold start, hence no wait); cheaper choices that suspend
    miss the wait target, which binds but is not on the chart's axes."""
    targets = as_targets(["cold_starts_per_1000=20", "wake_p99=2s"])
    today = _candidate(0.0, 5376.0, None, [])
    recommended = _candidate(0.0, 2688.0, None, [])
    cheaper = _candidate(6.0, 2600.0, 2.4, ["wake_p99_s"])
    return SimpleNamespace(targets=targets, binding=[targets[1]], current=today,
                           recommended=recommended, closest=None, failure=None, count=100,
                           candidates=[today, recommended, cheaper])


def test_the_table_says_why_a_wait_is_missing_and_what_binds_means() -> None:
    o = _busy_template()
    rows = {row[0]: row for row in table_rows(o, o.targets)}
    assert rows["cold-start wait p99"][1:] == ["no cold start", "no cold start",
                                               f"<= 2.00 s {BINDS}"]
    assert _value(o.current, "queue_wait_p99_s", "seconds") == "no queueing"
    # a t-interval of a few replications may reach below 0; no wait or count does
    spread = _candidate(0.5, 10.0, None, [])
    spread.interval = lambda m: (0.7, -0.5, 1.9)
    assert _value(spread, "wake_p99_s", "seconds") == "0.700 s [0 s, 1.90 s]"


def test_the_chart_shows_a_binding_target_off_its_axes() -> None:
    o = _busy_template()
    fig = Figure()
    ax = fig.subplots()
    _targets_on(ax, o)
    assert ax.get_legend_handles_labels()[1] == [
        "target: <= 20.0", "binds, not on these axes:\ncold-start wait p99 <= 2.00 s"]


def test_today_and_the_recommendation_are_never_cut_at_the_axes(tmp_path, monkeypatch) -> None:
    import matplotlib.pyplot as plt

    drawn = {}
    monkeypatch.setattr(plt, "close", lambda fig: drawn.setdefault("fig", fig))
    rec = SimpleNamespace(name="tenants", templates={"busy": _busy_template()})
    assert draw_pareto(rec, tmp_path / "pareto.png").stat().st_size > 0
    ax = drawn["fig"].axes[0]
    left, right = ax.get_xlim()
    assert left < 0 < 20 < right  # choices without cold starts sit inside, the target too
    marks = [line for line in ax.get_lines() if line.get_label() in ("now", "recommended")]
    assert len(marks) == 2 and not any(line.get_clip_on() for line in marks)

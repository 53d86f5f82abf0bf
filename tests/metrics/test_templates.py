"""Figures per template: they add up to the fleet's, differ where the templates differ, and do
not depend on what the run records."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from sim.engine.records import NO_TEMPLATE, QueueWaits, queue_waits_of, template_of
from sim.metrics import frames, summary, summary_table
from sim.metrics.charts import cost_by_template_chart
from sim.metrics.report import render_report
from sim.metrics.templates import queue_p99
from sim.sweep.fleet import run_fleet
from tests.planning.test_fleet import run_in_shards

#: a tier of rarely used projects that scale to zero after a minute, and a few busy pooled
#: ones whose small pool makes clients queue
TWO = {
    "name": "two-tiers",
    "seed": 3,
    "duration": "6h",
    "record_connections": "all",
    "record_events": "all",
    "projects": [
        {"name": "hobby", "count": 8, "branches": [{"name": "main", "computes": [{
            "type": "read_write", "suspend_timeout_seconds": 60,
            "workload": {"arrivals": {"kind": "poisson", "per_hour": 2},
                         "session": {"dist": "exponential", "mean_s": 60}}}]}]},
        {"name": "busy", "count": 2, "branches": [{"name": "main", "computes": [{
            "type": "read_write", "suspend_timeout_seconds": 3600, "size": {"cu": 0.25},
            "pooler_enabled": True, "pool_size": 2,
            "workload": {"arrivals": {"kind": "poisson", "per_hour": 400},
                         "session": {"dist": "exponential", "mean_s": 15}}}]}]},
    ],
}


def run(document: dict) -> dict:
    result = run_fleet(document)
    return summary(frames(result), result)


@pytest.fixture(scope="module")
def two() -> dict:
    return run(TWO)


def by_name(totals: dict) -> dict[str, dict]:
    return {t["template"]: t for t in totals["templates"]}


def test_template_of_a_project_key() -> None:
    assert template_of("shop[3]") == "shop"
    assert template_of("my-app[12]") == "my-app"
    assert template_of("api-1") == NO_TEMPLATE  # created by a scripted call


@pytest.mark.parametrize("key", ["projects", "computes", "sessions", "cold_starts", "refused",
                                 "queued", "queue_timeouts", "dropped", "connection_attempts",
                                 "suspends", "restarts", "disk_full_53100"])
def test_counts_add_up_to_the_fleets(two: dict, key: str) -> None:
    assert sum(t[key] for t in two["templates"]) == two[key]


@pytest.mark.parametrize("key", ["cu_hours", "cost", "mean_active_computes"])
def test_sums_add_up_to_the_fleets(two: dict, key: str) -> None:
    assert sum(t[key] for t in two["templates"]) == pytest.approx(two[key], rel=1e-9)


def test_two_templates_differ_as_their_workloads(two: dict) -> None:
    t = by_name(two)
    assert list(t) == ["hobby", "busy"]  # the scenario's order
    hobby, busy = t["hobby"], t["busy"]
    assert (hobby["projects"], hobby["computes"], busy["projects"], busy["computes"]) == \
        (8, 8, 2, 2)
    # a session every 30 min against a 1-minute timeout: nearly every session wakes its compute
    assert hobby["cold_starts_per_1000_sessions"] > 800
    # busy computes never idle an hour: no cold start after their creation
    assert busy["cold_starts"] == 0 and busy["wake_p99_s"] is None
    assert hobby["wake_p99_s"] > 0
    # the busy ones are always on; a hobby compute is on for a few minutes of each half hour
    assert busy["mean_active_computes"] == pytest.approx(2.0, abs=0.01)
    assert hobby["mean_active_computes"] < 2.0
    assert busy["peak_active_computes_minute"] == pytest.approx(2.0)
    # only the busy ones are pooled, and 400/h of 15 s on a pool of 2 queues now and then
    assert hobby["queue_wait_p99_s"] is None
    assert busy["queued"] > 0 and busy["queue_wait_p99_s"] > 0
    assert busy["cost"] > hobby["cost"]


def test_queue_wait_p99_from_the_connection_rows(two: dict) -> None:
    """Recorded in full, the rows give the same percentile: warm connections of pooled
    computes that got a session (their wait) or timed out (the whole timeout)."""
    result = run_fleet(TWO)
    rows = frames(result)["connections"]
    busy = set(frames(result)["computes"].query("template == 'busy'")["compute_id"])
    mine = rows[rows["compute_id"].isin(busy) & ~rows["cold"]]
    waits = np.concatenate([mine.loc[mine["outcome"] == "ok", "wait_s"].to_numpy(),
                            np.full(int((mine["outcome"] == "queue_timeout").sum()), 120.0)])
    assert by_name(two)["busy"]["queue_wait_p99_s"] == pytest.approx(np.quantile(waits, 0.99))


@pytest.mark.parametrize(("connections", "events"), [("off", "off"), ("sampled", "off"),
                                                     ("off", "all"), ("sampled", "all")])
def test_the_same_whatever_is_recorded(two: dict, connections: str, events: str) -> None:
    doc = dict(TWO, record_connections=connections, record_events=events)
    assert run(doc)["templates"] == two["templates"]


def test_the_same_in_shards(two: dict) -> None:
    for events in ("all", "off"):
        _, merged = run_in_shards(dict(TWO, record_events=events), parts=3)
        assert summary(frames(merged), merged)["templates"] == two["templates"]


def test_queue_p99_counts_the_zeros_it_does_not_keep() -> None:
    rng = np.random.default_rng(1)
    values = np.where(rng.random(5000) < 0.97, 0.0, rng.exponential(3.0, 5000))
    parts = [QueueWaits(), QueueWaits()]
    parts[0].add(values[:1234])
    parts[1].add(values[1234:])
    assert parts[0].zeros + parts[1].zeros == int((values == 0).sum())
    assert queue_p99(parts) == pytest.approx(float(np.quantile(values, 0.99)), abs=0, rel=0)
    assert queue_p99([]) is None
    zeros = QueueWaits()
    zeros.add(np.zeros(10))
    assert queue_p99([zeros]) == 0.0


def test_queue_waits_of_records() -> None:
    """Cold connections and refusals are left out; a queue timeout waited the timeout."""
    wait = np.array([0.0, 2.5, 9.0, 0.0, 0.0])
    outcome = np.array(["ok", "ok", "ok", "queue_timeout", "refused_53300"], dtype=object)
    cold = np.array([False, False, True, False, False])
    got = queue_waits_of(wait, outcome, cold, "ok", "queue_timeout", 120.0)
    assert got.tolist() == [0.0, 2.5, 120.0]


def test_table_summary_json_report_and_chart(two: dict, tmp_path) -> None:
    text = summary_table(two)
    head, _, tail = text.partition("PER TEMPLATE")
    assert tail, "no per-template table"
    header = tail.splitlines()[0].split()
    assert header == ["hobby", "busy"]
    hobby_cold = next(line for line in tail.splitlines() if "cold starts per 1,000" in line)
    assert hobby_cold.split()[-2] == f"{by_name(two)['hobby']['cold_starts_per_1000_sessions']:.0f}"
    json.dumps(two, allow_nan=False)  # plain JSON numbers
    page = render_report(two, {"name": "two-tiers"}, [])
    section = page.split('<h2 id="templates">', 1)[1].split("<h2", 1)[0]
    assert "<th>hobby</th><th>busy</th>" in section
    assert "queue wait p99 (pooled)" in section
    fig = cost_by_template_chart({}, two)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert [label.split("\n")[0] for label in labels] == ["busy", "hobby"]  # first on top
    assert "2 templates" in fig.axes[0].get_title()


def test_projects_of_no_template_are_their_own_column() -> None:
    doc = copy.deepcopy(TWO)
    doc["duration"] = "2h"
    doc["actions"] = [{"at": "1h", "call": "POST /projects",
                       "body": {"project": {"name": "extra"}}}]
    totals = run(doc)
    t = by_name(totals)
    assert list(t) == ["hobby", "busy", NO_TEMPLATE]
    assert t[NO_TEMPLATE]["projects"] == 1 and t[NO_TEMPLATE]["computes"] == 1
    assert sum(x["computes"] for x in totals["templates"]) == totals["computes"]


def test_the_same_whatever_is_recorded_when_the_engine_runs_computes() -> None:
    """The quickstart's scripted call hands two pooled computes to the engine for a while:
    its records of queue waits and on-spans count as the kernel's do."""
    from sim.sweep.fleet import read_source
    from tests.planning.conftest import QUICKSTART

    doc = read_source(QUICKSTART).document
    result = run_fleet(dict(doc, record_connections="all", record_events="all"))
    tables = frames(result)
    full = summary(tables, result)
    bare = run(dict(doc, record_connections="off", record_events="off"))
    assert bare["templates"] == full["templates"]
    assert by_name(full)["shop"]["queue_wait_p99_s"] is not None
    assert result.roads.get("kernel but for its scripted calls")  # the engine ran them a while
    # every warm connection to a pooled compute that got a session or timed out, once
    rows = tables["connections"]
    pooled = set(tables["computes"].query("pooler_enabled")["compute_id"])
    for compute_id in pooled:
        mine = rows[(rows["compute_id"] == compute_id) & ~rows["cold"]]
        # a dropped session's row was a session's: it waited in the queue before the cut
        expected = int(mine["outcome"].isin(["ok", "queue_timeout", "dropped"]).sum())
        waits = result.queue_waits[compute_id]
        assert waits.zeros + len(waits.positive()) == expected, compute_id

"""A plan per template: each template's bill is its projects' CU-hours beyond their
allowance at its price, the fleet's cost is the sum of the bills, and a scenario without
plans costs what it did."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sim.metrics import frames, summary, summary_table
from sim.rules.pricing import HOURS_PER_MONTH, PRESETS, Pricing
from sim.scenario.loader import ScenarioError, parse_scenario
from sim.sweep.fleet import run_fleet
from tests.planning.test_fleet import run_in_shards


def template(name: str, count: int, per_hour: float, pricing=None, size: float = 0.25) -> dict:
    t = {"name": name, "count": count, "branches": [{"name": "main", "computes": [{
        "type": "read_write", "size": {"cu": size}, "suspend_timeout_seconds": 60,
        "workload": {"arrivals": {"kind": "poisson", "per_hour": per_hour},
                     "session": {"dist": "exponential", "mean_s": 60}}}]}]}
    if pricing is not None:
        t["pricing"] = pricing
    return t


#: hobby projects on the free plan, a paid tier on Scale, one written out, one on the
#: scenario's price; a 2-day run gives each project 2 x 24 / 730 of its month's allowance
PLANS = {"name": "plans", "seed": 4, "duration": "2d", "price_per_cu_hour": 0.16,
         "record_events": "all",
         "projects": [template("hobby", 6, 2, "free"),
                      template("paid", 2, 200, "scale", size=1),
                      template("own", 2, 40, {"per_cu_hour": 0.5, "included_cu_hours": 30}),
                      template("plain", 1, 40)]}


@pytest.fixture(scope="module")
def run() -> tuple[dict, dict]:
    result = run_fleet(PLANS)
    tables = frames(result)
    return tables, summary(tables, result)


def test_each_template_is_billed_by_its_plan(run) -> None:
    tables, totals = run
    computes = tables["computes"]
    by = {t["template"]: t for t in totals["templates"]}
    months = 48 / HOURS_PER_MONTH
    for name, terms in (("hobby", PRESETS["free"]), ("paid", PRESETS["scale"]),
                        ("own", Pricing(0.5, 30)), ("plain", Pricing(0.16))):
        mine = computes[computes["template"] == name]
        per_project = mine.groupby("project_id")["cu_hours"].sum().to_numpy()
        allowance = terms.included_cu_hours * months
        billed = np.maximum(0.0, per_project - allowance).sum()
        assert by[name]["price_per_cu_hour"] == terms.per_cu_hour
        assert by[name]["included_cu_hours"] == pytest.approx(allowance * len(per_project))
        assert by[name]["billed_cu_hours"] == pytest.approx(billed, rel=1e-12)
        assert by[name]["cost"] == pytest.approx(billed * terms.per_cu_hour, rel=1e-12)
    # the free tier used CU-hours, within its allowance: nothing billed
    assert by["hobby"]["cu_hours"] > 0 and by["hobby"]["cost"] == 0.0
    # a project over its allowance pays for the rest, one under it for nothing
    own = computes[computes["template"] == "own"]["cu_hours"]
    assert (own > 30 * months).all() and 0 < by["own"]["billed_cu_hours"] < by["own"]["cu_hours"]


def test_the_fleets_cost_is_the_sum_of_the_bills(run) -> None:
    tables, totals = run
    for key in ("cost", "cu_hours", "included_cu_hours", "billed_cu_hours"):
        assert sum(t[key] for t in totals["templates"]) == pytest.approx(totals[key], rel=1e-12)
    assert tables["computes"]["cost"].sum() == pytest.approx(totals["cost"], rel=1e-12)


def test_the_summary_shows_each_templates_terms(run) -> None:
    _, totals = run
    text = summary_table(totals)
    assert "cost (the templates' bills)" in text
    assert "price per CU-hour (default)" in text
    assert "included CU-hours (plans' allowances)" in text
    row = next(line for line in text.splitlines() if "price per CU-hour" in line
               and "default" not in line)
    assert row.split()[-4:] == ["0", "0.222", "0.500", "0.160"]


def test_the_same_in_shards(run) -> None:
    _, totals = run
    _, merged = run_in_shards(PLANS, parts=3)
    assert summary(frames(merged), merged)["templates"] == totals["templates"]


def test_without_plans_every_cu_hour_costs_the_scenarios_price() -> None:
    doc = {**PLANS, "projects": [template("a", 2, 20), template("b", 1, 200)]}
    result = run_fleet(doc)
    tables = frames(result)
    totals = summary(tables, result)
    computes = tables["computes"]
    assert list(computes["cost"]) == list(computes["cu_hours"] * 0.16)  # exactly, as before
    assert totals["included_cu_hours"] == 0.0
    assert totals["billed_cu_hours"] == totals["cu_hours"]
    text = summary_table(totals)
    assert "included CU-hours" not in text and "cost (CU-hours x price)" in text
    assert "price per CU-hour                                           0.160" in text


@pytest.mark.parametrize(("pricing", "reason"), [
    ("business", "'business' is not a preset (one of free, launch, scale, agent)"),
    ({"included_cu_hours": 5}, "per_cu_hour is required"),
    ({"per_cu_hour": -1}, "per_cu_hour must be a finite number >= 0, got -1"),
    ({"per_cu_hour": 1, "monthly": 5}, "unknown key 'monthly'"),
    ({"per_cu_hour": math.inf}, "per_cu_hour must be a finite number >= 0, got inf"),
])
def test_bad_terms_are_refused_naming_the_field(pricing, reason: str) -> None:
    with pytest.raises(ScenarioError) as err:
        parse_scenario({**PLANS, "projects": [template("a", 1, 1, pricing)]})
    assert f"projects[0].pricing: {reason}" in str(err.value)

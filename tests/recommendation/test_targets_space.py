"""Targets and search spaces: parsed, checked, refused with a line naming what is wrong."""

from __future__ import annotations

import math

import pytest

from sim.metrics.theory import erlang_b, erlang_c
from sim.recommendation.space import Choice, apply_choices, parse_space, space_of
from sim.recommendation.targets import RecommendError, as_targets, parse_target
from sim.recommendation.theory import TemplateModel
from sim.scenario.loader import parse_scenario
from tests.recommendation.helpers import poisson_fleet


def test_targets_in_every_unit() -> None:
    assert parse_target("cold_starts_per_1000=5").limit == 5
    assert parse_target("cold_start_share=0.5%").limit == pytest.approx(5.0)
    assert parse_target("wake_p99=2s").limit == 2.0
    assert parse_target("queue_wait_p99=500ms").limit == pytest.approx(0.5)
    assert parse_target("refused<=0.1%").limit == pytest.approx(0.001)
    ordered = as_targets({"refused": "1%", "cold_starts": 3})
    assert [t.metric for t in ordered] == ["cold_starts_per_1000", "refused_share"]


@pytest.mark.parametrize(("text", "words"), [
    ("colds=5", "unknown target 'colds'"),
    ("cold_starts_per_1000=5%", "not a percentage"),
    ("refused=-1", ">= 0"),
    ("refused=150%", "at most 100 %"),
    ("wake_p99=soon", "not a number"),
    ("wake_p99", "NAME=LIMIT"),
])
def test_bad_targets_name_the_target(text: str, words: str) -> None:
    with pytest.raises(RecommendError, match="--slo") as err:
        parse_target(text)
    assert words in str(err.value)


def test_a_target_given_twice_is_refused() -> None:
    with pytest.raises(RecommendError, match="bounded twice"):
        as_targets(["cold_starts=5", "cold_start_share=1%"])


def test_default_space_holds_today_and_the_plan_sizes() -> None:
    scenario = parse_scenario(poisson_fleet(30, 20, cu=1.0, timeout=0))
    choices = space_of(scenario)["steady"]
    assert Choice(0, 1.0, 1.0, False) in choices  # the current settings
    sizes = {(c.min_cu, c.max_cu) for c in choices}
    assert sizes == {(0.25, 0.25), (0.5, 0.5), (1.0, 1.0), (2.0, 2.0)}
    assert {c.suspend_timeout_seconds for c in choices} >= {60, 3600, -1}
    assert {c.pooler_enabled for c in choices} == {False, True}


def test_space_overrides_per_template_and_for_all() -> None:
    scenario = parse_scenario(poisson_fleet(30, 20))
    overrides = [parse_space("suspend_timeout_seconds=60,never", ["steady"]),
                 parse_space("steady.autoscaling=0.25-2,0.5-4", ["steady"]),
                 parse_space("pooler=false", ["steady"])]
    choices = space_of(scenario, overrides)["steady"]
    assert {(c.suspend_timeout_seconds, c.min_cu, c.max_cu) for c in choices} - {
        (3600, 0.25, 0.25)} == {(t, lo, hi) for t in (60, -1) for lo, hi in ((0.25, 2), (0.5, 4))}


@pytest.mark.parametrize(("text", "words"), [
    ("shop.timeout=60", "no template named 'shop'"),
    ("suspend_timeout_seconds=30", "60..604800"),
    ("size=1", "unknown setting 'size'"),
    ("autoscaling=4", "a range MIN-MAX"),
    ("pooler=maybe", "not true or false"),
    ("timeout=60,,300", "an empty value"),
])
def test_bad_space_names_the_value(text: str, words: str) -> None:
    with pytest.raises(RecommendError, match="--space") as err:
        parse_space(text, ["steady"])
    assert words in str(err.value)


def test_a_size_the_plan_refuses_is_named() -> None:
    doc = poisson_fleet(30, 20)
    doc["plan"] = "free"
    scenario = parse_scenario(doc)
    with pytest.raises(RecommendError, match="free plan allows up to 2 CU"):
        space_of(scenario, [parse_space("cu=4", ["steady"])])


def test_a_choice_rewrites_every_compute_of_its_template() -> None:
    doc = poisson_fleet(30, 20, pooler=True)
    doc["projects"][0]["branches"][0]["computes"][0]["pool_size"] = 10
    out = apply_choices(doc, {"steady": Choice(-1, 0.25, 2.0, False)})
    compute = out["projects"][0]["branches"][0]["computes"][0]
    assert compute["autoscaling"] == {"min_cu": 0.25, "max_cu": 2.0} and "size" not in compute
    assert compute["suspend_timeout_seconds"] == -1 and "pool_size" not in compute
    assert doc["projects"][0]["branches"][0]["computes"][0]["pool_size"] == 10  # a copy
    parse_scenario(out)  # still a valid scenario


def test_theory_prices_scale_to_zero_and_erlang_b() -> None:
    scenario = parse_scenario(poisson_fleet(36, 50, count=3))
    model = TemplateModel(scenario.projects[0], scenario)
    p = model.predict(Choice(300, 0.25, 0.25, False))
    lam = 36 / 3600
    assert p.figures["cold_starts_per_1000"] == pytest.approx(1000 * math.exp(-lam * 350))
    assert p.cu_hours == pytest.approx(3 * 24 * 0.25 * (1 - math.exp(-lam * 350)))
    assert p.figures["wake_p99_s"] == 0.0  # starts take no time in this scenario
    assert model.predict(Choice(-1, 0.25, 0.25, False)).figures["wake_p99_s"] is None
    # 100 Erlangs offered to 112 connections (0.25 CU) or 225 (0.5 CU)
    heavy = parse_scenario(poisson_fleet(7200, 50))
    hm = TemplateModel(heavy.projects[0], heavy)
    small = hm.predict(Choice(-1, 0.25, 0.25, False))
    assert small.figures["refused_share"] == pytest.approx(erlang_b(112, 100.0))
    targets = as_targets(["refused=0.1%"])
    assert small.pruned_by(targets) == targets
    assert not hm.predict(Choice(-1, 0.5, 0.5, False)).pruned_by(targets)


def test_theory_prices_the_pool_queue_with_erlang_c() -> None:
    busy = parse_scenario(poisson_fleet(6480, 50))  # 90 Erlangs
    model = TemplateModel(busy.projects[0], busy)
    pooled = model.predict(Choice(-1, 0.25, 0.25, True))
    k, a = int(112 * 0.9), 90.0  # pool = 90 % of max_connections
    expected = 50 / (k - a) * math.log(erlang_c(k, a) / 0.01)
    assert expected > 1.0
    assert pooled.figures["queue_wait_p99_s"] == pytest.approx(expected, rel=1e-6)
    assert pooled.figures["refused_share"] == 0.0
    # 100 Erlangs for a pool of 100: the queue never drains, waits reach the queue timeout
    full = parse_scenario(poisson_fleet(7200, 50))
    capped = TemplateModel(full.projects[0], full).predict(Choice(-1, 0.25, 0.25, True))
    assert capped.figures["queue_wait_p99_s"] == 120.0


def test_a_template_target_replaces_the_general_one_for_that_template() -> None:
    from sim.recommendation.targets import targets_for

    targets = as_targets(["cold_starts=20", "wake_p99=3s", "hobby.cold_starts=500"])
    hobby = targets_for(targets, "hobby")
    assert [(t.metric, t.limit) for t in hobby] == [("cold_starts_per_1000", 500.0),
                                                     ("wake_p99_s", 3.0)]
    assert [t.limit for t in targets_for(targets, "busy")] == [20.0, 3.0]
    assert hobby[0].text() == "hobby: cold starts / 1,000 sessions <= 500"


def test_a_target_for_an_unknown_template_is_refused() -> None:
    from sim.recommendation import recommend

    with pytest.raises(RecommendError, match="no template named 'shop'"):
        recommend(poisson_fleet(30, 20), ["shop.cold_starts=5"], workers=0)


def test_wake_p99_is_pruned_tightly_only_with_many_cold_starts() -> None:
    doc = poisson_fleet(36, 50, count=3)
    doc["engine"]["cold_start"] = {"dist": "lognormal", "mean_s": 0.5, "sigma": 0.8}
    scenario = parse_scenario(doc)
    model = TemplateModel(scenario.projects[0], scenario)
    targets = as_targets(["wake_p99=2.1s"])  # the law's p99 is 2.33 s: 11 % over
    often = model.predict(Choice(60, 0.25, 0.25, False))  # hundreds of cold starts a day
    assert often.figures["wake_p99_s"] == pytest.approx(2.3348, abs=1e-3)
    assert often.pruned_by(targets) == targets
    rarely = model.predict(Choice(600, 0.25, 0.25, False))  # a few a day: a sample p99
    assert rarely.figures["wake_p99_s"] is not None and not rarely.pruned_by(targets)
    # less than one cold start expected in the whole run: no wait predicted
    assert model.predict(Choice(1800, 0.25, 0.25, False)).figures["wake_p99_s"] is None

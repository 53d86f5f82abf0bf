"""A weekly cycle over an arrival kind: the counts of each day follow its factor, every road
draws the same instants, and bad cycles are refused in one line."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import sim.scenario.runner as runner
from sim.scenario.loader import ScenarioError, parse_scenario
from sim.workload.arrivals import chunks
from tests.engine.test_kernel_equals_engine import canonical

WEEKS = 2
SPAN = WEEKS * 7 * 86_400.0


def document(arrivals: dict, start: str = "2026-01-05T00:00:00Z", duration: str = "14d") -> dict:
    return {"name": "weekly", "seed": 5, "start": start, "duration": duration,
            "projects": [{"name": "a", "branches": [{"name": "main", "computes": [{
                "type": "read_write", "workload": {
                    "arrivals": arrivals, "session": {"dist": "exponential", "mean_s": 30}}}]}]}]}


def process(arrivals: dict, start: str = "2026-01-05T00:00:00Z"):
    scenario = parse_scenario(document(arrivals, start))
    return scenario.projects[0].branches[0].computes[0].arrival_process(scenario.start)


def per_weekday(times: np.ndarray, start_weekday: int, start_hour: float = 0.0) -> np.ndarray:
    days = np.floor((times + start_hour * 3600.0) / 86_400.0).astype(int) + start_weekday
    return np.bincount(days % 7, minlength=7)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_weekday_and_weekend_counts_follow_their_factors(seed: int) -> None:
    """Poisson 200/h, weekdays 1 and weekends 0.2: each kind of day gets its rate times its
    hours, within 4 standard errors (Poisson counts: the SE is the root of the mean)."""
    p = process({"kind": "poisson", "per_hour": 200, "weekly": {"weekday": 1, "weekend": 0.2}})
    counts = per_weekday(p.times(np.random.default_rng(seed), 0.0, SPAN), start_weekday=0)
    weekday, weekend = counts[:5].sum(), counts[5:].sum()
    expect_weekday, expect_weekend = 200 * 24 * 5 * WEEKS, 200 * 0.2 * 24 * 2 * WEEKS
    assert abs(weekday - expect_weekday) < 4 * math.sqrt(expect_weekday)
    assert abs(weekend - expect_weekend) < 4 * math.sqrt(expect_weekend)
    assert p.mean_rate_per_s(0.0, SPAN) * SPAN == pytest.approx(expect_weekday + expect_weekend)


def test_seven_factors_above_one_on_a_diurnal_profile_starting_mid_week() -> None:
    """Factors above 1 multiply the rate; the days are UTC days even when the run starts on
    a Wednesday at noon."""
    factors = [1.5, 1, 1, 1, 1, 0, 0.5]
    p = process({"kind": "diurnal", "peak_per_hour": 100, "trough_per_hour": 10,
                 "peak_hour": 14, "weekly": factors}, start="2026-01-07T12:00:00Z")
    counts = per_weekday(p.times(np.random.default_rng(7), 0.0, SPAN), start_weekday=2,
                         start_hour=12)
    per_day = 55 * 24  # the cosine's mean rate times a day
    for day, factor in enumerate(factors):
        expect = factor * per_day * WEEKS
        assert abs(counts[day] - expect) <= 4 * math.sqrt(max(expect, 1)), (day, counts)
    assert counts[5] == 0


@pytest.mark.parametrize("arrivals", [
    {"kind": "poisson", "per_hour": 50, "weekly": [1, 1, 1, 1, 0.6, 0.1, 0.1]},
    {"kind": "bursty", "on_per_hour": 300, "off_per_hour": 2, "mean_on": "10m",
     "mean_off": "1h", "weekly": {"weekday": 1.2, "weekend": 0.3}},
    {"kind": "periodic", "every": "5m", "jitter": "30s", "weekly": {"weekday": 1, "weekend": 0}},
])
def test_every_window_size_draws_the_same_instants(arrivals: dict) -> None:
    """The engine reads a workload window by window, the kernel at once: the same draws."""
    p = process(arrivals)
    whole = p.times(np.random.default_rng(11), 0.0, SPAN)
    for chunk_s in (600.0, 86_400.0, 3 * 86_400.0):
        parts = list(chunks(p, np.random.default_rng(11), 0.0, SPAN, chunk_s=chunk_s))
        assert np.array_equal(np.concatenate(parts), whole)


def test_a_replay_is_thinned_on_its_weekend(tmp_path) -> None:
    trace = tmp_path / "trace.csv"
    minutes = range(0, 7 * 24 * 60, 10)  # a week of one arrival every ten minutes
    trace.write_text("minute,count\n" + "".join(f"{m},1\n" for m in minutes))
    p = process({"kind": "replay", "path": str(trace), "weekly": [1, 1, 1, 1, 1, 0, 0.5]})
    counts = per_weekday(p.times(np.random.default_rng(3), 0.0, 7 * 86_400.0), start_weekday=0)
    assert list(counts[:5]) == [144] * 5 and counts[5] == 0
    assert abs(counts[6] - 72) < 4 * math.sqrt(36)


def test_both_roads_give_the_same_rows_with_a_weekly_cycle() -> None:
    doc = document({"kind": "diurnal", "peak_per_hour": 120, "trough_per_hour": 1,
                    "peak_hour": 15, "weekly": {"weekday": 1, "weekend": 0.1}},
                   start="2026-01-09T00:00:00Z", duration="4d")
    scenario = parse_scenario(doc)
    fleet = runner.run_scenario(scenario)
    assert fleet.roads == {"kernel": 1}
    engine = canonical(runner.run_scenario(scenario, kernel=False))
    for name, table in canonical(fleet).items():
        pd.testing.assert_frame_equal(table, engine[name], check_exact=True, obj=name)
    # Friday, then a weekend at a tenth, then Monday
    rows = canonical(fleet)["connections"]
    days = (rows["arrival_s"] // 86_400).astype(int).value_counts().sort_index().tolist()
    assert days[1] < days[0] / 5 and days[2] < days[3] / 5


@pytest.mark.parametrize(("weekly", "reason"), [
    ({"weekday": 1}, "write {weekday: F, weekend: F} or seven factors, Monday first"),
    ({"weekday": 1, "weekend": 1, "holiday": 0}, "write {weekday: F, weekend: F} or seven "
     "factors, Monday first (unknown key 'holiday')"),
    ([1, 1, 1], "needs seven factors, Monday first (UTC days), got 3"),
    ([1, 1, 1, 1, 1, 1, -0.5], "a factor must be a finite number >= 0, got -0.5"),
    ([1, 1, 1, 1, 1, 1, True], "a factor must be a finite number >= 0, got True"),
])
def test_a_bad_cycle_is_refused_naming_the_field(weekly, reason: str) -> None:
    with pytest.raises(ScenarioError) as err:
        parse_scenario(document({"kind": "poisson", "per_hour": 1, "weekly": weekly}))
    assert f"workload.arrivals.weekly: {reason}" in str(err.value)


def test_a_job_or_a_trace_can_only_be_thinned() -> None:
    with pytest.raises(ScenarioError) as err:
        parse_scenario(document({"kind": "periodic", "every": "1h",
                                 "weekly": {"weekday": 1, "weekend": 2}}))
    assert "a periodic source can be thinned, not multiplied: its factors must be at most 1" \
        in str(err.value)


def test_a_served_worlds_snapshot_keeps_the_cycle() -> None:
    """`sim serve --state` writes each compute's workload as data: the weekly cycle, read
    back, draws the same arrivals."""
    from sim.api.world_codec import dumps
    from sim.api.world_decode import loads

    p = process({"kind": "poisson", "per_hour": 50, "weekly": {"weekday": 1, "weekend": 0.2}},
                start="2026-01-07T10:00:00Z")
    back = loads(dumps(p))
    assert back == p
    assert np.array_equal(back.times(np.random.default_rng(1), 0.0, SPAN),
                          p.times(np.random.default_rng(1), 0.0, SPAN))

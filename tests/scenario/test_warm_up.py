"""A scenario describes a fleet that already exists: the warm-up before its start."""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml

from sim.metrics import frames, summary
from sim.scenario import ScenarioError, parse_scenario
from sim.scenario.runner import run_scenario
from sim.scenario.warm_up import default_warm_up_s
from sim.workload import Delayed, Diurnal, Periodic, Poisson

from .helpers import BASE, edited, problem_lines

LAMBDA_PER_DAY = 2.0
SESSION_S = 60.0
TIMEOUT_S = 300.0
COMPUTES = 1000


def _quiet_fleet(warm_up: str | None, record: str = "off") -> str:
    warm = "" if warm_up is None else f"warm_up: {warm_up}\n"
    return f"""
name: quiet
seed: 3
duration: 2d
{warm}record_connections: off
record_events: {record}
projects:
  - name: hobby
    count: {COMPUTES}
    branches:
      - name: main
        computes:
          - type: read_write
            workload:
              arrivals: {{kind: poisson, per_hour: {LAMBDA_PER_DAY / 24}}}
              session: {{dist: fixed, mean_s: {SESSION_S}}}
"""


def _figures(text: str) -> tuple[dict, dict]:
    result = run_scenario(parse_scenario(text))
    tables = frames(result)
    return summary(tables, result), tables


@pytest.mark.slow
def test_a_quiet_fleet_reads_in_steady_state_not_at_its_creation():
    figures, tables = _figures(_quiet_fleet(None, record="all"))
    lam = LAMBDA_PER_DAY / 86_400
    # on from a wake to the suspend's end: the timeout after the last session, the
    # session, the start's wait (lognormal, mean 0.5 s) and the suspend (mean 0.2 s)
    on_s = TIMEOUT_S + SESSION_S + 0.5 + 0.2
    expected = COMPUTES * (1 - math.exp(-lam * on_s))
    # each on-period lasts about on_s: the mean's standard error from their count
    periods = COMPUTES * lam * 2 * 86_400 * math.exp(-lam * on_s)
    sigma = math.sqrt(periods) * on_s / (2 * 86_400)
    assert abs(figures["mean_active_computes"] - expected) < 4 * sigma
    assert figures["warm_up_s"] == 3600
    first = tables["fleet"]["active_computes"].iloc[0]
    assert first < expected + 6 * math.sqrt(expected)  # not the 1,000 of the creation
    assert figures["peak_active_computes_minute"] < 40
    assert figures["p99_active_computes_minute"] <= figures["peak_active_computes_minute"]
    ops = figures["operations_by_action"]
    assert "start_compute" in ops
    assert "create_timeline" not in ops  # the fleet's creation is before the first instant


@pytest.mark.slow
def test_warm_up_zero_shows_the_creation_at_the_first_instant():
    figures, tables = _figures(_quiet_fleet("0"))
    assert figures["warm_up_s"] == 0
    assert tables["fleet"]["active_computes"].iloc[0] == COMPUTES
    assert figures["peak_active_computes_minute"] == COMPUTES


def test_rows_begin_at_the_first_instant_and_counters_match_them():
    doc = edited({"duration": "6h", "warm_up": "2h", "actions.0.at": "3h"})
    result = run_scenario(parse_scenario(yaml.safe_dump(doc, sort_keys=False)))
    tables = frames(result)
    assert result.warm_up_s == 7200
    assert tables["intervals"]["start_s"].min() >= 0
    assert tables["intervals"]["end_s"].max() <= 6 * 3600
    assert tables["connections"]["arrival_s"].min() >= 0
    assert tables["operations"]["created_s"].min() >= 0
    computes = tables["computes"]
    sessions = tables["connections"]["outcome"].isin(["ok", "dropped"]).sum()
    assert computes["sessions"].sum() == sessions
    wakes = tables["wakes"]
    assert computes["cold_starts"].sum() == (wakes["cause"] != "create").sum()
    on = tables["intervals"][tables["intervals"]["state"] != "idle"]
    assert computes["active_s"].sum() == pytest.approx((on["end_s"] - on["start_s"]).sum())
    assert tables["actions"]["at_s"].tolist() == [3 * 3600.0]


def test_the_engine_and_the_kernel_agree_after_a_warm_up():
    doc = edited({"duration": "1d", "warm_up": "3h", "actions.0.at": "12h"})
    scenario = parse_scenario(yaml.safe_dump(doc, sort_keys=False))
    kernel = frames(run_scenario(scenario))
    engine = frames(run_scenario(scenario, kernel=False))
    for name in ("computes", "operations", "intervals", "connections", "wakes", "actions"):
        assert kernel[name].equals(engine[name]), name
    assert kernel["computes"]["sessions"].sum() > 0


def test_scripted_calls_keep_their_instant_of_the_scenario():
    doc = edited({"duration": "2d", "warm_up": "5h"})
    result = run_scenario(parse_scenario(yaml.safe_dump(doc, sort_keys=False)))
    assert [a.at_s for a in result.actions] == [86_400.0]


def test_default_warm_up_covers_the_longest_timeout_and_session():
    short = parse_scenario(yaml.safe_dump(BASE, sort_keys=False))
    assert default_warm_up_s(short) == 3600  # 300 s + 207 s (p99.9 of 30 s) + 130 s
    long = edited({"projects.0.branches.0.computes.0.suspend_timeout_seconds": 7000})
    assert default_warm_up_s(parse_scenario(yaml.safe_dump(long, sort_keys=False))) == 3 * 3600


@pytest.mark.parametrize("value, message", [
    ("90s", "warm_up: must be auto or a whole number of minutes"),
    ("-1h", "warm_up"),
    ("soon", "warm_up"),
])
def test_a_warm_up_that_is_not_whole_minutes_is_refused(value, message):
    lines = problem_lines(edited({"warm_up": value}))
    assert any(message in line for line in lines), lines


def test_an_explicit_warm_up_is_taken_as_given():
    scenario = parse_scenario(yaml.safe_dump(edited({"warm_up": "2h"}), sort_keys=False))
    assert scenario.warm_up_s == 7200
    with pytest.raises(ScenarioError):
        parse_scenario(yaml.safe_dump(edited({"warm_up": "1h30s"}), sort_keys=False))


@pytest.mark.parametrize("process", [
    Poisson(30.0),
    Diurnal(peak_per_hour=60.0, trough_per_hour=1.0, peak_hour=15.0),
    Periodic(every_s=600.0, offset_s=30.0, jitter_s=5.0),
])
def test_a_delayed_process_is_the_same_arrivals_on_a_clock_that_began_earlier(process):
    by = 7200.0
    late = Delayed(process, by).times(np.random.default_rng(5), by, by + 86_400)
    on_time = process.times(np.random.default_rng(5), 0.0, 86_400)
    assert len(on_time) > 0
    np.testing.assert_allclose(late - by, on_time)
    assert Delayed(process, by).mean_rate_per_s(by, by + 3600) == process.mean_rate_per_s(0, 3600)
    warm = Delayed(process, by).times(np.random.default_rng(5), 0.0, by)
    assert (warm >= 0).all() and (warm < by).all() and (np.diff(warm) >= 0).all()


@pytest.mark.parametrize("process", [
    Poisson(30.0),
    Diurnal(peak_per_hour=60.0, trough_per_hour=1.0, peak_hour=15.0),
    Diurnal(hourly=tuple(float(h % 7) for h in range(24)), start_hour_offset_s=1800.0),
    Periodic(every_s=600.0, offset_s=30.0, jitter_s=5.0),
])
def test_a_delayed_process_draws_at_once_the_numbers_of_its_blocks(process):
    """`Delayed.times` takes the process's own `times` (one pass over a diurnal rate):
    the very numbers its blocks give one after the other, and the generator left alike."""
    delayed = Delayed(process, 46_800.0)
    at_once, by_blocks = np.random.default_rng(9), np.random.default_rng(9)
    times = delayed.times(at_once, 0.0, 3 * 86_400.0 + 5.0)
    blocks = [arr for _, arr in delayed._blocks(by_blocks, 0.0, 3 * 86_400.0 + 5.0)]
    assert len(times) > 0
    assert np.array_equal(times, np.concatenate(blocks))
    assert at_once.bit_generator.state == by_blocks.bit_generator.state

"""The peak CU at one instant: the same figure whatever the run records, in one process or
in shards, and the level a brute-force count of the interval rows finds."""

from __future__ import annotations

import numpy as np
import pytest

from sim.engine.cu_steps import peak_cu, steps_of
from sim.metrics import frames, summary
from sim.metrics.frames import on_intervals
from sim.sweep.fleet import run_fleet
from tests.planning.test_fleet import run_in_shards

FLEET = {
    "name": "peaks", "seed": 9, "duration": "1d", "record_events": "all",
    "projects": [
        {"name": "shop", "count": 4, "branches": [{"name": "main", "computes": [{
            "type": "read_write", "autoscaling": {"min_cu": 0.25, "max_cu": 4},
            "suspend_timeout_seconds": 60,
            "workload": {"arrivals": {"kind": "diurnal", "peak_per_hour": 900,
                                      "trough_per_hour": 2, "peak_hour": 14},
                         "session": {"dist": "exponential", "mean_s": 60},
                         "cpu_per_session": 0.3}}]}]},
        {"name": "blog", "count": 6, "branches": [{"name": "main", "computes": [{
            "type": "read_write", "suspend_timeout_seconds": 60,
            "workload": {"arrivals": {"kind": "poisson", "per_hour": 6},
                         "session": {"dist": "exponential", "mean_s": 30}}}]}]},
    ],
}


def brute_force_peak(intervals, duration_s: float) -> float:
    """The CU summed over the intervals open at each instant where one starts."""
    start, end, cu = on_intervals(intervals, duration_s)
    return max((float(cu[(start <= t) & (end > t)].sum()) for t in np.unique(start)),
               default=0.0)


@pytest.fixture(scope="module")
def recorded() -> tuple[dict, dict]:
    result = run_fleet(FLEET)
    tables = frames(result)
    return tables, summary(tables, result)


def test_the_peak_is_the_highest_level_of_the_interval_rows(recorded) -> None:
    tables, totals = recorded
    intervals, computes = tables["intervals"], tables["computes"]
    assert totals["peak_total_cu"] == pytest.approx(brute_force_peak(intervals, 86_400.0))
    by = {t["template"]: t for t in totals["templates"]}
    for name in ("shop", "blog"):
        mine = set(computes.loc[computes["template"] == name, "project_id"])
        rows = intervals[intervals["project_id"].isin(mine)]
        assert by[name]["peak_total_cu"] == pytest.approx(brute_force_peak(rows, 86_400.0))
    # an instant is at least the busiest minute's mean, and the shops reached their caps
    assert totals["peak_total_cu"] >= totals["peak_total_cu_minute"]
    assert by["shop"]["peak_total_cu"] > 4 * 0.25


@pytest.mark.parametrize("events", ["off", "all"])
def test_the_same_whatever_is_recorded_and_in_shards(recorded, events: str) -> None:
    _, totals = recorded
    doc = dict(FLEET, record_events=events)
    result = run_fleet(doc)
    off = summary(frames(result), result)
    _, merged = run_in_shards(doc, parts=3)
    sharded = summary(frames(merged), merged)
    for figures in (off, sharded):
        assert figures["peak_total_cu"] == totals["peak_total_cu"]
        assert [t["peak_total_cu"] for t in figures["templates"]] == \
            [t["peak_total_cu"] for t in totals["templates"]]


def test_an_end_and_a_start_at_one_instant_do_not_overlap() -> None:
    # a compute resized from 1 to 2 CU at t = 10, and another on from 10 to 20 at 0.5 CU
    steps = steps_of(np.array([0.0, 10.0, 10.0]), np.array([10.0, 30.0, 20.0]),
                     np.array([1.0, 2.0, 0.5]))
    assert peak_cu(steps) == 2.5
    with pytest.raises(ValueError, match="multiples of 0.25"):
        steps_of(np.array([0.0]), np.array([1.0]), np.array([0.3]))

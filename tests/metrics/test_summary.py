import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.engine.records import ActionRecord, StateInterval, WakeRecord
from sim.metrics import frames, summary, summary_table
from sim.metrics.summary import (
    format_duration,
    format_number,
    format_value,
    peak_concurrent,
    wake_figures,
)
from sim.metrics.synthetic import synthetic_result

from .helpers import compute_row, operation, run


@pytest.fixture(scope="module")
def hand():
    computes = [
        compute_row(
            "ep-a",
            "p-1",
            sessions=900,
            refused=50,
            refused_pooler_full=3,
            refused_disabled=5,
            queue_timeouts=50,
            queued=70,
            disk_full=2,
            dropped=3,
            cold_starts=9,
            suspends=10,
            restarts=1,
            cu_s=4 * 3600.0,
        ),
        compute_row("ep-b", "p-2", sessions=100, cold_starts=1, suspends=1, cu_s=3600.0),
    ]
    wakes = [WakeRecord("ep-a", "p-1", float(i), "connection", float(i)) for i in (1, 2, 3, 4)]
    wakes.append(WakeRecord("ep-b", "p-2", 0.0, "create", 100.0))
    intervals = [
        StateInterval("ep-a", "p-1", "active", 1.0, 0.0, 100.0),
        StateInterval("ep-b", "p-2", "active", 1.0, 100.0, 200.0),  # touches ep-a's end
        StateInterval("ep-c", "p-2", "init", 1.0, 50.0, 60.0),
        StateInterval("ep-a", "p-1", "idle", 0.0, 100.0, 3600.0),
    ]
    operations = [
        operation("start_compute", at=1.0),
        operation("start_compute", at=2.0),
        operation("start_compute", "failed", at=3.0, failures=2),
        operation("suspend_compute", at=4.0, failures=1),
        operation("create_timeline", at=0.0, project_id="p-3", endpoint_id=None),
    ]
    actions = [
        ActionRecord(10.0, "PATCH /projects/p-1/endpoints/ep-a", 200, ""),
        ActionRecord(11.0, "PATCH /projects/p-1/endpoints/ep-a", 423, "LOCKED"),
    ]
    result = run(
        3600.0,
        0.16,
        computes=computes,
        wakes=wakes,
        intervals=intervals,
        operations=operations,
        actions=actions,
    )
    return summary(frames(result), result)


def test_totals_by_hand(hand):
    assert hand["computes"] == 2
    assert hand["projects"] == 3  # p-3 has only an operation
    assert hand["sessions"] == 1000
    assert hand["cu_hours"] == pytest.approx(5.0)
    assert hand["cost"] == pytest.approx(0.8)
    # every attempt once: sessions, refusals of each cause, queue timeouts, 53100 failures
    assert hand["connection_attempts"] == 1000 + 50 + 3 + 5 + 50 + 2
    assert (hand["refused"], hand["refused_pooler_full"], hand["refused_disabled"]) == (50, 3, 5)
    assert hand["refused_share"] == pytest.approx(50 / 1110)  # 53300 alone
    assert (hand["queued"], hand["queue_timeouts"]) == (70, 50)
    assert (hand["disk_full_53100"], hand["dropped"]) == (2, 3)
    assert (hand["suspends"], hand["restarts"]) == (11, 1)
    assert hand["cold_starts"] == 10
    assert hand["cold_starts_per_1000_sessions"] == pytest.approx(10.0)


def test_cold_start_waits_exclude_creation(hand):
    assert hand["wake_p50_s"] == pytest.approx(2.5)
    assert hand["wake_p99_s"] == pytest.approx(3.97)
    assert hand["wake_max_s"] == pytest.approx(4.0)


def test_wake_figures_of_a_run_without_wake_rows_need_no_frame():
    """What `write_run` computes beside the frames is what the summary computes itself."""
    waits = {"ep-a": np.array([4.0, 1.0, 3.0]), "ep-b": np.array([2.0, 30.0])}
    result = run(computes=[compute_row("ep-a", "p-1"), compute_row("ep-b", "p-1")],
                 wake_waits=waits)
    figures = wake_figures(None, result)
    assert figures == np.quantile([4.0, 1.0, 3.0, 2.0, 30.0], [0.5, 0.99, 1.0]).tolist()
    tables = frames(result)
    assert summary(tables, result, wakes=figures) == summary(tables, result)
    assert wake_figures(None, run(wake_waits={})) == [None] * 3


def test_fleet_peaks_and_means(hand):
    assert hand["peak_active_computes"] == 2  # ep-c's init inside ep-a; ep-b only touches ep-a
    assert hand["mean_active_computes"] == pytest.approx(210 / 3600)
    assert hand["mean_total_cu"] == pytest.approx(210 / 3600)
    # minute 0: ep-a 60 s and ep-c 10 s -> 70/60
    assert hand["peak_active_computes_minute"] == pytest.approx(70 / 60)


def test_operations_by_action_and_status(hand):
    assert hand["operations"] == 5
    assert hand["operations_failed"] == 1
    assert hand["failed_operation_attempts"] == 3
    assert hand["operations_by_action"] == {
        "create_timeline": {"finished": 1},
        "start_compute": {"failed": 1, "finished": 2},
        "suspend_compute": {"finished": 1},
    }


def test_scripted_calls(hand):
    assert (hand["scripted_actions"], hand["scripted_actions_failed"]) == (2, 1)


def test_empty_run_summary_is_json_with_nulls_for_no_data():
    result = run(duration_s=0.0)
    s = summary(frames(result), result)
    json.dumps(s, allow_nan=False)
    assert s["sessions"] == 0 and s["peak_active_computes"] == 0
    assert s["refused_share"] is None and s["wake_p50_s"] is None
    assert s["mean_active_computes"] is None
    assert "–" in summary_table(s)


def test_synthetic_summary_is_plain_json():
    result = synthetic_result(4, projects=6, duration_s=3 * 3600.0)
    s = summary(frames(result), result)
    assert json.loads(json.dumps(s, allow_nan=False)) == s
    assert s["peak_active_computes"] >= s["peak_active_computes_minute"]
    assert s["peak_active_computes"] <= s["computes"]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(1, 20)), max_size=25))
def test_peak_concurrent_matches_brute_force(pairs):
    start = np.array([float(s) for s, _ in pairs])
    end = np.array([float(s + n) for s, n in pairs])
    expected = max((int(((start <= t) & (t < end)).sum()) for t in start), default=0)
    assert peak_concurrent(start, end) == expected


def test_summary_table_is_plain_readable_text(hand):
    text = summary_table(hand)
    assert "\x1b" not in text
    assert all(len(line) <= 72 for line in text.splitlines())
    assert "1,000" in text  # sessions, with a thousands separator
    assert "4.50 %" in text  # refused share
    assert "2.50 s" in text  # cold-start wait p50
    assert "0.80" in text  # cost
    assert "start_compute" in text and "failed 1, finished 2" in text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0, "0"),
        (1234567.8, "1,234,568"),
        (12.345, "12.3"),
        (0.012345, "0.0123"),
        (-5.5, "-5.50"),
        (999.4, "999"),
    ],
)
def test_format_number(value, text):
    assert format_number(value) == text


def test_format_value_and_duration():
    assert format_value(None) == "–"
    assert format_value(float("nan"), "int") == "–"
    assert format_value(12345, "int") == "12,345"
    assert format_value(0.0123, "pct") == "1.23 %"
    assert format_duration(90061.0) == "1 d 1 h 1 min 1 s"
    assert format_duration(7 * 86_400.0) == "7 d"
    assert format_duration(0.0) == "0 s"

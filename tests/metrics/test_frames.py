import math
import sys

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.engine.records import StateInterval, WakeRecord
from sim.metrics.frames import SCHEMAS, STR, TABLES, fleet_frame, frames, records_frame
from sim.metrics.synthetic import synthetic_result

from .helpers import compute_row, operation, run


def assert_schema(tables):
    assert list(tables) == list(TABLES)
    for name, df in tables.items():
        assert list(df.columns) == list(SCHEMAS[name]), name
        for column, dtype in SCHEMAS[name].items():
            assert df[column].dtype == dtype, (name, column, df[column].dtype)


def test_empty_run_gives_every_table_with_its_schema():
    tables = frames(run(duration_s=0.0))
    assert_schema(tables)
    assert all(df.empty for df in tables.values())


def test_synthetic_run_tables_follow_the_schema():
    assert_schema(frames(synthetic_result(3, projects=5, duration_s=7200)))


def test_fleet_per_minute_values_by_hand():
    # a run of 150 s: minutes [0,60), [60,120) and the half minute [120,150)
    intervals = [
        StateInterval("a", "p", "init", 1.0, -10.0, 10.0),  # starts before the run
        StateInterval("a", "p", "active", 2.0, 10.0, 70.0),
        StateInterval("a", "p", "idle", 0.0, 70.0, 200.0),
        StateInterval("b", "p", "active", 0.5, 30.0, 400.0),  # ends after the run
        StateInterval("c", "p", "active", 4.0, 200.0, 300.0),  # wholly after the run
    ]
    fleet = frames(run(duration_s=150.0, intervals=intervals))["fleet"]
    assert fleet["minute"].tolist() == [0, 1, 2]
    assert fleet["time"].tolist() == list(
        pd.to_datetime(["2026-01-05 00:00", "2026-01-05 00:01", "2026-01-05 00:02"], utc=True)
    )
    # minute 0: a on 60 s (10 s at 1 CU, 50 s at 2 CU), b on 30 s at 0.5 CU
    # minute 1: a on 10 s at 2 CU, b 60 s at 0.5 CU; minute 2 (30 s long): b only
    np.testing.assert_allclose(fleet["cu_seconds"], [125.0, 50.0, 15.0])
    np.testing.assert_allclose(fleet["active_computes"], [90 / 60, 70 / 60, 1.0])
    np.testing.assert_allclose(fleet["total_cu"], [125 / 60, 50 / 60, 0.5])


@pytest.mark.parametrize(
    "start_iso", ["2026-01-05T02:00:00+02:00", "2026-01-05T00:00:00", "2026-01-05T00:00:00Z"]
)
def test_fleet_time_is_utc_from_the_start_instant(start_iso):
    fleet = fleet_frame(frames(run())["intervals"], 120.0, start_iso)
    assert fleet["time"].iloc[0] == pd.Timestamp("2026-01-05T00:00:00Z")
    assert fleet["time"].iloc[1] - fleet["time"].iloc[0] == pd.Timedelta(minutes=1)


def reference_fleet(intervals, duration_s):
    """Per-minute CU-seconds and on-seconds, by brute force over minutes x intervals."""
    n = math.ceil(duration_s / 60)
    cu_s, on_s = np.zeros(n), np.zeros(n)
    for iv in intervals:
        if iv.state == "idle":
            continue
        for k in range(n):
            lo, hi = 60.0 * k, min(60.0 * (k + 1), duration_s)
            overlap = max(0.0, min(iv.end_s, hi) - max(iv.start_s, lo))
            cu_s[k] += iv.cu * overlap
            on_s[k] += overlap
    return cu_s, on_s


interval_st = st.builds(
    lambda state, cu, start, length: StateInterval("c", "p", state, cu, start, start + length),
    st.sampled_from(["init", "active", "idle"]),
    st.sampled_from([0.25, 0.5, 1.0, 2.0, 3.5, 8.0]),
    st.floats(-200.0, 1200.0, allow_nan=False),
    st.floats(0.0, 700.0, allow_nan=False),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(interval_st, max_size=30), st.floats(1.0, 1000.0, allow_nan=False))
def test_fleet_matches_brute_force(intervals, duration_s):
    intervals = [iv._replace(cu=0.0) if iv.state == "idle" else iv for iv in intervals]
    fleet = frames(run(duration_s=duration_s, intervals=intervals))["fleet"]
    cu_s, on_s = reference_fleet(intervals, duration_s)
    length = np.minimum(60.0, duration_s - 60.0 * np.arange(len(cu_s)))
    assert len(fleet) == len(cu_s)
    np.testing.assert_allclose(fleet["cu_seconds"], cu_s, atol=1e-6)
    np.testing.assert_allclose(fleet["active_computes"] * length, on_s, atol=1e-6)
    # the total equals sum of cu x length clipped to the run
    clipped = sum(
        iv.cu * max(0.0, min(iv.end_s, duration_s) - max(iv.start_s, 0.0)) for iv in intervals
    )
    assert fleet["cu_seconds"].sum() == pytest.approx(clipped, rel=1e-6, abs=1e-6)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fleet_agrees_with_compute_totals(seed):
    result = synthetic_result(seed, projects=8, duration_s=6 * 3600.0)
    tables = frames(result)
    fleet, computes = tables["fleet"], tables["computes"]
    assert fleet["cu_seconds"].sum() == pytest.approx(computes["cu_s"].sum(), rel=1e-6)
    on_seconds = (fleet["active_computes"] * 60.0).sum()
    assert on_seconds == pytest.approx(computes["active_s"].sum(), rel=1e-6)


def _intervals(n: int, duration: float) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    start = rng.uniform(0, duration, n)
    return pd.DataFrame(
        {
            "state": pd.array(rng.choice(["init", "active", "idle"], n), dtype=STR),
            "cu": rng.choice([0.25, 1.0, 4.0], n),
            "start_s": start,
            "end_s": start + rng.exponential(900.0, n),
        }
    )


def _python_calls(fn, *args):  # noqa: ANN001, ANN202
    """(result, how many Python and C function calls it took)."""
    calls = 0

    def count(_frame, event, _arg):  # noqa: ANN001, ANN202
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    sys.setprofile(count)
    try:
        result = fn(*args)
    finally:
        sys.setprofile(None)
    return result, calls


def test_fleet_of_a_million_intervals_is_vectorised():
    """The work is counted, not timed: the calls it takes do not grow with the intervals
    (a loop over minutes x intervals would make millions)."""
    duration, start_iso = 7 * 86_400.0, "2026-01-05T00:00:00Z"
    _, small = _python_calls(fleet_frame, _intervals(1_000, duration), duration, start_iso)
    intervals = _intervals(1_000_000, duration)
    fleet, calls = _python_calls(fleet_frame, intervals, duration, start_iso)
    assert calls <= 2 * small and calls < 100_000, (small, calls)
    on = intervals["state"] != "idle"
    clipped = (intervals["end_s"].clip(upper=duration) - intervals["start_s"]) * intervals["cu"]
    assert fleet["cu_seconds"].sum() == pytest.approx(clipped[on].sum(), rel=1e-9)


def test_compute_derived_columns():
    computes = [
        compute_row("ep-a", cu_s=7200.0, active_s=900.0),
        compute_row("ep-b", created_s=1800.0, deleted_s=2700.0, active_s=450.0),
        compute_row("ep-c", created_s=3600.0),  # created at the run's end: no lifetime
    ]
    wakes = [
        WakeRecord("ep-a", "p-1", 0.0, "create", 10.0),  # not a cold start
        WakeRecord("ep-a", "p-1", 100.0, "connection", 1.0),
        WakeRecord("ep-a", "p-1", 900.0, "api", 3.0),
        WakeRecord("ep-b", "p-1", 1800.0, "create", 2.0),
    ]
    df = frames(run(3600.0, 0.16, computes=computes, wakes=wakes))["computes"]
    df = df.set_index("compute_id")
    assert df.loc["ep-a", "cu_hours"] == pytest.approx(2.0)
    assert df.loc["ep-a", "cost"] == pytest.approx(0.32)
    assert df["active_share"].tolist()[:2] == pytest.approx([0.25, 0.5])
    assert math.isnan(df.loc["ep-c", "active_share"])
    assert math.isnan(df.loc["ep-a", "deleted_s"])
    assert df.loc["ep-a", ["wake_p50_s", "wake_p99_s", "wake_max_s"]].tolist() == pytest.approx(
        [2.0, 2.98, 3.0]
    )
    assert df.loc[["ep-b", "ep-c"], ["wake_p50_s", "wake_p99_s", "wake_max_s"]].isna().all().all()


def test_missing_optional_fields_become_nan_in_typed_columns():
    ops = frames(run(operations=[operation("create_timeline", endpoint_id=None, branch_id=None)]))
    df = ops["operations"]
    assert df["endpoint_id"].dtype == STR and df["error"].dtype == STR
    assert df[["branch_id", "endpoint_id", "error"]].isna().all().all()
    assert df["failures_count"].dtype == np.int64


def test_records_frame_rejects_none_in_an_integer_column():
    with pytest.raises(TypeError):
        records_frame(
            [operation("apply_config", failures=None)],
            operation("x")._fields,
            SCHEMAS["operations"],
        )

"""Recording decides which rows are written, never what is counted.

`record_connections` (all | sampled | off) and `record_events` (all | off) must
leave every figure of the summary, every chart and the report's sections as
they are: here on every shipped scenario, shortened to keep the test quick.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from sim.engine.records import RunResult
from sim.engine.minutes import MinuteSums, per_minute_integrals, per_minute_ns
from sim.engine.tallies import HourlyTally, OperationTally, joined_spans, summed_counts
from sim.metrics import draw_charts, frames, summary
from sim.metrics.report import key_cards, summary_html
from sim.metrics.summary import on_spans, peak_concurrent
from sim.scenario.loader import load_scenario, parse_scenario
from sim.scenario.merge import canonical_result, instance_order
from sim.scenario.runner import run_scenario
from sim.scenario.schema import Scenario
from sim.sweep import KEY_FIGURES, Setting, run_sweep, runs_frame
from sim.sweep.fleet import read_source

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / "scenarios").glob("*.yaml"))
#: long enough for each scenario's first scripted calls and releases (at 12 h and later)
HOURS = 30
#: (record_connections, record_events): the first is compared with each of the others
SETTINGS = [("all", "all"), ("sampled", "all"), ("all", "off"), ("off", "off")]
#: the tables the charts are drawn from
CHART_TABLES = ("computes", "fleet", "operations_per_hour", "cold_start_cdf", "actions")


def shortened(path: Path, hours: float = HOURS) -> Scenario:
    return load_scenario(path).model_copy(update={"duration": hours * 3600.0})


def recorded(scenario: Scenario, connections: str, events: str) -> Scenario:
    return scenario.model_copy(update={"record_connections": connections,
                                       "record_events": events})


def outputs(result: RunResult) -> tuple[dict[str, pd.DataFrame], dict[str, Any]]:
    tables = frames(result)
    return tables, summary(tables, result)


@pytest.fixture(scope="module", params=SHIPPED, ids=lambda p: p.stem)
def runs(request) -> dict[tuple[str, str], tuple[dict[str, pd.DataFrame], dict[str, Any]]]:
    scenario = shortened(request.param)
    return {setting: outputs(run_scenario(recorded(scenario, *setting)))
            for setting in SETTINGS}


@pytest.mark.parametrize("setting", SETTINGS[1:], ids="-".join)
def test_summary_is_the_same_whatever_is_recorded(runs, setting) -> None:
    _, everything = runs[("all", "all")]
    _, some = runs[setting]
    assert some == everything
    # the report's key figures and summary table are made from the summary alone
    assert key_cards(some) == key_cards(everything)
    assert summary_html(some) == summary_html(everything)


@pytest.mark.parametrize("setting", SETTINGS[1:], ids="-".join)
def test_chart_tables_are_the_same_whatever_is_recorded(runs, setting) -> None:
    tables, _ = runs[("all", "all")]
    other, _ = runs[setting]
    for name in CHART_TABLES:
        pd.testing.assert_frame_equal(other[name], tables[name], check_exact=True, obj=name)


def test_the_scenarios_count_what_the_comparison_is_about(runs) -> None:
    """Evidence: with every row kept the counts are those of the rows."""
    tables, totals = runs[("all", "all")]
    operations = tables["operations"]
    assert totals["operations"] == len(operations)
    assert totals["failed_operation_attempts"] == int(operations["failures_count"].sum())
    cdf = tables["cold_start_cdf"]["cold_starts"]
    assert (cdf.iloc[-1] if len(cdf) else 0) == totals["cold_starts"]
    _, off = runs[("off", "off")]
    assert off["operations"] == totals["operations"]


def test_failed_attempts_counted_without_rows() -> None:
    """saas-diurnal fails 1 attempt in 200: its failed attempts come from the counts."""
    scenario = shortened(ROOT / "scenarios" / "saas-diurnal.yaml")
    _, everything = outputs(run_scenario(recorded(scenario, "all", "all")))
    _, off = outputs(run_scenario(recorded(scenario, "off", "off")))
    assert everything["failed_operation_attempts"] > 0 and everything["operations"] > 1000
    assert everything["peak_active_computes"] > 10
    assert off["failed_operation_attempts"] == everything["failed_operation_attempts"]
    assert off["operations_by_action"] == everything["operations_by_action"]


def test_charts_are_the_same_files_whatever_is_recorded(tmp_path: Path) -> None:
    scenario = shortened(ROOT / "scenarios" / "saas-diurnal.yaml", hours=12)
    drawn = {}
    for setting in (("all", "all"), ("off", "off")):
        tables, totals = outputs(run_scenario(recorded(scenario, *setting)))
        out = tmp_path / "-".join(setting)
        drawn[setting] = {p.name: p.read_bytes() for p in draw_charts(tables, totals, out)}
    assert drawn[("off", "off")] == drawn[("all", "all")]


def test_shards_without_rows_merge_to_the_whole_run() -> None:
    """The peak of computes on and the operation counts are not lost across shards."""
    scenario = recorded(shortened(ROOT / "scenarios" / "dev-branches.yaml"), "off", "off")
    order = instance_order(scenario)
    instances = scenario.instances()
    half = len(instances) // 2
    parts = [(run_scenario(scenario, instances=chosen), [i.key for i in chosen])
             for chosen in (instances[:half], instances[half:])]
    merged = canonical_result(parts, order)
    whole = canonical_result([(run_scenario(scenario), list(order))], order)
    assert outputs(merged)[1] == outputs(whole)[1]


# ---- the tallies themselves ----------------------------------------------------------------


def test_operation_tally_by_names_equals_by_codes() -> None:
    rng = np.random.default_rng(3)
    n = 500
    names, statuses = np.array(["start", "suspend", "check"]), np.array(["finished", "failed"])
    a, s = rng.integers(0, 3, n), rng.integers(0, 2, n)
    failures, created = rng.integers(0, 3, n), rng.uniform(0, 5 * 3600, n)
    by_names, by_codes = OperationTally(), OperationTally()
    by_names.add(names[a], statuses[s], failures, created)
    by_codes.add_codes(a, names, s, statuses, failures, created)
    assert by_names.rows() == by_codes.rows()
    # by hand: the count and failed attempts of every (hour, action, status)
    expected = {}
    for h, ai, si, f in zip((created // 3600).astype(int), a, s, failures, strict=True):
        entry = expected.setdefault((int(h), str(names[ai]), str(statuses[si])), [0, 0])
        entry[0] += 1
        entry[1] += int(f)
    assert by_names.rows() == [(*k, *v) for k, v in sorted(expected.items())]
    # two halves counted apart sum to the whole
    first, second = OperationTally(), OperationTally()
    first.add(names[a[:200]], statuses[s[:200]], failures[:200], created[:200])
    second.add(names[a[200:]], statuses[s[200:]], failures[200:], created[200:])
    assert summed_counts([first.rows(), second.rows()]) == by_names.rows()


def test_fleet_tally_counts_as_the_projects_tallies() -> None:
    """Projects' counts joined into the fleet's hourly tally (`Recorder.settle`) give the
    rows their own tallies give, whatever the order they join in."""
    rng = np.random.default_rng(4)
    names, statuses = ["start_compute", "suspend_compute", "odd action"], ["finished", "failed"]
    projects, operations = [], 0
    for _ in range(6):
        n = int(rng.integers(0, 300))
        operations += n
        tally = OperationTally()
        tally.add_codes(rng.integers(0, 3, n), names, rng.integers(0, 2, n), statuses,
                        rng.integers(0, 3, n), rng.uniform(100, 100 + 40 * 3600, n), 100.0)
        projects.append(tally)
    sparse, fleet, backwards = OperationTally(), HourlyTally(), HourlyTally()
    for tally in projects:
        sparse.absorb(tally)
        fleet.absorb(tally)
    for tally in projects[::-1]:
        backwards.absorb(tally)
    total = OperationTally()
    total.absorb(fleet)
    assert total.rows() == sparse.rows() == summed_counts(t.rows() for t in projects)
    other = OperationTally()
    other.absorb(backwards)
    assert other.rows() == total.rows()
    assert sum(row[3] for row in total.rows()) == operations


@pytest.mark.parametrize("seed", range(5))
def test_minute_sums_added_in_pieces_equal_one_sum(seed: int) -> None:
    """Per-minute sums added compute by compute, in any order and with the run growing
    between additions, equal the sums of every interval at once to the nanosecond, and
    the float integrals to rounding."""
    rng = np.random.default_rng(seed)
    duration = 2 * 86_400.0 + 17.5
    start = rng.uniform(0, duration, 3000)
    end = np.minimum(start + rng.exponential(900, 3000), duration)
    end[:10] = duration
    cu = rng.integers(1, 17, 3000) / 4
    on, quarters = per_minute_ns(start, end, cu, duration)
    sums = MinuteSums(duration / 4)  # later additions reach further: it grows
    for piece in np.array_split(rng.permutation(3000), 37):
        sums.add(start[piece], end[piece], cu[piece])
    assert np.array_equal(sums.on_ns(duration), on)
    assert np.array_equal(sums.quarter_ns(duration), quarters)
    floats = per_minute_integrals(start, end, [np.ones(3000), cu], duration)
    np.testing.assert_allclose(on / 1e9, floats[0], atol=1e-6)
    np.testing.assert_allclose(quarters / 4e9, floats[1], atol=1e-6)


@pytest.mark.parametrize("seed", range(20))
def test_joined_spans_keep_the_peak(seed: int) -> None:
    """Joining a compute's back-to-back intervals changes no instant's count."""
    rng = np.random.default_rng(seed)
    starts, ends, joined_starts, joined_ends = [], [], [], []
    for _ in range(5):  # computes
        cuts = np.sort(rng.choice(np.arange(40.0), size=12, replace=False))
        on = rng.random(11) < 0.7
        s, e = cuts[:-1][on], cuts[1:][on]  # some back to back, some with gaps
        starts.append(s)
        ends.append(e)
        js, je = joined_spans(s, e)
        assert len(js) <= len(s)
        joined_starts.append(js)
        joined_ends.append(je)
    assert peak_concurrent(np.concatenate(joined_starts), np.concatenate(joined_ends)) == \
        peak_concurrent(np.concatenate(starts), np.concatenate(ends))


# ---- the sweep -----------------------------------------------------------------------------


def small_tenants() -> dict[str, Any]:
    """tenants.yaml (record_events: off) with a tenth of its projects, for six hours."""
    doc = copy.deepcopy(read_source(ROOT / "scenarios" / "tenants.yaml").document)
    doc["duration"] = "6h"
    for project in doc["projects"]:
        project["count"] = max(1, project["count"] // 50)
    return doc


def test_sweep_of_tenants_runs() -> None:
    doc = small_tenants()
    assert doc["record_events"] == "off"  # what made the sweep fail
    result = run_sweep(doc, ["computes.suspend_timeout_seconds=300"], workers=0)
    row = result.runs.iloc[0]
    assert result.runs["peak_active_computes"].dtype == np.dtype("int64")
    assert row["peak_active_computes"] >= 1
    # the sweep's figures are those of `sim run` with every row kept
    everything = dict(doc, record_events="all", record_connections="all")
    everything["projects"] = [
        {**p, "branches": [{**b, "computes": [{**c, "suspend_timeout_seconds": 300}
                                              for c in b["computes"]]}
                           for b in p["branches"]]} for p in doc["projects"]]
    _, totals = outputs(run_scenario(parse_scenario(everything)))
    for key in ("peak_active_computes", "cold_starts", "sessions", "mean_active_computes"):
        assert row[key] == totals[key], key


def test_runs_frame_takes_a_count_without_data() -> None:
    """A run without a figure (None) leaves NaN, even in a count's column."""
    figures = [dict.fromkeys(KEY_FIGURES, 1), dict.fromkeys(KEY_FIGURES, 1)]
    figures[1]["peak_active_computes"] = None
    settings = [Setting("seed", (1, 2))]
    runs = runs_frame(settings, [{"seed": 1}, {"seed": 2}], [(0, 0, 1), (1, 0, 2)], figures)
    assert runs["peak_active_computes"].iloc[0] == 1
    assert np.isnan(runs["peak_active_computes"].iloc[1])


@pytest.mark.parametrize("warm_up", [0.0, 3600.0])
def test_the_same_with_or_without_a_warm_up(warm_up: float) -> None:
    """With no warm-up the creation is counted (a burst of starts at the first instant);
    with one, what happens before the first instant is in no count: either way, the
    same counts with rows or without."""
    scenario = shortened(ROOT / "scenarios" / "quickstart.yaml", hours=6).model_copy(
        update={"warm_up": warm_up})
    _, everything = outputs(run_scenario(recorded(scenario, "all", "all")))
    _, off = outputs(run_scenario(recorded(scenario, "off", "off")))
    assert off == everything
    assert everything["operations"] > 0


def test_peak_of_one_template_is_the_same_without_rows() -> None:
    """The on-spans are kept per project: the peak of computes on of some projects alone
    (here each project; for per-template figures a template's) is the same with rows or
    without."""
    scenario = shortened(ROOT / "scenarios" / "dev-branches.yaml")
    peaks = {}
    for setting in (("all", "all"), ("off", "off")):
        result = run_scenario(recorded(scenario, *setting))
        tables = frames(result)
        computes = tables["computes"]
        peaks[setting] = {
            name: peak_concurrent(*on_spans(tables["intervals"], result, set(group)))
            for name, group in computes.groupby("project_name")["project_id"]}
    assert peaks[("off", "off")] == peaks[("all", "all")]
    assert len(peaks[("all", "all")]) > 2 and max(peaks[("all", "all")].values()) > 1

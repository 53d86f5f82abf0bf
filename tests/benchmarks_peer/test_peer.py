"""The benchmarks' plain SimPy peer is a fair model of the engine, and the realistic fleet
is sized as it says.

The peer consumes the engine's own arrivals and session lengths, so on the
current benchmark fleet (Poisson 6/h, exponential 30 s, timeout 300 s) the two
differ only in their own draws of cold-start and suspend durations: per
compute, the difference of their cold-start shares and of their shares of time
on must be zero-mean noise. Checked with a paired t interval over the computes
(alpha 0.001), and the sessions must match exactly (nobody is refused here).
The same holds on a small realistic fleet (autoscaling, the pooler, refusals,
operation failures, availability checks, a PATCH), for CU-seconds too.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sim.scenario.loader import parse_scenario
from sim.scenario.runner import run_scenario
from sim.testing.theory import erlang_b, mean_estimate

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

from _harness import fleet_text, realistic_text  # noqa: E402
from peer import draw_workloads, run_peer  # noqa: E402

ALPHA = 0.001
COMPUTES, DAYS = 40, 2.0  # ~11,500 sessions, ~6,600 cold starts


def run_both(text: str):
    scenario = parse_scenario(text)
    peer = run_peer(scenario, draw_workloads(scenario))
    result = run_scenario(scenario)
    engine = {f"{result.projects[row.project_id][0]}.main.0": row for row in result.computes}
    return scenario, peer, engine


def paired_within_chance(name: str, diffs: list[float]) -> None:
    est = mean_estimate(diffs)
    assert abs(est.deviation(0.0, ALPHA)) <= 1.0, (
        f"{name}: peer - engine = {est.value:.3g} +- {est.half_width(ALPHA):.3g}")


@pytest.fixture(scope="module")
def both():
    return run_both(fleet_text(COMPUTES, DAYS))


def test_the_peer_sees_the_engines_sessions(both):
    _, peer, engine = both
    assert sorted(peer.per_compute) == sorted(engine)
    for key, row in engine.items():
        mine = peer.per_compute[key]
        assert mine["sessions"] == row.sessions == mine["arrivals"]
        assert mine["refused"] == row.refused == 0


def test_cold_start_share_and_time_on_agree_within_chance(both):
    scenario, peer, engine = both
    cold_diff, on_diff = [], []
    for key, row in engine.items():
        mine = peer.per_compute[key]
        cold_diff.append((mine["cold_starts"] - row.cold_starts) / mine["arrivals"])
        on_diff.append((mine["on_s"] - row.active_s) / scenario.duration)
    assert sum(row.cold_starts for row in engine.values()) > 1_000  # the check has power
    paired_within_chance("cold-start share", cold_diff)
    paired_within_chance("share of time on", on_diff)


def test_the_peer_agrees_on_a_small_realistic_fleet():
    scenario, peer, engine = run_both(realistic_text(20, 2.0))  # ~7,700 sessions
    assert sorted(peer.per_compute) == sorted(engine)
    assert sum(row.refused for row in engine.values()) > 0  # the sized computes refuse
    assert sum(row.cold_starts for row in engine.values()) > 500
    rows = [(peer.per_compute[key], row) for key, row in engine.items()]
    paired_within_chance("cold-start share", [
        (mine["cold_starts"] - row.cold_starts) / mine["arrivals"] for mine, row in rows])
    paired_within_chance("share of time on", [
        (mine["on_s"] - row.active_s) / scenario.duration for mine, row in rows])
    paired_within_chance("CU-seconds per second", [
        (mine["cu_s"] - row.cu_s) / scenario.duration for mine, row in rows])
    paired_within_chance("refused share", [
        (mine["refused"] - row.refused) / mine["arrivals"] for mine, row in rows])


def test_the_sized_tenth_of_the_realistic_fleet_refuses_about_one_percent():
    """Erlang-B of the sized template's offered load on its max_connections, from the file."""
    from sim.rules.connections import max_connections

    scenario = parse_scenario(realistic_text(100, 1.0))
    sized = scenario.template("sized")
    assert sized is not None and sized.count == 10
    spec = sized.branches[0].computes[0]
    assert spec.workload is not None and spec.workload.arrivals.kind == "poisson"
    offered = spec.workload.arrivals.per_hour / 3600 * spec.workload.session.mean_s
    blocking = erlang_b(max_connections(spec.min_cu, spec.max_cu), offered)
    assert 0.008 < blocking < 0.012
    pooled = sum(t.count for t in scenario.projects
                 if t.branches[0].computes[0].pooler_enabled)
    assert pooled == 50  # the pooler on half of the computes
    assert len(scenario.actions) == 1  # a PATCH on 1 % of the projects

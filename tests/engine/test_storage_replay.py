"""A project's storage lifecycle on the kernel: detaching, archiving, reattaching and
unarchiving replayed from the computes' kernel runs give the SimPy engine's results."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sim.scenario.runner as runner
from sim.kernel.storage_kernel import clocks
from sim.scenario.loader import load_scenario, parse_scenario

from .test_kernel_equals_engine import canonical, random_compute, random_distribution

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
IDLE_PRONE = [  # workloads that go quiet for hours: long enough to detach and archive
    {"arrivals": {"kind": "bursty", "on_per_hour": 90, "off_per_hour": 0, "mean_on": "20m",
                  "mean_off": "5h"}, "session": {"dist": "exponential", "mean_s": 40}},
    {"arrivals": {"kind": "periodic", "every": "3h", "jitter": "20m"},
     "session": {"dist": "lognormal", "mean_s": 120, "sigma": 0.5}},
    {"arrivals": {"kind": "poisson", "per_hour": 0.4},
     "session": {"dist": "fixed", "mean_s": 30}},
]


def idle_compute(rng: np.random.Generator, ctype: str) -> dict:
    spec = random_compute(rng, ctype)
    if rng.random() < 0.7:
        spec["workload"] = dict(IDLE_PRONE[int(rng.integers(len(IDLE_PRONE)))])
    if spec.get("suspend_timeout_seconds") in (0, -1) and rng.random() < 0.8:
        spec["suspend_timeout_seconds"] = 60  # scale to zero, or nothing ever goes quiet
    return spec


def storage_scenario(seed: int) -> dict:
    """A random fleet whose projects detach and whose branches archive within the run:
    several branches, some without a compute, a branch with two computes, checks that
    fall on every branch at once, short idle periods and slow storage work."""
    rng = np.random.default_rng(10_000 + seed)
    projects = []
    for p in range(int(rng.integers(1, 4))):
        branches = [{"name": "main", "computes": [idle_compute(rng, "read_write")]}]
        for b in range(int(rng.integers(0, 4))):
            computes = [] if rng.random() < 0.25 else [idle_compute(rng, "read_write")]
            if computes and rng.random() < 0.3:
                computes.append(idle_compute(rng, "read_only"))
            branches.append({"name": f"dev{b}", "computes": computes})
        projects.append({"name": f"s{p}", "count": int(rng.integers(1, 4)), "branches": branches})
    slow = {"dist": "lognormal", "mean_s": float(round(rng.uniform(2, 40), 2)), "sigma": 0.6}
    engine: dict = {
        "cold_start": random_distribution(rng, 2.0),
        "operation_durations": {a: dict(slow) for a in (
            "tenant_detach", "tenant_reattach", "timeline_archive", "timeline_unarchive")},
        "detach_after": str(rng.choice(["30m", "2h", "5h"])),
        "archive_after": str(rng.choice(["1h", "3h", "8h"])),
    }
    if rng.random() < 0.2:
        engine["detach_after"] = None
    if rng.random() < 0.5:
        engine["check_availability_every"] = str(rng.choice(["2h", "6h", "10h"]))
    return {
        "name": f"storage-{seed}", "seed": seed, "duration": f"{int(rng.integers(24, 96))}h",
        "record_connections": str(rng.choice(["all", "sampled"])),
        "record_events": "all", "connection_sample_rate": 0.3, "engine": engine,
        "faults": {"operation_failure_rate": float(rng.choice([0.0, 0.0, 0.1]))},
        "projects": projects,
    }


def assert_same_tables(scenario) -> runner.RunResult:
    result = runner.run_scenario(scenario)
    engine = canonical(runner.run_scenario(scenario, kernel=False))
    for name, table in canonical(result).items():
        pd.testing.assert_frame_equal(table, engine[name], check_exact=True, obj=name)
    return result


@pytest.mark.parametrize("seed", range(60))
def test_storage_replayed_by_the_kernel_equals_the_engine(seed: int,
                                                              fallbacks: list[str]) -> None:
    assert_same_tables(parse_scenario(storage_scenario(seed)))


def test_the_storage_workloads_exercise_every_storage_rule(fallbacks: list[str]) -> None:
    """The equality above is evidence only if the replay met each rule on the kernel."""
    seen: Counter[str] = Counter()
    computes = kernel = 0
    for seed in range(0, 60, 2):
        result = runner.run_scenario(parse_scenario(storage_scenario(seed)))
        computes += sum(result.roads.values())
        kernel += result.roads.get("kernel", 0)
        for op in result.operations:
            if op.action.startswith(("tenant_", "timeline_archive", "timeline_unarchive")):
                seen[f"{op.action} {op.status}"] += 1
        seen["failed storage attempts"] += sum(
            op.failures_count for op in result.operations if op.endpoint_id is None)
    assert kernel >= 0.9 * computes, (kernel, computes, Counter(fallbacks))
    for rule in ("tenant_detach finished", "tenant_reattach finished",
                 "timeline_archive finished", "timeline_unarchive finished",
                 "failed storage attempts"):
        assert seen[rule] > 0, (rule, seen)


def test_dev_branches_runs_its_unnamed_projects_on_the_kernel(fallbacks: list[str]) -> None:
    result = assert_same_tables(load_scenario(SCENARIOS / "dev-branches.yaml"))
    assert fallbacks == []
    assert result.roads["kernel"] == 59
    actions = Counter(op.action for op in result.operations)
    assert actions["tenant_reattach"] > 0 and actions["timeline_unarchive"] > 0


def test_a_wake_skips_a_queued_archive_and_waits_for_the_detach_then_the_reattach(
        fallbacks: list[str]) -> None:
    """The dev branch goes quiet last: its project's detach and its own archive ring at one
    instant, the archive queues behind a detach of two hours, and the next connection
    comes while it waits: the archive is skipped, the start waits for the detach to end
    and for the reattach it submitted."""
    doc = {
        "name": "skip", "seed": 4, "duration": "12h", "record_events": "all",
        "engine": {"detach_after": "30m", "archive_after": "30m",
                   "operation_durations": {"tenant_detach": {"dist": "fixed", "mean_s": 7200},
                                           "tenant_reattach": {"dist": "fixed", "mean_s": 5}}},
        "projects": [{"name": "p", "branches": [
            {"name": "main", "computes": [{"type": "read_write", "suspend_timeout_seconds": 60}]},
            {"name": "dev", "computes": [{
                "type": "read_write", "suspend_timeout_seconds": 60,
                "workload": {"arrivals": {"kind": "periodic", "every": "2h", "offset": "10m"},
                             "session": {"dist": "fixed", "mean_s": 30}}}]}]}],
    }
    result = assert_same_tables(parse_scenario(doc))
    assert fallbacks == [] and result.roads == {"kernel": 2}
    statuses = Counter((op.action, op.status) for op in result.operations)
    assert statuses[("timeline_archive", "skipped")] > 0
    assert statuses[("tenant_reattach", "finished")] > 0
    waits = [w.wait_s for w in result.wakes if w.cause == "connection"]
    assert max(waits) > 3600  # waited for the detach's two hours


def with_calls(doc: dict, duration_h: int, read_back: bool = False) -> dict:
    """The first project named by two scripted calls, a third and two thirds of the way in;
    `read_back`: the first is followed at once by a call that lists its operations."""
    path = "/projects/{s0[0]}/endpoints/{s0[0].main.read_write}"
    doc["actions"] = [
        {"at": f"{duration_h // 3}h", "call": f"PATCH {path}",
         "body": {"endpoint": {"suspend_timeout_seconds": 120}}},
        {"at": f"{2 * duration_h // 3}h", "call": f"PATCH {path}",
         "body": {"endpoint": {"suspend_timeout_seconds": 60}}},
    ]
    if read_back:
        doc["actions"].append({"at": f"{duration_h // 3}h",
                               "call": "GET /projects/{s0[0]}/operations?limit=100"})
    return doc


@pytest.mark.parametrize("seed", range(20))
def test_a_project_named_by_two_calls_is_the_kernels_between_them(
        seed: int, fallbacks: list[str], monkeypatch) -> None:
    import sim.scenario.handover as handover

    taken: list[float] = []
    real = handover.hand_over

    def spy(cp, c, tick):
        taken.append(cp.now)
        return real(cp, c, tick)

    monkeypatch.setattr(handover, "hand_over", spy)
    doc = storage_scenario(seed)
    doc = with_calls(doc, int(doc["duration"].removesuffix("h")), read_back=seed % 2 == 1)
    result = assert_same_tables(parse_scenario(doc))
    second = doc["actions"][1]["at"]
    assert result.roads.get("kernel but for its scripted calls", 0) > 0 or fallbacks
    if not fallbacks:  # taken back after each call: once before the second, once after it
        hours = sorted({t // 3600 for t in taken})
        assert any(h < int(second[:-1]) for h in hours) and hours[-1] >= int(second[:-1]), hours


def quiet_on_a_grid(spans: list[tuple[int, int]], since: int | None, until: int
                    ) -> list[tuple[int, int]]:
    """Quiet stretches counted cell by cell: the runs of [u, u + 1) no span covers, the
    first one from `since` (none before the first span without it)."""
    covered = [any(s <= u < e for s, e in spans) for u in range(until)]
    runs, u = [], 0
    while u < until:
        if covered[u]:
            u += 1
            continue
        v = u
        while v < until and not covered[v]:
            v += 1
        runs.append((u, v))
        u = v
    first = min((s for s, _ in spans), default=until)
    runs = [(q, r) for q, r in runs if q >= first]  # before the first span: since's
    if since is not None:
        runs.insert(0, (since, first)) if since < first else None
    return runs


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(1, 58), max_size=8), st.integers(1, 2)),
                min_size=1, max_size=3),
       st.one_of(st.none(), st.integers(0, 1)), st.integers(1, 30))
def test_idle_clocks_ring_after_a_whole_quiet_period(computes, since, after) -> None:
    """The clocks of the project (every compute) and of two branches, from the computes'
    spans, against quiet stretches counted cell by cell: where each clock stands at the
    end, and each ring (a stretch quiet for a whole period, ringing before it ends)."""
    until = 60
    span_comp, starts, ends, holder = [], [], [], []
    for c, (marks, branch) in enumerate(computes):
        cuts = sorted(set(marks))
        if len(cuts) % 2:
            cuts.append(until)  # the last span runs to the end
        for s, e in zip(cuts[0::2], cuts[1::2], strict=True):
            span_comp.append(c)
            starts.append(s)
            ends.append(e)
        holder.append(branch)
    tie, idle, ring_t, ring_since, ring_holder = clocks(
        float(until), np.nan, np.array([np.nan if since is None else since] * 3),
        np.array([after, after, np.nan]), np.array(holder, dtype=np.int64),
        np.array(span_comp, dtype=np.int64), np.array(starts, dtype=np.float64),
        np.array(ends, dtype=np.float64))
    expected_rings = []
    for h in range(3):
        spans = [(s, e) for s, e, c in zip(starts, ends, span_comp, strict=True)
                 if h == 0 or holder[c] == h]
        runs = quiet_on_a_grid(spans, since, until)
        last = runs[-1][0] if runs and runs[-1][1] == until else None
        assert (np.isnan(idle[h]) if last is None else idle[h] == last), (h, runs, idle)
        if h < 2:
            expected_rings += [(q + after, q, h) for q, r in runs
                               if q + after < r and q + after < until]
    expected_tie = any(q + after == r < until for h in range(2) for q, r in quiet_on_a_grid(
        [(s, e) for s, e, c in zip(starts, ends, span_comp, strict=True)
         if h == 0 or holder[c] == h], since, until))
    assert bool(tie) == expected_tie
    if not tie:
        got = list(zip(ring_t.tolist(), ring_since.tolist(), ring_holder.tolist(), strict=True))
        assert got == sorted(expected_rings)

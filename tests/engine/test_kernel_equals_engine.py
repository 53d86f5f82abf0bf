"""The kernel gives exactly the SimPy engine's results, on many random workloads."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import sim.scenario.runner as runner
from sim.engine.connection_table import OUTCOMES, Outcome
from sim.metrics import frames
from sim.scenario.loader import parse_scenario


def canonical(result) -> dict[str, pd.DataFrame]:
    """The tables as the run returned them: every run puts its rows in one canonical
    order, so the two roads must give the same rows in the same order, unsorted."""
    return {name: df.reset_index(drop=True) for name, df in frames(result).items()}


def random_distribution(rng: np.random.Generator, mean: float) -> dict:
    kind = rng.choice(["fixed", "exponential", "lognormal"])
    spec = {"dist": str(kind), "mean_s": float(round(mean * rng.uniform(0.5, 2), 3))}
    if kind == "lognormal":
        spec["sigma"] = float(round(rng.uniform(0.2, 1.5), 2))
    return spec


def random_arrivals(rng: np.random.Generator) -> dict:
    kind = rng.choice(["poisson", "diurnal", "periodic", "bursty"])
    if kind == "poisson":
        return {"kind": "poisson", "per_hour": float(round(rng.uniform(0.5, 40), 2))}
    if kind == "diurnal":
        return {"kind": "diurnal", "peak_per_hour": float(round(rng.uniform(5, 80), 1)),
                "trough_per_hour": float(round(rng.uniform(0, 3), 2)),
                "peak_hour": int(rng.integers(0, 24))}
    if kind == "periodic":
        return {"kind": "periodic", "every": f"{int(rng.integers(5, 180))}m",
                "jitter": f"{int(rng.integers(1, 60))}s"}
    return {"kind": "bursty", "on_per_hour": float(round(rng.uniform(20, 200), 1)),
            "off_per_hour": float(round(rng.uniform(0, 2), 2)),
            "mean_on": f"{int(rng.integers(5, 60))}m", "mean_off": f"{int(rng.integers(30, 300))}m"}


def random_compute(rng: np.random.Generator, ctype: str) -> dict:
    spec: dict = {"type": ctype,
                  "suspend_timeout_seconds": int(rng.choice([0, 60, 120, 900, -1]))}
    if rng.random() < 0.4:
        spec["size"] = {"cu": float(rng.choice([0.25, 0.5, 1, 2]))}
    elif rng.random() < 0.6:
        spec["autoscaling"] = {"min_cu": 0.25, "max_cu": float(rng.choice([0.5, 1, 2, 4]))}
    spec["pooler_enabled"] = bool(rng.random() < 0.4)
    if spec["pooler_enabled"] and rng.random() < 0.5:
        spec["pool_size"] = int(rng.integers(1, 6))  # a pool small enough to queue
    if rng.random() < 0.85:
        load = {}
        if rng.random() < 0.5:  # load that moves the autoscaler
            load = {"cpu_per_session": float(round(rng.uniform(0.05, 1.5), 2)),
                    "memory_gb_per_session": float(round(rng.uniform(0, 3), 2))}
        if rng.random() < 0.2:  # temporary files that may fill the local disk
            load["temp_bytes_per_session"] = {"dist": "exponential",
                                              "mean_bytes": int(rng.choice([10**9, 10**10]))}
        spec["workload"] = {"arrivals": random_arrivals(rng),
                            "session": random_distribution(rng, float(rng.uniform(2, 300))),
                            **load}
    return spec


def random_scenario(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    projects = []
    for p in range(int(rng.integers(1, 4))):
        branches = [{"name": "main", "computes": [random_compute(rng, "read_write")]
                     + [random_compute(rng, "read_only") for _ in range(int(rng.integers(0, 3)))]}]
        if rng.random() < 0.4:
            branches.append({"name": "dev", "computes": [random_compute(rng, "read_write")]})
        projects.append({"name": f"t{p}", "count": int(rng.integers(1, 4)), "branches": branches})
    if rng.random() < 0.15:  # a burst on the smallest size: connections refused
        projects.append({"name": "burst", "branches": [{"name": "main", "computes": [{
            "type": "read_write", "size": {"cu": 0.25},
            "workload": {"arrivals": {"kind": "bursty", "on_per_hour": 30000, "off_per_hour": 1,
                                      "mean_on": "2m", "mean_off": "2h"},
                         "session": {"dist": "exponential", "mean_s": 20}}}]}]})
    engine: dict = {
        "cold_start": random_distribution(rng, 0.5),
        "operation_durations": {"suspend_compute": random_distribution(rng, 0.2)},
        "detach_after": None, "archive_after": None,
        "pool_queue_timeout": f"{int(rng.choice([5, 30, 120]))}s",
    }
    if rng.random() < 0.4:
        engine["check_availability_every"] = str(rng.choice(["17m", "1h", "3h"]))
    doc = {
        "name": f"random-{seed}", "seed": seed, "duration": f"{int(rng.integers(6, 72))}h",
        "record_connections": str(rng.choice(["all", "sampled", "off"])),
        "record_events": str(rng.choice(["all", "all", "off"])),
        "connection_sample_rate": 0.3,
        "engine": engine,
        "faults": {"operation_failure_rate": float(rng.choice([0.0, 0.0, 0.05, 0.3]))},
        "projects": projects,
    }
    if rng.random() < 0.3:  # a scripted call: its project runs in the SimPy engine
        doc["actions"] = [{"at": "3h", "call": "PATCH /projects/{t0[0]}/endpoints/{t0[0].main.read_write}",
                           "body": {"endpoint": {"suspend_timeout_seconds": 60}}}]
        if rng.random() < 0.5:  # one that reads operations back: they are then kept as objects
            doc["actions"].append({"at": "4h", "call": "GET /projects/{t0[0]}/operations"})
    return doc


@pytest.mark.parametrize("seed", range(150))
def test_kernel_equals_the_engine(seed: int, fallbacks: list[str]) -> None:
    scenario = parse_scenario(random_scenario(seed))
    engine = canonical(runner.run_scenario(scenario, kernel=False))
    result = runner.run_scenario(scenario, kernel=True)
    fleet = canonical(result)
    for name, table in engine.items():
        pd.testing.assert_frame_equal(table, fleet[name], check_exact=True, obj=name)
    computes = sum(len(b["computes"]) * p.get("count", 1) for p in random_scenario(seed)["projects"]
                   for b in p["branches"])
    assert sum(result.roads.values()) == computes


def test_most_random_workloads_take_the_kernel(fallbacks: list[str]) -> None:
    """The equality above is only evidence if the kernel actually ran."""
    bulk = after_calls = total = 0
    for seed in range(0, 150, 5):
        roads = runner.run_scenario(parse_scenario(random_scenario(seed)), kernel=True).roads
        bulk += roads.get("kernel", 0)
        after_calls += roads.get("kernel but for its scripted calls", 0)
        total += sum(roads.values())
    assert bulk + after_calls >= 0.9 * total, (bulk, after_calls, total, fallbacks)
    assert after_calls > 0  # projects named by a scripted call, handed over after it


BURST = {"arrivals": {"kind": "poisson", "per_hour": 20000},
         "session": {"dist": "fixed", "mean_s": 600}}
QUIET = {"arrivals": {"kind": "poisson", "per_hour": 6},
         "session": {"dist": "exponential", "mean_s": 30}}


def fleet_doc(burst_count: int, quiet_count: int) -> dict:
    def template(name: str, workload: dict, count: int) -> dict:
        return {"name": name, "count": count, "branches": [{"name": "main", "computes": [{
            "type": "read_write", "size": {"cu": 0.25}, "workload": workload}]}]}

    return {"name": "burst", "duration": "2h", "engine": {"detach_after": None},
            "projects": [template("quiet", QUIET, quiet_count),
                         template("burst", BURST, burst_count)]}


def test_refused_connections_are_computed_by_the_kernel(fallbacks: list[str]) -> None:
    # 200 sessions of 10 minutes at once on 0.25 CU (112 connections): some are refused
    scenario = parse_scenario(fleet_doc(burst_count=1, quiet_count=5))
    result = runner.run_scenario(scenario)
    assert fallbacks == [] and result.roads == {"kernel": 6}
    assert sum(row.refused for row in result.computes) > 0
    engine = runner.run_scenario(scenario, kernel=False)
    assert engine.roads == {"per-session: kernel off": 6}
    engine_tables = canonical(engine)
    for name, table in canonical(result).items():
        pd.testing.assert_frame_equal(table, engine_tables[name], check_exact=True, obj=name)


def test_a_project_quiet_long_enough_to_detach_stays_on_the_kernel(
        fallbacks: list[str]) -> None:
    doc = fleet_doc(burst_count=0, quiet_count=3)
    doc["projects"] = [p for p in doc["projects"] if p["count"]]
    doc["projects"].append({"name": "hobby", "branches": [{"name": "main", "computes": [{
        "type": "read_write", "workload": {"arrivals": {"kind": "periodic", "every": "90m"},
                                           "session": {"dist": "fixed", "mean_s": 5}}}]}]})
    doc["engine"]["detach_after"] = "1h"
    scenario = parse_scenario(doc)
    result = runner.run_scenario(scenario)
    assert fallbacks == []
    assert result.roads == {"kernel": 4}
    actions = {row.action for row in result.operations}
    assert {"tenant_detach", "tenant_reattach"} <= actions
    engine_tables = canonical(runner.run_scenario(scenario, kernel=False))
    for name, table in canonical(result).items():
        pd.testing.assert_frame_equal(table, engine_tables[name], check_exact=True, obj=name)


def test_a_burst_open_at_a_scripted_call_keeps_the_engines_row_order(
        tmp_path, fallbacks: list[str]) -> None:
    """Rows of one compute at one instant keep the order they were recorded in: when the
    kernel gives a compute to the engine, a burst's ended and still-open rows interleave."""
    trace = tmp_path / "burst.csv"
    trace.write_text("time\n" + "100\n" * 40 + "3700\n" * 40)
    doc = {"name": "burst-at-call", "duration": "2h", "projects": [{
        "name": "app", "count": 2, "branches": [{"name": "main", "computes": [{
            "type": "read_write", "size": {"cu": 0.25}, "workload": {
                "arrivals": {"kind": "replay", "path": str(trace)},
                "session": {"dist": "exponential", "mean_s": 60}}}]}]}],
        "actions": [{"at": "130s", "call": "PATCH /projects/{app[0]}/endpoints/{app[0].main.read_write}",
                     "body": {"endpoint": {"suspend_timeout_seconds": 60}}}]}
    scenario = parse_scenario(doc)
    result = runner.run_scenario(scenario)
    assert result.roads == {"kernel": 1, "kernel but for its scripted calls": 1}
    engine_tables = canonical(runner.run_scenario(scenario, kernel=False))
    for name, table in canonical(result).items():
        pd.testing.assert_frame_equal(table, engine_tables[name], check_exact=True, obj=name)


def test_the_random_workloads_exercise_every_rule_on_the_kernel(fallbacks: list[str]) -> None:
    """The equality above is evidence for each rule only if the kernel met it."""
    seen = dict.fromkeys(["refused", "queued", "queue_timeouts", "disk_full", "resizes",
                          "failed attempts", "check wakes", "cold starts",
                          "53100 at a queued client's turn"], 0)
    disk_full = OUTCOMES.index(Outcome.DISK_FULL)
    for seed in range(0, 150, 3):
        doc = random_scenario(seed)
        doc.pop("actions", None)
        doc["record_events"] = "all"
        result = runner.run_scenario(parse_scenario(doc))
        assert set(result.roads) <= {"kernel", "per-session: handed back by the kernel"}
        for row in result.computes:
            seen["refused"] += row.refused
            seen["queued"] += row.queued
            seen["queue_timeouts"] += row.queue_timeouts
            seen["disk_full"] += row.disk_full
            seen["cold starts"] += row.cold_starts
        minimum = {row.compute_id: row.min_cu for row in result.computes}
        seen["resizes"] += sum(iv.state == "active" and iv.cu > minimum[iv.compute_id]
                               for iv in result.intervals)
        seen["failed attempts"] += sum(op.failures_count for op in result.operations)
        seen["check wakes"] += sum(w.cause == "check_availability" for w in result.wakes)
        rows = result.connections.columns(ids=False)
        seen["53100 at a queued client's turn"] += int(np.sum(
            (rows["outcome"] == disk_full) & (rows["wait_s"] > 0) & ~rows["cold"]))
    assert all(n > 0 for n in seen.values()), seen


def toggled_pooler(seed: int) -> dict:
    """A loaded compute whose pooler scripted calls turn on and off at random instants: the
    kernel takes it back after each call with direct and pooled sessions open together."""
    rng = np.random.default_rng(seed)
    hours = int(rng.integers(2, 5))
    cu = float(rng.choice([0.25, 0.5]))
    per_hour = float(round(rng.uniform(0.7, 1.6) * 112 * cu / 0.25 * 3600 / 180, 1))
    compute: dict = {"type": "read_write", "size": {"cu": cu},
                     "pooler_enabled": bool(rng.random() < 0.5),
                     "suspend_timeout_seconds": int(rng.choice([0, 60, -1])),
                     "workload": {"arrivals": {"kind": "poisson", "per_hour": per_hour},
                                  "session": {"dist": "exponential", "mean_s": 180}}}
    if compute["pooler_enabled"] and rng.random() < 0.5:
        compute["pool_size"] = int(rng.integers(20, 100))
    path = "/projects/{p[0]}/endpoints/{p[0].main.read_write}"
    instants = np.sort(rng.choice(np.arange(10, 60 * hours - 5), int(rng.integers(1, 5)),
                                  replace=False))
    pooled, actions = compute["pooler_enabled"], []
    for minute in instants:
        pooled = not pooled
        actions.append({"at": f"{int(minute)}m", "call": f"PATCH {path}",
                        "body": {"endpoint": {"pooler_enabled": pooled}}})
    return {"name": f"toggles-{seed}", "seed": seed, "duration": f"{hours}h",
            "record_connections": "all", "record_events": "all",
            "engine": {"pool_queue_timeout": f"{int(rng.choice([30, 120]))}s"},
            "projects": [{"name": "p", "branches": [{"name": "main", "computes": [compute]}]}],
            "actions": actions}


@pytest.mark.parametrize("seed", range(30))
def test_pooler_toggles_under_load_give_the_engines_rows(seed: int,
                                                         fallbacks: list[str]) -> None:
    """Found from outside: turning the pooler on under load, the kernel ignored direct
    sessions still open (the pool's share of Postgres connections) and, turned off, the
    pool's server connections still open; it queued and refused differently."""
    scenario = parse_scenario(toggled_pooler(seed))
    result = runner.run_scenario(scenario)
    assert result.roads == {"kernel but for its scripted calls": 1}, (result.roads, fallbacks)
    engine = canonical(runner.run_scenario(scenario, kernel=False))
    for name, table in canonical(result).items():
        pd.testing.assert_frame_equal(table, engine[name], check_exact=True, obj=name)


def test_the_toggles_load_the_compute_and_mix_its_sessions(fallbacks: list[str]) -> None:
    """The equality above is evidence only if the toggles met a loaded compute: refusals,
    queueing and queue timeouts all happen."""
    seen = {"refused": 0, "queued": 0, "queue_timeouts": 0}
    for seed in range(0, 30, 3):
        result = runner.run_scenario(parse_scenario(toggled_pooler(seed)))
        for name in seen:
            seen[name] += sum(getattr(row, name) for row in result.computes)
    assert all(n > 0 for n in seen.values()), seen


def test_the_audits_case_is_equal_on_both_roads(fallbacks: list[str]) -> None:
    """One 0.25 CU compute, 2,600 sessions an hour of 180 s, the pooler turned on at
    4 h 49 min of 6 h: the kernel had queued 2,280 where the engine queued 2,437."""
    doc = {"name": "audit", "seed": 1, "duration": "6h", "projects": [{"name": "p", "branches": [{
        "name": "main", "computes": [{
            "type": "read_write", "size": {"cu": 0.25},
            "workload": {"arrivals": {"kind": "poisson", "per_hour": 2600},
                         "session": {"dist": "exponential", "mean_s": 180}}}]}]}],
        "actions": [{"at": "289m", "call": "PATCH /projects/{p[0]}/endpoints/{p[0].main.read_write}",
                     "body": {"endpoint": {"pooler_enabled": True}}}]}
    scenario = parse_scenario(doc)
    fleet = runner.run_scenario(scenario).computes[0]
    engine = runner.run_scenario(scenario, kernel=False).computes[0]
    counts = ("sessions", "refused", "queued", "queue_timeouts")
    assert [getattr(fleet, n) for n in counts] == [getattr(engine, n) for n in counts]
    assert fleet.queued == 2437

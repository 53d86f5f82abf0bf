"""The fleet path gives exactly the SimPy engine's results, on many random workloads."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import sim.scenario.runner as runner
from sim.engine.fleetpath import NotReproducible
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
    if rng.random() < 0.5:
        spec["size"] = {"cu": float(rng.choice([0.25, 0.5, 1, 2]))}
    spec["pooler_enabled"] = bool(rng.random() < 0.4)
    if rng.random() < 0.85:
        spec["workload"] = {"arrivals": random_arrivals(rng),
                            "session": random_distribution(rng, float(rng.uniform(2, 300)))}
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
    return {
        "name": f"random-{seed}", "seed": seed, "duration": f"{int(rng.integers(6, 72))}h",
        "record_connections": str(rng.choice(["all", "sampled", "off"])),
        "connection_sample_rate": 0.3,
        "engine": {
            "cold_start": random_distribution(rng, 0.5),
            "operation_durations": {"suspend_compute": random_distribution(rng, 0.2)},
            "detach_after": None, "archive_after": None,
        },
        "projects": projects,
    }


@pytest.fixture
def fallbacks(monkeypatch):
    """Why each project the fleet path handed back to the engine was handed back."""
    seen: list[str] = []
    real = runner.run_fleet_path

    def spy(*args, **kwargs):
        handed_back = real(*args, **kwargs)
        seen.extend(handed_back.values())
        return handed_back

    monkeypatch.setattr(runner, "run_fleet_path", spy)
    return seen


@pytest.mark.parametrize("seed", range(40))
def test_fleet_path_equals_the_engine(seed: int, fallbacks: list[str]) -> None:
    scenario = parse_scenario(random_scenario(seed))
    engine = canonical(runner.run_scenario(scenario, fleet_path=False))
    result = runner.run_scenario(scenario, fleet_path=True)
    fleet = canonical(result)
    for name, table in engine.items():
        pd.testing.assert_frame_equal(table, fleet[name], check_exact=True, obj=name)
    computes = sum(len(b["computes"]) * p["count"] for p in random_scenario(seed)["projects"]
                   for b in p["branches"])
    assert sum(result.roads.values()) == computes


def test_most_random_workloads_take_the_fleet_path(fallbacks: list[str]) -> None:
    """The equality above is only evidence if the fleet path actually ran."""
    bulk = total = 0
    for seed in range(40):
        roads = runner.run_scenario(parse_scenario(random_scenario(seed)), fleet_path=True).roads
        bulk += roads.get("fleet path", 0)
        total += sum(roads.values())
    assert bulk >= 0.8 * total, (bulk, total, fallbacks)


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


def test_a_refused_connection_hands_only_its_project_back_to_the_engine(
        fallbacks: list[str]) -> None:
    # 200 sessions of 10 minutes at once on 0.25 CU (112 connections): some are refused
    scenario = parse_scenario(fleet_doc(burst_count=1, quiet_count=5))
    result = runner.run_scenario(scenario)
    assert fallbacks == ["a connection would be refused"]
    assert result.roads == {"engine: handed back by the fleet path": 1, "fleet path": 5}
    assert sum(row.refused for row in result.computes) > 0
    engine = runner.run_scenario(scenario, fleet_path=False)
    assert engine.roads == {"engine: fleet path off": 6}
    engine_tables = canonical(engine)
    for name, table in canonical(result).items():
        pd.testing.assert_frame_equal(table, engine_tables[name], check_exact=True, obj=name)


def random_inputs(seed: int):
    from sim.engine.fleetpath import Inputs
    from sim.workload.distributions import Distribution

    r = np.random.default_rng(seed)
    n = int(r.integers(0, 3000))
    span = float(r.uniform(3600, 30 * 86400))
    kind = r.integers(3)
    durations = (r.exponential(r.uniform(5, 600), n) if kind == 0
                 else np.full(n, r.uniform(1, 100)) if kind == 1 else r.lognormal(2, 1.5, n))
    return Inputs(
        arrivals=np.sort(r.uniform(0, span, n)), durations=durations,
        activated_at=float(r.uniform(0.1, 5)), timeout=[300.0, 60.0, 900.0, None][r.integers(4)],
        until=span, limits=(1e9, 1e9),
        start=[Distribution.lognormal(0.5, 0.8), Distribution.fixed(0.3),
               Distribution.exponential(2.0)][r.integers(3)],
        suspend=[Distribution.lognormal(0.2, 0.5), Distribution.fixed(0.1),
                 Distribution.exponential(30.0)][r.integers(3)],
        ops_rng=np.random.default_rng(seed + 1000),
    )


@pytest.mark.parametrize("seed", range(0, 300, 3))
def test_bulk_timeline_equals_the_cycle_by_cycle_reference(seed: int) -> None:
    import copy

    from sim.engine.fleetpath import timeline, timeline_reference

    inputs = random_inputs(seed)
    outcomes = []
    for compute in (timeline_reference, timeline):
        try:
            outcomes.append(compute(copy.deepcopy(inputs)))
        except NotReproducible as err:
            outcomes.append(str(err))
    ref, bulk = outcomes
    if isinstance(ref, str) or isinstance(bulk, str):
        assert ref == bulk
        return
    assert bulk.active_at == ref.active_at
    assert bulk.suspend_at == ref.suspend_at
    assert bulk.suspended_at == ref.suspended_at
    assert bulk.wake_at == ref.wake_at
    np.testing.assert_array_equal(bulk.admitted_at, ref.admitted_at)
    np.testing.assert_array_equal(bulk.cold, ref.cold)
    assert bulk.peak_connections == ref.peak_connections

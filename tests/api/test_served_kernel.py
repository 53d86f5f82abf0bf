"""A served world advanced by the compute kernel answers as the engine alone would.

`sim serve --scenario` runs its computes in the kernel between calls and hands a
project to the engine at every instant the clock stops (sim.api.kernel_advance).
Two worlds of one scenario, the kernel on and off, get the same seeded random
sequence of calls (clock moves of odd lengths, reads, edits, restarts, client
connections, new branches and endpoints, deleted endpoints, a new operation failure
rate) and must answer each one identically;
and where the clock stops must not matter: a whole run in one advance, in
hourly advances, and `sim run` of the same scenario give the same figures.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from sim.api import SimServer, in_process_client
from sim.api.client import SimClient
from sim.scenario.loader import parse_scenario
from sim.scenario.runner import run_scenario

FLEET = """
name: served-kernel
seed: {seed}
duration: {days}d
record_connections: off
engine:
  check_availability_every: 1h
  detach_after: 2h
  archive_after: 3h
faults:
  operation_failure_rate: 0.02
projects:
  - name: web
    count: {web}
    branches:
      - name: main
        computes:
          - type: read_write
            autoscaling: {{min_cu: 0.25, max_cu: 4}}
            suspend_timeout_seconds: 300
            workload:
              arrivals: {{kind: diurnal, peak_per_hour: 12, trough_per_hour: 0.5, peak_hour: 14}}
              session: {{dist: lognormal, mean_s: 30, sigma: 1.0}}
              cpu_per_session: 0.25
              memory_gb_per_session: 0.5
      - name: dev
        computes:
          - type: read_write
            suspend_timeout_seconds: 60
            workload:
              arrivals: {{kind: poisson, per_hour: 0.3}}
              session: {{dist: exponential, mean_s: 120}}
  - name: pooled
    count: {pooled}
    branches:
      - name: main
        computes:
          - type: read_write
            autoscaling: {{min_cu: 0.25, max_cu: 4}}
            suspend_timeout_seconds: 300
            pooler_enabled: true
            workload:
              arrivals: {{kind: diurnal, peak_per_hour: 12, trough_per_hour: 0.5, peak_hour: 14}}
              session: {{dist: lognormal, mean_s: 30, sigma: 1.0}}
              cpu_per_session: 0.25
              memory_gb_per_session: 0.5
          - type: read_only
            autoscaling: {{min_cu: 0.25, max_cu: 1}}
            workload:
              arrivals: {{kind: poisson, per_hour: 2}}
              session: {{dist: exponential, mean_s: 60}}
  - name: sized
    count: {sized}
    branches:
      - name: main
        computes:
          - type: read_write
            autoscaling: {{min_cu: 0.25, max_cu: 0.25}}
            workload:
              arrivals: {{kind: poisson, per_hour: 23.8}}
              session: {{dist: exponential, mean_s: 14400}}
actions:
  - at: 12h
    call: PATCH /projects/{{web[0]}}/endpoints/{{web[0].main.read_write}}
    body: {{endpoint: {{suspend_timeout_seconds: 900}}}}
"""


def fleet(days: float, web: int, pooled: int, sized: int, seed: int = 3) -> Any:
    return parse_scenario(FLEET.format(days=days, web=web, pooled=pooled, sized=sized,
                                       seed=seed))


def two_worlds(scenario: Any) -> tuple[SimClient, SimClient]:
    """The kernel's world and the engine's, each with a client."""
    clients = []
    for kernel in (True, False):
        server = SimServer(scenario=scenario, kernel=kernel)
        clients.append(in_process_client(server))
    assert clients[0].server.advancing is not None and clients[1].server.advancing is None
    return clients[0], clients[1]


def random_call(rng: random.Random, api: SimClient) -> tuple[str, str, dict | None]:
    """A call chosen from what the world holds now (read from `api`, the engine's world)."""
    projects = api.get("projects", params={"limit": 400}).json()["projects"]
    project = rng.choice(projects)
    pid = project["id"]
    endpoints = api.get(f"projects/{pid}/endpoints").json()["endpoints"]
    kind = rng.choice(["advance"] * 5 + ["list", "project", "endpoints",
                       "operations", "branches", "patch", "restart", "suspend", "start",
                       "connect", "branch", "endpoint", "faults", "delete"])
    if kind == "advance":
        return "SIM", "advance", {"seconds": round(rng.uniform(0.5, 9_000.0), 3)}
    if kind == "list":
        return "GET", "projects?limit=400", None
    if kind == "project":
        return "GET", f"projects/{pid}", None
    if kind == "endpoints":
        return "GET", f"projects/{pid}/endpoints", None
    if kind == "operations":
        return "GET", f"projects/{pid}/operations?limit={rng.choice([5, 50, 400])}", None
    if kind == "branches":
        return "GET", f"projects/{pid}/branches", None
    if kind == "faults":  # the kernel runs with the failure rate of the moment
        return "SIM", "faults", {"operation_failure_rate": rng.choice([0.0, 0.02, 0.3])}
    if kind == "branch":
        return "POST", f"projects/{pid}/branches", {"endpoints": [{"type": "read_write"}]}
    if not endpoints:
        return "GET", f"projects/{pid}", None
    ep = rng.choice(endpoints)["id"]
    if kind == "patch":
        return "PATCH", f"projects/{pid}/endpoints/{ep}", {
            "endpoint": {"suspend_timeout_seconds": rng.choice([60, 300, 3600])}}
    if kind in ("restart", "suspend", "start"):
        return "POST", f"projects/{pid}/endpoints/{ep}/{kind}", None
    if kind == "delete":
        return "DELETE", f"projects/{pid}/endpoints/{ep}", None
    if kind == "endpoint":
        branch = rng.choice(endpoints)["branch_id"]
        return "POST", f"projects/{pid}/endpoints", {
            "endpoint": {"branch_id": branch, "type": "read_only"}}
    return "SIM", "connections", {"project_id": pid, "endpoint_id": ep,
                                  "count": rng.randint(1, 30),
                                  "duration_seconds": rng.uniform(1, 4_000)}


def answer(api: SimClient, call: tuple[str, str, dict | None]) -> tuple[int, Any]:
    method, path, body = call
    if method == "SIM":
        r = api.sim("POST", path, json=body)
    else:
        r = api.request(method, path, json=body)
    payload = r.json()
    if isinstance(payload, dict):
        payload.pop("request_id", None)  # the engine's world also answered the choosing reads
    return r.status_code, payload


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_answer_equals_the_engine_alone(seed: int) -> None:
    kernel, engine = two_worlds(fleet(3, web=3, pooled=3, sized=1, seed=seed))
    rng = random.Random(seed)
    moved = 0
    for n in range(100):
        call = random_call(rng, engine)
        expected = answer(engine, call)
        got = answer(kernel, call)
        assert got == expected, f"call {n}: {call}"
        moved += call[1] == "advance"
    assert moved >= 15  # the clock moved between the calls, with the kernel at work
    counts = kernel.server.advancing.counts
    assert counts["handed"] > 50  # the kernel held the projects most of the time
    # and at the end every read equals, the operations of every project included
    for pid in [p["id"] for p in engine.get("projects?limit=400").json()["projects"]]:
        for path in (f"projects/{pid}/operations?limit=400", f"projects/{pid}/branches",
                     f"projects/{pid}/endpoints"):
            assert answer(kernel, ("GET", path, None)) == answer(engine, ("GET", path, None))


def figures(rows: Any) -> dict[str, tuple]:
    """Each compute's consumption, CU-seconds and cold starts (by its project's name and
    its branch and type: ids are a run's own)."""
    return {(r.project_name, r.branch_name, r.type): (
        r.active_s, r.cu_s, r.cold_starts, r.suspends, r.sessions, r.refused)
        for r in rows}


def served_figures(scenario: Any, calls: int) -> dict[str, tuple]:
    server = SimServer(scenario=scenario)
    for _ in range(calls):
        server.advance(scenario.duration / calls)
    assert server.cp.now == pytest.approx(server.cp.config.count_from_s + scenario.duration)
    result = server.cp.result(scenario.name, scenario.duration, scenario.price_per_cu_hour)
    return figures(result.computes)


def test_one_advance_hourly_advances_and_sim_run_give_the_same_figures() -> None:
    scenario = fleet(3, web=10, pooled=12, sized=6)  # 50 computes, 3 days
    ran = figures(run_scenario(scenario).computes)
    once = served_figures(scenario, 1)
    hourly = served_figures(scenario, 72)
    assert len(ran) == 50 and sum(f[2] for f in ran.values()) > 100  # cold starts happened
    assert once == ran  # equal, not close
    assert hourly == ran


def test_the_engine_holds_every_project_between_advances() -> None:
    """What a snapshot and every request see: a plain engine world, nothing of the kernel."""
    server = SimServer(scenario=fleet(1, web=2, pooled=2, sized=1))
    server.advance(5_000.5)
    cp = server.cp
    assert not cp.kernel_storage
    assert not any(c.runtime.external for c in cp.computes.values() if c.runtime is not None)
    assert server.advancing is not None and server.advancing.counts["handed"] > 0

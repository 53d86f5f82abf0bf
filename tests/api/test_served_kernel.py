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
from pathlib import Path
from typing import Any

import pytest

from sim.api import SimServer, in_process_client
from sim.api.client import SimClient
from sim.scenario.loader import load_scenario, parse_scenario
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


def churn_call(rng: random.Random, api: SimClient) -> tuple[str, str, dict | None]:
    """A call of a world that grows and shrinks by API calls: projects, branches with and
    without a compute, computes and branches deleted, and long moves of the clock (days,
    so branches archive and projects detach while the kernel holds them)."""
    kind = rng.choice(["advance", "long", "project", "branch", "bare", "endpoint",
                       "delete_endpoint", "delete_branch", "connect"])
    if kind == "advance":
        return "SIM", "advance", {"seconds": round(rng.uniform(1.0, 20_000.0), 3)}
    if kind == "long":
        return "SIM", "advance", {"seconds": round(rng.uniform(1.0, 6.0) * 86_400, 3)}
    if kind == "project":
        return "POST", "projects", {"project": {}}
    projects = api.get("projects", params={"limit": 400}).json()["projects"]
    pid = rng.choice(sorted(p["id"] for p in projects))
    branches = api.get(f"projects/{pid}/branches").json()["branches"]
    endpoints = api.get(f"projects/{pid}/endpoints").json()["endpoints"]
    if kind == "branch":
        return "POST", f"projects/{pid}/branches", {"endpoints": [{"type": "read_write"}]}
    if kind == "bare":  # a branch without a compute: its storage alone ages
        return "POST", f"projects/{pid}/branches", {"branch": {"name": f"b{rng.randint(0, 9999)}"}}
    if kind == "endpoint":
        branch = rng.choice(sorted(b["id"] for b in branches))
        return "POST", f"projects/{pid}/endpoints", {
            "endpoint": {"branch_id": branch, "type": "read_only"}}
    if kind == "delete_branch":
        plain = sorted(b["id"] for b in branches if not b.get("default"))
        if plain:
            return "DELETE", f"projects/{pid}/branches/{rng.choice(plain)}", None
    if not endpoints:
        return "GET", f"projects/{pid}/operations?limit=50", None
    ep = rng.choice(sorted(e["id"] for e in endpoints))
    if kind == "delete_endpoint":
        return "DELETE", f"projects/{pid}/endpoints/{ep}", None
    return "SIM", "connections", {"project_id": pid, "endpoint_id": ep,
                                  "count": rng.randint(1, 10),
                                  "duration_seconds": rng.uniform(1, 600)}


@pytest.mark.parametrize("seed", [4, 5])
def test_long_advances_over_a_changing_world_never_fail(seed: int) -> None:
    """Branches and computes made and deleted between moves of days: every call answers as
    the engine alone does, none with a 5xx (the kernel's hand-over may have to be undone when
    an idle clock rings at its very instant; the engine then keeps the project a while)."""
    kernel, engine = two_worlds(fleet(30, web=2, pooled=1, sized=1, seed=seed))
    rng = random.Random(seed)
    statuses = []
    for n in range(60):
        call = churn_call(rng, engine)
        expected = answer(engine, call)
        got = answer(kernel, call)
        assert got == expected, f"call {n}: {call}"
        statuses.append(got[0])
    assert all(s < 500 for s in statuses)
    assert statuses.count(201) + statuses.count(200) > 40
    assert kernel.server.advancing.counts["handed"] > 20
    for pid in [p["id"] for p in engine.get("projects?limit=400").json()["projects"]]:
        for path in (f"projects/{pid}/operations?limit=400", f"projects/{pid}/branches",
                     f"projects/{pid}/endpoints"):
            assert answer(kernel, ("GET", path, None)) == answer(engine, ("GET", path, None))


def test_a_branch_archiving_after_a_fold_under_the_kernel_answers_as_the_engine() -> None:
    """The quickstart with a project made by calls, and a branch of it without a compute,
    moved 15 days at once: the daily fold runs while the kernel holds the project, and
    must leave the branch's archive timer alone (its idle clock reads None meanwhile), so
    that the archive happens at 14 days as with the engine alone."""
    scenario = load_scenario(Path(__file__).parents[2] / "scenarios" / "quickstart.yaml")
    answers = []
    for on in (True, False):
        api = in_process_client(SimServer(scenario=scenario, kernel=on))
        pid = api.post("projects", json={"project": {}}).json()["project"]["id"]
        assert api.post(f"projects/{pid}/branches",
                        json={"branch": {"name": "plain"}}).status_code == 201
        answers.append([answer(api, ("SIM", "advance", {"seconds": 1_296_000}))]
                       + [answer(api, ("GET", path, None)) for path in (
                           f"projects/{pid}/operations?limit=400", f"projects/{pid}/branches",
                           f"projects/{pid}/endpoints")])
    assert answers[0][0][0] == 200
    assert "timeline_archive" in [o["action"] for o in answers[1][1][1]["operations"]]
    assert answers[0] == answers[1]


def test_a_project_the_kernel_cannot_give_back_stays_with_the_engine(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the kernel cannot run a project to any instant the engine could take it back
    at (not even its hand-over's), the hand-over is undone: the engine keeps the project,
    the advance answers 200, and every answer is the engine alone's."""
    from sim.api.kernel_advance import KernelAdvance
    kernel, engine = two_worlds(fleet(2, web=2, pooled=1, sized=1, seed=6))
    refused = sorted(kernel.server.cp.projects)[:2]
    real = KernelAdvance._run_to

    def run_to(self: KernelAdvance, taken: Any, until: float) -> Any:
        return None if taken.project_id in refused else real(self, taken, until)

    monkeypatch.setattr(KernelAdvance, "_run_to", run_to)
    for seconds in (3_600.5, 40_000.0, 86_400.0):
        assert answer(kernel, ("SIM", "advance", {"seconds": seconds})) == \
            answer(engine, ("SIM", "advance", {"seconds": seconds}))
    counts = kernel.server.advancing.counts
    assert counts["kept"] >= 3 and counts["handed"] > counts["kept"]
    for pid in [p["id"] for p in engine.get("projects?limit=400").json()["projects"]]:
        for path in (f"projects/{pid}/operations?limit=400", f"projects/{pid}/endpoints"):
            assert answer(kernel, ("GET", path, None)) == answer(engine, ("GET", path, None))

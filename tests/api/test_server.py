"""The server around the control plane: clock modes, faults, reset, scenarios, dispatch."""

from __future__ import annotations

import pytest

from sim.api import SimServer, in_process_client
from sim.api.dispatch import dispatch
from sim.engine.control_plane import ControlPlane
from sim.scenario.loader import parse_scenario
from tests.api.conftest import make_project


class FakeWall:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_realtime_clock_runs_at_speed_before_each_request() -> None:
    wall = FakeWall()
    server = SimServer(clock="realtime", speed=60, wall=wall)
    api = in_process_client(server)
    made = make_project(api, "rt")
    start = made["operations"][-1]
    assert api.clock()["seconds"] == 0
    wall.t += 2.5  # 2.5 wall seconds = 150 simulated seconds
    assert api.clock()["seconds"] == pytest.approx(150)
    op = api.get(f"projects/{made['project']['id']}/operations/{start['id']}").json()
    assert op["operation"]["status"] == "finished"
    r = api.sim("POST", "advance", json={"seconds": 10})
    assert (r.status_code, r.json()["code"]) == (409, "CONFLICT")
    wall.t += 5  # 300 more simulated seconds: past the scale-to-zero countdown
    endpoint = api.get(f"projects/{made['project']['id']}/endpoints").json()["endpoints"][0]
    assert endpoint["current_state"] == "idle"


def test_outage_answers_503_on_the_api_only(server: SimServer) -> None:
    api = in_process_client(server)
    project_id = make_project(api, "o")["project"]["id"]
    r = api.sim("POST", "faults", json={"outage": {"start_in_seconds": 60,
                                                   "duration_seconds": 120}})
    assert r.json()["outages"] == [{"start": "2026-01-05T00:01:00Z",
                                    "end": "2026-01-05T00:03:00Z"}]
    assert api.get(f"projects/{project_id}").status_code == 200
    api.advance(90)
    r = api.get(f"projects/{project_id}")
    assert (r.status_code, r.json()["code"]) == (503, "SERVICE_UNAVAILABLE")
    assert api.sim("GET", "clock").status_code == 200  # the controls keep working
    api.advance(100)
    assert api.get(f"projects/{project_id}").status_code == 200


def test_failure_rate_fails_and_retries_operations(server: SimServer) -> None:
    api = in_process_client(server)
    api.sim("POST", "faults", json={"operation_failure_rate": 0.9})
    made = make_project(api, "f")
    api.advance(3)
    ops = api.get(f"projects/{made['project']['id']}/operations").json()["operations"]
    failed = [o for o in ops if o["status"] == "failed"]
    assert failed and all(o["failures_count"] >= 1 and o["error"] and o["retry_at"]
                          for o in failed)
    api.sim("POST", "faults", json={"operation_failure_rate": 0})
    api.advance(120)
    ops = api.get(f"projects/{made['project']['id']}/operations").json()["operations"]
    assert {o["status"] for o in ops} == {"finished"}
    assert any(o["failures_count"] >= 1 for o in ops)


def test_extra_latency_and_bad_fault_values(server: SimServer) -> None:
    api = in_process_client(server)
    assert api.sim("POST", "faults", json={"operation_failure_rate": 1}).status_code == 400
    assert api.sim("POST", "faults", json={"extra_latency_ms": -1}).status_code == 400
    assert api.sim("POST", "faults", json={"extra_latency_ms": 30}).json()["extra_latency_ms"] == 30


def test_reset_gives_the_same_world_again(server: SimServer) -> None:
    api = in_process_client(server)
    first = make_project(api, "same")["project"]["id"]
    api.advance(600)
    r = api.sim("POST", "reset")
    assert r.json() == {"clock": api.clock(), "projects": 0}
    assert api.clock()["seconds"] == 0
    assert make_project(api, "same")["project"]["id"] == first  # same seed, same ids


SCENARIO = {
    "name": "served", "seed": 5, "duration": "1d",
    "projects": [{"name": "shop", "count": 2, "branches": [{"name": "main", "computes": [
        {"type": "read_write", "workload": {"arrivals": {"kind": "poisson", "per_hour": 120},
                                           "session": {"dist": "exponential", "mean_s": 30}}},
    ]}]}],
    "keys": [{"key": "scoped-key-0123456789", "kind": "project", "project": "shop[1]"},
             {"key": "org-key-0123456789abc", "kind": "organization"}],
    "actions": [{"at": "1h",
                 "call": "PATCH /projects/{shop[0]}/endpoints/{shop[0].main.read_write}",
                 "body": {"endpoint": {"autoscaling_limit_max_cu": 4}}}],
}


def test_scenario_fleet_keys_workload_and_actions() -> None:
    server = SimServer(scenario=parse_scenario(SCENARIO))
    org = in_process_client(server, api_key="org-key-0123456789abc")
    scoped = in_process_client(server, api_key="scoped-key-0123456789")
    names = [p["name"] for p in org.get("projects").json()["projects"]]
    assert names == ["shop-0", "shop-1"]
    [mine] = scoped.get("projects").json()["projects"]
    assert mine["name"] == "shop-1"
    org.advance(2 * 3600)  # the workload runs live; the action at 1 h went through the API
    assert [(a.status, a.code) for a in server.actions] == [(200, "")]
    shop0 = org.get("projects").json()["projects"][0]["id"]
    [primary] = org.get(f"projects/{shop0}/endpoints").json()["endpoints"]
    assert primary["autoscaling_limit_max_cu"] == 4
    assert primary["last_active"] > "2026-01-05T01:50:00Z"


def test_dispatch_uses_the_handlers_and_never_moves_the_clock() -> None:
    cp = ControlPlane(seed=2)
    made = cp.create_project("d")
    project, compute = made.project, made.computes[0]
    status, body = dispatch(cp, "PATCH", f"/projects/{project.id}/endpoints/{compute.id}",
                            {"endpoint": {"autoscaling_limit_max_cu": 4}})
    assert status == 423 and body["code"] == "LOCKED" and body["request_id"]
    cp.advance(30)
    status, body = dispatch(cp, "PATCH", f"/projects/{project.id}/endpoints/{compute.id}",
                            {"endpoint": {"autoscaling_limit_max_cu": 4, "bogus": 1}})
    assert (status, body["message"]) == (400, "endpoint.bogus: unknown field")
    status, body = dispatch(cp, "PATCH", f"/projects/{project.id}/endpoints/{compute.id}",
                            {"endpoint": {"autoscaling_limit_max_cu": 4}})
    assert status == 200 and body["endpoint"]["autoscaling_limit_max_cu"] == 4
    status, body = dispatch(cp, "GET", "/projects")
    assert status == 200 and [p["id"] for p in body["projects"]] == [project.id]
    assert cp.now == 30

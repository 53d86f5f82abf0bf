"""Injected faults, and a client that lives with them.

/_sim/faults and a scenario's `faults:` give: operations that fail and are
retried until they finish (`failed` is not terminal), outage windows in which
the management API answers 503, and extra latency on every management call.

`PatientClient` is what a careful automation script does against the real
service: after each change it polls the operations it started (GET
/operations/{id}, every 5 simulated seconds, moving the manual clock), and it
retries 423 (another operation on the compute has not ended) and 503. Driven
through the same script with and without faults, it ends with the same computes.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from sim.api import SimClient, SimServer, in_process_client
from sim.scenario.loader import parse_scenario
from tests.reliability.conftest import SEED

POLL_S = 5.0  # the specification: poll at about 5-second intervals
RETRIED = (423, 503)


class PatientClient:
    def __init__(self, api: SimClient, max_tries: int = 400):
        self.api = api
        self.max_tries = max_tries
        self.seen: Counter[str] = Counter()  # statuses met: "423", "503", "op:failed", ...

    def call(self, method: str, path: str, json: Any = None, *, wait: bool = True
             ) -> dict[str, Any]:
        """The call, retried after POLL_S while it answers 423 or 503; then (unless not
        `wait`) the operations it started, polled until they finish."""
        for _ in range(self.max_tries):
            r = self.api.request(method, path, json=json)
            if r.status_code not in RETRIED:
                break
            self.seen[str(r.status_code)] += 1
            assert r.json()["code"] in ("LOCKED", "SERVICE_UNAVAILABLE")
            self.api.advance(POLL_S)
        else:
            raise AssertionError(f"{method} {path} still refused after {self.max_tries} tries")
        assert r.status_code < 400, (method, path, r.text)
        body = r.json() if r.content else {}
        for op in body.get("operations", []) if wait else []:
            self.wait(op["project_id"], op["id"])
        return body

    def get(self, path: str) -> dict[str, Any]:
        for _ in range(self.max_tries):
            r = self.api.get(path)
            if r.status_code != 503:
                assert r.status_code == 200, r.text
                return r.json()
            self.seen["503"] += 1
            self.api.advance(POLL_S)
        raise AssertionError(f"GET {path}: the outage never ended")

    def wait(self, project_id: str, operation_id: str) -> dict[str, Any]:
        """Poll an operation until it has finished, every POLL_S of simulated time."""
        for _ in range(self.max_tries):
            op = self.get(f"projects/{project_id}/operations/{operation_id}")["operation"]
            self.seen[f"op:{op['status']}"] += 1
            if op["status"] == "finished":
                return op
            assert op["status"] in ("scheduling", "running", "failed"), op  # failed: retried
            self.api.advance(POLL_S)
        raise AssertionError(f"operation {operation_id} never finished")


def script(client: PatientClient) -> str:
    """Create, resize, move, restart, suspend, wake and delete computes; returns the project id."""
    made = client.call("POST", "projects", {"project": {"name": "patient"}})
    p = made["project"]["id"]
    main, primary = made["branch"]["id"], made["endpoints"][0]["id"]
    dev = client.call("POST", f"projects/{p}/branches", {
        "branch": {"name": "dev"}, "endpoints": [{"type": "read_write"}]})
    dev_primary = dev["endpoints"][0]["id"]
    replica = client.call("POST", f"projects/{p}/endpoints", {"endpoint": {
        "branch_id": main, "type": "read_only", "autoscaling_limit_max_cu": 4}})["endpoint"]["id"]
    ep = f"projects/{p}/endpoints"
    doomed = client.call("POST", ep, {"endpoint": {"branch_id": dev["branch"]["id"],
                                                   "type": "read_only"}}, wait=False)
    client.call("DELETE", f"{ep}/{doomed['endpoint']['id']}")  # 423 until its start has ended
    client.call("PATCH", f"{ep}/{primary}", {"endpoint": {
        "autoscaling_limit_min_cu": 1, "autoscaling_limit_max_cu": 4,
        "suspend_timeout_seconds": -1}})
    client.call("POST", f"{ep}/{replica}/restart")
    client.call("PATCH", f"{ep}/{replica}", {"endpoint": {"autoscaling_limit_min_cu": 0.5}})
    client.call("POST", f"{ep}/{dev_primary}/suspend")
    client.call("POST", f"{ep}/{dev_primary}/start")
    client.call("PATCH", f"{ep}/{dev_primary}", {"endpoint": {
        "suspend_timeout_seconds": 600, "pooler_enabled": True}})
    client.call("PATCH", f"{ep}/{replica}", {"endpoint": {"branch_id": dev["branch"]["id"]}})
    client.api.advance(3600)  # everything settles: scale to zero where it applies
    return p


#: what must match between a run with faults and one without (not ids nor instants)
COMPARED = ("type", "current_state", "pending_state", "autoscaling_limit_min_cu",
            "autoscaling_limit_max_cu", "suspend_timeout_seconds", "pooler_enabled",
            "pooler_mode", "settings", "disabled", "passwordless_access", "name")


def final_computes(client: PatientClient, project_id: str) -> list[dict[str, Any]]:
    branches = {b["id"]: b["name"] for b in client.get(f"projects/{project_id}/branches")
                ["branches"]}
    listing = client.get(f"projects/{project_id}/endpoints")["endpoints"]
    rows = [{"branch": branches[e["branch_id"]], **{k: e.get(k) for k in COMPARED}}
            for e in listing]
    return sorted(rows, key=lambda row: (row["branch"], row["type"],
                                         row["autoscaling_limit_max_cu"]))


def run(faults: dict[str, Any] | None) -> tuple[list[dict[str, Any]], PatientClient, SimServer]:
    server = SimServer(seed=SEED)
    client = PatientClient(in_process_client(server))
    if faults:
        r = client.api.sim("POST", "faults", json=faults)
        assert r.status_code == 200, r.text
    project_id = script(client)
    return final_computes(client, project_id), client, server


def test_a_patient_client_ends_where_a_fault_free_run_ends() -> None:
    calm, calm_client, _ = run(None)
    rough, rough_client, server = run({"operation_failure_rate": 0.4,
                                       "outage": {"start_in_seconds": 20, "duration_seconds": 90}})
    assert rough == calm
    # the script worked: the replica moved to dev, the primary never suspends, the rest do
    assert [(c["branch"], c["type"], c["current_state"]) for c in calm] == [
        ("dev", "read_only", "idle"), ("dev", "read_write", "idle"),
        ("main", "read_write", "active")]
    assert calm[2]["autoscaling_limit_min_cu"] == 1 and calm[1]["pooler_enabled"] is True
    seen = rough_client.seen
    assert seen["503"] > 0 and seen["423"] > 0 and seen["op:failed"] > 0, seen
    assert calm_client.seen["503"] == calm_client.seen["op:failed"] == 0
    assert calm_client.seen["423"] > 0  # the delete of a compute still starting waited
    # every failed attempt was retried to the end: no operation is left failed
    ops = [op for p in server.cp.projects.values() for op in p.operations]
    assert sum(op.failures_count for op in ops) > 0
    assert all(op.status in ("finished", "skipped", "cancelled") for op in ops), Counter(
        op.status for op in ops)


def test_a_failed_operation_shows_why_and_when_it_is_retried() -> None:
    server = SimServer(seed=SEED)
    api = in_process_client(server)
    api.sim("POST", "faults", json={"operation_failure_rate": 0.9})
    made = api.post("projects", json={"project": {"name": "flaky"}}).json()
    p = made["project"]["id"]
    statuses = []
    for _ in range(400):
        api.advance(1)
        ops = api.get(f"projects/{p}/operations", params={"limit": 100}).json()["operations"]
        statuses += [op["status"] for op in ops]
        failed = [op for op in ops if op["status"] == "failed"]
        for op in failed:
            assert op["failures_count"] >= 1 and "injected fault" in op["error"]
            assert op["retry_at"] > op["updated_at"]
        if all(op["status"] == "finished" for op in ops):
            break
    assert "failed" in statuses
    assert all(op["status"] == "finished" for op in ops)
    assert all("error" not in op and "retry_at" not in op for op in ops)


def test_an_outage_answers_503_to_the_api_and_never_to_the_controls() -> None:
    server = SimServer(seed=SEED)
    api = in_process_client(server)
    r = api.sim("POST", "faults", json={"outage": {"start_in_seconds": 10, "duration_seconds": 30}})
    assert r.status_code == 200 and len(r.json()["outages"]) == 1
    assert api.get("projects").status_code == 200
    api.advance(10)
    r = api.get("projects")
    assert (r.status_code, r.json()["code"]) == (503, "SERVICE_UNAVAILABLE")
    assert r.json()["request_id"] == r.headers["x-request-id"]
    assert api.clock()["seconds"] == 10  # /_sim answers during the outage
    api.advance(29.9)
    assert api.get("projects").status_code == 503
    api.advance(0.1)
    assert api.get("projects").status_code == 200  # the window is [start, end)
    api.sim("POST", "faults", json={"outage": {"duration_seconds": 5}})
    assert api.get("projects").status_code == 503
    api.sim("POST", "faults", json={"clear_outages": True})
    assert api.get("projects").status_code == 200


def test_extra_latency_slows_the_api_and_not_the_controls(monkeypatch) -> None:  # noqa: ANN001
    """Which calls wait, and how long, is counted from the waits themselves: on a busy
    machine any call may be slow, so "took less than the latency" would prove nothing."""
    server = SimServer(seed=SEED)
    api = in_process_client(server)
    assert api.sim("POST", "faults", json={"extra_latency_ms": 150}).status_code == 200
    waits: list[float] = []
    real_wait = server.stopping.wait  # the latency is a wait that a stop ends

    def wait(seconds: float) -> bool:
        waits.append(seconds)
        return real_wait(seconds)

    monkeypatch.setattr(server.stopping, "wait", wait)

    def took(call) -> float:  # noqa: ANN001
        t = time.perf_counter()
        assert call().status_code == 200
        return time.perf_counter() - t

    assert took(lambda: api.get("projects")) >= 0.15  # a lower bound: slowness cannot break it
    assert waits == [0.15]
    assert api.sim("GET", "clock").status_code == 200
    assert waits == [0.15]  # the control namespace never waits
    api.sim("POST", "faults", json={"extra_latency_ms": 0})
    assert api.get("projects").status_code == 200
    assert waits == [0.15]


SCENARIO = """
name: rough
seed: 3
duration: 1h
faults:
  operation_failure_rate: 0.5
  retry_backoff: 10s
  outages:
    - {at: 2m, duration: 3m}
  extra_latency_ms: 0
projects:
  - name: shop
    count: 3
    branches:
      - name: main
        computes:
          - type: read_write
          - type: read_only
"""


def test_a_scenarios_faults(tmp_path: Path) -> None:
    server = SimServer(scenario=parse_scenario(SCENARIO))
    client = PatientClient(in_process_client(server))
    assert server.cp.executor.failure_rate == 0.5
    client.api.advance(150)  # inside the outage
    r = client.api.get("projects")
    assert r.status_code == 503
    projects = client.get("projects")["projects"]  # retried past the outage
    assert client.seen["503"] > 0 and client.api.clock()["seconds"] >= 300
    for project in projects:
        for op in client.get(f"projects/{project['id']}/operations")["operations"]:
            client.wait(project["id"], op["id"])
    ops = [op for p in server.cp.projects.values() for op in p.operations]
    assert any(op.failures_count > 0 for op in ops)
    assert all(op.status == "finished" for op in ops)
    # a fault-free scenario ends with the same computes, only later for the faulty one
    calm = SimServer(scenario=parse_scenario(SCENARIO.replace("operation_failure_rate: 0.5",
                                                              "operation_failure_rate: 0")))
    calm.cp.advance(client.api.clock()["seconds"])
    listing = {c.key: (c.current_state, c.type) for c in server.cp.computes.values()}
    assert listing == {c.key: (c.current_state, c.type) for c in calm.cp.computes.values()}


@pytest.mark.parametrize("bad", [{"operation_failure_rate": 1.0}, {"operation_failure_rate": -0.1},
                                 {"extra_latency_ms": -1}, {"extra_latency_ms": 60_001},
                                 {"outage": {"duration_seconds": 0}},
                                 {"outage": {"start_in_seconds": -1, "duration_seconds": 5}},
                                 {"outage": {"duration_seconds": 1e12}}])
def test_bad_faults_are_refused_and_change_nothing(bad: dict[str, Any]) -> None:
    server = SimServer(seed=SEED)
    api = in_process_client(server)
    before = api.sim("GET", "faults").json()
    r = api.sim("POST", "faults", json=bad)
    assert r.status_code == 400 and r.json()["code"] == "INVALID_REQUEST", r.text
    assert api.sim("GET", "faults").json() == before

"""The curl walk-through of docs/walkthrough-api.md (the management API, manual clock), as a test."""

from __future__ import annotations

from sim.api import SimClient
from tests.api.conftest import make_project, wait_finished


def test_create_poll_suspend_wake_and_restart(api: SimClient) -> None:
    made = make_project(api, "walk")
    project_id, branch_id = made["project"]["id"], made["branch"]["id"]
    # the project's compute is a primary; a replica is another compute on the same branch
    r = api.post(f"projects/{project_id}/endpoints",
                 json={"endpoint": {"branch_id": branch_id, "type": "read_only",
                                    "autoscaling_limit_min_cu": 0.25,
                                    "autoscaling_limit_max_cu": 1}})
    assert r.status_code == 201
    created = r.json()
    compute = created["endpoint"]
    assert compute["id"].startswith("ep-")
    assert (compute["current_state"], compute["pending_state"]) == ("init", "active")
    assert "last_active" not in compute and "suspended_at" not in compute
    [start] = created["operations"]
    assert (start["action"], start["endpoint_id"]) == ("start_compute", compute["id"])
    assert start["status"] in ("scheduling", "running")

    wait_finished(api, project_id, start["id"])
    url = f"projects/{project_id}/endpoints/{compute['id']}"
    active = api.get(url).json()["endpoint"]
    assert active["current_state"] == "active" and "pending_state" not in active

    api.advance(6 * 60)  # past the 5-minute scale-to-zero default
    idle = api.get(url).json()["endpoint"]
    assert idle["current_state"] == "idle" and "suspended_at" in idle
    ops = api.get(f"projects/{project_id}/operations", params={"limit": 50}).json()["operations"]
    suspends = [o for o in ops if o["action"] == "suspend_compute"
                and o["endpoint_id"] == compute["id"]]
    assert [o["status"] for o in suspends] == ["finished"]

    r = api.post(f"{url}/restart")  # restart needs an active compute
    assert r.status_code == 422
    assert r.json()["code"] == "UNSUPPORTED_STATE"

    r = api.sim("POST", "connections", json={"project_id": project_id,
                                             "endpoint_id": compute["id"],
                                             "count": 1, "duration_seconds": 30})
    assert r.status_code == 200
    woke = r.json()
    assert woke["outcomes"] == {"waiting": 1}
    [wake] = woke["operations"]
    assert wake["action"] == "start_compute"
    wait_finished(api, project_id, wake["id"])
    again = api.get(url).json()["endpoint"]
    assert again["current_state"] == "active" and "last_active" in again

    r = api.post(f"{url}/restart")
    assert r.status_code == 200
    assert [o["action"] for o in r.json()["operations"]] == ["suspend_compute", "start_compute"]

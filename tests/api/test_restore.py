"""Branch restore and reset, finalize, recovery of branches and projects."""

from __future__ import annotations

from tests.api.conftest import make_project, wait_finished


def _setup(api, **project):
    made = make_project(api, **project)
    pid, main = made["project"]["id"], made["branch"]["id"]
    wait_finished(api, pid, made["operations"][-1]["id"])
    return pid, main, made["endpoints"][0]["id"]


def _child(api, pid, name, **fields):
    r = api.post(f"projects/{pid}/branches",
                 json={"branch": {"name": name, **fields}, "endpoints": [{"type": "read_write"}]})
    assert r.status_code == 201, r.text
    out = r.json()
    wait_finished(api, pid, out["operations"][-1]["id"])
    return out["branch"]["id"], out["endpoints"][0]["id"]


def _branches(api, pid, **params):
    return {b["name"]: b for b in
            api.get(f"projects/{pid}/branches", params=params).json()["branches"]}


def test_reset_from_parent_restarts_the_running_compute_and_cuts_its_sessions(api) -> None:
    pid, main, _ = _setup(api)
    dev, ep = _child(api, pid, "dev")
    cut = api.sim("POST", "connections", json={"project_id": pid, "endpoint_id": ep,
                                               "duration_seconds": 600, "count": 2})
    assert cut.status_code == 200, cut.text
    api.advance(30)
    r = api.post(f"projects/{pid}/branches/{dev}/restore", json={"source_branch_id": main})
    assert r.status_code == 200, r.text
    body = r.json()
    assert [o["action"] for o in body["operations"]] == [
        "create_timeline", "suspend_compute", "start_compute"]
    assert body["branch"]["id"] == dev and body["branch"]["name"] == "dev"
    assert body["branch"]["last_reset_at"] == body["branch"]["updated_at"]
    # a second restore while those operations run: 423, and nothing changes
    again = api.post(f"projects/{pid}/branches/{dev}/restore", json={"source_branch_id": main})
    assert again.status_code == 423, again.text
    wait_finished(api, pid, body["operations"][-1]["id"])
    endpoint = api.get(f"projects/{pid}/endpoints/{ep}").json()["endpoint"]
    assert endpoint["current_state"] == "active" and endpoint["branch_id"] == dev
    assert len(_branches(api, pid)) == 2  # nothing preserved


def test_restore_from_own_history_preserves_the_old_state_under_a_name(api) -> None:
    pid, main, _ = _setup(api)
    dev, _ = _child(api, pid, "dev")
    api.advance(3600)
    own = {"source_branch_id": dev, "source_timestamp": "2026-01-05T00:30:00Z"}
    refused = api.post(f"projects/{pid}/branches/{dev}/restore", json=own)
    assert refused.status_code == 400
    assert refused.json()["message"].startswith("preserve_under_name:")
    future = api.post(f"projects/{pid}/branches/{dev}/restore",
                      json={**own, "source_timestamp": "2030-01-01T00:00:00Z",
                            "preserve_under_name": "dev_old"})
    assert future.status_code == 400
    assert future.json()["message"].startswith("source_timestamp:")
    r = api.post(f"projects/{pid}/branches/{dev}/restore",
                 json={**own, "preserve_under_name": "dev_old"})
    assert r.status_code == 200, r.text
    assert [o["action"] for o in r.json()["operations"]][:2] == ["create_branch",
                                                                 "create_timeline"]
    branches = _branches(api, pid)
    assert set(branches) == {"main", "dev", "dev_old"}
    assert branches["dev"]["id"] == dev
    assert branches["dev"]["parent_timestamp"] == "2026-01-05T00:30:00Z"
    assert branches["dev_old"]["restored_as"] == dev


def test_a_deleted_branch_is_listed_and_recovered_with_its_compute(api) -> None:
    pid, _, _ = _setup(api)
    dev, ep = _child(api, pid, "dev")
    deleted = api.delete(f"projects/{pid}/branches/{dev}")
    assert deleted.status_code == 200, deleted.text
    early = api.post(f"projects/{pid}/branches/{dev}/recover")  # its compute still stopping
    assert early.status_code == 423, early.text
    api.advance(60)
    assert "dev" not in _branches(api, pid)
    listed = _branches(api, pid, include_deleted="true")["dev"]
    assert listed["recovery"]["deletion_method"] == "user"
    deleted_at = listed["recovery"]["deleted_at"]
    assert listed["recovery"]["recoverable_until"] == deleted_at.replace("01-05", "01-06", 1)
    r = api.post(f"projects/{pid}/branches/{dev}/recover")
    assert r.status_code == 200, r.text
    assert [e["id"] for e in r.json()["endpoints"]] == [ep]
    assert r.json()["endpoints"][0]["current_state"] == "idle"
    assert "dev" in _branches(api, pid)
    again = api.post(f"projects/{pid}/branches/{dev}/recover")
    assert again.status_code == 409
    started = api.post(f"projects/{pid}/endpoints/{ep}/start")
    assert started.status_code == 200, started.text


def test_a_deleted_project_is_recoverable_for_seven_days(api) -> None:
    pid, main, ep = _setup(api)
    kept = make_project(api, name="kept")["project"]["id"]
    assert api.delete(f"projects/{pid}").status_code == 200
    listed = api.get("projects", params={"recoverable": "true"}).json()["projects"]
    assert [p["id"] for p in listed] == [pid]
    assert kept in [p["id"] for p in api.get("projects").json()["projects"]]
    api.advance(60)  # its compute stopped
    r = api.post(f"projects/{pid}/recover")
    assert r.status_code == 200, r.text
    assert [b["id"] for b in r.json()["branches"]] == [main]
    assert api.get(f"projects/{pid}/endpoints/{ep}").json()["endpoint"]["current_state"] == "idle"
    assert api.get("projects", params={"recoverable": "true"}).json()["projects"] == []
    assert api.delete(f"projects/{pid}").status_code == 200
    api.advance(7 * 86_400 + 1)
    assert api.get("projects", params={"recoverable": "true"}).json()["projects"] == []
    assert api.post(f"projects/{pid}/recover").status_code == 404

"""A branch over time: it expires at its `expires_at` on the simulated clock, and branches
from a point in time only within the project's history window."""

from __future__ import annotations

from tests.api.conftest import make_project

START = "2026-01-05T00:00:00Z"  # the clock's start


def _branch(api, pid: str, **fields):
    return api.post(f"projects/{pid}/branches", json={"branch": fields})


def test_a_branch_is_deleted_at_its_expiry(api) -> None:
    pid = make_project(api)["project"]["id"]
    made = _branch(api, pid, name="tmp", expires_at="2026-01-05T01:00:00.250+00:00")
    assert made.status_code == 201, made.text
    branch = made.json()["branch"]
    assert branch["expires_at"] == "2026-01-05T01:00:00Z"  # normalised: seconds, UTC
    assert branch["ttl_interval_seconds"] == 3600
    api.advance(3599)
    assert api.get(f"projects/{pid}/branches/{branch['id']}").status_code == 200
    api.advance(2)
    assert api.get(f"projects/{pid}/branches/{branch['id']}").status_code == 404
    assert [b["name"] for b in api.get(f"projects/{pid}/branches").json()["branches"]] == [
        "main"]


def test_an_expiry_moved_or_removed_is_kept_to(api) -> None:
    pid = make_project(api)["project"]["id"]
    moved = _branch(api, pid, name="moved", expires_at="2026-01-05T01:00:00Z").json()["branch"]
    kept = _branch(api, pid, name="kept", expires_at="2026-01-05T01:00:00Z").json()["branch"]
    r = api.patch(f"projects/{pid}/branches/{moved['id']}",
                  json={"branch": {"expires_at": "2026-01-05T05:00:00Z"}})
    assert r.status_code == 200 and r.json()["branch"]["expires_at"] == "2026-01-05T05:00:00Z"
    r = api.patch(f"projects/{pid}/branches/{kept['id']}", json={"branch": {"expires_at": None}})
    assert r.status_code == 200 and "expires_at" not in r.json()["branch"]
    api.advance(2 * 3600)
    assert api.get(f"projects/{pid}/branches/{moved['id']}").status_code == 200
    assert api.get(f"projects/{pid}/branches/{kept['id']}").status_code == 200
    api.advance(3 * 3600 + 1)  # (an event at the very instant an advance ends runs after)
    assert api.get(f"projects/{pid}/branches/{moved['id']}").status_code == 404
    assert api.get(f"projects/{pid}/branches/{kept['id']}").status_code == 200


def test_expiry_in_the_past_or_beyond_30_days_is_refused(api) -> None:
    pid = make_project(api)["project"]["id"]
    for when, reason in (("2020-01-01T00:00:00Z", "future"), ("2026-03-01T00:00:00Z", "30 days"),
                         ("soon", "RFC 3339")):
        r = _branch(api, pid, name="x", expires_at=when)
        assert r.status_code == 400, r.text
        assert r.json()["message"].startswith("branch.expires_at:") and reason in r.json()["message"]
    assert len(api.get(f"projects/{pid}/branches").json()["branches"]) == 1  # nothing made


def test_point_in_time_within_the_history_window(api) -> None:
    pid = make_project(api, history_retention_seconds=3600)["project"]["id"]
    api.advance(2 * 3600)
    for when, reason in (("2030-01-01T00:00:00Z", "future"),
                         ("2000-01-01T00:00:00Z", "history retention window"),
                         ("2026-01-05T00:30:00Z", "history retention window")):
        r = _branch(api, pid, name="pit", parent_timestamp=when)
        assert r.status_code == 400, r.text
        assert r.json()["message"].startswith("branch.parent_timestamp:")
        assert reason in r.json()["message"]
    ok = _branch(api, pid, name="pit", parent_timestamp="2026-01-05T01:30:00+00:00")
    assert ok.status_code == 201, ok.text
    assert ok.json()["branch"]["parent_timestamp"] == "2026-01-05T01:30:00Z"
    far = _branch(api, pid, name="lsn", parent_lsn="FF/0")
    assert far.status_code == 400 and "last LSN" in far.json()["message"]
    bad = _branch(api, pid, name="lsn", parent_lsn="zz")
    assert bad.status_code == 400 and bad.json()["message"].startswith("branch.parent_lsn:")


def test_on_a_realtime_clock_expiry_and_schedule_follow_wall_time() -> None:
    from sim.api import SimServer, in_process_client
    from tests.api.test_server import FakeWall

    wall = FakeWall()
    server = SimServer(clock="realtime", speed=3600, wall=wall)  # a wall second, an hour
    api = in_process_client(server)
    made = make_project(api)
    pid, main = made["project"]["id"], made["branch"]["id"]
    tmp = _branch(api, pid, name="tmp", expires_at="2026-01-05T02:00:00Z").json()["branch"]
    assert api.put(f"projects/{pid}/branches/{main}/backup_schedule",
                   json={"schedule": [{"frequency": "hourly"}]}).status_code == 200
    wall.t += 1.5  # 01:30 simulated
    assert api.get(f"projects/{pid}/branches/{tmp['id']}").status_code == 200
    wall.t += 1.0  # 02:30
    assert api.get(f"projects/{pid}/branches/{tmp['id']}").status_code == 404
    snaps = api.get(f"projects/{pid}/snapshots").json()["snapshots"]
    assert [s["timestamp"] for s in snaps] == ["2026-01-05T01:00:00Z", "2026-01-05T02:00:00Z"]

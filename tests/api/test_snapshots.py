"""Snapshots: create, list, rename, delete, restore (and finalize); a schedule that fires on
the simulated clock and keeps what its retention says."""

from __future__ import annotations

from tests.api.conftest import make_project, wait_finished


def _setup(api):
    made = make_project(api)
    pid, main = made["project"]["id"], made["branch"]["id"]
    wait_finished(api, pid, made["operations"][-1]["id"])
    return pid, main, made["endpoints"][0]["id"]


def test_create_list_rename_delete(api) -> None:
    pid, main, _ = _setup(api)
    api.advance(1800)
    r = api.post(f"projects/{pid}/branches/{main}/snapshot",
                 params={"name": "before-migration", "timestamp": "2026-01-05T00:10:00Z"})
    assert r.status_code == 200, r.text
    snap = r.json()["snapshot"]
    assert snap["name"] == "before-migration" and snap["timestamp"] == "2026-01-05T00:10:00Z"
    assert snap["source_branch_id"] == main and snap["manual"] is True
    both = api.post(f"projects/{pid}/branches/{main}/snapshot",
                    params={"timestamp": "2026-01-05T00:10:00Z", "lsn": "0/16B3748"})
    assert both.status_code == 400 and both.json()["message"].startswith("lsn:")
    renamed = api.patch(f"projects/{pid}/snapshots/{snap['id']}",
                        json={"snapshot": {"name": "kept"}})
    assert renamed.status_code == 200 and renamed.json()["snapshot"]["name"] == "kept"
    listed = api.get(f"projects/{pid}/snapshots").json()["snapshots"]
    assert [s["name"] for s in listed] == ["kept"]
    assert api.delete(f"projects/{pid}/snapshots/{snap['id']}").status_code == 202
    assert api.get(f"projects/{pid}/snapshots").json()["snapshots"] == []
    assert api.delete(f"projects/{pid}/snapshots/{snap['id']}").status_code == 404


def test_restore_then_finalize_moves_the_computes(api) -> None:
    pid, main, ep = _setup(api)
    api.advance(600)
    snap = api.post(f"projects/{pid}/branches/{main}/snapshot").json()["snapshot"]
    r = api.post(f"projects/{pid}/snapshots/{snap['id']}/restore", json={"name": "preview"})
    assert r.status_code == 200, r.text
    restored = r.json()["branch"]
    assert restored["restore_status"] == "restored" and restored["restored_from"] == snap["id"]
    assert r.json()["endpoints"] == []
    wait_finished(api, pid, r.json()["operations"][-1]["id"])
    done = api.post(f"projects/{pid}/branches/{restored['id']}/finalize_restore",
                    json={"name": "main_before"})
    assert done.status_code == 200, done.text
    branches = {b["name"]: b for b in api.get(f"projects/{pid}/branches").json()["branches"]}
    assert branches["main"]["id"] == restored["id"] and branches["main"]["default"] is True
    assert branches["main"]["restore_status"] == "finalized"
    assert branches["main_before"]["id"] == main and branches["main_before"]["default"] is False
    endpoint = api.get(f"projects/{pid}/endpoints/{ep}").json()["endpoint"]
    assert endpoint["branch_id"] == restored["id"]
    again = api.post(f"projects/{pid}/branches/{restored['id']}/finalize_restore")
    assert again.status_code == 409


def test_an_hourly_schedule_keeps_what_its_retention_says(api) -> None:
    pid, main, _ = _setup(api)
    schedule = {"schedule": [{"frequency": "hourly", "retention_seconds": 3 * 3600},
                             {"frequency": "daily", "hour": 6}]}
    r = api.put(f"projects/{pid}/branches/{main}/backup_schedule", json=schedule)
    assert r.status_code == 200, r.text
    got = api.get(f"projects/{pid}/branches/{main}/backup_schedule").json()
    assert got == schedule
    api.advance(10 * 3600 + 60)  # 10 hourly snapshots taken, 3 kept; one daily at 06:00
    snaps = api.get(f"projects/{pid}/snapshots").json()["snapshots"]
    hourly = sorted(s["timestamp"] for s in snaps if "hourly" in s["name"])
    daily = [s["timestamp"] for s in snaps if "daily" in s["name"]]
    assert hourly == ["2026-01-05T08:00:00Z", "2026-01-05T09:00:00Z", "2026-01-05T10:00:00Z"]
    assert daily == ["2026-01-05T06:00:00Z"]
    assert all(s["manual"] is False for s in snaps)
    # a new schedule replaces the old one: no more hourly snapshots
    assert api.put(f"projects/{pid}/branches/{main}/backup_schedule",
                   json={"schedule": []}).status_code == 200
    api.advance(5 * 3600)
    assert [s for s in api.get(f"projects/{pid}/snapshots").json()["snapshots"]
            if "hourly" in s["name"]] == []


def test_a_bad_schedule_is_refused_naming_the_field(api) -> None:
    pid, main, _ = _setup(api)
    for item, field in (({"frequency": "often"}, "schedule[0].frequency"),
                        ({"frequency": "daily", "hour": 24}, "schedule[0].hour"),
                        ({"frequency": "hourly", "retention_seconds": 60},
                         "schedule[0].retention_seconds")):
        r = api.put(f"projects/{pid}/branches/{main}/backup_schedule", json={"schedule": [item]})
        assert r.status_code == 400, r.text
        assert field in r.json()["message"]
    assert api.get(f"projects/{pid}/branches/{main}/backup_schedule").json() == {"schedule": []}

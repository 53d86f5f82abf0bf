"""The lifecycle the clock drives survives a restart of a journaled `sim serve`: expiry,
restore, recovery, snapshots and their schedule, and the consumption history."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sim.testing.state_digest import digest
from tests.reliability.test_persistence import ok
from tests.reliability.test_persistence_support import open_kept

KEY = "sim_key_lifecycle_persistence_01"


def seen(api: Any, p: str, main: str) -> dict[str, Any]:
    span = {"from": "2026-01-05T00:00:00Z", "to": "2026-01-06T00:00:00Z",
            "granularity": "hourly"}
    return {
        "branches": ok(api.get(f"projects/{p}/branches", params={"include_deleted": "true"})),
        "snapshots": ok(api.get(f"projects/{p}/snapshots")),
        "schedule": ok(api.get(f"projects/{p}/branches/{main}/backup_schedule")),
        "consumption": ok(api.get("consumption_history/projects", params=span)),
        "recoverable": ok(api.get("projects", params={"recoverable": "true"})),
    }


def _session(api: Any) -> tuple[str, str]:
    made = ok(api.post("projects", json={"project": {"name": "kept"}}), 201)
    p, main = made["project"]["id"], made["branch"]["id"]
    gone = ok(api.post("projects", json={"project": {"name": "gone"}}), 201)["project"]["id"]
    api.advance(120)
    ok(api.put(f"projects/{p}/branches/{main}/backup_schedule", json={"schedule": [
        {"frequency": "hourly", "retention_seconds": 7200}]}))
    dev = ok(api.post(f"projects/{p}/branches", json={
        "branch": {"name": "dev", "expires_at": "2026-01-05T03:00:00Z"},
        "endpoints": [{"type": "read_write"}]}), 201)["branch"]["id"]
    tmp = ok(api.post(f"projects/{p}/branches", json={"branch": {"name": "tmp"}}),
             201)["branch"]["id"]
    api.advance(600)
    ok(api.post(f"projects/{p}/branches/{dev}/restore", json={"source_branch_id": main}))
    ok(api.delete(f"projects/{p}/branches/{tmp}"))
    ok(api.delete(f"projects/{gone}"))
    api.advance(1800)
    ok(api.post(f"projects/{p}/branches/{main}/snapshot", params={"name": "manual"}))
    ok(api.post(f"projects/{p}/branches/{dev}/restore", json={
        "source_branch_id": dev, "source_timestamp": "2026-01-05T00:20:00Z",
        "preserve_under_name": "dev_before"}))
    api.advance(5 * 3600)  # the schedule fires; dev expires (its reset set its TTL again)
    return p, main


@pytest.mark.parametrize("snapshot_every", [None, 3])
def test_the_lifecycle_replays_from_the_journal(tmp_path: Path, snapshot_every) -> None:
    """From the journal alone, and from a saved world (its pending timers included)."""
    path = tmp_path / "state.db"
    server, api = open_kept(path, KEY, 6, snapshot_every=snapshot_every)
    p, main = _session(api)
    before, views = digest(server.cp), seen(api, p, main)
    assert len(views["snapshots"]["snapshots"]) == 3  # the manual one, two hourly kept
    assert [x["name"] for x in views["recoverable"]["projects"]] == ["gone"]
    deleted = {b["name"]: b["recovery"]["deletion_method"]
               for b in views["branches"]["branches"] if "recovery" in b}
    assert deleted == {"dev": "ttl", "tmp": "user"}
    api.close()
    server.journal.close()  # type: ignore[union-attr]

    server, api = open_kept(path, KEY, 6, snapshot_every=snapshot_every)
    try:
        assert digest(server.cp) == before
        assert seen(api, p, main) == views
        api.advance(3600)  # the restored world goes on: the schedule's next snapshot
        after = ok(api.get(f"projects/{p}/snapshots"))["snapshots"]
        assert len(after) == 3 and after != views["snapshots"]["snapshots"]
    finally:
        api.close()
        server.journal.close()  # type: ignore[union-attr]

"""What the organization's routes keep survives a restart from the state file: project
grants, invitations, the spending limit, organization keys (revoked ones stay revoked)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sim.api.keys import ORG_ID
from tests.reliability.test_persistence import Kept, digest, ok


@pytest.fixture
def kept(tmp_path: Path) -> Iterator[Kept]:
    k = Kept(tmp_path / "state.db", {"seed": 7})
    yield k
    k.close()


@pytest.mark.parametrize("snapshot", [False, True])
def test_the_organizations_state_after_a_restart(kept: Kept, snapshot: bool) -> None:
    api = kept.api
    p = ok(api.post("projects", json={"project": {"name": "kept"}}), 201)["project"]["id"]
    org = f"organizations/{ORG_ID}"
    grant = ok(api.post(f"projects/{p}/permissions", json={"email": "bob@example.com"}))
    ok(api.post(f"projects/{p}/permissions", json={"email": "ann@example.com"}))
    ok(api.delete(f"projects/{p}/permissions/{grant['id']}"))
    ok(api.post(f"{org}/invitations", json={"invitations": [{"email": "c@example.com",
                                                             "role": "viewer"}]}))
    ok(api.put(f"{org}/billing/spending_limit", json={"spending_limit_cents": 1234}))
    kept_key = ok(api.post(f"{org}/api_keys", json={"key_name": "one", "project_id": p}))
    gone = ok(api.post(f"{org}/api_keys", json={"key_name": "gone"}))
    ok(api.delete(f"{org}/api_keys/{gone['id']}"))
    before = (ok(api.get(f"projects/{p}/permissions")), ok(api.get(f"{org}/invitations")),
              ok(api.get(f"{org}/api_keys")), digest(kept.server.cp))
    if snapshot:
        kept.server.take_snapshot()
    kept.restart()
    api = kept.api
    after = (ok(api.get(f"projects/{p}/permissions")), ok(api.get(f"{org}/invitations")),
             ok(api.get(f"{org}/api_keys")), digest(kept.server.cp))
    assert after == before
    assert [g["granted_to_email"] for g in after[0]["project_permissions"]] == ["ann@example.com"]
    assert ok(api.get(f"{org}/billing/spending_limit")) == {"spending_limit_cents": 1234}
    as_key = {"authorization": f"Bearer {kept_key['key']}"}
    assert [x["id"] for x in ok(api.get("projects", headers=as_key))["projects"]] == [p]
    gone_key = {"authorization": f"Bearer {gone['key']}"}
    assert api.get("projects", headers=gone_key).status_code == 401

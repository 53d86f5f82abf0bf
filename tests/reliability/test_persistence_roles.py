"""Roles, databases and branch edits survive a restart of a journaled `sim serve`.

Replaying the journal gives the same roles, databases, passwords (drawn again
from the same named streams) and branches, and the same state digest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sim.testing.state_digest import digest
from tests.reliability.test_persistence import ok
from tests.reliability.test_persistence_support import open_kept

KEY = "sim_key_roles_persistence_0123"


def seen(api: Any, p: str, b: str) -> dict[str, Any]:
    """What a client sees of the branch's roles, databases and passwords."""
    roles = ok(api.get(f"projects/{p}/branches/{b}/roles"))["roles"]
    return {
        "roles": roles,
        "passwords": [ok(api.get(f"projects/{p}/branches/{b}/roles/{r['name']}/reveal_password"))
                      for r in roles],
        "databases": ok(api.get(f"projects/{p}/branches/{b}/databases"))["databases"],
        "branches": ok(api.get(f"projects/{p}/branches"))["branches"],
        "uri": ok(api.get(f"projects/{p}/connection_uri",
                          params={"branch_id": b, "role_name": "neondb_owner",
                                  "database_name": "neondb"})),
    }


def test_roles_databases_and_branch_edits_replay(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    server, api = open_kept(path, KEY, 4)
    made = ok(api.post("projects", json={"project": {"name": "kept"}}), 201)
    p, main = made["project"]["id"], made["branch"]["id"]
    api.advance(60)
    B = f"projects/{p}/branches/{main}"
    ok(api.post(f"{B}/roles", json={"role": {"name": "alice"}}), 201)
    api.advance(60)
    ok(api.post(f"{B}/roles/alice/reset_password"))
    api.advance(60)
    ok(api.post(f"{B}/databases", json={"database": {"name": "shop", "owner_name": "alice"}}),
       201)
    api.advance(60)
    dev = ok(api.post(f"projects/{p}/branches", json={
        "branch": {"name": "dev"}, "annotation_value": {"ci": "1"}}), 201)["branch"]["id"]
    ok(api.patch(f"projects/{p}/branches/{dev}", json={"branch": {"protected": True}}))
    ok(api.post(f"projects/{p}/branches/{dev}/set_as_default"))
    api.advance(60)
    before, views = digest(server.cp), seen(api, p, main)
    api.close()
    server.journal.close()  # type: ignore[union-attr]

    server, api = open_kept(path, KEY, 4)
    try:
        assert digest(server.cp) == before
        assert seen(api, p, main) == views
        annotation = ok(api.get(f"projects/{p}/branches/{dev}"))["annotation"]
        assert annotation["value"] == {"ci": "1"}
    finally:
        api.close()
        server.journal.close()  # type: ignore[union-attr]

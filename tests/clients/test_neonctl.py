"""A neonctl session against `sim serve`, on a manual and on a realtime clock.

Each command must exit 0, and its JSON output must agree with what the
simulator holds (read back over HTTP). Between commands that start operations
the session waits for them, as a user would.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.clients.conftest import KEY, NpmClients, Served

pytestmark = pytest.mark.parametrize("clock", ["manual", "realtime"])


class Neonctl:
    def __init__(self, clients: NpmClients, served: Served, home: Path):
        self.clients, self.served, self.home = clients, served, home
        self.context = home / "context.json"
        self.commands: list[str] = []

    def __call__(self, *args: str, output: str = "json") -> Any:
        """Run one command; it must exit 0. Its output, parsed when it is JSON."""
        cmd = [*self.clients.neonctl, *args, "--api-host", self.served.api_host,
               "--api-key", KEY, "--no-analytics", "--no-color", "--config-dir",
               str(self.home / "config"), "--context-file", str(self.context)]
        if output:
            cmd += ["-o", output]
        env = {"HOME": str(self.home), "PATH": "/usr/bin:/bin", "NO_COLOR": "1",
               "NEON_API_KEY": ""}
        run = subprocess.run(cmd, cwd=self.home, env=env, capture_output=True, text=True,
                             timeout=120)
        self.commands.append(" ".join(args))
        assert run.returncode == 0, (args, run.returncode, run.stdout[-2000:], run.stderr[-2000:])
        return json.loads(run.stdout) if output == "json" else run.stdout.strip()


def test_a_neonctl_session(clock: str, npm_clients: NpmClients,
                           serve: Callable[[str], Served], tmp_path: Path) -> None:
    served = serve(clock)
    neonctl = Neonctl(npm_clients, served, tmp_path)

    me = neonctl("me")
    assert me["id"] == served.api("GET", "users/me")["id"]

    # ---- projects
    created = neonctl("projects", "create", "--name", "cli-shop")
    p = created["project"]["id"]
    assert served.api("GET", f"projects/{p}")["project"]["name"] == "cli-shop"
    listed = neonctl("projects", "list")
    assert p in [x["id"] for x in listed["projects"]] and listed["shared_with_you"] == []
    assert neonctl("projects", "get", p)["id"] == p
    updated = neonctl("projects", "update", p, "--name", "cli-store")
    assert updated["name"] == "cli-store"
    assert served.api("GET", f"projects/{p}")["project"]["name"] == "cli-store"
    served.settle(p)
    main = served.api("GET", f"projects/{p}/branches")["branches"][0]

    # ---- branches
    dev = neonctl("branches", "create", "--project-id", p, "--name", "dev")
    dev_id = dev["branch"]["id"]
    assert dev["branch"]["parent_id"] == main["id"]
    assert [e["branch_id"] for e in dev["endpoints"]] == [dev_id]
    served.settle(p)
    cli_names = sorted(b["name"] for b in neonctl("branches", "list", "--project-id", p))
    assert cli_names == sorted(b["name"] for b in
                               served.api("GET", f"projects/{p}/branches")["branches"])
    assert neonctl("branches", "get", "dev", "--project-id", p)["id"] == dev_id
    renamed = neonctl("branches", "rename", "dev", "feature", "--project-id", p)
    assert renamed["name"] == "feature"
    assert served.api("GET", f"projects/{p}/branches/{dev_id}")["branch"]["name"] == "feature"
    replica = neonctl("branches", "add-compute", "feature", "--project-id", p)
    assert replica["branch_id"] == dev_id and replica["type"] == "read_only"
    computes = served.api("GET", f"projects/{p}/branches/{dev_id}/endpoints")["endpoints"]
    assert replica["id"] in [c["id"] for c in computes]
    served.settle(p)
    made_default = neonctl("branches", "set-default", "feature", "--project-id", p)
    assert made_default["default"] is True
    assert served.api("GET", f"projects/{p}/branches/{main['id']}")["branch"]["default"] is False
    # without a compute, neonctl prints the branch alone
    scratch = neonctl("branches", "create", "--project-id", p, "--name", "scratch",
                      "--no-compute")
    assert served.api("GET", f"projects/{p}/branches/{scratch['id']}")["branch"]["name"] == \
        "scratch"
    served.settle(p)
    assert neonctl("branches", "delete", "scratch", "--project-id", p)["id"] == scratch["id"]
    remaining = served.api("GET", f"projects/{p}/branches")["branches"]
    assert scratch["id"] not in [b["id"] for b in remaining]

    # ---- connection strings, roles, databases, operations
    primary = next(c for c in computes if c["type"] == "read_write")
    uri = neonctl("connection-string", "feature", "--project-id", p, output="")
    expected = served.api("GET", f"projects/{p}/connection_uri",
                          params={"branch_id": dev_id})["uri"]
    assert uri == expected + "&channel_binding=require"
    assert f"@{primary['host']}/" in uri
    pooled = neonctl("connection-string", "feature", "--project-id", p, "--pooled", output="")
    assert f"@{primary['id']}-pooler." in pooled
    roles = neonctl("roles", "list", "--project-id", p, "--branch", "feature")
    assert [r["name"] for r in roles] == [r["name"] for r in served.api(
        "GET", f"projects/{p}/branches/{dev_id}/roles")["roles"]] == ["neondb_owner"]
    databases = neonctl("databases", "list", "--project-id", p, "--branch", "feature")
    assert [(d["name"], d["owner_name"]) for d in databases] == [("neondb", "neondb_owner")]
    operations = neonctl("operations", "list", "--project-id", p)
    served_ops = served.api("GET", f"projects/{p}/operations", params={"limit": 1000})
    assert {o["id"] for o in operations} <= {o["id"] for o in served_ops["operations"]}
    assert {"create_timeline", "create_branch", "start_compute"} <= {o["action"]
                                                                     for o in operations}

    extra = 0
    if clock == "manual":  # roles and databases made and dropped by the CLI (once is enough)
        alice = neonctl("roles", "create", "--project-id", p, "--name", "alice")
        assert alice["password"] == served.api(
            "GET", f"projects/{p}/branches/{dev_id}/roles/alice/reveal_password")["password"]
        served.settle(p)
        shop = neonctl("databases", "create", "--project-id", p, "--name", "shop",
                       "--owner-name", "alice")
        assert shop["owner_name"] == "alice"
        served.settle(p)
        mine = neonctl("connection-string", "--project-id", p, "--role-name", "alice",
                       "--database-name", "shop", output="")
        assert mine.startswith(f"postgresql://alice:{alice['password']}@") and "/shop?" in mine
        neonctl("databases", "delete", "shop", "--project-id", p)
        served.settle(p)
        neonctl("roles", "delete", "alice", "--project-id", p)
        served.settle(p)
        names = [r["name"] for r in served.api("GET", f"projects/{p}/branches/{dev_id}/roles")
                 ["roles"]]
        assert names == ["neondb_owner"]
        extra = 5

    # ---- a context: later commands name no project
    neonctl("set-context", "--project-id", p, output="")
    in_context = neonctl("branches", "list")
    assert {b["id"] for b in in_context} == {b["id"] for b in remaining}
    assert neonctl("roles", "list")[0]["branch_id"] == dev_id  # the default branch now
    assert neonctl("connection-string", output="") == uri

    deleted = neonctl("projects", "delete", p)
    assert deleted["id"] == p
    assert served.http.get(f"/api/v2/projects/{p}").status_code == 404
    assert len(neonctl.commands) == 23 + extra  # every command above ran and exited 0

"""A neonctl session against `sim serve`, on a manual and on a realtime clock.

Each command must exit 0, and its JSON output must agree with what the
simulator holds (read back over HTTP). Between commands that start operations
the session waits for them, as a user would.

`LIFECYCLE` lists the commands of the lifecycle over time (branch reset and restore,
snapshots, project recovery), run in a session of their own.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
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
    orgs = neonctl("orgs", "list")
    assert [o["id"] for o in orgs] == [o["id"] for o in served.api(
        "GET", "users/me/organizations")["organizations"]] == ["org-1"]
    assert neonctl("api", "/auth") == served.api("GET", "auth")

    # ---- projects
    created = neonctl("projects", "create", "--name", "cli-shop")
    p = created["project"]["id"]
    assert served.api("GET", f"projects/{p}")["project"]["name"] == "cli-shop"
    listed = neonctl("projects", "list")
    assert p in [x["id"] for x in listed["projects"]] and listed["shared_with_you"] == []
    # without org_id, the project is the user's default organization's
    in_org = neonctl("projects", "list", "--org-id", "org-1")
    assert [x["id"] for x in in_org] == [p] == [
        x["id"] for x in served.api("GET", "projects", params={"org_id": "org-1"})["projects"]]
    # the one project: commands that name none find it through the organization
    assert {b["name"] for b in neonctl("branches", "list")} == {"main"}
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

    # ---- roles and databases made and dropped by the CLI
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
    # neonctl 5.0.1 reads --no-login as yargs' negation of a `login` flag and sends no
    # no_login: the role is an ordinary one, with the password the simulator keeps
    plain = neonctl("roles", "create", "--project-id", p, "--name", "plain", "--no-login")
    assert plain["password"] == served.api(
        "GET", f"projects/{p}/branches/{dev_id}/roles/plain/reveal_password")["password"]
    served.settle(p)
    # sent as the document has it, no_login makes a role without a password
    reader = neonctl("api", f"/projects/{p}/branches/{dev_id}/roles", "-X", "POST",
                     "-F", "role.name=reader", "-F", "role.no_login=true")["role"]
    assert reader["name"] == "reader" and "password" not in reader
    served.settle(p)
    assert {"plain", "reader"} <= {r["name"] for r in served.api(
        "GET", f"projects/{p}/branches/{dev_id}/roles")["roles"]}
    for name in ("plain", "reader"):
        neonctl("roles", "delete", name, "--project-id", p)
        served.settle(p)

    # ---- API keys: the account's, the organization's, one project's
    account_key = neonctl("api-keys", "create", "--name", "ci")
    org_key = neonctl("api-keys", "create", "--name", "everything", "--org-id", "org-1")
    scoped_key = neonctl("api-keys", "create", "--name", "one", "--project-id", p)
    assert scoped_key["project_id"] == p and "project_id" not in org_key
    mine = neonctl("api-keys", "list")
    assert [k["id"] for k in mine] == [k["id"] for k in served.api("GET", "api_keys")]
    assert account_key["id"] in [k["id"] for k in mine]
    assert org_key["id"] not in [k["id"] for k in mine]  # the organization's: listed there
    theirs = neonctl("api-keys", "list", "--org-id", "org-1")
    assert [(k["id"], k.get("project_id")) for k in theirs] == [
        (org_key["id"], None), (scoped_key["id"], p)] == [
        (k["id"], k.get("project_id")) for k in served.api("GET", "organizations/org-1/api_keys")]
    with httpx.Client(base_url=served.http.base_url,
                      headers={"authorization": f"Bearer {scoped_key['key']}"}) as scoped:
        assert [x["id"] for x in scoped.get("/api/v2/projects").json()["projects"]] == [p]
        assert neonctl("api-keys", "revoke", str(scoped_key["id"]), "--org-id",
                       "org-1")["revoked"]
        assert scoped.get("/api/v2/projects").status_code == 401
    assert neonctl("api-keys", "revoke", str(account_key["id"]))["revoked"]
    assert account_key["id"] not in [k["id"] for k in served.api("GET", "api_keys")]

    # ---- sharing the project, its IP allow-list, the organization's members
    granted = neonctl("api", f"/projects/{p}/permissions", "-X", "POST",
                      "-F", "email=bob@example.com")
    shared = neonctl("api", f"/projects/{p}/permissions")
    assert shared == served.api("GET", f"projects/{p}/permissions")
    assert [g["granted_to_email"] for g in shared["project_permissions"]] == ["bob@example.com"]
    neonctl("api", f"/projects/{p}/permissions/{granted['id']}", "-X", "DELETE")
    assert served.api("GET", f"projects/{p}/permissions")["project_permissions"] == []
    members = neonctl("api", "/organizations/org-1/members")["members"]
    assert [m["member"]["user_id"] for m in members] == [me["id"]]
    allowed = neonctl("ip-allow", "add", "203.0.113.5", "--project-id", p)
    assert allowed["IP_addresses"] == ["203.0.113.5"]
    assert neonctl("ip-allow", "list", "--project-id", p)["IP_addresses"] == \
        served.api("GET", f"projects/{p}")["project"]["settings"]["allowed_ips"]["ips"]
    expiring = neonctl("branches", "set-expiration", "feature", "--project-id", p,
                       "--expires-at", served.in_days(7))
    assert expiring["expires_at"] == served.api(
        "GET", f"projects/{p}/branches/{dev_id}")["branch"]["expires_at"]

    # ---- a context: later commands name no project
    neonctl("set-context", "--project-id", p, output="")
    in_context = neonctl("branches", "list")
    assert {b["id"] for b in in_context} == {b["id"] for b in remaining}
    assert neonctl("roles", "list")[0]["branch_id"] == dev_id  # the default branch now
    assert neonctl("connection-string", output="") == uri

    deleted = neonctl("projects", "delete", p)
    assert deleted["id"] == p
    assert served.http.get(f"/api/v2/projects/{p}").status_code == 404
    assert len(neonctl.commands) == 50  # every command above ran and exited 0


#: the lifecycle commands (branch reset and restore, snapshots, project recovery), in the
#: order a user runs them; the session reads back what they did from the simulator
LIFECYCLE: list[list[str]] = [
    ["branches", "reset", "dev", "--parent"],
    ["branches", "restore", "dev", "main", "--preserve-under-name", "dev-before"],
    ["snapshots", "create", "--branch", "main", "--name", "s1"],
    ["snapshots", "list"],
    ["projects", "recover", "{project_id}"],
]


def test_the_lifecycle_commands(clock: str, npm_clients: NpmClients,
                                serve: Callable[[str], Served], tmp_path: Path) -> None:
    served = serve(clock)
    neonctl = Neonctl(npm_clients, served, tmp_path)
    p = neonctl("projects", "create", "--name", "lifecycle")["project"]["id"]
    served.settle(p)
    dev = neonctl("branches", "create", "--project-id", p, "--name", "dev")["branch"]["id"]
    served.settle(p)
    neonctl("set-context", "--project-id", p, output="")
    for command in LIFECYCLE:
        if command[:2] == ["projects", "recover"]:
            neonctl("projects", "delete", p)
            assert served.http.get(f"/api/v2/projects/{p}").status_code == 404
            served.let_deletion_end()
        answer = neonctl(*[c.format(project_id=p) for c in command])
        assert answer, command
        served.settle(p)
    # what they did, read back from the simulator
    branches = {b["name"]: b for b in served.api("GET", f"projects/{p}/branches")["branches"]}
    assert {"main", "dev", "dev-before"} <= set(branches)
    assert branches["dev"]["id"] == dev
    snapshots = served.api("GET", f"projects/{p}/snapshots")["snapshots"]
    assert [s["name"] for s in snapshots] == ["s1"]
    assert served.api("GET", f"projects/{p}")["project"]["id"] == p  # recovered

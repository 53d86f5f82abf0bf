"""API keys on every route: 401 without a valid key, 404 outside a project key's reach."""

from __future__ import annotations

from typing import Any

import pytest

from sim.api import SimClient, SimServer, create_app, in_process_client
from sim.api.keys import ORG_ID
from sim.api.orgs import MEMBER_ID
from sim.engine.model import USER_ID
from tests.api.conftest import make_project

P = "/api/v2/projects/{project_id}"
E = P + "/endpoints/{endpoint_id}"
ENDPOINT_BODY = {"endpoint": {"branch_id": "{branch_id}", "type": "read_only"}}
CONNECT_BODY = {"project_id": "{project_id}", "endpoint_id": "{endpoint_id}", "count": 1,
                "duration_seconds": 5}
A = P + "/auth"
AUTH_BODY = {"project_id": "{project_id}", "auth_provider": "stack"}  # project_id in the body
DOMAIN = {"domain": "https://k.example.com", "auth_provider": "stack"}
CONSUMPTION = "/api/v2/consumption_history/"
SPAN = "from=2026-01-05T00:00:00Z&to=2026-01-06T00:00:00Z&granularity=hourly"
V2 = "&org_id=org-1&metrics=compute_unit_seconds"

#: (method, path, body, status for a project-scoped key of ANOTHER project)
ROUTES: list[tuple[str, str, Any, int]] = [
    ("POST", "/api/v2/projects", {"project": {"name": "x"}}, 403),
    ("GET", "/api/v2/projects", None, 200),
    ("GET", P, None, 404),
    ("PATCH", P, {"project": {"name": "y"}}, 404),
    ("DELETE", P, None, 404),
    ("POST", P + "/endpoints", ENDPOINT_BODY, 404),
    ("GET", P + "/endpoints", None, 404),
    ("GET", E, None, 404),
    ("PATCH", E, {"endpoint": {"suspend_timeout_seconds": 600}}, 404),
    ("DELETE", E, None, 404),
    ("POST", E + "/restart", None, 404),
    ("POST", E + "/start", None, 404),
    ("POST", E + "/suspend", None, 404),
    ("GET", P + "/branches/{branch_id}/endpoints", None, 404),
    ("POST", P + "/branches", {"branch": {"name": "b"}}, 404),
    ("GET", P + "/branches", None, 404),
    ("GET", P + "/branches/{branch_id}", None, 404),
    ("DELETE", P + "/branches/{branch_id}", None, 404),
    ("PATCH", P + "/branches/{branch_id}", {"branch": {"name": "renamed"}}, 404),
    ("POST", P + "/branches/{branch_id}/set_as_default", None, 404),
    ("GET", P + "/branches/{branch_id}/roles", None, 404),
    ("POST", P + "/branches/{branch_id}/roles", {"role": {"name": "r1"}}, 404),
    ("GET", P + "/branches/{branch_id}/roles/{role_name}", None, 404),
    ("DELETE", P + "/branches/{branch_id}/roles/{role_name}", None, 404),
    ("GET", P + "/branches/{branch_id}/roles/{role_name}/reveal_password", None, 404),
    ("POST", P + "/branches/{branch_id}/roles/{role_name}/reset_password", None, 404),
    ("GET", P + "/branches/{branch_id}/databases", None, 404),
    ("POST", P + "/branches/{branch_id}/databases",
     {"database": {"name": "d1", "owner_name": "{role_name}"}}, 404),
    ("GET", P + "/branches/{branch_id}/databases/{database_name}", None, 404),
    ("PATCH", P + "/branches/{branch_id}/databases/{database_name}",
     {"database": {"owner_name": "{role_name}"}}, 404),
    ("DELETE", P + "/branches/{branch_id}/databases/{database_name}", None, 404),
    ("GET", P + "/connection_uri", None, 404),
    ("GET", "/api/v2/projects/shared", None, 200),
    ("GET", "/api/v2/users/me", None, 200),
    ("GET", "/api/v2/regions", None, 200),
    ("GET", P + "/operations", None, 404),
    ("GET", P + "/operations/{operation_id}", None, 404),
    ("POST", "/api/v2/projects/auth/create", {**AUTH_BODY, "branch_id": "{branch_id}"}, 404),
    ("GET", A + "/integrations", None, 404),
    ("POST", "/api/v2/projects/auth/keys", AUTH_BODY, 404),
    ("POST", "/api/v2/projects/auth/user", {**AUTH_BODY, "email": "k@example.com"}, 404),
    ("DELETE", A + "/users/{auth_user_id}", None, 404),
    ("POST", "/api/v2/projects/auth/transfer_ownership", AUTH_BODY, 404),
    ("DELETE", A + "/integration/{auth_provider}", None, 404),
    ("GET", A + "/oauth_providers", None, 404),
    ("POST", A + "/oauth_providers", {"id": "google"}, 404),
    ("PATCH", A + "/oauth_providers/{oauth_provider_id}", {"client_id": "c", "client_secret": "s"},
     404),
    ("DELETE", A + "/oauth_providers/{oauth_provider_id}", None, 404),
    ("GET", A + "/domains", None, 404),
    ("POST", A + "/domains", DOMAIN, 404),
    ("DELETE", A + "/domains", {"auth_provider": "stack", "domains": [{"domain": DOMAIN["domain"]}]},
     404),
    ("GET", A + "/email_server", None, 404),
    ("PATCH", A + "/email_server", {"type": "shared"}, 404),
    ("GET", "/_sim/clock", None, 200),
    ("GET", "/_sim/state", None, 200),
    ("POST", "/_sim/advance", {"seconds": 1}, 403),  # world-wide: not for a project key
    ("POST", "/_sim/connections", CONNECT_BODY, 404),
    ("GET", "/_sim/faults", None, 200),
    ("POST", "/_sim/faults", {"extra_latency_ms": 0}, 403),
    ("GET", "/_sim/console", None, 200),
    ("POST", "/_sim/auth/confirm_transfer", {"project_id": "{project_id}", "token": "t"}, 404),
    ("POST", "/_sim/auth/query", {"project_id": "{project_id}", "sql": "SELECT 1"}, 404),
    ("GET", "/api/v2/api_keys", None, 403),  # API keys: a personal key's business
    ("POST", "/api/v2/api_keys", {"key_name": "k"}, 403),
    ("DELETE", "/api/v2/api_keys/1", None, 403),
    # the lifecycle over time: consumption (a project key sees its own project only),
    # restore and recovery, snapshots and their schedule
    ("GET", CONSUMPTION + "projects?" + SPAN, None, 200),
    ("GET", CONSUMPTION + "v2/projects?" + SPAN + V2, None, 200),
    ("GET", CONSUMPTION + "v2/branches?" + SPAN + V2 + "&project_ids={project_id}", None, 200),
    ("GET", P + "/branches/count", None, 404),
    ("POST", P + "/recover", None, 404),
    ("POST", P + "/branches/{branch_id}/recover", None, 404),
    ("POST", P + "/branches/{branch_id}/restore", {"source_branch_id": "{branch_id}"}, 404),
    ("POST", P + "/branches/{branch_id}/finalize_restore", None, 404),
    ("POST", P + "/branches/{branch_id}/snapshot", None, 404),
    ("GET", P + "/snapshots", None, 404),
    ("PATCH", P + "/snapshots/{snapshot_id}", {"snapshot": {"name": "n"}}, 404),
    ("DELETE", P + "/snapshots/{snapshot_id}", None, 404),
    ("POST", P + "/snapshots/{snapshot_id}/restore", None, 404),
    ("GET", P + "/branches/{branch_id}/backup_schedule", None, 404),
    ("PUT", P + "/branches/{branch_id}/backup_schedule", {"schedule": []}, 404),
    ("GET", P + "/permissions", None, 404),
    ("POST", P + "/permissions", {"email": "k@example.com"}, 404),
    ("DELETE", P + "/permissions/{permission_id}", None, 404),
    ("GET", "/api/v2/users/me/organizations", None, 200),
    ("GET", "/api/v2/auth", None, 200),
    ("GET", "/api/v2/organizations/{org_id}", None, 403),  # an organization's: not a project key's
    ("GET", "/api/v2/organizations/{org_id}/members", None, 403),
    ("GET", "/api/v2/organizations/{org_id}/members/{member_id}", None, 403),
    ("GET", "/api/v2/organizations/{org_id}/api_keys", None, 403),
    ("POST", "/api/v2/organizations/{org_id}/api_keys", {"key_name": "k"}, 403),
    ("DELETE", "/api/v2/organizations/{org_id}/api_keys/1", None, 403),
    ("GET", "/api/v2/organizations/{org_id}/invitations", None, 403),
    ("POST", "/api/v2/organizations/{org_id}/invitations", {"invitations": []}, 403),
    ("GET", "/api/v2/organizations/{org_id}/billing/spending_limit", None, 403),
    ("PUT", "/api/v2/organizations/{org_id}/billing/spending_limit",
     {"spending_limit_cents": 100}, 403),
    ("DELETE", "/api/v2/organizations/{org_id}/billing/spending_limit", None, 403),
    ("GET", "/api/v2/organizations/{org_id}/vpc/vpc_endpoints", None, 403),
    ("GET", "/api/v2/organizations/{org_id}/vpc/region/{region_id}/vpc_endpoints", None, 403),
    ("POST", "/api/v2/users/me/projects/transfer",
     {"destination_org_id": "{org_id}", "project_ids": ["{project_id}"]}, 403),
    ("POST", "/_sim/reset", None, 403),  # last: it would wipe the world
]


def fill(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str):
        return value.format(**ids)
    if isinstance(value, dict):
        return {k: fill(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, ids) for v in value]
    return value


def test_table_covers_every_route(server: SimServer) -> None:
    """Every operation of the OpenAPI document has a row (the console page is not in it)."""
    paths = create_app(server).openapi()["paths"]
    documented = {(m.upper(), p) for p, ops in paths.items() for m in ops}
    assert documented == {(m, p.replace("/1", "/{key_id}").partition("?")[0])
                          for m, p, _, _ in ROUTES}
    assert len(ROUTES) == len(documented)


@pytest.fixture
def world(api: SimClient) -> dict[str, str]:
    made = make_project(api, "target")
    ids = {"project_id": made["project"]["id"], "branch_id": made["branch"]["id"],
           "endpoint_id": made["endpoints"][0]["id"],
           "operation_id": made["operations"][0]["id"],
           "role_name": made["roles"][0]["name"], "database_name": made["databases"][0]["name"]}
    auth = {"project_id": ids["project_id"], "auth_provider": "stack"}
    assert api.post("projects/auth/create", json={**auth, "branch_id": ids["branch_id"]}
                    ).status_code == 201
    user = api.post("projects/auth/user", json={**auth, "email": "world@example.com"}).json()
    r = api.post(f"projects/{ids['project_id']}/auth/oauth_providers", json={"id": "github"})
    assert r.status_code == 200
    ids.update(auth_user_id=user["id"], auth_provider="stack", oauth_provider_id="github",
               org_id=ORG_ID, member_id=MEMBER_ID, region_id="aws-us-east-2")
    snap = api.post(f"projects/{ids['project_id']}/branches/{ids['branch_id']}/snapshot")
    ids["snapshot_id"] = snap.json()["snapshot"]["id"]
    granted = api.post(f"projects/{ids['project_id']}/permissions", json={"email": "w@example.com"})
    ids["permission_id"] = granted.json()["id"]
    api.advance(60)
    return ids


def call(client: SimClient, method: str, path: str, body: Any, ids: dict[str, str],
         headers: dict[str, str] | None = None):
    url = client.base_url.join(fill(path, ids))
    kwargs: dict[str, Any] = {} if body is None else {"json": fill(body, ids)}
    return client.request(method, url, headers=headers, **kwargs)


@pytest.mark.parametrize("header", [None, "", "Bearer", "Bearer wrong-key", "Basic abc"])
def test_no_valid_key_is_401_on_every_route(api: SimClient, world: dict[str, str],
                                            header: str | None) -> None:
    bare = in_process_client(api.server, api_key="unused")
    bare.headers.pop("authorization")
    headers = {} if header is None else {"authorization": header}
    for method, path, body, _ in ROUTES:
        r = call(bare, method, path, body, world, headers)
        assert r.status_code == 401, (method, path, r.text)
        assert r.json()["code"] == "UNAUTHORIZED" and r.json()["request_id"]


def test_project_key_of_another_project(api: SimClient, world: dict[str, str]) -> None:
    other = make_project(api, "other")["project"]["id"]
    scoped = api.server.keys.for_project(other).secret
    client = in_process_client(api.server, api_key=scoped)
    for method, path, body, expected in ROUTES:
        r = call(client, method, path, body, world)
        assert r.status_code == expected, (method, path, r.text)
        if expected == 404:  # exactly as an unknown project: nothing tells it exists
            assert r.json()["message"] == f"project {world['project_id']!r} not found"
        if (method, path) == ("GET", "/api/v2/projects"):
            assert [p["id"] for p in r.json()["projects"]] == [other]


def test_project_key_reaches_its_own_project(api: SimClient, world: dict[str, str]) -> None:
    own = api.server.keys.for_project(world["project_id"]).secret
    client = in_process_client(api.server, api_key=own)
    for method, path, body, expected in ROUTES:
        if expected != 404 or method != "GET":
            continue
        r = call(client, method, path, body, world)
        assert r.status_code == 200, (method, path, r.text)


def test_organization_key_and_ownership(server: SimServer) -> None:
    personal = in_process_client(server)
    org = in_process_client(server, api_key=server.keys.organization().secret)
    mine = make_project(personal, "mine")["project"]
    theirs = make_project(org, "theirs")["project"]
    # without org_id, a project is the user's default organization's: its keys reach it too
    assert (mine["owner_id"], mine["org_id"]) == (USER_ID, ORG_ID)
    assert theirs["org_id"] == ORG_ID
    assert [p["id"] for p in org.get("projects").json()["projects"]] == [mine["id"], theirs["id"]]
    assert org.get(f"projects/{mine['id']}").status_code == 200
    # the user is a member of the organization: a personal key sees both
    listed = {p["id"] for p in personal.get("projects").json()["projects"]}
    assert listed == {mine["id"], theirs["id"]}
    r = personal.post("projects", json={"project": {"name": "x", "org_id": "org-elsewhere"}})
    assert r.status_code == 404


def test_keys_never_appear_in_answers_or_reprs(api: SimClient, key: str) -> None:
    made = api.post("projects", json={"project": {"name": "k"}}).text
    page = api.get(api.base_url.join("/")).text
    assert key not in made and key not in page
    stored = api.server.authenticate(f"Bearer {key}")
    assert key not in repr(stored)

"""Managed auth over HTTP: every refusal, with its exact status and error body, changes nothing.

The world: project A with an integration, one user, the OAuth provider
github, one whitelisted domain and a custom SMTP server; project B without an
integration. Each case compares every listing of both projects (and the synced
table) before and after the refused call.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from sim.api import SimClient, SimServer, in_process_client
from tests.api.conftest import make_project
from tests.api.test_auth import SMTP, USERS_SQL, add_user, integrate

CODES = {400: "INVALID_REQUEST", 404: "NOT_FOUND", 409: "CONFLICT"}
A, B = "{a}", "{b}"
ON_A = {"project_id": A, "auth_provider": "stack"}
ON_B = {"project_id": B, "auth_provider": "stack"}
PA = f"/api/v2/projects/{A}/auth"
PB = f"/api/v2/projects/{B}/auth"
GONE = "no-such-project-1"

#: (case id, method, path, query, body, status, field the message starts with or None)
CASES: list[tuple[str, str, str, Any, Any, int, str | None]] = [
    # 1 create integration
    ("create: provider", "POST", "/api/v2/projects/auth/create", None,
     {**ON_B, "auth_provider": "clerk", "branch_id": "{b_branch}"}, 400, "auth_provider"),
    ("create: no branch_id", "POST", "/api/v2/projects/auth/create", None, ON_B, 400,
     "branch_id"),
    ("create: unknown field", "POST", "/api/v2/projects/auth/create", None,
     {**ON_B, "branch_id": "{b_branch}", "region": "x"}, 400, "region"),
    ("create: branch_id as a number", "POST", "/api/v2/projects/auth/create", None,
     {**ON_B, "branch_id": 7}, 400, "branch_id"),
    ("create: empty database_name", "POST", "/api/v2/projects/auth/create", None,
     {**ON_B, "branch_id": "{b_branch}", "database_name": ""}, 400, "database_name"),
    ("create: unknown branch", "POST", "/api/v2/projects/auth/create", None,
     {**ON_B, "branch_id": "br-none"}, 404, None),
    ("create: branch of another project", "POST", "/api/v2/projects/auth/create", None,
     {**ON_B, "branch_id": "{a_branch}"}, 404, None),
    ("create: unknown project", "POST", "/api/v2/projects/auth/create", None,
     {**ON_A, "project_id": GONE, "branch_id": "{a_branch}"}, 404, None),
    ("create: a second integration", "POST", "/api/v2/projects/auth/create", None,
     {**ON_A, "branch_id": "{a_branch}"}, 409, "auth_provider"),
    ("create: not JSON", "POST", "/api/v2/projects/auth/create", None, b"{nope", 400, None),
    # 2 list
    ("list: unknown project", "GET", f"/api/v2/projects/{GONE}/auth/integrations", None, None,
     404, None),
    # 3 keys
    ("keys: provider", "POST", "/api/v2/projects/auth/keys", None,
     {**ON_A, "auth_provider": "clerk"}, 400, "auth_provider"),
    ("keys: no integration", "POST", "/api/v2/projects/auth/keys", None, ON_B, 404, None),
    ("keys: no provider", "POST", "/api/v2/projects/auth/keys", None, {"project_id": A}, 400,
     "auth_provider"),
    # 4 user
    ("user: email", "POST", "/api/v2/projects/auth/user", None,
     {**ON_A, "email": "not-an-email"}, 400, "email"),
    ("user: empty name", "POST", "/api/v2/projects/auth/user", None,
     {**ON_A, "email": "new@example.com", "name": ""}, 400, "name"),
    ("user: 256-character name", "POST", "/api/v2/projects/auth/user", None,
     {**ON_A, "email": "new@example.com", "name": "x" * 256}, 400, "name"),
    ("user: same email, other case", "POST", "/api/v2/projects/auth/user", None,
     {**ON_A, "email": "ANN@example.com"}, 409, "email"),
    ("user: no integration", "POST", "/api/v2/projects/auth/user", None,
     {**ON_B, "email": "new@example.com"}, 404, None),
    ("user: provider", "POST", "/api/v2/projects/auth/user", None,
     {**ON_A, "auth_provider": "clerk", "email": "new@example.com"}, 400, "auth_provider"),
    # 5 delete user
    ("delete user: unknown", "DELETE", f"{PA}/users/no-such-user", None, None, 404, None),
    ("delete user: no integration", "DELETE", f"{PB}/users/{{user}}", None, None, 404, None),
    # 6 transfer
    ("transfer: no integration", "POST", "/api/v2/projects/auth/transfer_ownership", None,
     ON_B, 404, None),
    ("transfer: provider", "POST", "/api/v2/projects/auth/transfer_ownership", None,
     {**ON_A, "auth_provider": "clerk"}, 400, "auth_provider"),
    # 7 delete integration
    ("delete integration: provider", "DELETE", f"{PA}/integration/clerk", None, None, 400,
     "auth_provider"),
    ("delete integration: delete_data", "DELETE", f"{PA}/integration/stack",
     {"delete_data": "maybe"}, None, 400, "delete_data"),
    ("delete integration: query and body disagree", "DELETE", f"{PA}/integration/stack",
     {"delete_data": "true"}, {"delete_data": False}, 400, "delete_data"),
    ("delete integration: none", "DELETE", f"{PB}/integration/stack", None, None, 404, None),
    # 8-11 OAuth providers
    ("list OAuth: no integration", "GET", f"{PB}/oauth_providers", None, None, 404, None),
    ("add OAuth: unsupported id", "POST", f"{PA}/oauth_providers", None, {"id": "facebook"},
     400, "id"),
    ("add OAuth: id only with a secret", "POST", f"{PA}/oauth_providers", None,
     {"id": "google", "client_secret": "s"}, 400, "client_id"),
    ("add OAuth: empty client_id", "POST", f"{PA}/oauth_providers", None,
     {"id": "google", "client_id": "", "client_secret": "s"}, 400, "client_id"),
    ("add OAuth: already added", "POST", f"{PA}/oauth_providers", None, {"id": "github"}, 409,
     "id"),
    ("add OAuth: no integration", "POST", f"{PB}/oauth_providers", None, {"id": "github"}, 404,
     None),
    ("update OAuth: unknown", "PATCH", f"{PA}/oauth_providers/google", None,
     {"client_id": "c", "client_secret": "s"}, 404, None),
    ("update OAuth: half a pair", "PATCH", f"{PA}/oauth_providers/github", None,
     {"client_id": "c"}, 400, "client_secret"),
    ("update OAuth: empty secret", "PATCH", f"{PA}/oauth_providers/github", None,
     {"client_id": "c", "client_secret": ""}, 400, "client_secret"),
    ("delete OAuth: unknown", "DELETE", f"{PA}/oauth_providers/google", None, None, 404, None),
    # 12-14 redirect whitelist
    ("list domains: no integration", "GET", f"{PB}/domains", None, None, 404, None),
    ("add domain: a path", "POST", f"{PA}/domains", None,
     {"domain": "https://x.example.com/cb", "auth_provider": "stack"}, 400, "domain"),
    ("add domain: no scheme", "POST", f"{PA}/domains", None,
     {"domain": "x.example.com", "auth_provider": "stack"}, 400, "domain"),
    ("add domain: already there", "POST", f"{PA}/domains", None,
     {"domain": "https://APP.example.com", "auth_provider": "stack"}, 409, "domain"),
    ("add domain: no integration", "POST", f"{PB}/domains", None,
     {"domain": "https://x.example.com", "auth_provider": "stack"}, 404, None),
    ("delete domains: none listed", "DELETE", f"{PA}/domains", None,
     {"auth_provider": "stack", "domains": []}, 400, "domains"),
    ("delete domains: a bad one", "DELETE", f"{PA}/domains", None,
     {"auth_provider": "stack", "domains": [{"domain": "nope"}]}, 400, "domains[0].domain"),
    ("delete domains: one not listed, nothing removed", "DELETE", f"{PA}/domains", None,
     {"auth_provider": "stack", "domains": [{"domain": "https://app.example.com"},
                                            {"domain": "https://x.example.com"}]}, 404, None),
    ("delete domains: no body", "DELETE", f"{PA}/domains", None, None, 400, None),
    # 15, 16 email server
    ("get email server: no integration", "GET", f"{PB}/email_server", None, None, 404, None),
    ("update email server: type", "PATCH", f"{PA}/email_server", None, {"type": "smtp"}, 400,
     "type"),
    ("update email server: no password", "PATCH", f"{PA}/email_server", None,
     {k: v for k, v in SMTP.items() if k != "password"}, 400, "password"),
    ("update email server: port as text", "PATCH", f"{PA}/email_server", None,
     {**SMTP, "port": "587"}, 400, "port"),
    ("update email server: port out of range", "PATCH", f"{PA}/email_server", None,
     {**SMTP, "port": 70000}, 400, "port"),
    ("update email server: a field with shared", "PATCH", f"{PA}/email_server", None,
     {"type": "shared", "host": "smtp.example.com"}, 400, "host"),
    # /_sim
    ("confirm transfer: bogus code", "POST", "/_sim/auth/confirm_transfer", None,
     {"project_id": A, "token": "bogus"}, 404, None),
    ("confirm transfer: neither token nor url", "POST", "/_sim/auth/confirm_transfer", None,
     {"project_id": A}, 400, "token"),
    ("confirm transfer: a url without a code", "POST", "/_sim/auth/confirm_transfer", None,
     {"project_id": A, "url": "https://example.com/"}, 400, "url"),
    ("query: a write", "POST", "/_sim/auth/query", None,
     {"project_id": A, "sql": "DELETE FROM svc_auth.users_sync"}, 400, "sql"),
    ("query: a database no integration made", "POST", "/_sim/auth/query", None,
     {"project_id": B, "sql": USERS_SQL}, 404, None),
]


def build_world(api: SimClient) -> dict[str, str]:
    a, b = make_project(api, "a"), make_project(api, "b")
    ids = {"a": a["project"]["id"], "a_branch": a["branch"]["id"],
           "b": b["project"]["id"], "b_branch": b["branch"]["id"]}
    integrate(api, {"project_id": ids["a"], "branch_id": ids["a_branch"]})
    ids["user"] = add_user(api, ids["a"], "ann@example.com", "Ann")
    base = f"projects/{ids['a']}/auth"
    assert api.post(f"{base}/oauth_providers", json={"id": "github"}).status_code == 200
    r = api.post(f"{base}/domains", json={"domain": "https://app.example.com",
                                          "auth_provider": "stack"})
    assert r.status_code == 201
    assert api.patch(f"{base}/email_server", json=SMTP).status_code == 200
    api.advance(5)
    return ids


@pytest.fixture(scope="module")
def shared() -> Iterator[tuple[SimClient, dict[str, str]]]:
    """One world for every refusal: each test checks that it is left as it was."""
    with in_process_client(SimServer(seed=1)) as api:
        yield api, build_world(api)


@pytest.fixture
def world(api: SimClient) -> dict[str, str]:
    return build_world(api)


def fill(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str):
        return value.replace("{a}", ids["a"]).replace("{b}", ids["b"]).replace(
            "{a_branch}", ids["a_branch"]).replace("{b_branch}", ids["b_branch"]).replace(
            "{user}", ids["user"])
    if isinstance(value, dict):
        return {k: fill(v, ids) for k, v in value.items()}
    return value


def everything(api: SimClient, ids: dict[str, str]) -> list[Any]:
    """Every listing of both projects and the synced table, as (status, body)."""
    seen = []
    for pid in (ids["a"], ids["b"]):
        for what in ("integrations", "oauth_providers", "domains", "email_server"):
            r = api.get(f"projects/{pid}/auth/{what}")
            seen.append((what, r.status_code, r.json() if r.status_code == 200 else None))
        r = api.sim("POST", "auth/query", json={"project_id": pid, "sql": USERS_SQL})
        seen.append(("users_sync", r.status_code, r.json() if r.status_code == 200 else None))
    return seen


@pytest.mark.parametrize(("method", "path", "query", "body", "status", "field"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_refusal(shared: tuple[SimClient, dict[str, str]], method: str, path: str, query: Any,
                 body: Any, status: int, field: str | None) -> None:
    api, world = shared
    before = everything(api, world)
    state = api.server.cp.auth.state()
    kwargs: dict[str, Any] = {"params": query}
    if isinstance(body, bytes):
        kwargs.update(content=body, headers={"content-type": "application/json"})
    elif body is not None:
        kwargs["json"] = fill(body, world)
    r = api.request(method, api.base_url.join(fill(path, world)), **kwargs)

    assert r.status_code == status, r.text
    error = r.json()
    assert set(error) == {"code", "message", "request_id"}
    assert error["request_id"] == r.headers["x-request-id"]
    assert error["code"] == ("INVALID_JSON" if isinstance(body, bytes) else CODES[status])
    if field is not None:
        assert error["message"].startswith(f"{field}: "), error["message"]
    assert everything(api, world) == before
    assert api.server.cp.auth.state() == state


def test_transfer_after_the_customer_took_ownership_is_a_conflict(api: SimClient,
                                                                   world: dict[str, str]):
    body = {"project_id": world["a"], "auth_provider": "stack"}
    url = api.post("projects/auth/transfer_ownership", json=body).json()["url"]
    assert api.sim("POST", "auth/confirm_transfer",
                   json={"project_id": world["a"], "url": url}).status_code == 200
    before = everything(api, world)
    r = api.post("projects/auth/transfer_ownership", json=body)
    assert (r.status_code, r.json()["code"]) == (409, "CONFLICT")
    assert r.json()["message"].startswith("auth_provider: ")
    assert everything(api, world) == before


def test_a_project_key_reaches_only_its_own_project(shared: tuple[SimClient, dict[str, str]]):
    """Project-scoped key of B: A's auth answers 404 exactly as an unknown project."""
    api, world = shared
    client = type(api)(api.server, api.server.keys.for_project(world["b"]).secret)
    before = everything(api, world)
    for method, path, body in [
        ("POST", "projects/auth/keys", {"project_id": world["a"], "auth_provider": "stack"}),
        ("POST", "projects/auth/user", {"project_id": world["a"], "auth_provider": "stack",
                                        "email": "x@example.com"}),
        ("GET", f"projects/{world['a']}/auth/integrations", None),
        ("PATCH", f"projects/{world['a']}/auth/email_server", {"type": "shared"}),
    ]:
        r = client.request(method, path, json=body)
        assert r.status_code == 404, (method, path, r.text)
        assert r.json()["message"] == f"project {world['a']!r} not found"
    assert client.get(f"projects/{world['b']}/auth/integrations").json() == {"data": []}
    assert everything(api, world) == before

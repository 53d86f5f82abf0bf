"""Managed auth over HTTP (#1-#16): every endpoint's success, exactly as the specification
shapes it, and the synced users table seen through /_sim/auth/query as simulated time passes."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest

from sim.api import SimClient
from sim.engine.auth import transfer_token_of
from tests.api.conftest import make_project

INTEGRATION_KEYS = {"auth_provider", "auth_provider_project_id", "pub_client_key",
                    "secret_server_key", "jwks_url", "schema_name", "table_name"}
LIST_ITEM_KEYS = {"auth_provider", "auth_provider_project_id", "branch_id", "db_name",
                  "created_at", "owned_by", "jwks_url"}
USERS_SQL = "SELECT id, email, name, created_at FROM svc_auth.users_sync ORDER BY email"
SMTP = {"type": "standard", "host": "smtp.example.com", "port": 587, "username": "mailer",
        "password": "smtp-pw-1", "sender_email": "noreply@example.com", "sender_name": "Shop"}
ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


@pytest.fixture
def ids(api: SimClient) -> dict[str, str]:
    made = make_project(api, "auth")
    return {"project_id": made["project"]["id"], "branch_id": made["branch"]["id"]}


def integrate(api: SimClient, ids: dict[str, str], **extra: Any) -> dict[str, Any]:
    r = api.post("projects/auth/create", json={"auth_provider": "stack", **ids, **extra})
    assert r.status_code == 201, r.text
    return r.json()


def add_user(api: SimClient, project_id: str, email: str, name: str | None = None) -> str:
    body = {"project_id": project_id, "auth_provider": "stack", "email": email}
    if name is not None:
        body["name"] = name
    r = api.post("projects/auth/user", json=body)
    assert r.status_code == 201, r.text
    assert set(r.json()) == {"id"}
    return r.json()["id"]


def synced(api: SimClient, project_id: str, sql: str = USERS_SQL) -> list[dict[str, Any]]:
    r = api.sim("POST", "auth/query", json={"project_id": project_id, "sql": sql})
    assert r.status_code == 200, r.text
    assert set(r.json()) == {"rows"}
    return r.json()["rows"]


# ---- integrations (#1, #2, #3, #6, #7) ----------------------------------------------------


def test_create_list_rotate_and_delete_an_integration(api: SimClient, ids: dict[str, str]):
    made = integrate(api, ids)  # 1
    assert set(made) == INTEGRATION_KEYS
    provider_project = made["auth_provider_project_id"]
    assert uuid.UUID(provider_project)
    assert (made["auth_provider"], made["schema_name"], made["table_name"]) == (
        "stack", "svc_auth", "users_sync")
    assert provider_project in made["jwks_url"] and made["jwks_url"].startswith("https://")
    assert made["pub_client_key"] != made["secret_server_key"]

    pid = ids["project_id"]
    r = api.get(f"projects/{pid}/auth/integrations")  # 2
    assert r.status_code == 200 and set(r.json()) == {"data"}
    [item] = r.json()["data"]
    assert set(item) == LIST_ITEM_KEYS
    assert item == {"auth_provider": "stack", "auth_provider_project_id": provider_project,
                    "branch_id": ids["branch_id"], "db_name": "svcdb",
                    "created_at": item["created_at"], "owned_by": "neon",
                    "jwks_url": made["jwks_url"]}
    assert ISO.fullmatch(item["created_at"])

    r = api.post("projects/auth/keys", json={"project_id": pid, "auth_provider": "stack"})  # 3
    assert r.status_code == 201 and set(r.json()) == INTEGRATION_KEYS
    rotated = r.json()
    assert rotated["auth_provider_project_id"] == provider_project
    assert rotated["pub_client_key"] != made["pub_client_key"]
    assert rotated["secret_server_key"] != made["secret_server_key"]

    r = api.delete(f"projects/{pid}/auth/integration/stack")  # 7
    assert (r.status_code, r.json()) == (200, {})
    assert api.get(f"projects/{pid}/auth/integrations").json() == {"data": []}


def test_create_with_a_database_and_role_of_ones_own(api: SimClient, ids: dict[str, str]):
    integrate(api, ids, database_name="appdb", role_name="app_owner")
    [item] = api.get(f"projects/{ids['project_id']}/auth/integrations").json()["data"]
    assert item["db_name"] == "appdb"
    r = api.sim("POST", "auth/query", json={"project_id": ids["project_id"],
                                            "sql": "SELECT count(*) AS n FROM svc_auth.users_sync",
                                            "database_name": "appdb"})
    assert (r.status_code, r.json()) == (200, {"rows": [{"n": 0}]})


def test_transfer_ownership_then_confirm_in_the_browser(api: SimClient, ids: dict[str, str]):
    integrate(api, ids)
    pid = ids["project_id"]
    body = {"project_id": pid, "auth_provider": "stack"}
    r = api.post("projects/auth/transfer_ownership", json=body)  # 6
    assert r.status_code == 200 and set(r.json()) == {"url"}
    url = r.json()["url"]
    assert url.startswith("https://") and transfer_token_of(url)
    [item] = api.get(f"projects/{pid}/auth/integrations").json()["data"]
    assert item["owned_by"] == "neon"  # nothing changes until the customer confirms

    r = api.sim("POST", "auth/confirm_transfer", json={"project_id": pid, "url": url})
    assert r.status_code == 200
    assert set(r.json()) == LIST_ITEM_KEYS and r.json()["owned_by"] == "user"
    [item] = api.get(f"projects/{pid}/auth/integrations").json()["data"]
    assert item["owned_by"] == "user"
    # the code is spent: a second confirmation finds nothing
    r = api.sim("POST", "auth/confirm_transfer",
                json={"project_id": pid, "token": transfer_token_of(url)})
    assert r.status_code == 404


def test_delete_integration_keeps_or_drops_the_synced_table(api: SimClient,
                                                            ids: dict[str, str]):
    pid = ids["project_id"]
    integrate(api, ids)
    add_user(api, pid, "kept@example.com")
    api.advance(5)
    r = api.delete(f"projects/{pid}/auth/integration/stack", params={"delete_data": "false"})
    assert (r.status_code, r.json()) == (200, {})
    assert [u["email"] for u in synced(api, pid)] == ["kept@example.com"]

    integrate(api, ids)  # reuses the kept table
    # the real API's clients send delete_data in a JSON body: the same flag
    r = api.request("DELETE", f"projects/{pid}/auth/integration/stack",
                    json={"delete_data": True})
    assert (r.status_code, r.json()) == (200, {})
    r = api.sim("POST", "auth/query", json={"project_id": pid, "sql": USERS_SQL})
    assert r.status_code == 400 and r.json()["message"].startswith("sql: ")


# ---- users (#4, #5) and the synced table ---------------------------------------------------


def test_users_reach_the_synced_table_after_the_sync_delay(api: SimClient, ids: dict[str, str]):
    pid = ids["project_id"]
    integrate(api, ids)
    ann = add_user(api, pid, "ann@example.com", "Ann")
    bob = add_user(api, pid, "bob@example.com")
    assert synced(api, pid) == []  # the provider has them; the database not yet
    api.advance(1)
    assert synced(api, pid) == []
    api.advance(2)  # past the 2 s sync delay
    rows = synced(api, pid)
    assert [(u["id"], u["email"], u["name"]) for u in rows] == [
        (ann, "ann@example.com", "Ann"), (bob, "bob@example.com", None)]
    assert all(u["created_at"] == "2026-01-05T00:00:00Z" for u in rows)

    r = api.delete(f"projects/{pid}/auth/users/{ann}")  # 5
    assert (r.status_code, r.content) == (204, b"")
    assert [u["id"] for u in synced(api, pid)] == [ann, bob]  # still there until the sync
    api.advance(3)
    assert [u["id"] for u in synced(api, pid)] == [bob]
    assert api.delete(f"projects/{pid}/auth/users/{ann}").status_code == 404


# ---- OAuth providers (#8-#11) -------------------------------------------------------------


def test_oauth_providers(api: SimClient, ids: dict[str, str]):
    integrate(api, ids)
    base = f"projects/{ids['project_id']}/auth/oauth_providers"
    assert (api.get(base).status_code, api.get(base).json()) == (200, {"providers": []})  # 8

    r = api.post(base, json={"id": "github"})  # 9, shared keys
    assert (r.status_code, r.json()) == (200, {"id": "github", "type": "shared"})
    r = api.post(base, json={"id": "google", "client_id": "cid-1", "client_secret": "sec-1"})
    assert (r.status_code, r.json()) == (200, {"id": "google", "type": "standard",
                                               "client_id": "cid-1", "client_secret": "sec-1"})

    r = api.patch(f"{base}/github", json={"client_id": "cid-2", "client_secret": "sec-2"})  # 10
    assert (r.status_code, r.json()) == (200, {"id": "github", "type": "standard",
                                               "client_id": "cid-2", "client_secret": "sec-2"})
    r = api.patch(f"{base}/google", json={"client_secret": "sec-3"})  # one credential kept
    assert r.json() == {"id": "google", "type": "standard", "client_id": "cid-1",
                        "client_secret": "sec-3"}
    assert api.get(base).json() == {"providers": [{"id": "github", "type": "standard"},
                                                  {"id": "google", "type": "standard"}]}

    r = api.delete(f"{base}/github")  # 11: 200 as the real API's document says
    assert (r.status_code, r.json()) == (200, {})
    assert api.get(base).json() == {"providers": [{"id": "google", "type": "standard"}]}


# ---- redirect whitelist (#12-#14) ------------------------------------------------------------


def test_redirect_domains(api: SimClient, ids: dict[str, str]):
    integrate(api, ids)
    base = f"projects/{ids['project_id']}/auth/domains"
    assert (api.get(base).status_code, api.get(base).json()) == (200, {"domains": []})  # 12
    for domain in ("https://App.Example.com", "http://localhost:3000"):
        r = api.post(base, json={"domain": domain, "auth_provider": "stack"})  # 13
        assert (r.status_code, r.content) == (201, b"")
    assert api.get(base).json() == {"domains": [
        {"domain": "https://app.example.com", "auth_provider": "stack"},
        {"domain": "http://localhost:3000", "auth_provider": "stack"}]}

    r = api.request("DELETE", base, json={"auth_provider": "stack",  # 14
                                          "domains": [{"domain": "https://app.example.com"}]})
    assert (r.status_code, r.json()) == (200, {})
    assert api.get(base).json() == {"domains": [
        {"domain": "http://localhost:3000", "auth_provider": "stack"}]}


# ---- email server (#15, #16) ------------------------------------------------------------------


def test_email_server(api: SimClient, ids: dict[str, str]):
    integrate(api, ids)
    base = f"projects/{ids['project_id']}/auth/email_server"
    r = api.get(base)  # 15, shared: only the type
    assert (r.status_code, r.json()) == (200, {"type": "shared"})

    r = api.patch(base, json=SMTP)  # 16: every field sent, the password too
    assert (r.status_code, r.json()) == (200, SMTP)
    shown = {k: v for k, v in SMTP.items() if k != "password"}
    assert api.get(base).json() == shown  # never the password

    r = api.patch(base, json={"type": "shared"})
    assert (r.status_code, r.json()) == (200, {"type": "shared"})
    assert api.get(base).json() == {"type": "shared"}

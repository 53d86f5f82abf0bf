"""Managed auth in the engine: integrations, SDK keys, users and their sync,
ownership transfer, deletion, determinism (the specification #1-#7)."""

import json

import pytest

from sim.engine import ControlPlane, EngineConfig
from sim.engine.auth import transfer_token_of
from sim.rules.errors import ApiError
from tests.engine.support import auth_refused as refused

DELAY = 2.0
USERS = "SELECT id, email, name, created_at FROM svc_auth.users_sync ORDER BY email"


@pytest.fixture
def cp():
    return ControlPlane(EngineConfig(user_sync_delay_s=DELAY), seed=7)


@pytest.fixture
def project(cp):
    created = cp.create_project("shop", with_compute=False)
    return created.project.id, created.branch.id


@pytest.fixture
def pid(cp, project):
    cp.auth.create_integration(*project)
    return project[0]




# -- create and list (#1, #2) ------------------------------------------------------------
def test_create_integration_returns_the_seven_fields(cp, project):
    integ = cp.auth.create_integration(*project)
    body = integ.response()
    assert list(body) == ["auth_provider", "auth_provider_project_id", "pub_client_key",
                          "secret_server_key", "jwks_url", "schema_name", "table_name"]
    assert body["auth_provider"] == "stack"
    assert (body["schema_name"], body["table_name"]) == ("svc_auth", "users_sync")
    assert body["pub_client_key"].startswith("pck_")
    assert body["secret_server_key"].startswith("ssk_")
    assert body["jwks_url"] == (f"https://api.stack-auth.sim/api/v1/projects/"
                                f"{body['auth_provider_project_id']}/.well-known/jwks.json")
    assert (integ.db_name, integ.role_name) == ("svcdb", "svcdb_owner")


def test_list_integrations(cp, project):
    assert cp.auth.list_integrations(project[0]) == []
    cp.advance(90)
    integ = cp.auth.create_integration(*project, database_name="app", role_name="app_owner")
    assert cp.auth.list_integrations(project[0]) == [{
        "auth_provider": "stack", "auth_provider_project_id": integ.auth_provider_project_id,
        "branch_id": project[1], "db_name": "app", "created_at": "2026-01-05T00:01:30Z",
        "owned_by": "neon", "jwks_url": integ.jwks_url,
    }]


def test_create_makes_an_empty_synced_table(cp, project):
    cp.auth.create_integration(*project)
    assert cp.auth.query(project[0], USERS) == []


def test_create_integration_refusals(cp, project):
    pid, bid = project
    other = cp.create_project("other", with_compute=False).branch.id
    auth = cp.auth
    refused(cp, 404, "project_id", auth.create_integration, "no-such-project", bid)
    refused(cp, 400, "auth_provider", auth.create_integration, pid, bid, auth_provider="clerk")
    refused(cp, 400, "branch_id", auth.create_integration, pid, None)
    refused(cp, 400, "database_name", auth.create_integration, pid, bid, database_name="")
    refused(cp, 400, "role_name", auth.create_integration, pid, bid, role_name="r" * 64)
    refused(cp, 404, "branch_id", auth.create_integration, pid, "br-none")
    refused(cp, 404, "branch_id", auth.create_integration, pid, other)  # another project's
    auth.create_integration(pid, bid)
    refused(cp, 409, "auth_provider", auth.create_integration, pid, bid)
    refused(cp, 404, "project_id", auth.list_integrations, "no-such-project")


def test_integration_on_a_non_default_branch(cp, project):
    pid, _ = project
    dev = cp.create_branch(pid, "dev").branch.id
    cp.auth.create_integration(pid, dev, database_name="devdb")
    assert cp.auth.list_integrations(pid)[0]["branch_id"] == dev
    assert cp.auth.query(pid, "SELECT count(*) AS n FROM svc_auth.users_sync") == [{"n": 0}]


# -- SDK keys (#3) ----------------------------------------------------------------------------
def test_generate_sdk_keys_rotates(cp, pid):
    old = cp.auth.integration(pid, "stack").response()
    new = cp.auth.generate_sdk_keys(pid, "stack").response()
    assert new["pub_client_key"] != old["pub_client_key"]
    assert new["secret_server_key"] != old["secret_server_key"]
    same = ("auth_provider_project_id", "jwks_url", "schema_name", "table_name")
    assert all(new[k] == old[k] for k in same)
    for key in (old["pub_client_key"], old["secret_server_key"]):
        assert not cp.auth.is_current_key(pid, "stack", key)
    for key in (new["pub_client_key"], new["secret_server_key"]):
        assert cp.auth.is_current_key(pid, "stack", key)


def test_generate_sdk_keys_refusals(cp, project):
    pid, _ = project
    refused(cp, 404, "auth_provider", cp.auth.generate_sdk_keys, pid, "stack")
    cp.auth.create_integration(*project)
    refused(cp, 400, "auth_provider", cp.auth.generate_sdk_keys, pid, "clerk")
    refused(cp, 404, "project_id", cp.auth.generate_sdk_keys, "no-such-project", "stack")


def test_secrets_stay_out_of_repr_and_state(cp, pid):
    auth = cp.auth
    auth.add_oauth_provider(pid, "google", "cid", "oauth-secret-1")
    auth.update_email_server(pid, "standard", "smtp.example.com", 587, "u", "smtp-pw-1",
                             "a@example.com", "A")
    url = auth.transfer_ownership(pid, "stack")
    integ = auth.integration(pid, "stack")
    secrets = [integ.secret_server_key, "oauth-secret-1", "smtp-pw-1", transfer_token_of(url)]
    shown = [repr(integ), repr(integ.oauth_providers), repr(integ.email_server),
             json.dumps(auth.state()), json.dumps(auth.list_integrations(pid)),
             json.dumps(auth.list_oauth_providers(pid)), json.dumps(auth.get_email_server(pid))]
    for text in shown:
        assert not any(s in text for s in secrets), text


# -- users and the synced table (#4, #5) ------------------------------------------------------
def test_user_shows_in_the_table_after_the_sync_delay(cp, pid):
    cp.advance(10)
    user_id = cp.auth.create_user(pid, "stack", "ann@example.com", "Ann")
    cp.advance(DELAY - 0.001)
    assert cp.auth.query(pid, USERS) == []
    cp.advance(0.002)
    assert cp.auth.query(pid, USERS) == [{"id": user_id, "email": "ann@example.com",
                                          "name": "Ann", "created_at": "2026-01-05T00:00:10Z"}]
    row = cp.auth.query(pid, "SELECT raw_json, updated_at, deleted_at FROM svc_auth.users_sync")
    assert json.loads(row[0]["raw_json"])["id"] == user_id
    assert row[0]["deleted_at"] is None


def test_deleted_user_leaves_the_table_after_the_delay(cp, pid):
    keep = cp.auth.create_user(pid, "stack", "bob@example.com")
    gone = cp.auth.create_user(pid, "stack", "ann@example.com")
    cp.advance(DELAY + 1)
    cp.auth.delete_user(pid, gone)
    assert len(cp.auth.query(pid, USERS)) == 2
    cp.advance(DELAY + 0.001)
    assert cp.auth.query(pid, USERS) == [{"id": keep, "email": "bob@example.com", "name": None,
                                          "created_at": "2026-01-05T00:00:00Z"}]


def test_create_then_delete_within_the_delay_never_shows(cp, pid):
    user_id = cp.auth.create_user(pid, "stack", "ann@example.com")
    cp.advance(0.5)
    cp.auth.delete_user(pid, user_id)
    cp.advance(DELAY + 0.001)  # the insert landed at 2.0 and the delete at 2.5
    assert cp.auth.query(pid, USERS) == []


def test_zero_sync_delay_is_immediate():
    cp = ControlPlane(EngineConfig(user_sync_delay_s=0.0), seed=1)
    created = cp.create_project(with_compute=False)
    cp.auth.create_integration(created.project.id, created.branch.id)
    cp.auth.create_user(created.project.id, "stack", "a@example.com")
    assert len(cp.auth.query(created.project.id, USERS)) == 1


def test_user_refusals(cp, project):
    pid, _ = project
    auth = cp.auth
    refused(cp, 404, "auth_provider", auth.create_user, pid, "stack", "a@example.com")
    refused(cp, 404, "project_id", auth.delete_user, pid, "u-1")
    auth.create_integration(*project)
    refused(cp, 404, "project_id", auth.create_user, "no-such-project", "stack", "a@example.com")
    refused(cp, 400, "auth_provider", auth.create_user, pid, "clerk", "a@example.com")
    refused(cp, 400, "email", auth.create_user, pid, "stack", "not-an-email")
    refused(cp, 400, "name", auth.create_user, pid, "stack", "a@example.com", "")
    refused(cp, 400, "name", auth.create_user, pid, "stack", "a@example.com", "x" * 256)
    user_id = auth.create_user(pid, "stack", "a@example.com", "x" * 255)
    refused(cp, 409, "email", auth.create_user, pid, "stack", "A@Example.com")
    refused(cp, 404, "auth_user_id", auth.delete_user, pid, "no-such-user")
    refused(cp, 400, "auth_user_id", auth.delete_user, pid, "")
    auth.delete_user(pid, user_id)
    refused(cp, 404, "auth_user_id", auth.delete_user, pid, user_id)
    assert auth.create_user(pid, "stack", "a@example.com") != user_id  # the address is free


# -- ownership transfer (#6) --------------------------------------------------------------------
def test_transfer_ownership(cp, pid):
    url = cp.auth.transfer_ownership(pid, "stack")
    assert url.startswith("https://app.stack-auth.sim/") and "?code=" in url
    assert cp.auth.list_integrations(pid)[0]["owned_by"] == "neon"
    refused(cp, 404, "token", cp.auth.confirm_transfer, pid, "wrong-code")
    cp.auth.confirm_transfer(pid, transfer_token_of(url))
    listed = cp.auth.list_integrations(pid)
    assert [i["owned_by"] for i in listed] == ["user"]
    refused(cp, 404, "token", cp.auth.confirm_transfer, pid, transfer_token_of(url))  # one-time
    refused(cp, 409, "auth_provider", cp.auth.transfer_ownership, pid, "stack")
    cp.auth.create_user(pid, "stack", "a@example.com")  # still managed by the service


def test_a_new_transfer_voids_the_older_code(cp, pid):
    first = transfer_token_of(cp.auth.transfer_ownership(pid, "stack"))
    second = transfer_token_of(cp.auth.transfer_ownership(pid, "stack"))
    assert first != second
    refused(cp, 404, "token", cp.auth.confirm_transfer, pid, first)
    cp.auth.confirm_transfer(pid, second)


def test_transfer_refusals(cp, project):
    pid, _ = project
    refused(cp, 404, "auth_provider", cp.auth.transfer_ownership, pid, "stack")
    refused(cp, 404, "project_id", cp.auth.confirm_transfer, "no-such-project", "code")
    refused(cp, 400, "token", cp.auth.confirm_transfer, pid, "")


# -- deleting an integration (#7) ------------------------------------------------------------------
def test_delete_keeps_the_table_and_stops_syncing(cp, pid):
    integ = cp.auth.integration(pid, "stack")
    synced = cp.auth.create_user(pid, "stack", "ann@example.com")
    cp.advance(DELAY + 1)
    cp.auth.create_user(pid, "stack", "bob@example.com")  # still waiting for its sync
    cp.auth.delete_integration(pid, "stack")
    cp.advance(DELAY + 1)
    assert [r["id"] for r in cp.auth.query(pid, USERS)] == [synced]
    assert cp.auth.list_integrations(pid) == []
    assert not cp.auth.is_current_key(pid, "stack", integ.pub_client_key)
    assert cp.auth.state()["pending_syncs"] == 0
    again = cp.auth.create_integration(pid, integ.branch_id)
    assert again.auth_provider_project_id != integ.auth_provider_project_id
    assert [r["id"] for r in cp.auth.query(pid, USERS)] == [synced]  # a kept table is reused


def test_delete_with_delete_data_drops_the_schema(cp, pid):
    branch_id = cp.auth.integration(pid, "stack").branch_id
    cp.auth.create_user(pid, "stack", "ann@example.com")
    cp.advance(DELAY + 1)
    cp.auth.delete_integration(pid, "stack", delete_data=True)
    err = refused(cp, 400, "sql", cp.auth.query, pid, USERS)
    assert "no such table" in err.message
    cp.auth.create_integration(pid, branch_id)
    assert cp.auth.query(pid, USERS) == []


def test_delete_integration_refusals(cp, project):
    pid, _ = project
    refused(cp, 404, "auth_provider", cp.auth.delete_integration, pid, "stack")
    cp.auth.create_integration(*project)
    refused(cp, 400, "auth_provider", cp.auth.delete_integration, pid, "clerk")
    refused(cp, 400, "delete_data", cp.auth.delete_integration, pid, "stack", delete_data="yes")
    refused(cp, 404, "project_id", cp.auth.delete_integration, "no-such-project", "stack")


def test_every_project_scoped_verb_needs_an_integration(cp, project):
    pid, _ = project
    auth = cp.auth
    calls = [
        (auth.generate_sdk_keys, (pid, "stack"), "auth_provider"),
        (auth.create_user, (pid, "stack", "a@example.com"), "auth_provider"),
        (auth.delete_user, (pid, "u-1"), "project_id"),
        (auth.transfer_ownership, (pid, "stack"), "auth_provider"),
        (auth.delete_integration, (pid, "stack"), "auth_provider"),
        (auth.list_oauth_providers, (pid,), "project_id"),
        (auth.add_oauth_provider, (pid, "google"), "project_id"),
        (auth.update_oauth_provider, (pid, "google", "id", "secret"), "project_id"),
        (auth.delete_oauth_provider, (pid, "google"), "project_id"),
        (auth.list_redirect_domains, (pid,), "project_id"),
        (auth.add_redirect_domain, (pid, "https://example.com", "stack"), "auth_provider"),
        (auth.delete_redirect_domains, (pid, "stack", ["https://example.com"]), "auth_provider"),
        (auth.get_email_server, (pid,), "project_id"),
        (auth.update_email_server, (pid, "shared"), "project_id"),
    ]
    for verb, args, field in calls:
        err = refused(cp, 404, field, verb, *args)
        assert "has no" in err.message and "auth integration" in err.message


# -- the rest of the control plane ---------------------------------------------------------------
def test_deleting_the_branch_removes_its_integration_and_databases(cp, project):
    pid, _ = project
    dev = cp.create_branch(pid, "dev").branch.id
    cp.auth.create_integration(pid, dev)
    cp.auth.create_user(pid, "stack", "a@example.com")
    cp.delete_branch(pid, dev)
    assert cp.auth.list_integrations(pid) == []
    assert cp.auth.state()["databases"] == {}
    cp.advance(DELAY + 1)  # the pending sync finds nothing to write to
    assert cp.auth.state()["pending_syncs"] == 0


def test_deleting_the_project_removes_everything(cp, pid):
    cp.auth.create_user(pid, "stack", "a@example.com")
    cp.delete_project(pid)
    assert cp.auth.state() == {"integrations": [], "databases": {}, "pending_syncs": 1}
    cp.advance(DELAY + 1)
    assert cp.auth.state()["pending_syncs"] == 0
    refused(cp, 404, "project_id", cp.auth.list_integrations, pid)


# -- determinism ------------------------------------------------------------------------------------
def _script(cp: ControlPlane, refuse_first: bool = False) -> list:
    created = cp.create_project("shop", with_compute=False)
    pid, bid = created.project.id, created.branch.id
    if refuse_first:  # a refused call draws nothing from the streams
        with pytest.raises(ApiError):
            cp.auth.create_integration(pid, bid, database_name="")
    out: list = [cp.auth.create_integration(pid, bid).response()]
    out.append(cp.auth.create_user(pid, "stack", "a@example.com"))
    out.append(cp.auth.generate_sdk_keys(pid, "stack").response())
    out.append(cp.auth.transfer_ownership(pid, "stack"))
    cp.advance(DELAY + 1)
    out.append(cp.auth.state())
    return out


def test_same_seed_same_integrations_and_ids():
    a = _script(ControlPlane(seed=11))
    assert a == _script(ControlPlane(seed=11))
    assert a == _script(ControlPlane(seed=11), refuse_first=True)
    assert a[0]["auth_provider_project_id"] != _script(ControlPlane(seed=12))[0][
        "auth_provider_project_id"]

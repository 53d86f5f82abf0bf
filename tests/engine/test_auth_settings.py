"""Managed auth settings in the engine: OAuth providers, the redirect whitelist and
the email server (the specification #8-#16)."""

import pytest

from sim.engine import ControlPlane
from tests.engine.support import auth_refused as refused

SMTP = {"host": "smtp.example.com", "port": 587, "username": "mailer", "password": "pw-1",
        "sender_email": "noreply@example.com", "sender_name": "Example"}


@pytest.fixture
def cp():
    return ControlPlane(seed=3)


@pytest.fixture
def pid(cp):
    created = cp.create_project("shop", with_compute=False)
    cp.auth.create_integration(created.project.id, created.branch.id)
    return created.project.id




# -- OAuth providers (#8-#11) ------------------------------------------------------------------
def test_add_list_update_delete_oauth_providers(cp, pid):
    auth = cp.auth
    assert auth.list_oauth_providers(pid) == []
    assert auth.add_oauth_provider(pid, "google") == {
        "id": "google", "type": "shared", "client_id": None, "client_secret": None}
    assert auth.add_oauth_provider(pid, "github", client_id="gh-id", client_secret="gh-secret") == {
        "id": "github", "type": "standard", "client_id": "gh-id", "client_secret": "gh-secret"}
    assert auth.list_oauth_providers(pid) == [{"id": "google", "type": "shared"},
                                              {"id": "github", "type": "standard"}]
    assert auth.update_oauth_provider(pid, "google", "g-id", "g-secret") == {
        "id": "google", "type": "standard", "client_id": "g-id", "client_secret": "g-secret"}
    assert auth.update_oauth_provider(pid, "github", client_secret="rotated") == {
        "id": "github", "type": "standard", "client_id": "gh-id", "client_secret": "rotated"}
    auth.delete_oauth_provider(pid, "google")
    assert auth.list_oauth_providers(pid) == [{"id": "github", "type": "standard"}]


def test_oauth_provider_refusals(cp, pid):
    auth = cp.auth
    refused(cp, 400, "id", auth.add_oauth_provider, pid, "facebook")
    refused(cp, 400, "client_secret", auth.add_oauth_provider, pid, "google", client_id="x")
    refused(cp, 400, "client_id", auth.add_oauth_provider, pid, "google", client_secret="x")
    refused(cp, 400, "client_id", auth.add_oauth_provider, pid, "google", "", "x")
    refused(cp, 404, "project_id", auth.add_oauth_provider, "no-such-project", "google")
    auth.add_oauth_provider(pid, "google")
    refused(cp, 409, "id", auth.add_oauth_provider, pid, "google")
    # the shared/standard rule applies to the result of an update
    refused(cp, 400, "client_secret", auth.update_oauth_provider, pid, "google", client_id="x")
    refused(cp, 400, "client_secret", auth.update_oauth_provider, pid, "google", "x", "")
    refused(cp, 404, "oauth_provider_id", auth.update_oauth_provider, pid, "github", "x", "y")
    refused(cp, 404, "oauth_provider_id", auth.delete_oauth_provider, pid, "github")
    refused(cp, 404, "oauth_provider_id", auth.delete_oauth_provider, pid, "facebook")
    auth.delete_oauth_provider(pid, "google")
    refused(cp, 404, "oauth_provider_id", auth.delete_oauth_provider, pid, "google")


# -- redirect whitelist (#12-#14) --------------------------------------------------------------
def test_add_list_and_delete_domains(cp, pid):
    auth = cp.auth
    assert auth.list_redirect_domains(pid) == []
    for domain in ("https://app.example.com", "http://localhost:3000", "https://b.example.com"):
        auth.add_redirect_domain(pid, domain, "stack")
    auth.add_redirect_domain(pid, "HTTPS://Shop.Example.com", "stack")
    assert auth.list_redirect_domains(pid) == [
        {"domain": d, "auth_provider": "stack"}
        for d in ("https://app.example.com", "http://localhost:3000", "https://b.example.com",
                  "https://shop.example.com")]
    auth.delete_redirect_domains(pid, "stack", [{"domain": "https://app.example.com"},
                                                "https://shop.example.com"])
    assert [d["domain"] for d in auth.list_redirect_domains(pid)] == [
        "http://localhost:3000", "https://b.example.com"]


def test_domain_refusals(cp, pid):
    auth = cp.auth
    auth.add_redirect_domain(pid, "https://app.example.com", "stack")
    auth.add_redirect_domain(pid, "https://b.example.com", "stack")
    refused(cp, 409, "domain", auth.add_redirect_domain, pid, "https://app.example.com", "stack")
    refused(cp, 409, "domain", auth.add_redirect_domain, pid, "HTTPS://APP.example.com", "stack")
    refused(cp, 400, "domain", auth.add_redirect_domain, pid, "https://app.example.com/", "stack")
    refused(cp, 400, "domain", auth.add_redirect_domain, pid, "app.example.com", "stack")
    refused(cp, 400, "auth_provider", auth.add_redirect_domain, pid, "https://c.io", "clerk")
    # one missing domain: 404 naming it, and nothing removed
    err = refused(cp, 404, "domains[1].domain", auth.delete_redirect_domains, pid, "stack",
                  [{"domain": "https://app.example.com"}, {"domain": "https://nope.example.com"},
                   {"domain": "https://other.example.com"}])
    assert "https://nope.example.com" in err.message
    refused(cp, 400, "domains", auth.delete_redirect_domains, pid, "stack", [])
    refused(cp, 400, "domains[0].domain", auth.delete_redirect_domains, pid, "stack",
            [{"domain": "ftp://x.example.com"}])
    refused(cp, 400, "domains[0].domain", auth.delete_redirect_domains, pid, "stack", [{}])
    assert len(auth.list_redirect_domains(pid)) == 2


# -- email server (#15, #16) -------------------------------------------------------------------
def test_email_server_shared_standard_and_back(cp, pid):
    auth = cp.auth
    assert auth.get_email_server(pid) == {"type": "shared"}
    assert auth.update_email_server(pid, "standard", **SMTP) == {"type": "standard", **SMTP}
    shown = auth.get_email_server(pid)
    assert shown == {"type": "standard", **{k: v for k, v in SMTP.items() if k != "password"}}
    assert auth.update_email_server(pid, "shared") == {"type": "shared"}
    assert auth.get_email_server(pid) == {"type": "shared"}


def test_email_server_refusals(cp, pid):
    auth = cp.auth
    auth.update_email_server(pid, "standard", **SMTP)
    refused(cp, 400, "type", auth.update_email_server, pid, "smtp")
    for name in SMTP:
        body = {k: v for k, v in SMTP.items() if k != name}
        refused(cp, 400, name, auth.update_email_server, pid, "standard", **body)
    refused(cp, 400, "port", auth.update_email_server, pid, "standard", **{**SMTP, "port": 0})
    refused(cp, 400, "sender_email", auth.update_email_server, pid, "standard",
            **{**SMTP, "sender_email": "nobody"})
    refused(cp, 400, "host", auth.update_email_server, pid, "shared", host="smtp.example.com")
    refused(cp, 404, "project_id", auth.update_email_server, "no-such-project", "shared")
    assert auth.get_email_server(pid)["host"] == "smtp.example.com"


def test_settings_belong_to_the_integration(cp, pid):
    """Deleting the integration deletes its provider project and so its settings."""
    auth = cp.auth
    branch_id = auth.integration(pid, "stack").branch_id
    auth.add_oauth_provider(pid, "google")
    auth.add_redirect_domain(pid, "https://app.example.com", "stack")
    auth.update_email_server(pid, "standard", **SMTP)
    auth.delete_integration(pid, "stack")
    auth.create_integration(pid, branch_id)
    assert auth.list_oauth_providers(pid) == []
    assert auth.list_redirect_domains(pid) == []
    assert auth.get_email_server(pid) == {"type": "shared"}

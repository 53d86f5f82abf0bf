"""The pure rules of managed auth (sim/rules/auth.py)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.rules import auth as rules
from sim.rules.errors import ApiError


def field_of(call, *args, **kwargs) -> str | None:
    with pytest.raises(ApiError) as info:
        call(*args, **kwargs)
    assert info.value.status == 400
    return info.value.field


def test_names_of_the_synced_table_and_defaults():
    assert (rules.SCHEMA_NAME, rules.TABLE_NAME) == ("svc_auth", "users_sync")
    assert (rules.DEFAULT_DATABASE_NAME, rules.DEFAULT_ROLE_NAME) == ("svcdb", "svcdb_owner")
    assert rules.AUTH_PROVIDERS == ("stack",)
    assert rules.OAUTH_PROVIDER_IDS == ("github", "google", "microsoft", "vercel")


@pytest.mark.parametrize("value", ["clerk", "", None, "STACK"])
def test_only_stack_is_a_provider(value):
    assert rules.check_auth_provider("stack") == "stack"
    assert field_of(rules.check_auth_provider, value) == "auth_provider"


def test_oauth_type_shared_standard_and_half_credentials():
    assert rules.oauth_type(None, None) is rules.CredentialType.SHARED
    assert rules.oauth_type("id", "secret") is rules.CredentialType.STANDARD
    assert field_of(rules.oauth_type, "id", None) == "client_secret"
    assert field_of(rules.oauth_type, None, "secret") == "client_id"
    assert field_of(rules.check_credential, "client_id", "") == "client_id"
    assert field_of(rules.check_oauth_provider_id, "facebook") == "id"


@pytest.mark.parametrize("domain, origin", [
    ("https://example.com", "https://example.com"),
    ("http://localhost:3000", "http://localhost:3000"),
    ("HTTPS://App.Example.COM:8443", "https://app.example.com:8443"),
    ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
    ("http://[::1]:3000", "http://[::1]:3000"),
])
def test_redirect_domain_is_an_origin(domain, origin):
    assert rules.check_redirect_domain(domain) == origin


@pytest.mark.parametrize("domain", [
    "example.com", "ftp://example.com", "https://", "https://example.com/",
    "https://example.com/cb", "https://example.com?x=1", "https://example.com?",
    "https://example.com#top", "https://user:pw@example.com", "https://example.com:",
    "https://example.com:0", "https://example.com:99999", "https://exa mple.com",
    " https://example.com", "https://-bad-.com", "https://bad_host.com", "", None, 42,
])
def test_redirect_domain_refusals(domain):
    assert field_of(rules.check_redirect_domain, domain) == "domain"


@given(st.text(max_size=40) | st.from_regex(r"(?i)https?://[a-z0-9.\-:\[\]/?#@]{0,30}"))
def test_a_redirect_domain_is_refused_or_a_canonical_origin(text):
    try:
        origin = rules.check_redirect_domain(text)
    except ApiError as err:
        assert (err.status, err.field) == (400, "domain")
        return
    assert rules.check_redirect_domain(origin) == origin
    assert origin.count("/") == 2 and "?" not in origin and "#" not in origin


@pytest.mark.parametrize("email", ["a@example.com", "first.last+tag@mail.example.org",
                                   "X_Y@EXAMPLE.IO"])
def test_valid_emails(email):
    assert rules.check_email(email) == email


@pytest.mark.parametrize("email", ["", "a", "a@", "@example.com", "a@example", "a b@example.com",
                                   "a@@example.com", "a@example..com", ".a@example.com",
                                   "a" * 65 + "@example.com", "a@" + "b" * 250 + ".com", None])
def test_invalid_emails(email):
    assert field_of(rules.check_email, email) == "email"


def test_user_name_is_1_to_255_characters():
    assert rules.check_user_name(None) is None
    assert rules.check_user_name("x" * 255) == "x" * 255
    for bad in ("", "x" * 256, 5):
        assert field_of(rules.check_user_name, bad) == "name"


SMTP = {"host": "smtp.example.com", "port": 587, "username": "u", "password": "p",
        "sender_email": "noreply@example.com", "sender_name": "Example"}


def test_email_server_shared_and_standard():
    assert rules.check_email_server("shared") == {"type": "shared"}
    assert rules.check_email_server("standard", **SMTP) == {"type": "standard", **SMTP}


@pytest.mark.parametrize("missing", sorted(SMTP))
def test_standard_email_server_requires_every_field(missing):
    body = {k: v for k, v in SMTP.items() if k != missing}
    assert field_of(rules.check_email_server, "standard", **body) == missing


@pytest.mark.parametrize("name, value", [
    ("port", 0), ("port", 65_536), ("port", "587"), ("port", True), ("host", "bad host"),
    ("sender_email", "nobody"), ("username", ""), ("sender_name", "x" * 256),
])
def test_standard_email_server_field_values(name, value):
    assert field_of(rules.check_email_server, "standard", **{**SMTP, name: value}) == name


def test_email_server_type_and_shared_extras():
    assert field_of(rules.check_email_server, "smtp") == "type"
    assert field_of(rules.check_email_server, "shared", host="smtp.example.com") == "host"
    assert field_of(rules.check_email_server, "shared", sender_email="nobody") == "sender_email"


def test_shared_email_server_keeps_the_sender():
    # the official document's shared form has the sender's address and name
    assert rules.check_email_server("shared", sender_email="noreply@example.com",
                                    sender_name="Shop") == {
        "type": "shared", "sender_email": "noreply@example.com", "sender_name": "Shop"}


def test_provider_addresses():
    assert rules.jwks_url("stack", "p1") == (
        "https://api.stack-auth.sim/api/v1/projects/p1/.well-known/jwks.json")
    assert rules.transfer_url("stack", "abc").endswith("?code=abc")


def test_identifiers():
    assert rules.check_identifier("database_name", "svcdb") == "svcdb"
    for bad in ("", "x" * 64, "a\x00b", None):
        assert field_of(rules.check_identifier, "database_name", bad) == "database_name"

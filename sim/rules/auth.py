"""Managed auth administration (the specification #1-#16): the pure rules.

Which providers exist, what a valid user, OAuth provider, redirect domain and
email server look like, and the names of the synced users table. No SimPy, no
clock: the engine (`sim.engine.auth`) calls these before it changes anything.
"""

from __future__ import annotations

import ipaddress
import re
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

from sim.rules.errors import invalid

#: the specification: "Currently the only supported auth provider value is `stack`."
AUTH_PROVIDERS: tuple[str, ...] = ("stack",)
#: the external OAuth providers an auth project can sign users in with
OAUTH_PROVIDER_IDS: tuple[str, ...] = ("github", "google", "microsoft", "vercel")

DEFAULT_DATABASE_NAME = "svcdb"
DEFAULT_ROLE_NAME = "svcdb_owner"
SCHEMA_NAME = "svc_auth"
TABLE_NAME = "users_sync"

USER_NAME_MAX = 255  # the specification, Limits: name (create user) 1 to 255 characters
EMAIL_MAX = 254  # RFC 5321 path limit
IDENTIFIER_MAX = 63  # Postgres NAMEDATALEN - 1
TEXT_MAX = 255  # credentials, SMTP username, sender name

#: Where each provider's API and dashboard live (simulated hosts).
PROVIDER_API = {"stack": "https://api.stack-auth.sim"}
PROVIDER_APP = {"stack": "https://app.stack-auth.sim"}


class OwnedBy(StrEnum):
    """Who owns the provider project (the design notes: `user` once a transfer is confirmed)."""

    SERVICE = "neon"  # the service (the official document's word for it)
    USER = "user"


class CredentialType(StrEnum):
    """OAuth providers and email servers: the service's shared keys or the customer's own."""

    SHARED = "shared"
    STANDARD = "standard"


SMTP_FIELDS: tuple[str, ...] = (
    "host", "port", "username", "password", "sender_email", "sender_name",
)
#: a shared server may still send as your own address and name
SHARED_SENDER_FIELDS: tuple[str, ...] = ("sender_email", "sender_name")

_EMAIL = re.compile(
    r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}"
)
_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")


# -- small checks ---------------------------------------------------------------
def check_text(field: str, value: Any, max_len: int = TEXT_MAX) -> str:
    """A required, non-empty string of at most max_len characters."""
    if not isinstance(value, str) or not value:
        raise invalid(field, "required: a non-empty string")
    if len(value) > max_len:
        raise invalid(field, f"at most {max_len} characters")
    return value


def check_bool(field: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise invalid(field, f"must be true or false, got {value!r}")
    return value


def check_identifier(field: str, value: Any) -> str:
    """A Postgres database or role name: 1..63 characters, no NUL."""
    check_text(field, value, IDENTIFIER_MAX)
    if "\x00" in value:
        raise invalid(field, "must not contain NUL")
    return value


def check_auth_provider(value: Any, field: str = "auth_provider") -> str:
    if value not in AUTH_PROVIDERS:
        raise invalid(field, f"must be one of {list(AUTH_PROVIDERS)}, got {value!r}")
    return value


def check_oauth_provider_id(value: Any, field: str = "id") -> str:
    if value not in OAUTH_PROVIDER_IDS:
        raise invalid(field, f"must be one of {list(OAUTH_PROVIDER_IDS)}, got {value!r}")
    return value


def check_email(value: Any, field: str = "email") -> str:
    if not isinstance(value, str) or len(value) > EMAIL_MAX or not _EMAIL.fullmatch(value):
        raise invalid(field, f"must be an email address, got {value!r}")
    if len(value.split("@", 1)[0]) > 64:
        raise invalid(field, "the part before @ is at most 64 characters")
    return value


def email_key(email: str) -> str:
    """Two addresses that differ only in case are the same user."""
    return email.casefold()


def check_user_name(value: Any, field: str = "name") -> str | None:
    """None (omitted) or 1..255 characters."""
    if value is None:
        return None
    if not isinstance(value, str) or not 1 <= len(value) <= USER_NAME_MAX:
        raise invalid(field, f"must be a string of 1 to {USER_NAME_MAX} characters")
    return value


def check_host(field: str, value: Any) -> str:
    """A DNS name (letters, digits, hyphens; dot-separated labels) or an IP address."""
    check_text(field, value, 253)
    host = value.lower()
    try:
        ipaddress.ip_address(host)
        return value
    except ValueError:
        pass
    if not all(_LABEL.fullmatch(label) for label in host.split(".")):
        raise invalid(field, f"must be a host name or IP address, got {value!r}")
    return value


def check_port(field: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 65_535:
        raise invalid(field, f"must be an integer 1..65535, got {value!r}")
    return value


# -- OAuth providers ----------------------------------------------------------------
def check_credential(field: str, value: Any) -> str | None:
    """client_id / client_secret: omitted (None) or a non-empty string."""
    return None if value is None else check_text(field, value)


def oauth_type(client_id: str | None, client_secret: str | None) -> CredentialType:
    """Neither credential: the service's shared keys; both: the customer's own (standard)."""
    if client_id is None and client_secret is None:
        return CredentialType.SHARED
    if client_id is None:
        raise invalid("client_id", "required with client_secret (own credentials need both)")
    if client_secret is None:
        raise invalid("client_secret", "required with client_id (own credentials need both)")
    return CredentialType.STANDARD


# -- redirect whitelist ---------------------------------------------------------------
def check_redirect_domain(value: Any, field: str = "domain") -> str:
    """A URL origin `scheme://host[:port]`; returns it with scheme and host in lower case.

    Refused: any path (a lone trailing "/" too: an origin has none), a query or
    fragment (even empty), user information, a scheme other than http/https.
    """
    check_text(field, value, 2048)
    if any(c.isspace() or not c.isprintable() for c in value):
        raise invalid(field, "must not contain whitespace or control characters")
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError as err:
        raise invalid(field, f"not a URL origin ({err})") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise invalid(field, f"scheme must be http or https, got {value!r}")
    if not parts.netloc:
        raise invalid(field, f"must name a host, as in https://example.com, got {value!r}")
    if "@" in parts.netloc:
        raise invalid(field, "must not contain user information")
    if parts.path:
        raise invalid(field, f"must be an origin without a path (no trailing /), got {value!r}")
    if "?" in value or "#" in value:
        raise invalid(field, "must be an origin without a query or fragment")
    if parts.netloc.endswith(":") or port == 0:
        raise invalid(field, "port must be an integer 1..65535")
    host = parts.hostname or ""
    check_host(field, host)
    netloc = f"[{host}]" if ":" in host else host
    return f"{scheme}://{netloc}" + (f":{port}" if port is not None else "")


# -- email server ---------------------------------------------------------------------
def check_email_server(
    type: Any, host: Any = None, port: Any = None, username: Any = None, password: Any = None,
    sender_email: Any = None, sender_name: Any = None,
) -> dict[str, Any]:
    """The configuration to store, with exactly the fields sent.

    standard (a custom SMTP server) requires all six fields; shared takes only
    the sender's address and name, as the real API's document has them (kept
    and answered back by the update; a read of a shared server shows only its
    type). A server setting sent with shared is refused rather than ignored.
    """
    values = {"host": host, "port": port, "username": username, "password": password,
              "sender_email": sender_email, "sender_name": sender_name}
    if type == CredentialType.SHARED.value:
        for name in SMTP_FIELDS:
            if values[name] is not None and name not in SHARED_SENDER_FIELDS:
                raise invalid(name, "only allowed when type is standard")
        if sender_email is not None:
            check_email(sender_email, "sender_email")
        if sender_name is not None:
            check_text("sender_name", sender_name)
        sender = {k: values[k] for k in SHARED_SENDER_FIELDS if values[k] is not None}
        return {"type": CredentialType.SHARED.value, **sender}
    if type != CredentialType.STANDARD.value:
        raise invalid("type", f"must be shared or standard, got {type!r}")
    for name in SMTP_FIELDS:
        if values[name] is None:
            raise invalid(name, "required when type is standard")
    check_host("host", host)
    check_port("port", port)
    check_text("username", username)
    check_text("password", password)
    check_email(sender_email, "sender_email")
    check_text("sender_name", sender_name)
    return {"type": CredentialType.STANDARD.value, **values}


# -- provider addresses -----------------------------------------------------------------
def jwks_url(auth_provider: str, provider_project_id: str) -> str:
    """The provider's JSON Web Key Set for one of its projects."""
    api = PROVIDER_API[auth_provider]
    return f"{api}/api/v1/projects/{provider_project_id}/.well-known/jwks.json"


def transfer_url(auth_provider: str, token: str) -> str:
    """Where the customer confirms an ownership transfer (a one-time code)."""
    app = PROVIDER_APP[auth_provider]
    return f"{app}/integrations/svc/projects/transfer/confirm?code={token}"

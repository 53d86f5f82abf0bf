"""Managed auth resources: plain state and the JSON shapes the specification gives them.

Secrets (secret_server_key, client_secret, the SMTP password, a transfer code)
never show in repr() and only in the responses the specification shows them in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sim.rules import auth as rules
from sim.rules.auth import CredentialType, OwnedBy


@dataclass(slots=True, eq=False)
class AuthUser:
    id: str
    email: str
    name: str | None
    created_at: float


@dataclass(slots=True, eq=False)
class OAuthProvider:
    id: str
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)

    @property
    def type(self) -> str:
        return rules.oauth_type(self.client_id, self.client_secret).value

    def item(self) -> dict[str, Any]:
        """The list item of #8 (no credentials)."""
        return {"id": self.id, "type": self.type}

    def response(self) -> dict[str, Any]:
        """The add/update response of #9/#10, credentials included (None when shared)."""
        return {"id": self.id, "type": self.type, "client_id": self.client_id,
                "client_secret": self.client_secret}


@dataclass(slots=True, eq=False)
class EmailServer:
    type: str = CredentialType.SHARED.value
    host: str | None = None
    port: int | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    sender_email: str | None = None
    sender_name: str | None = None

    def view(self) -> dict[str, Any]:
        """What GET (#15) shows: only type when shared; never the SMTP password."""
        if self.type == CredentialType.SHARED.value:
            return {"type": self.type}
        return {"type": self.type, "host": self.host, "port": self.port,
                "username": self.username, "sender_email": self.sender_email,
                "sender_name": self.sender_name}


@dataclass(slots=True, eq=False)
class Integration:
    """A provider-run auth project bound to one branch database."""

    project_id: str
    auth_provider: str
    auth_provider_project_id: str
    branch_id: str
    db_name: str
    role_name: str
    created_at: float
    jwks_url: str
    pub_client_key: str
    secret_server_key: str = field(repr=False)
    owned_by: str = OwnedBy.SERVICE.value
    transfer_token: str | None = field(default=None, repr=False)
    users: dict[str, AuthUser] = field(default_factory=dict)
    oauth_providers: dict[str, OAuthProvider] = field(default_factory=dict)
    domains: list[str] = field(default_factory=list)
    email_server: EmailServer = field(default_factory=EmailServer)

    schema_name = rules.SCHEMA_NAME
    table_name = rules.TABLE_NAME

    def response(self) -> dict[str, Any]:
        """The 7-field object of #1 and #3 (the secret key included)."""
        return {
            "auth_provider": self.auth_provider,
            "auth_provider_project_id": self.auth_provider_project_id,
            "pub_client_key": self.pub_client_key,
            "secret_server_key": self.secret_server_key,
            "jwks_url": self.jwks_url,
            "schema_name": self.schema_name,
            "table_name": self.table_name,
        }

    def user_by_email(self, email: str) -> AuthUser | None:
        key = rules.email_key(email)
        return next((u for u in self.users.values() if rules.email_key(u.email) == key), None)

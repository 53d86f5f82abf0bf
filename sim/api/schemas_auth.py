"""Request and response bodies of managed auth (the specification #1-#16) and its two /_sim calls.

As in `schemas`: requests refuse unknown fields and take JSON types only, and
check shapes, never rules (a provider other than `stack`, an email address, a
redirect origin or an SMTP port are the engine's to accept or refuse, so the
400 names the field exactly as over the engine). Responses are strict too:
the list shapes have no field for a secret, so a serialiser that leaked
`secret_server_key`, `client_secret` or the SMTP password into a listing
would fail validation instead of answering.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StrictBool, StrictInt, StrictStr

from sim.api.schemas import Body, Out
from sim.rules.auth import DEFAULT_DATABASE_NAME, DEFAULT_ROLE_NAME, CredentialType

Provider = Annotated[StrictStr, Field(description="auth provider; only `stack` is supported")]
Secret = Annotated[StrictStr | None, Field(repr=False)]  # never in a repr or a log line


# ---- requests --------------------------------------------------------------------------------


class AuthCreateRequest(Body):
    auth_provider: Provider
    project_id: StrictStr
    branch_id: StrictStr = Field(description="the production (default) branch")
    database_name: StrictStr | None = Field(None, description=f"default `{DEFAULT_DATABASE_NAME}`")
    role_name: StrictStr | None = Field(
        None, description=f"role for authenticated users; default `{DEFAULT_ROLE_NAME}`")


class AuthProjectRequest(Body):
    """#3 generate SDK keys and #6 transfer ownership."""

    project_id: StrictStr
    auth_provider: Provider


class AuthUserRequest(Body):
    project_id: StrictStr
    auth_provider: Provider
    email: StrictStr
    name: StrictStr | None = Field(None, description="1 to 255 characters")


class IntegrationDeleteRequest(Body):
    """The real API takes `delete_data` in a body; the query parameter works too."""

    delete_data: StrictBool | None = None


class OAuthProviderCreateRequest(Body):
    id: StrictStr = Field(description="github, google, microsoft or vercel")
    client_id: StrictStr | None = Field(
        None, description="with client_secret: your own credentials (standard); neither: shared")
    client_secret: Secret = None


class OAuthProviderUpdateRequest(Body):
    client_id: StrictStr | None = None
    client_secret: Secret = None


class RedirectDomainRequest(Body):
    domain: StrictStr = Field(description="a URL origin, such as https://app.example.com")
    auth_provider: Provider


class RedirectDomainItem(Body):
    domain: StrictStr


class RedirectDomainsDeleteRequest(Body):
    auth_provider: Provider
    domains: list[RedirectDomainItem]


class EmailServerRequest(Body):
    type: StrictStr = Field(description="shared, or standard (a custom SMTP server)")
    host: StrictStr | None = None
    port: StrictInt | None = None
    username: StrictStr | None = None
    password: Secret = None
    sender_email: StrictStr | None = None
    sender_name: StrictStr | None = None


class ConfirmTransferRequest(Body):
    """Give the code of the confirmation URL, or the URL itself."""

    project_id: StrictStr
    token: StrictStr | None = Field(None, repr=False)
    url: StrictStr | None = Field(None, repr=False)


class AuthQueryRequest(Body):
    project_id: StrictStr
    sql: StrictStr = Field(description="one read-only SELECT, e.g. "
                           "SELECT id, email, name, created_at FROM svc_auth.users_sync")
    branch_id: StrictStr | None = Field(None, description="default: the integration's branch")
    database_name: StrictStr | None = Field(None,
                                            description="default: the integration's database")


# ---- responses -------------------------------------------------------------------------------


class IntegrationOut(Out):
    """#1 and #3: the only answers that carry the secret server key."""

    auth_provider: str
    auth_provider_project_id: str
    pub_client_key: str
    secret_server_key: str
    jwks_url: str
    schema_name: str
    table_name: str


class IntegrationItemOut(Out):
    auth_provider: str
    auth_provider_project_id: str
    branch_id: str
    db_name: str
    created_at: str
    owned_by: Literal["neon", "user"] = Field(
        description="`neon` (managed by the service), `user` once transferred")
    jwks_url: str


class IntegrationsResponse(Out):
    data: list[IntegrationItemOut]


class AuthUserCreated(Out):
    id: str


class TransferOwnershipOut(Out):
    url: str = Field(description="open in a browser to confirm (here: POST "
                                 "/_sim/auth/confirm_transfer)")


class OAuthProviderItemOut(Out):
    id: str
    type: CredentialType


class OAuthProvidersResponse(Out):
    providers: list[OAuthProviderItemOut]


class OAuthProviderOut(OAuthProviderItemOut):
    """#9 and #10; client_id and client_secret are absent for shared keys."""

    client_id: str | None = None
    client_secret: str | None = None


class RedirectDomainOut(Out):
    domain: str
    auth_provider: str


class RedirectDomainsResponse(Out):
    domains: list[RedirectDomainOut]


class EmailServerOut(Out):
    """#15: only `type` when shared; the SMTP settings but never the password when standard."""

    type: CredentialType
    host: str | None = None
    port: int | None = None
    username: str | None = None
    sender_email: str | None = None
    sender_name: str | None = None


class EmailServerUpdated(Out):
    """#16: every field sent, the password included."""

    type: CredentialType
    host: str | None = None
    port: int | None = None
    username: str | None = None
    password: str | None = None
    sender_email: str | None = None
    sender_name: str | None = None


class EmptyOut(Out):
    """A 200 with nothing to say: `{}`."""


class QueryOut(Out):
    rows: list[dict[str, Any]]

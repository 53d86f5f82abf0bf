"""Routes of managed auth (the specification #1-#16) and its /_sim calls.

Each handler parses, checks that the project (in the path or, for #1, #3,
#4 and #6, in the body) lies within the key's reach (404 otherwise, as an
unknown project), calls one `cp.auth` verb under the server's lock and
serialises. The rules and refusals are the engine's (`sim.engine.auth`).

Status codes (the specification where it shows them, else the real API, else the design notes):

| # | call | success |
|---|---|---|
| 1, 3, 4 | create integration, SDK keys, user | 201 with a body |
| 5, 11 | delete user, delete OAuth provider | 204, no body |
| 7, 14 | delete integration, delete redirect domains | 200 `{}` |
| 13 | add redirect domain | 201, no body |
| others | | 200 with a body |

The /_sim calls of managed auth (confirming a transfer, querying the synced
table) live with the other control calls in `sim.api.control`.

Secrets (secret_server_key, client_secret, the SMTP password) leave only in
the answers of #1, #3, #9, #10 and #16; the list shapes cannot carry them.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Query, Response

from sim.api.computes import OUT
from sim.api.deps import Key, Server, given
from sim.api.errors import ERRORS, error_docs
from sim.api.routing import sim_router
from sim.api.schemas_auth import (
    AuthCreateRequest,
    AuthProjectRequest,
    AuthUserCreated,
    AuthUserRequest,
    EmailServerOut,
    EmailServerRequest,
    EmailServerUpdated,
    EmptyOut,
    IntegrationDeleteRequest,
    IntegrationOut,
    IntegrationsResponse,
    OAuthProviderCreateRequest,
    OAuthProviderOut,
    OAuthProvidersResponse,
    OAuthProviderUpdateRequest,
    RedirectDomainRequest,
    RedirectDomainsDeleteRequest,
    RedirectDomainsResponse,
    TransferOwnershipOut,
)
from sim.rules.errors import invalid

router = sim_router(prefix="/api/v2", tags=["auth"], responses=ERRORS)
CONFLICT = error_docs(409)
P = "/projects/{project_id}/auth"


def _empty(status: int) -> Response:
    return Response(status_code=status)


# ---- integrations (#1, #2, #3, #6, #7) ----------------------------------------------------


@router.post("/projects/auth/create", status_code=201, response_model=IntegrationOut,
             responses=CONFLICT)
def create_integration(body: AuthCreateRequest, server: Server, key: Key):
    """A provider-run auth project for a branch database (as the console's quick start)."""
    args = given(body, include={"database_name", "role_name"})
    with server.world() as cp:
        key.project(cp, body.project_id)
        return cp.auth.create_integration(body.project_id, body.branch_id, body.auth_provider,
                                          **args).response()


@router.get(P + "/integrations", response_model=IntegrationsResponse)
def list_integrations(project_id: str, server: Server, key: Key):
    with server.world() as cp:
        key.project(cp, project_id)
        return {"data": [{**item, "owned_by": _OWNED_BY.get(item["owned_by"], item["owned_by"])}
                         for item in cp.auth.list_integrations(project_id)]}


#: the service's former name for itself, as a state file written before may hold it
_OWNED_BY = {"svc": "neon"}


@router.post("/projects/auth/keys", status_code=201, response_model=IntegrationOut)
def generate_sdk_keys(body: AuthProjectRequest, server: Server, key: Key):
    """New SDK keys; the previous ones stop working at once."""
    with server.world() as cp:
        key.project(cp, body.project_id)
        return cp.auth.generate_sdk_keys(body.project_id, body.auth_provider).response()


@router.post("/projects/auth/transfer_ownership", response_model=TransferOwnershipOut,
             responses=CONFLICT)
def transfer_ownership(body: AuthProjectRequest, server: Server, key: Key):
    """A confirmation URL; the customer confirms in a browser (POST /_sim/auth/confirm_transfer)."""
    with server.world() as cp:
        key.project(cp, body.project_id)
        return {"url": cp.auth.transfer_ownership(body.project_id, body.auth_provider)}


@router.delete(P + "/integration/{auth_provider}", response_model=EmptyOut)
def delete_integration(
    project_id: str, auth_provider: str, server: Server, key: Key,
    delete_data: Annotated[bool | None, Query(
        description="also drop the svc_auth schema with users_sync (default false)")] = None,
    body: IntegrationDeleteRequest | None = None,
):
    """Remove the integration; answers 200 `{}`. `delete_data` in the query or in a body."""
    flags = {v for v in (delete_data, body.delete_data if body else None) if v is not None}
    if len(flags) > 1:
        raise invalid("delete_data", "the query and the body disagree")
    with server.world() as cp:
        key.project(cp, project_id)
        cp.auth.delete_integration(project_id, auth_provider, flags.pop() if flags else False)
        return {}


# ---- users (#4, #5) -----------------------------------------------------------------------


@router.post("/projects/auth/user", status_code=201, response_model=AuthUserCreated,
             responses=CONFLICT)
def create_user(body: AuthUserRequest, server: Server, key: Key):
    """A user at the provider; it reaches svc_auth.users_sync after the sync delay."""
    with server.world() as cp:
        key.project(cp, body.project_id)
        return {"id": cp.auth.create_user(body.project_id, body.auth_provider, body.email,
                                          body.name)}


@router.delete(P + "/users/{auth_user_id}", status_code=204, response_class=Response)
def delete_user(project_id: str, auth_user_id: str, server: Server, key: Key):
    with server.world() as cp:
        key.project(cp, project_id)
        cp.auth.delete_user(project_id, auth_user_id)
    return _empty(204)


# ---- OAuth providers (#8-#11) ---------------------------------------------------------------


@router.get(P + "/oauth_providers", response_model=OAuthProvidersResponse)
def list_oauth_providers(project_id: str, server: Server, key: Key):
    with server.world() as cp:
        key.project(cp, project_id)
        return {"providers": cp.auth.list_oauth_providers(project_id)}


@router.post(P + "/oauth_providers", response_model=OAuthProviderOut, responses=CONFLICT,
             **OUT)
def add_oauth_provider(project_id: str, body: OAuthProviderCreateRequest, server: Server,
                       key: Key):
    """Without client_id and client_secret the provider uses the shared keys."""
    with server.world() as cp:
        key.project(cp, project_id)
        return cp.auth.add_oauth_provider(project_id, body.id, body.client_id,
                                          body.client_secret)


@router.patch(P + "/oauth_providers/{oauth_provider_id}", response_model=OAuthProviderOut,
              **OUT)
def update_oauth_provider(project_id: str, oauth_provider_id: str,
                          body: OAuthProviderUpdateRequest, server: Server, key: Key):
    """Replace the credentials sent; omitted ones stay as they are."""
    with server.world() as cp:
        key.project(cp, project_id)
        return cp.auth.update_oauth_provider(project_id, oauth_provider_id, body.client_id,
                                             body.client_secret)


@router.delete(P + "/oauth_providers/{oauth_provider_id}", response_model=EmptyOut)
def delete_oauth_provider(project_id: str, oauth_provider_id: str, server: Server, key: Key):
    """200 with `{}`, as the real API's document says (removal shows in #8)."""
    with server.world() as cp:
        key.project(cp, project_id)
        cp.auth.delete_oauth_provider(project_id, oauth_provider_id)
    return {}


# ---- redirect whitelist (#12-#14) -----------------------------------------------------------


@router.get(P + "/domains", response_model=RedirectDomainsResponse)
def list_redirect_domains(project_id: str, server: Server, key: Key):
    with server.world() as cp:
        key.project(cp, project_id)
        return {"domains": cp.auth.list_redirect_domains(project_id)}


@router.post(P + "/domains", status_code=201, response_class=Response, responses=CONFLICT)
def add_redirect_domain(project_id: str, body: RedirectDomainRequest, server: Server,
                        key: Key):
    """Whitelist an origin; 201 with an empty body."""
    with server.world() as cp:
        key.project(cp, project_id)
        cp.auth.add_redirect_domain(project_id, body.domain, body.auth_provider)
    return _empty(201)


@router.delete(P + "/domains", response_model=EmptyOut)
def delete_redirect_domains(project_id: str, body: RedirectDomainsDeleteRequest,
                            server: Server, key: Key):
    """Remove exactly the listed domains (all or none); answers 200 `{}`."""
    domains = [d.model_dump() for d in body.domains]
    with server.world() as cp:
        key.project(cp, project_id)
        cp.auth.delete_redirect_domains(project_id, body.auth_provider, domains)
        return {}


# ---- email server (#15, #16) ----------------------------------------------------------------


@router.get(P + "/email_server", response_model=EmailServerOut, **OUT)
def get_email_server(project_id: str, server: Server, key: Key):
    with server.world() as cp:
        key.project(cp, project_id)
        return cp.auth.get_email_server(project_id)


@router.patch(P + "/email_server", response_model=EmailServerUpdated, **OUT)
def update_email_server(project_id: str, body: EmailServerRequest, server: Server, key: Key):
    """shared, or standard with all six SMTP fields; answers with every field sent."""
    values = given(body)
    with server.world() as cp:
        key.project(cp, project_id)
        return cp.auth.update_email_server(project_id, **values)

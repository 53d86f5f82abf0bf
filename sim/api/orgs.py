"""Routes of the organization: the caller's organizations, the organization, its members,
its API keys, and what the request's key is (`GET /auth`).

    GET    /api/v2/users/me/organizations                  the organizations of the user
    GET    /api/v2/organizations/{org_id}                   the organization
    GET    /api/v2/organizations/{org_id}/members           its members (the user, admin)
    GET    /api/v2/organizations/{org_id}/members/{id}      one member
    GET    /api/v2/organizations/{org_id}/api_keys          its keys (never their secrets)
    POST   /api/v2/organizations/{org_id}/api_keys          {key_name, project_id?} -> a key
    DELETE /api/v2/organizations/{org_id}/api_keys/{id}     revoke
    GET    /api/v2/auth                                     {account_id, auth_method}

The simulated account is one user, the admin of one organization (`sim.api.keys`):
the user's default organization, which every project belongs to. An organization
key reaches every project of the organization; one created with `project_id`
reaches that project only and cannot manage keys. A project-scoped key is refused
(403) on these routes, `/auth` and the list of organizations aside.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal

from fastapi import Path, Query
from pydantic import BaseModel, Field, StrictStr

from sim.api.api_keys import (
    MAX_KEY_NAME,
    ApiKeyCreated,
    ApiKeyItem,
    ApiKeyRevoked,
)
from sim.api.computes import OUT
from sim.api.deps import Key, Server
from sim.api.errors import ERRORS, error_docs
from sim.api.keys import ORG_ID, ApiKey, KeyKind, KeyRecord
from sim.api.routing import sim_router
from sim.api.schemas import Body
from sim.engine.model import USER_ID
from sim.rules.errors import forbidden, not_found

router = sim_router(prefix="/api/v2", tags=["organizations"], responses=ERRORS)

ORG_NAME = "sim"
EMAIL = "user@example.com"  # as /users/me shows the user
#: the user's membership: an id derived from the organization and the user, the same every run
MEMBER_ID = str(uuid.uuid5(uuid.NAMESPACE_URL, f"sim:{ORG_ID}:{USER_ID}"))
MAX_MEMBERS_PAGE = 500  # as the real API's limit parameter
ORG_ID_PATTERN = r"^[a-z0-9-]{1,60}$"
OrgId = Annotated[str, Path(pattern=ORG_ID_PATTERN)]


class Organization(BaseModel):
    id: str
    name: str
    handle: str
    plan: str
    created_at: str
    updated_at: str
    managed_by: str
    allow_hipaa_projects: bool
    require_mfa: bool


class OrganizationsResponse(BaseModel):
    organizations: list[Organization]


MemberRole = Literal["admin", "member", "editor", "viewer", "collaborator"]


class Member(BaseModel):
    id: str
    user_id: str
    org_id: str
    role: MemberRole
    joined_at: str


class MemberUserInfo(BaseModel):
    email: str
    has_mfa: bool


class MemberWithUser(BaseModel):
    member: Member
    user: MemberUserInfo


class MembersPagination(BaseModel):
    next: str | None = None
    sort_by: str
    sort_order: str


class MembersResponse(BaseModel):
    members: list[MemberWithUser]
    pagination: MembersPagination


class AuthDetails(BaseModel):
    account_id: str
    auth_method: Literal["api_key_user", "api_key_org"]


class OrgApiKeyCreateRequest(Body):
    key_name: Annotated[StrictStr, Field(max_length=MAX_KEY_NAME)]
    project_id: Annotated[StrictStr | None, Field(pattern=ORG_ID_PATTERN)] = None


class OrgApiKeyItem(ApiKeyItem):
    """An organization's key: the account's shape, and the project it is limited to."""
    project_id: str | None = None


class OrgApiKeyCreated(ApiKeyCreated):
    project_id: str | None = None


class OrgApiKeyRevoked(ApiKeyRevoked):
    project_id: str | None = None


# ---- who may do what ---------------------------------------------------------------------------


def organization_of(key: ApiKey, org_id: str) -> str:
    """The organization `org_id`, if the key belongs to it (else 404, as an unknown one);
    a project-scoped key reaches one project, not its organization (403)."""
    if key.kind is KeyKind.PROJECT:
        raise forbidden("a project-scoped API key reaches its project, not its organization")
    mine = key.org_id if key.kind is KeyKind.ORGANIZATION else ORG_ID
    if org_id != mine:
        raise not_found("organization", org_id, "org_id")
    return org_id


def organization(server: Any) -> dict[str, Any]:
    with server.world() as cp:
        start = cp.clock.iso(0.0)
        plan = cp.plan.value
    return {"id": ORG_ID, "name": ORG_NAME, "handle": f"{ORG_NAME}-{ORG_ID}", "plan": plan,
            "created_at": start, "updated_at": start, "managed_by": "console",
            "allow_hipaa_projects": False, "require_mfa": False}


def _member(server: Any) -> dict[str, Any]:
    with server.world() as cp:
        joined = cp.clock.iso(0.0)
    return {"id": MEMBER_ID, "user_id": USER_ID, "org_id": ORG_ID, "role": "admin",
            "joined_at": joined}


def _is_org_key(record: KeyRecord, org_id: str) -> bool:
    return record.org_id == org_id and record.kind in (KeyKind.ORGANIZATION, KeyKind.PROJECT)


def _created_at(record: KeyRecord, server: Any) -> str:
    return record.created_at or server.cp.clock.iso(0.0)


def _scope(record: KeyRecord) -> dict[str, str]:
    return {"project_id": record.project_id} if record.project_id else {}


# ---- routes -----------------------------------------------------------------------------------


@router.get("/users/me/organizations", tags=["users"], response_model=OrganizationsResponse,
            **OUT)
def list_my_organizations(server: Server, key: Key):
    """The organizations of the key's user: the one organization of the simulated account."""
    return {"organizations": [organization(server)]}


@router.get("/organizations/{org_id}", response_model=Organization, **OUT)
def get_organization(org_id: OrgId, server: Server, key: Key):
    organization_of(key, org_id)
    return organization(server)


@router.get("/organizations/{org_id}/members", response_model=MembersResponse, **OUT)
def list_members(
    org_id: OrgId, server: Server, key: Key,
    sort_by: Annotated[Literal["email", "role", "joined_at"], Query()] = "joined_at",
    sort_order: Annotated[Literal["asc", "desc"], Query()] = "asc",
    limit: Annotated[int | None, Query(ge=1, le=MAX_MEMBERS_PAGE)] = None,
    cursor: Annotated[str | None, Query(description="pagination.next of the last page")] = None,
):
    """The members: the user alone, as admin. The cursor is opaque: any cursor sent back
    is past the last member (an empty page), as there is never a next page."""
    organization_of(key, org_id)
    members = [] if cursor else [{"member": _member(server),
                                  "user": {"email": EMAIL, "has_mfa": False}}]
    return {"members": members, "pagination": {"sort_by": sort_by, "sort_order": sort_order}}


@router.get("/organizations/{org_id}/members/{member_id}", response_model=Member, **OUT)
def get_member(org_id: OrgId, member_id: uuid.UUID, server: Server, key: Key):
    organization_of(key, org_id)
    if str(member_id) != MEMBER_ID:
        raise not_found("member", str(member_id), "member_id")
    return _member(server)


@router.get("/auth", tags=["users"], response_model=AuthDetails, **OUT)
def auth_details(key: Key):
    """What the key is: the user's own (`api_key_user`) or the organization's (`api_key_org`,
    project-scoped ones included)."""
    if key.kind is KeyKind.PERSONAL:
        return {"account_id": key.user_id, "auth_method": "api_key_user"}
    return {"account_id": key.org_id or ORG_ID, "auth_method": "api_key_org"}


@router.get("/organizations/{org_id}/api_keys", tags=["api keys"],
            response_model=list[OrgApiKeyItem], responses=error_docs(403), **OUT)
def list_org_api_keys(org_id: OrgId, server: Server, key: Key):
    """The organization's keys accepted now, with the project each is limited to."""
    organization_of(key, org_id)
    return [{"id": r.id, "name": r.name, "created_at": _created_at(r, server),
             "created_by": {"id": USER_ID, "name": USER_ID, "image": ""},
             "last_used_at": server.keys.last_used(r), **_scope(r)}
            for r in server.api_key_records() if _is_org_key(r, org_id)]


@router.post("/organizations/{org_id}/api_keys", tags=["api keys"],
             response_model=OrgApiKeyCreated, responses=error_docs(403, 404), **OUT)
def create_org_api_key(org_id: OrgId, body: OrgApiKeyCreateRequest, server: Server, key: Key):
    """A new organization key; with `project_id`, one that reaches that project only.
    `key` is its secret, returned this once."""
    organization_of(key, org_id)
    record, secret = server.create_org_api_key(body.key_name, org_id, body.project_id)
    return {"id": record.id, "key": secret, "name": record.name,
            "created_at": _created_at(record, server), "created_by": USER_ID, **_scope(record)}


@router.delete("/organizations/{org_id}/api_keys/{key_id}", tags=["api keys"],
               response_model=OrgApiKeyRevoked, responses=error_docs(403, 404), **OUT)
def revoke_org_api_key(org_id: OrgId, key_id: Annotated[int, Path(ge=1, le=2**63 - 1)],
                       server: Server, key: Key):
    """Revoke one of the organization's keys, at once and for good."""
    organization_of(key, org_id)
    found = next((r for r in server.api_key_records() if r.id == key_id and
                  _is_org_key(r, org_id)), None)
    record = None if found is None else server.revoke_api_key(key_id)
    if record is None:
        raise not_found("API key", str(key_id), "key_id")
    return {"id": record.id, "name": record.name, "created_at": _created_at(record, server),
            "created_by": USER_ID, "last_used_at": server.keys.last_used(record),
            "revoked": True, **_scope(record)}

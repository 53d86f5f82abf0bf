"""Routes that administer the organization: invitations, the spending limit, moving the
user's projects into it, and its VPC endpoints.

    GET/POST        /api/v2/organizations/{org_id}/invitations
    GET/PUT/DELETE  /api/v2/organizations/{org_id}/billing/spending_limit
    POST            /api/v2/users/me/projects/transfer
    GET             /api/v2/organizations/{org_id}/vpc/vpc_endpoints
    GET             /api/v2/organizations/{org_id}/vpc/region/{region_id}/vpc_endpoints

What is kept is plain data on the control plane (`cp.organization`): the invitations
(nobody else exists to accept one, so they stay pending) and the spending limit (the
simulator bills nothing, so it alerts no one). The simulator has no private networking:
the organization has no VPC endpoints.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import Path
from pydantic import BaseModel, Field, StrictInt, StrictStr

from sim.api.computes import OUT
from sim.api.deps import Key, Server
from sim.api.errors import ERRORS
from sim.api.keys import ORG_ID, KeyKind
from sim.api.orgs import ORG_ID_PATTERN, MemberRole, OrgId, organization_of
from sim.api.permissions import GrantRequest
from sim.api.routing import sim_router
from sim.api.schemas import Body
from sim.api.users import known_regions
from sim.engine.model import USER_ID
from sim.rules.errors import forbidden, not_found

router = sim_router(prefix="/api/v2", tags=["organizations"], responses=ERRORS)
MAX_TRANSFER = 400  # project ids in one transfer, as the document


class InvitationRequest(GrantRequest):  # an email address, checked as a grant's
    role: MemberRole


class InvitationsRequest(Body):
    invitations: list[InvitationRequest]


class Invitation(BaseModel):
    id: str
    email: str
    org_id: str
    invited_by: str
    invited_at: str
    role: MemberRole


class InvitationsResponse(BaseModel):
    invitations: list[Invitation]


class SpendingLimit(BaseModel):
    spending_limit_cents: int | None


class SpendingLimitRequest(Body):
    spending_limit_cents: Annotated[StrictInt, Field(ge=1, le=2**63 - 1)]


class TransferRequest(Body):
    destination_org_id: Annotated[StrictStr, Field(pattern=ORG_ID_PATTERN)]
    project_ids: Annotated[list[Annotated[StrictStr, Field(pattern=ORG_ID_PATTERN)]],
                           Field(min_length=1, max_length=MAX_TRANSFER)]


class VPCEndpointsResponse(BaseModel):
    endpoints: list[dict[str, Any]]


class Empty(BaseModel):
    pass


@router.get("/organizations/{org_id}/invitations", response_model=InvitationsResponse, **OUT)
def list_invitations(org_id: OrgId, server: Server, key: Key):
    """The invitations sent: pending for good (no one else exists to accept them)."""
    organization_of(key, org_id)
    with server.world() as cp:
        return {"invitations": [dict(i) for i in cp.organization.get("invitations", [])]}


@router.post("/organizations/{org_id}/invitations", response_model=InvitationsResponse, **OUT)
def invite(org_id: OrgId, body: InvitationsRequest, server: Server, key: Key):
    organization_of(key, org_id)
    with server.world() as cp:
        sent = cp.organization.setdefault("invitations", [])
        made = []
        for asked in body.invitations:
            number = len(sent) + 1
            made.append({"id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"sim:{org_id}:invite:{number}")),
                         "email": asked.email, "org_id": org_id, "invited_by": USER_ID,
                         "invited_at": cp.clock.iso(cp.now), "role": asked.role})
            sent.append(made[-1])
        return {"invitations": [dict(i) for i in made]}


@router.get("/organizations/{org_id}/billing/spending_limit", response_model=SpendingLimit)
def get_spending_limit(org_id: OrgId, server: Server, key: Key):
    """The monthly cap in cents, `null` when none is set (the simulator bills nothing)."""
    organization_of(key, org_id)
    with server.world() as cp:
        return {"spending_limit_cents": cp.organization.get("spending_limit_cents")}


@router.put("/organizations/{org_id}/billing/spending_limit", response_model=SpendingLimit)
def set_spending_limit(org_id: OrgId, body: SpendingLimitRequest, server: Server, key: Key):
    organization_of(key, org_id)
    with server.world() as cp:
        cp.organization["spending_limit_cents"] = body.spending_limit_cents
        return {"spending_limit_cents": body.spending_limit_cents}


@router.delete("/organizations/{org_id}/billing/spending_limit", response_model=Empty)
def delete_spending_limit(org_id: OrgId, server: Server, key: Key):
    organization_of(key, org_id)
    with server.world() as cp:
        cp.organization.pop("spending_limit_cents", None)
        return {}


@router.post("/users/me/projects/transfer", tags=["users"], response_model=Empty)
def transfer_projects(body: TransferRequest, server: Server, key: Key):
    """Move projects of the user into the organization (every project already is: a
    transfer changes nothing but is checked as the real one)."""
    if key.kind is not KeyKind.PERSONAL:
        raise forbidden("projects are moved from an account with a personal API key")
    if body.destination_org_id != ORG_ID:
        raise not_found("organization", body.destination_org_id, "destination_org_id")
    with server.world() as cp:
        projects = [key.project(cp, project_id) for project_id in body.project_ids]
        for project in projects:
            project.org_id = body.destination_org_id
        return {}


@router.get("/organizations/{org_id}/vpc/vpc_endpoints", response_model=VPCEndpointsResponse,
            **OUT)
def list_vpc_endpoints(org_id: OrgId, key: Key):
    """None: the simulator has no private networking."""
    organization_of(key, org_id)
    return {"endpoints": []}


@router.get("/organizations/{org_id}/vpc/region/{region_id}/vpc_endpoints",
            response_model=VPCEndpointsResponse, **OUT)
def list_region_vpc_endpoints(org_id: OrgId, region_id: Annotated[str, Path()], server: Server,
                              key: Key):
    organization_of(key, org_id)
    if region_id not in known_regions(server):
        raise not_found("region", region_id, "region_id")
    return {"endpoints": []}

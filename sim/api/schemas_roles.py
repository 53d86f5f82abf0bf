"""Bodies of the routes of roles, databases, branch edits, the user and regions.

Shapes follow the real API v2 (its OpenAPI document and official clients);
see `schemas` for the conventions (strict JSON types, unknown fields refused).
"""

from __future__ import annotations

from typing import Any

from pydantic import StrictBool, StrictStr

from sim.api.schemas import AnnotationOut, Body, BranchOut, DatabaseOut, OperationOut, Out, RoleOut

# ---- requests --------------------------------------------------------------------------------


class RoleCreate(Body):
    name: StrictStr


class RoleCreateRequest(Body):
    role: RoleCreate


class DatabaseCreate(Body):
    name: StrictStr
    owner_name: StrictStr


class DatabaseCreateRequest(Body):
    database: DatabaseCreate


class DatabaseUpdate(Body):
    name: StrictStr | None = None
    owner_name: StrictStr | None = None


class DatabaseUpdateRequest(Body):
    database: DatabaseUpdate


class BranchUpdate(Body):
    name: StrictStr | None = None
    protected: StrictBool | None = None


class BranchUpdateRequest(Body):
    branch: BranchUpdate


# ---- responses -------------------------------------------------------------------------------


class RoleResponse(Out):
    role: RoleOut


class RoleOperations(Out):
    role: RoleOut
    operations: list[OperationOut]


class RolesResponse(Out):
    roles: list[RoleOut]


class RolePasswordResponse(Out):
    password: str


class DatabaseResponse(Out):
    database: DatabaseOut


class DatabaseOperations(Out):
    database: DatabaseOut
    operations: list[OperationOut]


class DatabasesResponse(Out):
    databases: list[DatabaseOut]


class ConnectionUriResponse(Out):
    uri: str


class BranchPagination(Out):
    next: str | None = None
    sort_by: str
    sort_order: str


class BranchesCount(Out):
    count: int


class BranchesPage(Out):
    branches: list[BranchOut]
    annotations: dict[str, AnnotationOut]
    pagination: BranchPagination


class RegionOut(Out):
    region_id: str
    name: str
    default: bool
    geo_lat: str
    geo_long: str


class RegionsResponse(Out):
    regions: list[RegionOut]


class AuthAccountOut(Out):
    email: str
    image: str
    login: str
    name: str
    provider: str


class BillingAccountOut(Out):
    state: str
    payment_source: dict[str, Any]
    subscription_type: str
    payment_method: str
    quota_reset_at_last: str
    name: str
    email: str
    address_city: str
    address_country: str
    address_line1: str
    address_line2: str
    address_postal_code: str
    address_state: str


class CurrentUserOut(Out):
    active_seconds_limit: int
    billing_account: BillingAccountOut
    auth_accounts: list[AuthAccountOut]
    email: str
    id: str
    image: str
    login: str
    name: str
    last_name: str
    projects_limit: int
    branches_limit: int
    max_autoscaling_limit: float
    compute_seconds_limit: int | None = None
    plan: str

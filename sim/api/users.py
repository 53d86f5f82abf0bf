"""Routes about the caller rather than a project: the current user, the regions.

The simulator has one account per user id and no billing: `/users/me` answers
with the user of the request's key, the world's plan and placeholders for the
personal details the real service would show.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Query

from sim.api.computes import OUT
from sim.api.deps import Key, Server
from sim.api.errors import ERRORS
from sim.api.routing import sim_router
from sim.api.schemas_roles import CurrentUserOut, RegionsResponse
from sim.rules.sizes import PLAN_MAX_CU, Plan

router = sim_router(prefix="/api/v2", responses=ERRORS)

#: (region id, name) of the regions the real service offers
REGIONS = (
    ("aws-us-east-1", "AWS US East 1 (N. Virginia)"),
    ("aws-us-east-2", "AWS US East 2 (Ohio)"),
    ("aws-us-west-2", "AWS US West 2 (Oregon)"),
    ("aws-eu-central-1", "AWS Europe Central 1 (Frankfurt)"),
    ("aws-eu-west-2", "AWS Europe West 2 (London)"),
    ("aws-ap-southeast-1", "AWS Asia Pacific 1 (Singapore)"),
    ("aws-ap-southeast-2", "AWS Asia Pacific 2 (Sydney)"),
    ("aws-sa-east-1", "AWS South America East 1 (São Paulo)"),
    ("azure-eastus2", "Azure East US 2 (Virginia)"),
    ("azure-westus3", "Azure West US 3 (Arizona)"),
    ("azure-gwc", "Azure Germany West Central (Frankfurt)"),
)
NO_LIMIT = 10_000  # projects and branches: the simulator counts none against a quota
SUBSCRIPTION = {Plan.FREE: "free_v2", Plan.LAUNCH: "launch", Plan.SCALE: "scale",
                Plan.BUSINESS: "business"}


@router.get("/users/me", tags=["users"], response_model=CurrentUserOut, **OUT)
def current_user(server: Server, key: Key):
    """The user the key belongs to (an organization key: the organization's admin)."""
    with server.world() as cp:
        start = cp.clock.iso(0.0)
        plan = cp.plan
    user = key.user_id
    email = "user@example.com"
    return {
        "active_seconds_limit": 0,
        "billing_account": {
            "state": "active", "payment_source": {"type": "none"},
            "subscription_type": SUBSCRIPTION[plan], "payment_method": "none",
            "quota_reset_at_last": start, "name": user, "email": email,
            "address_city": "", "address_country": "", "address_line1": "",
            "address_line2": "", "address_postal_code": "", "address_state": "",
        },
        "auth_accounts": [{"email": email, "image": "", "login": user, "name": user,
                           "provider": "keycloak"}],
        "email": email, "id": user, "image": "", "login": user, "name": user, "last_name": "",
        "projects_limit": NO_LIMIT, "branches_limit": NO_LIMIT,
        "max_autoscaling_limit": PLAN_MAX_CU[plan], "plan": plan.value,
    }


def known_regions(server: Any) -> dict[str, str]:
    """Region id -> name: the real service's, and the world's own if it is not one of them."""
    known = dict(REGIONS)
    known.setdefault(server.cp.region_id, server.cp.region_id)
    return known


@router.get("/regions", tags=["users"], response_model=RegionsResponse, **OUT)
def list_regions(server: Server, key: Key,
                 org_id: Annotated[str | None, Query(pattern=r"^[a-z0-9-]{1,60}$")] = None):
    """The regions, the world's own region marked default."""
    with server.world() as cp:
        default = cp.region_id
    known = known_regions(server)
    return {"regions": [{"region_id": rid, "name": name, "default": rid == default,
                         "geo_lat": "", "geo_long": ""} for rid, name in known.items()]}

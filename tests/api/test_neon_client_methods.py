"""The official Python client (neon-api): every method it has whose route is served works.

Its methods are listed from the installed client; each is either called by the
session below or named in NOT_SERVED with the reason, so a new method of a
newer client shows up here.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

neon_api = pytest.importorskip("neon_api")
from neon_api import NeonAPI, NeonAPIError, schema  # noqa: E402

from sim.engine.model import USER_ID  # noqa: E402
from tests.api.conftest import Live  # noqa: E402

NOT_SERVED = {
    "project_permissions_revoke": "it sends DELETE .../permissions with a body, a route the "
                                  "official document does not have (it revokes with "
                                  "DELETE .../permissions/{permission_id}, which is served)",
}


def public_methods() -> set[str]:
    return {name for name, _ in inspect.getmembers(NeonAPI, inspect.isfunction)
            if not name.startswith("_")}


class Recorded:
    """A NeonAPI whose public methods note that they were called and answered."""

    def __init__(self, neon: NeonAPI):
        self._neon = neon
        self.answered: set[str] = set()

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._neon, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            result = method(*args, **kwargs)
            self.answered.add(name)
            return result

        return call


def test_every_served_method_of_neon_api(live: Live) -> None:
    advance = live.server.advance
    neon = Recorded(NeonAPI(live.key, base_url=f"{live.base}/api/v2/"))

    me = neon.me()
    assert isinstance(me, schema.CurrentUserInfoResponse) and me.id == USER_ID
    made = neon.project_create(project={"name": "py-shop"})
    p = made.project.id
    assert p in {x.id for x in neon.projects().projects}
    assert neon.projects(shared=True).projects == []
    assert neon.project(p).project.name == "py-shop"
    assert neon.project_update(p, project={"name": "py-store"}).project.name == "py-store"
    advance(60)

    main = neon.branches(p).branches[0]
    assert neon.branch(p, main.id).branch.default is True
    dev = neon.branch_create(p, branch={"name": "dev"}, endpoints=[{"type": "read_write"}]).branch
    assert neon.branch_update(p, dev.id, branch={"name": "feature"}).branch.name == "feature"
    advance(60)

    roles = neon.roles(p, main.id).roles
    assert [r.name for r in roles] == ["neondb_owner"]
    password = neon.role_password_reveal(p, main.id, "neondb_owner").password
    uri = neon.connection_uri(p, database_name="neondb", role_name="neondb_owner").uri
    assert f":{password}@" in uri
    assert "-pooler." in neon.connection_uri(p, "neondb", "neondb_owner", pooled=True).uri
    alice = neon.role_create(p, main.id, "alice")
    assert alice.role.password and alice.operations[0].action == schema.OperationAction.apply_config
    advance(60)
    assert neon.role(p, main.id, "alice").role.name == "alice"
    reset = neon.role_password_reset(p, main.id, "alice")
    assert reset.role.password != alice.role.password
    advance(60)

    assert [d.name for d in neon.databases(p, main.id).databases] == ["neondb"]
    created = neon.database_create(p, main.id, database={"name": "shop", "owner_name": "alice"})
    assert created.database.owner_name == "alice"
    advance(60)
    assert neon.database(p, main.id, "shop").database.id == created.database.id
    renamed = neon.database_update(p, main.id, "shop", database={"name": "store"})
    assert renamed.database.name == "store"
    advance(60)
    assert neon.database_delete(p, main.id, "store").database.name == "store"
    advance(60)
    assert neon.role_delete(p, main.id, "alice").role.name == "alice"
    advance(60)

    replica = neon.endpoint_create(p, endpoint={"branch_id": main.id, "type": "read_only"})
    ep = replica.endpoint.id
    assert ep in {e.id for e in neon.endpoints(p).endpoints}
    advance(60)
    assert neon.endpoint(p, ep).endpoint.current_state == schema.EndpointState.active
    neon.endpoint_update(p, ep, endpoint={"suspend_timeout_seconds": 600})
    advance(60)
    neon.endpoint_suspend(p, ep)
    advance(60)
    neon.endpoint_start(p, ep)
    advance(60)
    assert neon.endpoint_delete(p, ep).endpoint.id == ep
    advance(60)

    assert neon.branch_set_as_primary(p, dev.id).branch.default is True
    ops = neon.operations(p, limit=1000).operations
    assert neon.operation(p, ops[0].id).operation.id == ops[0].id
    scratch = neon.branch_create(p, branch={"name": "scratch"}).branch
    advance(60)
    assert neon.branch_delete(p, scratch.id).branch.id == scratch.id

    made_key = neon.api_key_create(key_name="py-key")
    assert made_key.id in [k.id for k in neon.api_keys()]
    assert neon.api_key_revoke(made_key.id).revoked is True
    grant = neon.project_permissions_grant(p, email="ann@example.com")
    assert grant.granted_to_email == "ann@example.com"
    assert [g.id for g in neon.project_permissions(p).project_permissions] == [grant.id]
    assert neon.project_delete(p).project.id == p
    with pytest.raises(NeonAPIError):
        neon.project(p)

    served = public_methods() - set(NOT_SERVED)
    assert set(NOT_SERVED) <= public_methods()
    assert neon.answered == served, sorted(served - neon.answered)
    print(f"neon-api: {len(neon.answered)} of {len(served)} served methods pass "
          f"({len(public_methods())} methods; not served: {sorted(NOT_SERVED)})")

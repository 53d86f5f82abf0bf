"""Operations of the real API that read what the simulator does not hold: refused with
the reason (501 NOT_MODELLED), after the project and branch are found (404 otherwise).

They are left out of the server's own OpenAPI document: a client learns from the
answer, not from a schema promising what never comes. docs/api.md lists them with the
other operations not served.
"""

from __future__ import annotations

from sim.api.deps import Key, Server
from sim.api.errors import ERRORS
from sim.api.routing import sim_router
from sim.rules.errors import not_modelled

router = sim_router(prefix="/api/v2", tags=["branches"], responses=ERRORS)

BRANCH = "/projects/{project_id}/branches/{branch_id}"
#: a branch's SQL schema (`neonctl branches schema-diff` reads it): no tables are simulated
NO_SCHEMA = ("the simulator holds no SQL schema: a branch's tables, and differences between "
             "them, are not modelled (its roles and databases are: .../roles, .../databases)")


def _refuse_schema(project_id: str, branch_id: str, server: Server, key: Key) -> None:
    with server.world() as cp:
        key.project(cp, project_id)
        cp.get_branch(project_id, branch_id)
    raise not_modelled(NO_SCHEMA)


router.get(BRANCH + "/schema", include_in_schema=False)(_refuse_schema)
router.get(BRANCH + "/compare_schema", include_in_schema=False)(_refuse_schema)

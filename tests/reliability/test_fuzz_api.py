"""Fuzzing every route from the server's own OpenAPI document (schemathesis).

Before each case the world is rebuilt (`build_world`: same seed, same ids),
and the case's path parameters and id-like body fields are swapped for real
ids three times in four, so generated requests reach real projects, branches,
computes (active, idle, still starting), operations and auth objects as well
as unknown ones. Cases come in both of schemathesis' modes: positive (bodies
the schema allows) and negative (bodies it does not). Every case carries a
valid personal key. Checks on every answer:

- no 5xx;
- the body matches the schema documented for its status, and the status is documented;
- every refusal (4xx) is the one error body {code, message, request_id}.

Cases per route: HYPOTHESIS_PROFILE=thorough (CI) runs FUZZ_EXAMPLES (>= 50)
each; the quick default fewer. The tally is printed at the end of the run.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from sim.api import create_app
from sim.api.server import SimServer
from tests.reliability.conftest import SEED, THOROUGH, Figures, World, build_world

#: cases per route; SIM_FUZZ_EXAMPLES overrides (a long hunt on a developer's machine)
FUZZ_EXAMPLES = int(os.environ.get("SIM_FUZZ_EXAMPLES") or (60 if THOROUGH else 8))

SERVER = SimServer(seed=SEED)
KEY = SERVER.add_personal_key().secret
AUTH = {"authorization": f"Bearer {KEY}"}
APP = create_app(SERVER)
WORLD = build_world(SERVER)
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance]
#: body fields swapped for real (or realistic) values: ids, and values with a format
BODY_FIELDS = ("project_id", "branch_id", "endpoint_id", "parent_id", "auth_user_id",
               "auth_provider", "email", "domain", "sql", "id", "owner_name")
REALISTIC = {
    "email": ("new@example.com", "ada@example.com"),
    "domain": ("https://new.example.com", "https://app.example.com"),
    "sql": ("SELECT id, email FROM svc_auth.users_sync",),
}


def aim(case: Any, data: st.DataObject, world: World) -> None:
    """Swap generated values for real ones, each three times in four."""
    real = {**world.real_ids(), **REALISTIC}

    def swap(where: dict[str, Any], name: str, label: str) -> None:
        if data.draw(st.integers(0, 3), label=f"aim {label}") > 0:
            where[name] = data.draw(st.sampled_from(real[name]), label=label)

    for name in sorted(case.path_parameters or {}):
        if name in real:
            swap(case.path_parameters, name, name)
    for i, container in enumerate(_id_containers(case.body)):
        for name in BODY_FIELDS:
            if name in container:
                swap(container, name, f"body[{i}].{name}")


def _id_containers(body: Any) -> list[dict[str, Any]]:
    """The body and the objects one level down (`{"endpoint": {"branch_id": ...}}`)."""
    if not isinstance(body, dict):
        return []
    return [body, *(v for v in body.values() if isinstance(v, dict))]


def assert_error_body(response: Any) -> None:
    body = response.json()
    assert isinstance(body, dict), body
    assert set(body) == {"code", "message", "request_id"}, body
    assert isinstance(body["code"], str) and body["code"].isupper(), body
    assert isinstance(body["message"], str) and body["message"], body
    echoed = response.headers["x-request-id"]  # schemathesis keeps every value of a header
    assert [body["request_id"]] == (echoed if isinstance(echoed, list) else [echoed]), body


@pytest.mark.slow
@schema.given(data=st.data())
@schema.parametrize()
@settings(max_examples=FUZZ_EXAMPLES, deadline=None,
          suppress_health_check=list(HealthCheck))
def test_every_route_survives_fuzzing(case: Any, data: st.DataObject, figures: Figures) -> None:
    world = build_world(SERVER)
    assert world == WORLD  # deterministic: generated cases may name these ids
    aim(case, data, world)
    response = case.call_and_validate(headers=AUTH, checks=CHECKS)
    if 400 <= response.status_code < 500:
        assert_error_body(response)
    route = f"{case.method.upper()} {case.path}"
    figures.fuzzed[route] += 1
    if response.status_code < 300:
        figures.fuzzed_ok[route] += 1

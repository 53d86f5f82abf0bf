"""Fuzzing every served route from the real API's official OpenAPI document.

The document (`public-v2-for-users.gen.yaml` of the npm package
`@neondatabase/api-client`, pinned in tests/official/document.py) is cut to
the operations `sim serve` serves, and read as tests/official/conformance.py
says (request objects closed to fields the document lacks; the simulator's
rules win where they disagree with it, as docs/api.md lists). Cases are aimed
at a seeded world as in test_fuzz_api.py, in both modes. Checks on every
answer: no 5xx, a documented status, a documented content type, a body that
matches the document's schema; a request the document allows is refused (400)
only by a rule docs/api.md lists, one it forbids is refused
(negative_data_rejection, where the mutation reaches the server), and a body
the document allows is never refused for a field it documents.

Cases per operation: SIM_OFFICIAL_EXAMPLES, else 25 with
HYPOTHESIS_PROFILE=thorough (CI) and 8 in the quick default
(`SIM_OFFICIAL_EXAMPLES=120` for a longer hunt; not exactly 100, which
schemathesis takes for Hypothesis's default and replaces with the profile's). `python -m
tests.official.conformance N` runs the same cases and counts every failure
instead of stopping at the first.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis.generation.modes import GenerationMode

from sim.api import create_app
from sim.api.server import SimServer
from tests.official import document
from tests.official.conformance import aimed_at, input_checks, official_schema, refused_wrongly
from tests.reliability.conftest import SEED, THOROUGH, Figures, build_world
from tests.reliability.test_fuzz_api import assert_error_body

EXAMPLES = int(os.environ.get("SIM_OFFICIAL_EXAMPLES") or (25 if THOROUGH else 8))

SERVER = SimServer(seed=SEED)
AUTH = {"authorization": f"Bearer {SERVER.add_personal_key().secret}"}
APP = create_app(SERVER)
WORLD = build_world(SERVER)
try:
    schema = official_schema(APP)
except document.Unavailable as why:
    pytest.skip(f"the official OpenAPI document is unavailable: {why}", allow_module_level=True)
# the document's own request examples are sent by tests/official/test_document.py
schema.config.phases.examples.enabled = False


@pytest.mark.slow
@schema.given(data=st.data())
@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_served_routes_conform_to_the_official_document(case: Any, data: st.DataObject,
                                                        figures: Figures) -> None:
    world = build_world(SERVER)
    assert world == WORLD  # deterministic: generated cases may name these ids
    aimed = aimed_at(case, data, world)
    response = case.call_and_validate(headers=AUTH, checks=input_checks(case, aimed))
    # a request the document allows is refused only by a rule docs/api.md lists
    assert refused_wrongly(case, response) is None, response.json()
    if 400 <= response.status_code < 500:
        assert_error_body(response)
        if case.meta.generation.mode == GenerationMode.POSITIVE:
            assert "unknown field" not in response.json()["message"], response.json()
    route = f"official {case.method.upper()} {case.path}"
    figures.fuzzed[route] += 1
    if response.status_code < 300:
        figures.fuzzed_ok[route] += 1

"""Every served operation checked against the real API's official OpenAPI document.

The document (`public-v2-for-users.gen.yaml` of the npm package
`@neondatabase/api-client`, pinned in tests/official/document.py) is cut to the
operations `sim serve` serves and read as it is (objects open), with only the
departures docs/api.md justifies one by one (tests/official/conformance.py). Each
operation gets cases from schemathesis' coverage phase (boundary values, missing
and extra fields, unexpected methods; pinned to a seeded world) and from its
fuzzing phase (drawn cases, both modes, aimed at the world as in
test_fuzz_api.py), and every answer goes through every check schemathesis has:
no 5xx, a documented status, content type, headers and body; a request the
document allows is accepted (or refused by a rule docs/api.md lists), one it
forbids is refused; an unexpected method is 405 with `Allow`; a missing key is 401.

Bounded to fit CI: COVERAGE coverage cases an operation (spread over all of them) and
EXAMPLES drawn ones (SIM_OFFICIAL_COVERAGE, SIM_OFFICIAL_EXAMPLES; 12 and 12 with
HYPOTHESIS_PROFILE=thorough, 4 and 4 in the quick default). The whole run, with every
coverage case and 50 drawn cases an operation, is `python -m scripts.conformance`.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from schemathesis.generation.modes import GenerationMode

from sim.api import create_app
from sim.api.server import SimServer
from tests.official import document
from tests.official.conformance import (
    coverage_cases,
    failed_checks,
    fuzzed_cases,
    official_schema,
    pinned,
    survey_key,
)
from tests.reliability.conftest import SEED, THOROUGH, Figures, build_world
from tests.reliability.test_fuzz_api import assert_error_body

COVERAGE = int(os.environ.get("SIM_OFFICIAL_COVERAGE") or (12 if THOROUGH else 4))
EXAMPLES = int(os.environ.get("SIM_OFFICIAL_EXAMPLES") or (12 if THOROUGH else 4))

SERVER = SimServer(seed=SEED)
AUTH = survey_key(SERVER)
APP = create_app(SERVER)
WORLD = build_world(SERVER)
try:
    SCHEMA = official_schema(APP)
except document.Unavailable as why:
    pytest.skip(f"the official OpenAPI document is unavailable: {why}", allow_module_level=True)
OPERATIONS = [result.ok() for result in SCHEMA.get_all_operations()]


@pytest.mark.slow
@pytest.mark.parametrize("operation", OPERATIONS,
                         ids=[f"{o.method.upper()} {o.path}" for o in OPERATIONS])
def test_served_operations_conform_to_the_official_document(operation: Any,
                                                            figures: Figures) -> None:
    label = f"official {operation.method.upper()} {operation.path}"
    failures: list[str] = []

    def answer(case: Any, changed: bool) -> None:
        response = case.call(headers=AUTH)
        for check, why in failed_checks(case, response, changed, AUTH).items():
            failures.append(f"{check} ({case.meta.generation.mode.value}): {why}")
        if 400 <= response.status_code < 500 and response.status_code != 405:
            assert_error_body(response)
        assert response.status_code != 401, response.text  # the key holds throughout
        figures.fuzzed[label] += 1
        if response.status_code < 300:
            figures.fuzzed_ok[label] += 1

    for case in coverage_cases(operation, COVERAGE):
        answer(case, pinned(case, build_world(SERVER)))
    for case, changed in fuzzed_cases(operation, EXAMPLES, lambda: build_world(SERVER)):
        assert build_world(SERVER) == WORLD  # deterministic: the case names these ids
        answer(case, changed)
    assert not failures, "\n\n".join(failures[:5])
    assert figures.fuzzed[label] > 0


def test_the_cases_come_from_both_phases_and_both_modes() -> None:
    """The bounded run still has coverage and fuzzing cases, positive and negative."""
    create = next(o for o in OPERATIONS if (o.method, o.path) == ("post", "/projects"))
    covered = coverage_cases(create, COVERAGE)
    assert len(covered) == COVERAGE
    modes = {c.meta.generation.mode for c in covered} | {
        c.meta.generation.mode for c, _ in fuzzed_cases(create, EXAMPLES,
                                                         lambda: build_world(SERVER))}
    assert modes == {GenerationMode.POSITIVE, GenerationMode.NEGATIVE}

"""`sim serve` checked against the official document with schemathesis.

`official_schema(app)` is the official document cut to the operations the
simulator serves, aimed at an in-process app; `survey()` runs every
operation for a number of examples and counts failures by check instead of
stopping at the first (the figures of `python -m tests.official.conformance`;
the test in tests/reliability/test_fuzz_official.py stops at the first).
"""

from __future__ import annotations

import copy
import re
import sys
from collections import Counter
from typing import Any

import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.generation.modes import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.official import document

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance]
#: the document's input rules, both ways: what it allows is accepted, what it forbids refused
INPUT_CHECKS = [positive_data_acceptance, negative_data_rejection]
ALL_CHECKS = CHECKS + INPUT_CHECKS
#: answers to valid input that are not a refusal of the input: 423, a resource busy with an
#: operation (a state of the world, as the real service answers it)
ACCEPTED_STATUSES = ["2xx", "401", "403", "404", "409", "423", "429"]
#: refusals of values the document's shapes allow, by the simulator's rules (docs/api.md
#: lists each with its reason): a 400 whose message says one of these is not a failure
DEPARTURES = (
    re.compile(r"CU is not a valid size"),  # the sizes the real service offers
    re.compile(r"suspend_timeout_seconds: "),  # 0, -1 or 60..604800
    re.compile(r"region_id: .*project's region"),  # a compute lives in its project's region
    re.compile(r"auth_provider: must be one of \['stack'\]"),  # the one managed auth provider
    re.compile(r"client_id|client_secret"),  # OAuth credentials: both or neither, non-empty
    re.compile(r"^(host|port|sender_email|sender_name|username|password): "),  # SMTP settings
    # a cursor is a position: one the simulator did not hand out names none (branches, operations)
    re.compile(r"cursor: must be (a timestamp returned by|pagination.next of) a previous page"),
    # role and database names are Postgres identifiers: 1 to 63 bytes
    re.compile(r"(^|\.)(name|owner_name|database_name|role_name): .*non-empty"),
    re.compile(r"domains: "),  # DELETE .../auth/domains names at least one
)


def departure(message: str) -> bool:
    """Whether a refusal of a request the document allows is one of the simulator's rules."""
    return any(rule.search(message) for rule in DEPARTURES)


def input_checks(case: Any, aimed: bool) -> list[Any]:
    """The checks for a case. Its negative mutation is checked only where it reaches the
    server: not when aiming put real values in, nor when the mutated part may be the
    authorization header, which every request replaces with a valid key."""
    negative = case.meta.generation.mode == GenerationMode.NEGATIVE
    sends_auth = any(name.lower() == "authorization" for name in (case.headers or {}))
    return CHECKS + ([negative_data_rejection] if negative and not aimed and not sends_auth
                     else [])


def aimed_at(case: Any, data: Any, world: Any) -> bool:
    """Aim the case at the world (tests.reliability.test_fuzz_api.aim); True if that
    changed a value."""
    from tests.reliability.test_fuzz_api import aim

    before = copy.deepcopy((case.path_parameters, case.body))
    aim(case, data, world)
    return copy.deepcopy((case.path_parameters, case.body)) != before


def refused_wrongly(case: Any, response: Any) -> str | None:
    """The message of a 400 to a request the document allows, unless a listed rule says so."""
    if case.meta.generation.mode != GenerationMode.POSITIVE or response.status_code != 400:
        return None
    message = response.json()["message"]
    return None if departure(message) else message


def served(app: Any) -> set[tuple[str, str]]:
    """(METHOD, path template) of every API route the app serves."""
    paths = app.openapi()["paths"]
    return {(m.upper(), document.template(p.removeprefix(document.API_PREFIX)))
            for p, item in paths.items() if p.startswith(document.API_PREFIX) for m in item}


def served_document(app: Any) -> dict[str, Any]:
    """The official document with only the operations `app` serves, based at /api/v2."""
    doc = copy.deepcopy(document.load())
    mine = served(app)
    for path in list(doc["paths"]):
        item = doc["paths"][path]
        for method in [m for m in item if m in ("get", "post", "put", "patch", "delete")]:
            if (method.upper(), document.template(path)) not in mine:
                del item[method]
        if not any(m in item for m in ("get", "post", "put", "patch", "delete")):
            del doc["paths"][path]
    _name_discriminated_forms(doc)
    simulator_rules_win(doc)
    reader = document.Document(doc)
    for item in doc["paths"].values():
        for op in item.values():
            body = op.get("requestBody", {}).get("content", {}).get("application/json") \
                if isinstance(op, dict) else None
            if body and "schema" in body:
                body["schema"] = reader.closed(body["schema"])
    doc["servers"] = [{"url": document.API_PREFIX}]
    return doc


def simulator_rules_win(doc: dict[str, Any]) -> None:
    """Where the simulator's rules and the document disagree, read the document the
    simulator's way (docs/api.md lists each, with its reason)."""
    schemas = doc["components"]["schemas"]
    # deleting a project records a delete_tenant operation
    schemas["OperationAction"]["enum"].append("delete_tenant")


def _name_discriminated_forms(doc: dict[str, Any]) -> None:
    """A discriminated union's forms get their discriminator as a property of one value.

    The document maps `type: standard` and `type: shared` to the two forms of an
    email server, but neither form lists `type`; a client must send it to say
    which form it means, so each form gets it (required, with its one value)."""
    schemas = doc["components"]["schemas"]
    for schema in list(schemas.values()):
        found = schema.get("discriminator") if isinstance(schema, dict) else None
        if not found:
            continue
        name = found["propertyName"]
        for value, ref in found.get("mapping", {}).items():
            form = schemas[ref.rsplit("/", 1)[1]]
            form.setdefault("properties", {})[name] = {"type": "string", "enum": [value]}
            form["required"] = sorted({*form.get("required", []), name})


def official_schema(app: Any) -> Any:
    schema = schemathesis.openapi.from_dict(served_document(app))
    schema.app = app
    schema.config.checks.positive_data_acceptance.expected_statuses = ACCEPTED_STATUSES
    return schema


def _answers(operation: Any, examples: int, server: Any, auth: dict[str, str]
             ) -> list[tuple[Any, Any, bool]]:
    """`examples` cases of one operation, both modes, aimed at a fresh world, and answers."""
    from tests.reliability.conftest import build_world

    answered: list[tuple[Any, Any, bool]] = []

    @given(case=st.one_of(operation.as_strategy(GenerationMode.POSITIVE),
                          operation.as_strategy(GenerationMode.NEGATIVE)), data=st.data())
    @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    def run(case: Any, data: st.DataObject) -> None:
        aimed = aimed_at(case, data, build_world(server))
        answered.append((case, case.call(headers=auth), aimed))

    run()
    return answered


def survey(examples: int) -> dict[str, Any]:
    """Cases per operation, failures by check, and the first message of each failing pair."""
    from sim.api import create_app
    from sim.api.server import SimServer
    from tests.reliability.conftest import SEED

    server = SimServer(seed=SEED)
    auth = {"authorization": f"Bearer {server.add_personal_key().secret}"}
    app = create_app(server)
    schema = official_schema(app)
    cases: Counter[str] = Counter()
    failures: Counter[tuple[str, str]] = Counter()
    first: dict[tuple[str, str], str] = {}
    refused: Counter[str] = Counter()  # 400s to bodies and queries the document allows
    for result in schema.get_all_operations():
        operation = result.ok()
        label = f"{operation.method.upper()} {operation.path}"
        answered = _answers(operation, examples, server, auth)
        # checked outside Hypothesis, which would stop at the first failure
        for case, response, aimed in answered:
            cases[label] += 1
            wrong = refused_wrongly(case, response)
            if wrong is not None:
                refused[f"{label}: {wrong}"] += 1
                failures[(label, "positive_data_acceptance")] += 1
                first.setdefault((label, "positive_data_acceptance"), wrong)
            for check in input_checks(case, aimed):
                try:
                    case.validate_response(response, checks=[check])
                except FailureGroup as exc:  # every failure is counted, none stops
                    failures[(label, check.__name__)] += 1
                    first.setdefault((label, check.__name__), str(exc).strip()[:600])
    return {"cases": cases, "failures": failures, "first": first, "refused": refused}


def main(argv: list[str]) -> int:
    examples = int(argv[0]) if argv else 25
    found = survey(examples)
    cases, failures = found["cases"], found["failures"]
    by_check: Counter[str] = Counter()
    for (_, check), n in failures.items():
        by_check[check] += n
    print(f"{sum(cases.values())} cases over {len(cases)} operations ({examples} examples each)")
    for check in ALL_CHECKS:
        print(f"  {by_check[check.__name__]:>6} failing {check.__name__}")
    refused = found["refused"]
    unknown = sum(n for msg, n in refused.items() if "unknown field" in msg)
    print(f"  {sum(refused.values()):>6} documented requests refused (400), {unknown} as unknown field")
    for msg, n in sorted(refused.items()):
        print(f"     {n:>4}  {msg}")
    for (label, check), n in sorted(failures.items()):
        print(f"\n{n:>5}  {check}  {label}\n{found['first'][(label, check)]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

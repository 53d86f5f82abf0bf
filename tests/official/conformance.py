"""`sim serve` checked against the official document with schemathesis.

The document is read as it is: its objects are open (a body may carry fields it
does not list), and the only changes are the departures `docs/api.md` lists one
by one, each with the real service's documented behaviour that justifies it
(`simulator_rules_win`, `DEPARTURES`).

`official_schema(app)` is the official document cut to the operations the
simulator serves, aimed at an in-process app. `cases(operation, ...)` gives an
operation's cases from schemathesis' two generating phases: the coverage phase
(boundary values, missing and extra fields, unexpected methods: deterministic,
`coverage` of them at most when bounded) and the fuzzing phase (`examples`
drawn cases, both modes). `survey()` runs them all, validates every answer with
every check schemathesis has, and counts failures by check instead of stopping
at the first (`python -m tests.official.conformance N` and
`scripts/conformance.py`; tests/reliability/test_fuzz_official.py runs a bounded
share of the same cases in CI and stops at the first).
"""

from __future__ import annotations

import copy
import re
import sys
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterator

import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import CHECKS as REGISTERED
from schemathesis.checks import load_all_checks
from schemathesis.core.failures import FailureGroup
from schemathesis.generation.drivers import CoverageGenerator
from schemathesis.generation.feedback import FeedbackSources
from schemathesis.generation.meta import CoveragePhaseData
from schemathesis.generation.modes import GenerationMode
from schemathesis.generation.overrides import Override
from schemathesis.specs.openapi.checks import negative_data_rejection

from tests.official import document

load_all_checks()
#: every check schemathesis has (the stateful ones find nothing to say about a single call)
ALL_CHECKS = REGISTERED.get_all()
#: answers to valid input that are not a refusal of the input: 423, a resource busy with an
#: operation (a state of the world, as the real service answers it)
ACCEPTED_STATUSES = ["2xx", "401", "403", "404", "409", "423", "429"]


@dataclass(frozen=True)
class Departure:
    """A refusal of a request the document's shapes allow, by a rule of the real service
    that the document does not state (docs/api.md lists each with its source)."""

    status: int
    message: re.Pattern[str]


#: the one list: each matches the answer's status and its message; docs/api.md gives each
#: its source (the real service's documented behaviour, or the specification's)
DEPARTURES = (
    # compute sizes: the sizes the real service offers (its compute-size documentation)
    Departure(400, re.compile(r"CU is not a valid size|autoscaling_limit_")),
    # the scale-to-zero setting: 0 (default), -1 (never) or 60..604800 seconds
    Departure(400, re.compile(r"suspend_timeout_seconds: ")),
    # a compute lives in its project's region
    Departure(400, re.compile(r"region_id: .*project's region")),
    # a cursor is a position: one the simulator did not hand out names none
    Departure(400, re.compile(r"cursor: must be (a timestamp returned by|pagination.next of|"
                              r"the cursor of) a previous page")),
    # consumption history: the reach of each granularity, and a range that ends before it
    # starts (the document's 406); `metrics` among the names its descriptions support
    Departure(406, re.compile(r"^(from|to): ")),
    Departure(400, re.compile(r"^metrics: ")),
    # points in time within the restore window; an LSN in Postgres's form
    Departure(400, re.compile(r"(parent_timestamp|parent_lsn|source_timestamp|source_lsn|"
                              r"timestamp|lsn): (is in the future|lies outside the history|"
                              r"is beyond the branch's last LSN|must be an LSN)")),
    # a snapshot at a timestamp or at an LSN: the document says one "cannot be used with" the
    # other
    Departure(400, re.compile(r"lsn: give timestamp or lsn, not both")),
    # a branch's time to live, and a snapshot's: in the future, at most 30 days ahead
    Departure(400, re.compile(r"expires_at: must be (in the future|at most 30 days ahead)")),
    # a backup schedule's frequency: the five the document's description lists
    Departure(400, re.compile(r"frequency: ")),
    # managed auth, as the specification states it: the one provider `stack`; OAuth
    # credentials both or neither; a standard email server's SMTP settings
    Departure(400, re.compile(r"auth_provider: must be one of \['stack'\]")),
    Departure(400, re.compile(r"client_id|client_secret")),
    Departure(400, re.compile(r"^(host|port|sender_email|sender_name|username|password): ")),
    Departure(400, re.compile(r"^domains: ")),
    # role, database and branch names: Postgres identifiers of 1 to 63 bytes; branch names
    # of 1 to 256 characters (the document's bound on a new project's branch)
    Departure(400, re.compile(r"(^|\.)(name|owner_name|database_name|role_name): .*"
                              r"(non-empty|1 to)")),
)


def departure(status: int, message: str) -> bool:
    """Whether a refusal of a request the document allows is one docs/api.md justifies."""
    return any(d.status == status and d.message.search(message) for d in DEPARTURES)


def aimed_at(case: Any, data: Any, world: Any) -> bool:
    """Aim a drawn case at the world (tests.reliability.test_fuzz_api.aim); True if that
    changed a value."""
    from tests.reliability.test_fuzz_api import aim

    before = copy.deepcopy((case.path_parameters, case.body))
    aim(case, data, world)
    return copy.deepcopy((case.path_parameters, case.body)) != before


def pinned(case: Any, world: Any) -> bool:
    """Pin a coverage case to the world: its path parameters, and the ids in a valid body,
    become the world's first real ones, except the one value the case is about (a
    negative case's mutation, which must reach the server). True if that changed a value."""
    from tests.reliability.test_fuzz_api import BODY_FIELDS, REALISTIC, _id_containers

    real = {**world.real_ids(), **REALISTIC}
    data = case.meta.phase.data
    about = (data.parameter_location, data.parameter) if isinstance(data, CoveragePhaseData) \
        else (None, None)
    before = copy.deepcopy((case.path_parameters, case.body))
    for name in sorted(case.path_parameters or {}):
        if name in real and about != (document_location("path"), name):
            case.path_parameters[name] = real[name][0]
    if case.meta.generation.mode == GenerationMode.POSITIVE:
        for container in _id_containers(case.body):
            for name in BODY_FIELDS:
                if name in container and isinstance(container[name], str):
                    container[name] = real[name][0]
    return copy.deepcopy((case.path_parameters, case.body)) != before


def document_location(name: str) -> Any:
    from schemathesis.core.parameters import ParameterLocation

    return ParameterLocation(name)


def checks_for(case: Any, changed: bool) -> list[Any]:
    """Every check, but a negative case's rejection is checked only where its mutation
    reaches the server: not when aiming put real values in, nor when the mutated part may
    be the authorization header, which every request replaces with a valid key."""
    negative = case.meta.generation.mode == GenerationMode.NEGATIVE
    sends_auth = any(name.lower() == "authorization" for name in (case.headers or {}))
    if negative and (changed or sends_auth):
        return [c for c in ALL_CHECKS if c is not negative_data_rejection]
    return list(ALL_CHECKS)


def failed_checks(case: Any, response: Any, changed: bool, headers: dict[str, str]
                  ) -> dict[str, str]:
    """check name -> first line of its failure, for every check the answer fails, but a
    refusal docs/api.md justifies. `headers` are the ones sent (the key: checks that probe
    without it need to know it was sent)."""
    failed: dict[str, str] = {}
    for check in checks_for(case, changed):
        try:
            case.validate_response(response, checks=[check], headers=headers)
        except FailureGroup as exc:
            failed[check.__name__] = str(exc).strip()[:600]
        except AssertionError as exc:  # a check that asserts rather than raising a group
            failed[check.__name__] = str(exc).strip()[:600]
    if "positive_data_acceptance" in failed and justified(response):
        del failed["positive_data_acceptance"]
    return failed


def justified(response: Any) -> bool:
    try:
        message = response.json().get("message", "")
    except ValueError:
        return False
    return departure(response.status_code, message)


def served(app: Any) -> set[tuple[str, str]]:
    """(METHOD, path template) of every API route the app serves."""
    paths = app.openapi()["paths"]
    return {(m.upper(), document.template(p.removeprefix(document.API_PREFIX)))
            for p, item in paths.items() if p.startswith(document.API_PREFIX) for m in item}


def served_document(app: Any) -> dict[str, Any]:
    """The official document with only the operations `app` serves, based at /api/v2,
    read as it is: objects open."""
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
    doc["servers"] = [{"url": document.API_PREFIX}]
    return doc


def simulator_rules_win(doc: dict[str, Any]) -> None:
    """Where the simulator's rules and the document disagree, read the document the
    simulator's way (docs/api.md lists each, with its reason)."""
    schemas = doc["components"]["schemas"]
    # deleting a project records a delete_tenant operation
    schemas["OperationAction"]["enum"].append("delete_tenant")
    # an integration the service manages is owned by `svc`, as the specification's seed
    # names the service (beside `svc_auth` and `svcdb`); the document's enum says `neon`
    schemas["NeonAuthProviderProjectOwnedBy"]["enum"].append("svc")


def _name_discriminated_forms(doc: dict[str, Any]) -> None:
    """A discriminated union's forms get their discriminator as a property of one value.

    The document maps `type: standard` and `type: shared` to the two forms of an
    email server, but neither form lists `type`; OpenAPI's discriminator says the
    property must be there, so each form gets it (required, with its one value)."""
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
    # the document's own request examples are sent by tests/official/test_document.py
    schema.config.phases.examples.enabled = False
    schema.config.phases.coverage.enabled = True
    return schema


def coverage_cases(operation: Any, bound: int | None = None) -> list[Any]:
    """The coverage phase's cases of one operation, both modes: all of them, or `bound`
    spread evenly over them (deterministic: the same cases every run)."""
    schema = operation.schema
    found = list(CoverageGenerator(
        operation=operation, generation_modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE],
        generation_config=schema.config.generation_for(operation=operation, phase="coverage"),
        auth_storage=None, override=Override(), feedback=FeedbackSources()))
    if bound is None or len(found) <= bound:
        return found
    step = len(found) / bound
    return [found[int(i * step)] for i in range(bound)]


def fuzzed_cases(operation: Any, examples: int, world_of: Any) -> Iterator[tuple[Any, bool]]:
    """`examples` drawn cases of one operation, both modes, each aimed at a fresh world."""
    drawn: list[tuple[Any, bool]] = []

    @given(case=st.one_of(operation.as_strategy(GenerationMode.POSITIVE),
                          operation.as_strategy(GenerationMode.NEGATIVE)), data=st.data())
    @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    def run(case: Any, data: st.DataObject) -> None:
        drawn.append((case, aimed_at(case, data, world_of())))

    run()
    yield from drawn


def survey_key(server: Any) -> dict[str, str]:
    """The authorization header of the survey: a personal key that is not the world's key
    `1`, which the cases may revoke (`DELETE /api_keys/1`) without silencing the rest."""
    server.add_personal_key()  # key 1: the one the cases name
    return {"authorization": f"Bearer {server.add_personal_key().secret}"}


def survey(examples: int, coverage: int | None = None) -> dict[str, Any]:
    """Cases per operation, failures by check, and the first message of each failing pair."""
    from sim.api import create_app
    from sim.api.server import SimServer
    from tests.reliability.conftest import SEED, build_world

    server = SimServer(seed=SEED)
    auth = survey_key(server)
    app = create_app(server)
    schema = official_schema(app)
    cases: Counter[str] = Counter()
    failures: Counter[tuple[str, str]] = Counter()
    first: dict[tuple[str, str], str] = {}
    refused: Counter[str] = Counter()  # refusals of requests the document allows, by message
    departed: Counter[str] = Counter()  # of which docs/api.md justifies
    for result in schema.get_all_operations():
        operation = result.ok()
        label = f"{operation.method.upper()} {operation.path}"
        for case in coverage_cases(operation, coverage):
            changed = pinned(case, build_world(server))
            _tally(label, case, case.call(headers=auth), changed, auth, cases, failures, first,
                   refused, departed)
        for case, changed in fuzzed_cases(operation, examples, lambda: build_world(server)):
            # the world the case was aimed at is the one it meets: rebuilt the same
            build_world(server)
            _tally(label, case, case.call(headers=auth), changed, auth, cases, failures, first,
                   refused, departed)
    return {"cases": cases, "failures": failures, "first": first, "refused": refused,
            "departed": departed}


def _tally(label: str, case: Any, response: Any, changed: bool, auth: dict[str, str],
           cases: Counter[str],
           failures: Counter[tuple[str, str]], first: dict[tuple[str, str], str],
           refused: Counter[str], departed: Counter[str]) -> None:
    cases[label] += 1
    if response.status_code == 401 and case.meta.generation.mode == GenerationMode.POSITIVE:
        failures[(label, "authenticated")] += 1  # the survey's key must hold throughout
        first.setdefault((label, "authenticated"), response.text[:300])
    if case.meta.generation.mode == GenerationMode.POSITIVE and 400 <= response.status_code < 500 \
            and response.status_code not in (401, 403, 404, 409, 423, 429):
        try:
            message = f"{response.status_code} {response.json().get('message', '')}"
        except ValueError:
            message = f"{response.status_code} (no JSON body)"
        (departed if justified(response) else refused)[f"{label}: {message}"] += 1
    for check, why in failed_checks(case, response, changed, auth).items():
        failures[(label, check)] += 1
        first.setdefault((label, check), why)


def main(argv: list[str]) -> int:
    examples = int(argv[0]) if argv else 25
    coverage = int(argv[1]) if len(argv) > 1 else None
    found = survey(examples, coverage)
    print(report(found, examples, coverage))
    return 0


def report(found: dict[str, Any], examples: int, coverage: int | None) -> str:
    cases, failures = found["cases"], found["failures"]
    by_check: Counter[str] = Counter()
    for (_, check), n in failures.items():
        by_check[check] += n
    lines = [f"{sum(cases.values())} cases over {len(cases)} operations (coverage phase: "
             f"{'all' if coverage is None else f'at most {coverage}'} cases, fuzzing: "
             f"{examples} examples each)"]
    for name in [c.__name__ for c in ALL_CHECKS] + ["authenticated"]:
        lines.append(f"  {by_check[name]:>6} failing {name}")
    refused, departed = found["refused"], found["departed"]
    lines.append(f"  {sum(refused.values()):>6} documented requests refused, "
                 f"{sum(departed.values())} more by a rule docs/api.md justifies")
    for msg, n in sorted(refused.items()):
        lines.append(f"     {n:>4}  {msg[:300]}")
    for (label, check), n in sorted(failures.items()):
        lines.append(f"\n{n:>5}  {check}  {label}\n{found['first'][(label, check)]}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

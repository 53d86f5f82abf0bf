"""`sim serve` against the official OpenAPI document of the real API (npm artefact).

- the committed list of documented request fields is what the document says;
- every served route is an operation of the document;
- the document's own request examples, sent to a seeded world, are accepted.

Skipped, with the reason, where the document cannot be fetched (no npm).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from sim.api import create_app
from sim.api.client import in_process_client
from sim.api.documented import DATA_FILE
from sim.api.schemas import ProjectBranch
from sim.api.server import SimServer
from tests.official import document
from tests.official.conformance import served
from tests.reliability.conftest import SEED, build_world

try:
    DOC = document.load()
except document.Unavailable as why:
    pytest.skip(f"the official OpenAPI document is unavailable: {why}", allow_module_level=True)


def test_the_list_of_documented_fields_is_regenerated_from_the_document():
    from tests.official.fields import generate, render

    assert DATA_FILE.read_text() == render(generate()), (
        "sim/api/documented_fields.json is stale: python -m tests.official.fields --write")
    data = json.loads(DATA_FILE.read_text())
    assert data["source"] == document.SOURCE
    # the fields the real clients send that once got "unknown field"
    # (role_name and database_name are modelled now: declared by ProjectBranch itself)
    assert {"role_name", "database_name"} <= set(ProjectBranch.model_fields)
    assert {"settings", "store_passwords"} <= set(data["documented"]["ProjectCreate"])
    assert "preload_libraries" in data["documented"]["EndpointSettings"]


def test_every_served_route_is_an_operation_of_the_document():
    mine = served(create_app(SimServer(seed=1)))
    official = document.operations(DOC)
    assert len(mine) >= 36
    assert mine <= set(official), sorted(mine - set(official))


def _examples() -> list[tuple[str, str, str, Any]]:
    found = []
    for key in sorted(served(create_app(SimServer(seed=1)))):
        path, op = document.operations(DOC)[key]
        body = op.get("requestBody", {}).get("content", {}).get("application/json", {})
        for name, example in sorted(body.get("examples", {}).items()):
            found.append((key[0], path, name, example["value"]))
    return found


EXAMPLES = _examples()


@pytest.mark.parametrize("method, path, name, body", EXAMPLES,
                         ids=[f"{m} {p} {n}" for m, p, n, _ in EXAMPLES])
def test_the_documents_own_request_examples_are_accepted(method, path, name, body):
    server = SimServer(seed=SEED)
    world = build_world(server)
    with server.lock:  # a branch without a compute, for a new primary
        empty = server.cp.create_branch(world.project_id, "empty", None, []).branch.id
    body = copy.deepcopy(body)
    for part in (body, body.get("endpoint"), body.get("branch")):
        if isinstance(part, dict):
            for field in ("branch_id", "parent_id"):
                if field in part:
                    part[field] = empty if field == "branch_id" else world.main_branch_id
    url = (path.removeprefix("/").replace("{project_id}", world.project_id)
           .replace("{endpoint_id}", world.primary_id))
    with in_process_client(server) as api:
        r = api.request(method, url, json=body)
    assert r.status_code in (200, 201), (name, r.status_code, r.text)
    if name == "with_branch_attributes":  # the names the document's example asks for
        made = r.json()
        assert made["branch"]["name"] == "mybranch"
        assert [(x["name"], x["owner_name"]) for x in made["databases"]] == [("mydb", "sally")]
        assert [x["name"] for x in made["roles"]] == ["sally"]
        params = made["connection_uris"][0]["connection_parameters"]
        assert (params["role"], params["database"]) == ("sally", "mydb")
        assert made["connection_uris"][0]["connection_uri"].startswith("postgresql://sally:")


def test_docs_count_the_served_operations_by_tag():
    """docs/api.md's count of served operations, and its table by tag, are the app's."""
    import re
    from collections import Counter
    from pathlib import Path

    text = (Path(__file__).parents[2] / "docs" / "api.md").read_text()
    mine = served(create_app(SimServer(seed=1)))
    official = document.operations(DOC)
    by_tag: Counter[str] = Counter()
    of_tag: Counter[str] = Counter()
    for key, (_, op) in official.items():
        tag = op.get("tags", ["?"])[0]
        of_tag[tag] += 1
        by_tag[tag] += key in mine
    stated = re.search(r"document: (\d+) of its (\d+) operations", text)
    assert stated is not None
    assert (int(stated[1]), int(stated[2])) == (len(mine), len(official))
    for tag, count in by_tag.items():
        if count:  # its row: "| Tag (a note): more | served | operations |"
            row = re.search(rf"^\| {re.escape(tag)}[ :(|][^\n]*?\| (\d+) \| (\d+) \|$", text,
                            re.MULTILINE)
            assert row is not None, tag
            assert (int(row[1]), int(row[2])) == (count, of_tag[tag]), tag

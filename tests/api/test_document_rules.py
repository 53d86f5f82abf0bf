"""The official document's input rules, both ways: what it forbids is refused with a 400
naming the field (and changes nothing), what it allows is accepted, and what the answers
promise is kept."""

from __future__ import annotations

from typing import Any

import pytest

from sim.api import SimClient
from sim.testing.state_digest import digest
from tests.api.conftest import make_project


@pytest.fixture
def world(api: SimClient) -> dict[str, str]:
    made = make_project(api, "rules")
    api.advance(60)
    return {"p": made["project"]["id"], "b": made["branch"]["id"]}


def refused(api: SimClient, method: str, path: str, field: str, **kwargs: Any) -> str:
    before = digest(api.server.cp)
    r = api.request(method, path, **kwargs)
    assert r.status_code == 400, (path, kwargs, r.text)
    message = r.json()["message"]
    assert message.startswith(f"{field}: ") and "\n" not in message, message
    assert digest(api.server.cp) == before
    return message


@pytest.mark.parametrize("body, field", [
    ({"project": {"pg_version": None}}, "project.pg_version"),
    ({"project": {"org_id": None}}, "project.org_id"),
    ({"project": {"history_retention_seconds": None}}, "project.history_retention_seconds"),
    ({"project": {"name": None}}, "project.name"),
    ({"project": {"settings": None}}, "project.settings"),
])
def test_null_is_refused_where_the_document_has_no_null(api: SimClient, body: dict[str, Any],
                                                        field: str) -> None:
    assert refused(api, "POST", "projects", field, json=body).endswith("must not be null")


def test_null_on_branches_and_computes(api: SimClient, world: dict[str, str]) -> None:
    p, b = world["p"], world["b"]
    refused(api, "POST", f"projects/{p}/branches", "branch", json={"branch": None})
    refused(api, "POST", f"projects/{p}/branches", "branch.protected",
            json={"branch": {"protected": None}})
    refused(api, "PATCH", f"projects/{p}/branches/{b}", "branch.name",
            json={"branch": {"name": None}})
    # the one request field the document makes nullable: a branch's expiry, removed by null
    r = api.patch(f"projects/{p}/branches/{b}", json={"branch": {"expires_at": None}})
    assert r.status_code == 200, r.text


def test_query_parameters_in_the_documents_bounds(api: SimClient, world: dict[str, str]) -> None:
    for timeout in (99, 30001):
        refused(api, "GET", "projects", "timeout", params={"timeout": timeout})
    for timeout in (100, 30000):
        assert api.get("projects", params={"timeout": timeout}).status_code == 200
    refused(api, "GET", "projects", "org_id", params={"org_id": ""})
    refused(api, "GET", "projects", "recoverable", params={"recoverable": "-828027320"})
    refused(api, "GET", "regions", "org_id", params={"org_id": "Not An Id"})
    refused(api, "GET", f"projects/{world['p']}/branches", "include_deleted",
            params={"include_deleted": "AAA"})
    listed = api.get(f"projects/{world['p']}/branches", params={"include_deleted": "true"})
    assert [x["id"] for x in listed.json()["branches"]] == [world["b"]]


def test_compute_names_of_1_to_64_characters(api: SimClient, world: dict[str, str]) -> None:
    made = api.post(f"projects/{world['p']}/branches", json={"branch": {"name": "dev"}}).json()
    dev = made["branch"]["id"]
    api.advance(60)
    body = {"branch_id": dev, "type": "read_only"}
    for name in ("", "x" * 65):
        refused(api, "POST", f"projects/{world['p']}/endpoints", "endpoint.name",
                json={"endpoint": {**body, "name": name}})
    r = api.post(f"projects/{world['p']}/endpoints", json={"endpoint": {**body, "name": "x" * 64}})
    assert r.status_code == 201 and r.json()["endpoint"]["name"] == "x" * 64


def test_a_maintenance_window_is_whole_or_refused(api: SimClient, world: dict[str, str]) -> None:
    p = world["p"]
    refused(api, "PATCH", f"projects/{p}", "project.settings.maintenance_window.start_time",
            json={"project": {"settings": {"maintenance_window": {"weekdays": [1]}}}})
    window = {"weekdays": [1, 7], "start_time": "01:00", "end_time": "02:00"}
    r = api.patch(f"projects/{p}", json={"project": {"settings": {"maintenance_window": window}}})
    assert r.status_code == 200
    assert api.get(f"projects/{p}").json()["project"]["settings"]["maintenance_window"] == window


def test_a_role_that_cannot_log_in_gets_no_password(api: SimClient,
                                                    world: dict[str, str]) -> None:
    roles = f"projects/{world['p']}/branches/{world['b']}/roles"
    made = api.post(roles, json={"role": {"name": "reader", "no_login": True}})
    assert made.status_code == 201 and "password" not in made.json()["role"]
    api.advance(60)
    again = api.post(f"{roles}/reader/reset_password").json()["role"]
    assert "password" not in again
    api.advance(60)
    normal = api.post(roles, json={"role": {"name": "writer"}}).json()["role"]
    assert normal["password"].startswith("npg_")


def test_integrations_are_owned_by_neon_until_transferred(api: SimClient,
                                                          world: dict[str, str]) -> None:
    r = api.post("projects/auth/create", json={"project_id": world["p"], "branch_id": world["b"],
                                                "auth_provider": "stack"})
    assert r.status_code == 201, r.text
    listed = api.get(f"projects/{world['p']}/auth/integrations").json()["data"]
    assert [i["owned_by"] for i in listed] == ["neon"]


def test_api_keys_show_when_they_were_last_used(api: SimClient) -> None:
    api.advance(90)
    api.get("projects")
    keys = api.get("api_keys").json()
    assert [k["last_used_at"] for k in keys] == [api.server.cp.clock.iso(api.server.cp.now)]

"""Refusals: the right status, one body shape {code, message, request_id}, and no change."""

from __future__ import annotations

from typing import Any

import pytest

from sim.api import SimClient
from tests.api.conftest import make_project


def snapshot(api: SimClient) -> dict[str, Any]:
    """Every listing the API offers, in full."""
    shot: dict[str, Any] = {"clock": api.clock()}
    for p in api.get("projects", params={"limit": 400}).json()["projects"]:
        base = f"projects/{p['id']}"
        shot[p["id"]] = {
            "project": api.get(base).json(),
            "branches": api.get(f"{base}/branches").json(),
            "endpoints": api.get(f"{base}/endpoints").json(),
            "operations": api.get(f"{base}/operations", params={"limit": 1000}).json(),
        }
    return shot


@pytest.fixture
def ids(api: SimClient) -> dict[str, str]:
    made = make_project(api, "errors")
    api.advance(30)
    replica = api.post(f"projects/{made['project']['id']}/endpoints", json={
        "endpoint": {"branch_id": made["branch"]["id"], "type": "read_only"}}).json()
    # the replica's start has not ended: calls on it are locked (423)
    return {"p": made["project"]["id"], "b": made["branch"]["id"],
            "e": made["endpoints"][0]["id"], "r": replica["endpoint"]["id"]}


JSON = {"content-type": "application/json"}
#: (method, path, how the body is sent, status, code, words in the message)
REFUSED: list[tuple[str, str, dict[str, Any], int, str, str]] = [
    ("POST", "projects/{p}/endpoints", {"content": b'{"endpoint": ', "headers": JSON}, 400,
     "INVALID_JSON", "not valid JSON"),
    ("POST", "projects/{p}/endpoints", {"content": b'{"endpoint": {}}'}, 400,
     "INVALID_REQUEST", "content-type: application/json"),
    ("POST", "projects/{p}/endpoints", {}, 400, "INVALID_REQUEST", "body is required"),
    ("POST", "projects/{p}/endpoints", {"json": {"endpoint": {"branch_id": "{b}",
                                                              "type": "primary"}}},
     400, "INVALID_REQUEST", "endpoint.type:"),
    ("POST", "projects/{p}/endpoints", {"json": {"endpoint": {"branch_id": "{b}",
                                                              "type": "read_only",
                                                              "autoscaling_limit_max_cu": "2"}}},
     400, "INVALID_REQUEST", "endpoint.autoscaling_limit_max_cu:"),
    ("POST", "projects/{p}/endpoints", {"json": {"endpoint": {"branch_id": "{b}",
                                                              "type": "read_only",
                                                              "cpu": 2}}},
     400, "INVALID_REQUEST", "endpoint.cpu: unknown field"),
    ("POST", "projects/{p}/endpoints", {"json": {"endpoint": {"branch_id": "{b}",
                                                              "type": "read_only",
                                                              "autoscaling_limit_max_cu": 3.5}}},
     400, "INVALID_REQUEST", "endpoint.autoscaling_limit_max_cu:"),
    ("POST", "projects/{p}/endpoints", {"json": {"endpoint": {"branch_id": "{b}",
                                                              "type": "read_write"}}},
     409, "CONFLICT", "at most one"),
    ("POST", "projects/{p}/endpoints", {"json": {"endpoint": {"branch_id": "br-nope",
                                                              "type": "read_only"}}},
     404, "NOT_FOUND", "br-nope"),
    ("POST", "projects/{p}/branches", {"json": {"endpoints": [{"type": "read_write"},
                                                              {"type": 7}]}},
     400, "INVALID_REQUEST", "endpoints[1].type:"),
    ("PATCH", "projects/{p}/endpoints/{e}", {"json": {"endpoint": {
        "suspend_timeout_seconds": 5}}}, 400, "INVALID_REQUEST", "suspend_timeout_seconds"),
    ("PATCH", "projects/{p}/endpoints/{e}", {"json": {"endpoint": {"pooler_enabled": "yes"}}},
     400, "INVALID_REQUEST", "endpoint.pooler_enabled:"),
    ("PATCH", "projects/{p}", {"json": {"project": {"history_retention_seconds": -1}}},
     400, "INVALID_REQUEST", "history_retention_seconds"),
    ("POST", "projects/{p}/endpoints/{r}/suspend", {}, 423, "LOCKED", "retry later"),
    ("DELETE", "projects/{p}/endpoints/{r}", {}, 423, "LOCKED", "has not ended"),
    ("GET", "projects/{p}/endpoints/ep-unknown", {}, 404, "NOT_FOUND", "ep-unknown"),
    ("GET", "projects/nope-123/endpoints", {}, 404, "NOT_FOUND", "nope-123"),
    ("GET", "projects/{p}/operations/0000", {}, 404, "NOT_FOUND", "0000"),
    ("GET", "projects/{p}/operations?limit=0", {}, 400, "INVALID_REQUEST", "limit:"),
    ("GET", "projects/{p}/operations?limit=1001", {}, 400, "INVALID_REQUEST", "limit:"),
    ("GET", "projects/{p}/operations?limit=x", {}, 400, "INVALID_REQUEST", "limit:"),
    ("GET", "projects/{p}/operations?cursor=yesterday", {}, 400, "INVALID_REQUEST", "cursor"),
    ("DELETE", "projects/{p}/branches/{b}", {}, 409, "CONFLICT", "default branch"),
    ("PUT", "projects/{p}", {"json": {}}, 405, "METHOD_NOT_ALLOWED", "PUT"),
    ("GET", "no/such/route", {}, 404, "NOT_FOUND", "no route"),
    ("POST", "projects", {"json": {"project": {"pg_version": 9}}}, 400, "INVALID_REQUEST",
     "project.pg_version"),
    ("POST", "projects", {"json": {"project": {"default_endpoint_settings": {
        "autoscaling_limit_min_cu": 4, "autoscaling_limit_max_cu": 1}}}}, 400,
     "INVALID_REQUEST", "project.default_endpoint_settings."),
]


def test_refused_calls_answer_precisely_and_change_nothing(api: SimClient,
                                                           ids: dict[str, str]) -> None:
    before = snapshot(api)
    seen_ids = set()
    for method, path, how, status, code, words in REFUSED:
        how = dict(how)
        if "json" in how:
            how["json"] = _fill(how["json"], ids)
        r = api.request(method, path.format(**ids), **how)
        body = r.json()
        assert (r.status_code, body["code"]) == (status, code), (method, path, body)
        assert words in body["message"], (method, path, body)
        assert set(body) == {"code", "message", "request_id"}
        assert r.headers["x-request-id"] == body["request_id"]
        seen_ids.add(body["request_id"])
    assert len(seen_ids) == len(REFUSED)
    assert snapshot(api) == before


def _fill(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str):
        return value.format(**ids)
    if isinstance(value, dict):
        return {k: _fill(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, ids) for v in value]
    return value


def test_project_scoped_key_may_not_create_projects(api: SimClient, ids: dict[str, str]) -> None:
    from sim.api import in_process_client

    scoped = in_process_client(api.server, api.server.keys.for_project(ids["p"]).secret)
    r = scoped.post("projects", json={"project": {"name": "no"}})
    assert (r.status_code, r.json()["code"]) == (403, "FORBIDDEN")


def test_an_unexpected_failure_is_a_500_without_traceback(
        api: SimClient, ids: dict[str, str], monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    def broken(*_a: Any, **_k: Any) -> None:
        raise RuntimeError("secret internals")

    monkeypatch.setattr(api.server.cp, "list_computes", broken)
    r = api.get(f"projects/{ids['p']}/endpoints")
    assert r.status_code == 500
    body = r.json()
    assert body["code"] == "INTERNAL_ERROR" and body["request_id"]
    assert "secret internals" not in r.text and "Traceback" not in r.text
    assert "secret internals" in caplog.text  # the server's log has it

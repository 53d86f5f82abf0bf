"""Hand-written hostile requests, over every route of the OpenAPI document.

Malformed JSON, JSON that is not an object, the wrong content type, bodies over
the 1 MiB cap (413, declared or chunked), Unicode in names, and path ids that
no real id looks like (`^[a-z0-9-]{1,60}$`). Each answer is a 4xx with the one
error body {code, message, request_id}, never a 5xx, and changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from sim.api import SimClient, SimServer, create_app, in_process_client
from sim.api.limits import DEFAULT_MAX_BODY_BYTES
from sim.testing.state_digest import digest
from tests.reliability.conftest import SEED, World, build_world

JSON = {"content-type": "application/json"}


def _operations() -> list[tuple[str, str, dict[str, Any]]]:
    doc = create_app(SimServer(seed=SEED)).openapi()
    return sorted((method.upper(), path, op) for path, ops in doc["paths"].items()
                  for method, op in ops.items())


OPERATIONS = _operations()
WITH_BODY = [(m, p) for m, p, op in OPERATIONS if "requestBody" in op]
#: an optional body may be sent as JSON null: the same as no body
OPTIONAL_BODY = {(m, p) for m, p, op in OPERATIONS
                 if "requestBody" in op and not op["requestBody"].get("required")}
WITH_PATH_IDS = [(m, p) for m, p, op in OPERATIONS if "{" in p]
ALL = [(m, p) for m, p, _ in OPERATIONS]


@pytest.fixture
def world_api() -> Iterator[tuple[SimClient, World]]:
    server = SimServer(seed=SEED)
    world = build_world(server)
    with in_process_client(server) as api:
        yield api, world


def real_path(path: str, world: World, **override: str) -> str:
    """The route's path with real ids (or the overrides) in its parameters."""
    real = {name: values[0] for name, values in world.real_ids().items()}
    return path.format(**{**real, **override})


def refused(r: Any, *statuses: int) -> dict[str, Any]:
    """The answer is one of `statuses` with exactly the error body; returns the body."""
    assert r.status_code in statuses, (r.status_code, r.text[:300])
    body = r.json()
    assert set(body) == {"code", "message", "request_id"}, body
    assert body["code"] and body["message"] and body["request_id"] == r.headers["x-request-id"]
    return body


def send(api: SimClient, method: str, path: str, **kwargs: Any) -> Any:
    return api.request(method, api.base_url.join(path), **kwargs)


# ---- bodies ------------------------------------------------------------------------------------

MALFORMED = [b'{"endpoint": ', b"{'single': 'quotes'}", b'{"a": 1,}', b"\x00\x01\x02",
             b'{"a": NaN', b"\xff\xfe{}", b'{"a": "unterminated}']
NOT_OBJECTS = [b"[]", b'"text"', b"null", b"42", b"true", b"[{}]"]


@pytest.mark.parametrize(("method", "path"), WITH_BODY)
def test_malformed_json_is_400_everywhere(world_api, method: str, path: str) -> None:
    api, world = world_api
    before = digest(api.server.cp)
    for raw in MALFORMED:
        r = send(api, method, real_path(path, world), content=raw, headers=JSON)
        body = refused(r, 400)
        assert body["code"] in ("INVALID_JSON", "INVALID_REQUEST"), (raw, body)
    for raw in NOT_OBJECTS:
        if raw == b"null" and (method, path) in OPTIONAL_BODY:
            continue
        refused(send(api, method, real_path(path, world), content=raw, headers=JSON), 400)
    assert digest(api.server.cp) == before


WRONG_TYPES = ["text/plain", "application/x-www-form-urlencoded", "application/xml",
               "multipart/form-data; boundary=x", "application/json-patch+jsonx"]


@pytest.mark.parametrize(("method", "path"), WITH_BODY)
def test_wrong_content_type_is_refused(world_api, method: str, path: str) -> None:
    api, world = world_api
    before = digest(api.server.cp)
    for content_type in WRONG_TYPES:
        r = send(api, method, real_path(path, world), content=b'{"a": 1}',
                 headers={"content-type": content_type})
        refused(r, 400, 415)
    r = send(api, method, real_path(path, world), content=b'{"a": 1}', headers={})
    refused(r, 400, 415)
    assert digest(api.server.cp) == before


@pytest.mark.parametrize(("method", "path"), ALL)
def test_a_body_over_the_cap_is_413(world_api, method: str, path: str) -> None:
    api, world = world_api
    before = digest(api.server.cp)
    huge = b'{"name": "' + b"x" * (DEFAULT_MAX_BODY_BYTES + 1) + b'"}'
    body = refused(send(api, method, real_path(path, world), content=huge, headers=JSON), 413)
    assert body["code"] == "PAYLOAD_TOO_LARGE"

    def chunked() -> Iterator[bytes]:  # no content-length: the cap counts what arrives
        yield b'{"name": "'
        for _ in range(DEFAULT_MAX_BODY_BYTES // 65_536 + 2):
            yield b"y" * 65_536
        yield b'"}'

    r = send(api, method, real_path(path, world), content=chunked(), headers=JSON)
    assert refused(r, 413)["code"] == "PAYLOAD_TOO_LARGE"
    assert digest(api.server.cp) == before


def test_a_body_just_under_the_cap_is_read(world_api) -> None:
    api, _ = world_api
    name = "n" * (DEFAULT_MAX_BODY_BYTES - 64)
    r = api.post("projects", json={"project": {"name": name}})
    body = refused(r, 400)  # read and judged: the name is too long, not the body too big
    assert body["message"].startswith("project.name:")


# ---- Unicode in names ----------------------------------------------------------------------------

NAMES = ["日本語のプロジェクト", "🐘 elephant 🐘", "Ωmega-ß", "\u202eevil\u202c", "e\u0301\u0301",
         "a b\tc", "'; DROP TABLE projects; --", "<script>alert(1)</script>", "\U0001f600" * 256]


@pytest.mark.parametrize("name", NAMES)
def test_unicode_names_round_trip(world_api, name: str) -> None:
    api, world = world_api
    r = api.post("projects", json={"project": {"name": name}})
    assert r.status_code == 201, r.text
    project_id = r.json()["project"]["id"]
    assert api.get(f"projects/{project_id}").json()["project"]["name"] == name
    r = api.post(f"projects/{world.project_id}/branches", json={"branch": {"name": name}})
    assert r.status_code == 201, r.text
    assert r.json()["branch"]["name"] == name
    r = api.patch(f"projects/{world.project_id}/endpoints/{world.primary_id}",
                  json={"endpoint": {"name": name}})
    if len(name) > 64:  # a compute's name: 1 to 64 characters, as the document says
        assert refused(r, 400)["message"].startswith("endpoint.name: "), r.text
        return
    assert r.status_code == 200 and r.json()["endpoint"]["name"] == name, r.text


@pytest.mark.parametrize(("field", "body"), [
    ("project.name", b'{"project": {"name": "\\ud800"}}'),
    ("project.name", b'{"project": {"name": "ok \\udfff"}}'),
    ("project.default_endpoint_settings.pg_settings",
     b'{"project": {"default_endpoint_settings": {"pg_settings": {"\\udc00": "x"}}}}'),
    ("project", b'{"project": {"\\ud800": 1}}'),
])
def test_a_lone_surrogate_is_refused_before_anything_changes(world_api, field: str,
                                                             body: bytes) -> None:
    """JSON may escape half a UTF-16 pair; no UTF-8 answer can carry it back (was a 500)."""
    api, _ = world_api
    before = digest(api.server.cp)
    answer = refused(api.post("projects", content=body, headers=JSON), 400)
    assert answer["message"].startswith(f"{field}:"), answer
    assert digest(api.server.cp) == before


def test_names_past_the_limit_count_characters_not_bytes(world_api) -> None:
    api, _ = world_api
    assert api.post("projects", json={"project": {"name": "é" * 256}}).status_code == 201
    refused(api.post("projects", json={"project": {"name": "é" * 257}}), 400)
    refused(api.post("projects", json={"project": {"name": ""}}), 400)


# ---- ids no real id looks like -------------------------------------------------------------------

BAD_IDS = ["UPPER-Case", "with%20space", "%C3%A9t%C3%A9", "%F0%9F%90%98", "%2E%2E", "%2e",
           "a%00b", "%ED%A0%80", "%ff%fe", "%E2%80%AE", "a;b", "-", "0" * 61, "x" * 5000,
           "ep-%27%20OR%201%3D1", "%25", "%5C", "null", "{project_id}", "%7B%7D"]


def _params(path: str) -> list[str]:
    return [part[1:-1] for part in path.split("/") if part.startswith("{")]


@pytest.mark.parametrize(("method", "path"), WITH_PATH_IDS)
def test_ids_that_look_like_no_id_are_404_or_400(world_api, method: str, path: str) -> None:
    api, world = world_api
    before = digest(api.server.cp)
    for name in _params(path):
        for bad in BAD_IDS:
            r = send(api, method, real_path(path, world, **{name: bad}), json={})
            refused(r, 400, 404)
    assert digest(api.server.cp) == before


@pytest.mark.parametrize(("method", "path"), [("GET", "/api/v2/projects/{project_id}/endpoints/"
                                               "{endpoint_id}")])
def test_an_id_ending_in_an_encoded_slash_is_404(world_api, method: str, path: str) -> None:
    api, world = world_api
    r = send(api, method, real_path(path, world, endpoint_id="%2F"))
    refused(r, 400, 404)

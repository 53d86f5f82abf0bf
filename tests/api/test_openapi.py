"""The OpenAPI document describes what the server does (it is fuzzed against the server)."""

from __future__ import annotations

from sim.api import SimClient


def test_openapi_document(api: SimClient) -> None:
    r = api.get(api.base_url.join("/openapi.json"))
    assert r.status_code == 200
    doc = r.json()
    assert doc["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    assert "HTTPValidationError" not in doc["components"]["schemas"]  # errors are ErrorBody
    for path, operations in doc["paths"].items():
        for method, op in operations.items():
            where = f"{method.upper()} {path}"
            assert op["security"] == [{"HTTPBearer": []}], where
            errors = ("400", "401", "404") if path.startswith("/api/v2/") else ("400", "401")
            for status in errors:
                ref = op["responses"][status]["content"]["application/json"]["schema"]["$ref"]
                assert ref.endswith("/ErrorBody"), where
            assert any(s.startswith("2") for s in op["responses"]), where
    create = doc["paths"]["/api/v2/projects/{project_id}/endpoints"]["post"]
    assert "201" in create["responses"] and {"409", "422", "423"} <= set(create["responses"])
    body = doc["components"]["schemas"]["EndpointCreate"]
    assert body["additionalProperties"] is False
    assert set(body["required"]) == {"branch_id", "type"}


def test_docs_and_console_page_need_no_key(api: SimClient) -> None:
    api.headers.pop("authorization")
    assert api.get(api.base_url.join("/docs")).status_code == 200
    page = api.get(api.base_url.join("/"))
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "<script>" in page.text and "http" not in page.text.split("<script>")[0].split(
        "<style>")[1]  # no external stylesheet or font
    assert api.get(api.base_url.join("/_sim/console")).status_code == 401

"""Route literals before parameters: /branches/count and /projects/shared are their own."""

from __future__ import annotations

from tests.api.conftest import make_project


def test_branch_count_is_not_a_branch_id(api) -> None:
    pid = make_project(api)["project"]["id"]
    made = api.post(f"projects/{pid}/branches", json={"branch": {"name": "feature"}})
    assert made.status_code == 201, made.text
    assert api.get(f"projects/{pid}/branches/count").json() == {"count": 2}
    assert api.get(f"projects/{pid}/branches/count", params={"search": "feat"}).json() == {
        "count": 1}
    refused = api.request("DELETE", f"projects/{pid}/branches/count")
    assert refused.status_code == 405 and refused.headers["allow"] == "GET"
    assert api.get(f"projects/{pid}/branches").status_code == 200  # unchanged: 2 branches
    assert len(api.get(f"projects/{pid}/branches").json()["branches"]) == 2


def test_shared_projects_allow_get_only(api) -> None:
    make_project(api)
    for method in ("PATCH", "DELETE"):
        r = api.request(method, "projects/shared", json={"project": {}})
        assert r.status_code == 405, r.text
        assert r.headers["allow"] == "GET"
    assert api.get("projects/shared").json()["projects"] == []

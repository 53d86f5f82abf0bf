"""Operations pages: newest first, every operation exactly once, even at one instant."""

from __future__ import annotations

from sim.api import SimClient
from tests.api.conftest import make_project


def test_300_operations_at_one_instant_page_by_7(api: SimClient) -> None:
    project_id = make_project(api, "busy")["project"]["id"]
    cp = api.server.cp
    while len(cp.projects[project_id].operations) < 300:
        cp.create_branch(project_id)  # one create_branch operation each, all at t = 0
    assert cp.now == 0.0
    expected = [op.id for op in reversed(cp.projects[project_id].operations)]

    seen: list[dict] = []
    cursor = None
    pages = 0
    while True:
        params = {"limit": 7} | ({"cursor": cursor} if cursor else {})
        page = api.get(f"projects/{project_id}/operations", params=params).json()
        if not page["operations"]:
            break
        assert len(page["operations"]) <= 7
        seen += page["operations"]
        cursor = page["pagination"]["cursor"]
        assert cursor == page["operations"][-1]["created_at"]
        pages += 1
    assert pages == -(-len(expected) // 7)
    assert [o["id"] for o in seen] == expected  # each once, newest first
    stamps = [o["created_at"] for o in seen]
    assert stamps == sorted(stamps, reverse=True) and len(set(stamps)) == len(stamps)


def test_default_page_and_bounds(api: SimClient) -> None:
    project_id = make_project(api, "small")["project"]["id"]
    for _ in range(12):
        api.post(f"projects/{project_id}/branches")
    assert len(api.get(f"projects/{project_id}/operations").json()["operations"]) == 10
    everything = api.get(f"projects/{project_id}/operations", params={"limit": 1000}).json()
    assert len(everything["operations"]) == 14

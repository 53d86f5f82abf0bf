"""A restart from a snapshot builds no fleet, and answers as the server before it did.

- a scenario's served world (kernel on, scenario `keys:` of every kind, a
  scripted call) snapshot and reopened: `build_project` is never called, and
  the reopened server answers every listing, the clock and each scenario key
  (with its scope) exactly as before the restart; run on side by side with the
  original for hours of simulated time, both still answer alike;
- a file with no snapshot, or with one of another version of sim (`Stale`),
  builds the fleet and replays the whole journal to the same answers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sim.api import SimServer, in_process_client, snapshot
from sim.api.restore import Restored, open_server
from sim.scenario import runner
from tests.reliability.test_persistence_support import KEY, dump

ORG_KEY = "sim-org-key-restart-000001"
PROJECT_KEY = "sim-project-key-shop1-0001"
WORKLOAD = {"arrivals": {"kind": "poisson", "per_hour": 6},
            "session": {"dist": "exponential", "mean_s": 40}}
SCENARIO: dict[str, Any] = {
    "name": "restart-without-build", "seed": 17, "duration": "2d",
    "projects": [{"name": "shop", "count": 3, "branches": [
        {"name": "main", "computes": [{"type": "read_write", "workload": WORKLOAD}]}]}],
    "keys": [{"key": ORG_KEY, "kind": "organization"},
             {"key": PROJECT_KEY, "kind": "project", "project": "shop[1]"}],
    "actions": [{"at": "2h", "call": "PATCH /projects/{shop[2]}",
                 "body": {"project": {"name": "renamed-by-the-scenario"}}}],
}


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The instances `build_project` was called for (the fleet's build), in order."""
    called: list[str] = []
    build_project = runner.build_project

    def counted(cp: Any, scenario: Any, inst: Any, fleet: Any) -> Any:
        called.append(inst.key)
        return build_project(cp, scenario, inst, fleet)

    monkeypatch.setattr(runner, "build_project", counted)
    return called


def _open(path: Path, scenario: Path) -> tuple[SimServer, Restored]:
    server, restored = open_server(path, scenario_path=scenario)
    if not server.saved_keys:
        server.keep_key(server.add_personal_key(KEY))
    return server, restored


def _answers(server: SimServer) -> dict[str, Any]:
    """Everything the personal key reaches (every operation of every project, the clock), and
    what each scenario key is answered on every project: its scope."""
    with in_process_client(server, api_key=KEY) as api:
        out = dump(api)
    scoped = {}
    for key in (ORG_KEY, PROJECT_KEY):
        with in_process_client(server, api_key=key) as api:
            listing = api.get("projects")
            scoped[key] = {"projects": (listing.status_code, listing.json())}
            for pid in out["projects"]:
                r = api.get(f"projects/{pid}")
                scoped[key][pid] = (r.status_code, r.json()["project"]["name"]
                                    if r.status_code == 200 else r.json()["code"])
    out["scoped"] = scoped
    return out


def _a_served_history(server: SimServer) -> None:
    """Hours of the fleet, the scenario's scripted call, and a request of a client."""
    with in_process_client(server, api_key=KEY) as api:
        api.advance(3 * 3_600)
        pid = next(p["id"] for p in api.get("projects").json()["projects"]
                   if p["name"] == "shop-0")
        assert api.patch(f"projects/{pid}", json={"project": {"name": "by-a-client"}}
                         ).status_code == 200
        api.advance(1_800)


def _scenario_file(tmp_path: Path) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(json.dumps(SCENARIO), encoding="utf-8")  # JSON is YAML
    return path


def test_a_restart_from_a_snapshot_builds_no_fleet_and_answers_as_before(
        tmp_path: Path, builds: list[str]) -> None:
    scenario, state = _scenario_file(tmp_path), tmp_path / "state.db"
    server, restored = _open(state, scenario)
    assert restored.built and builds == ["shop[0]", "shop[1]", "shop[2]"]
    _a_served_history(server)
    server.take_snapshot()
    before = _answers(server)
    assert before["scoped"][PROJECT_KEY]["projects"][0] == 200  # the keys are accepted
    # and scoped: the project key reaches shop[1] alone, the organization key all three
    assert sorted(s for pid, (s, _) in before["scoped"][PROJECT_KEY].items()
                  if pid != "projects") == [200, 404, 404]
    assert {s for pid, (s, _) in before["scoped"][ORG_KEY].items() if pid != "projects"} == {200}
    assert "renamed-by-the-scenario" in json.dumps(before["projects"])
    assert server.journal is not None
    server.journal.close()
    server.journal = None  # the original runs on in memory, beside the restored one

    builds.clear()
    again, restored = _open(state, scenario)
    try:
        assert builds == [] and not restored.built
        assert restored.snapshot_after > 0 and restored.entries == 0
        assert _answers(again) == before
        assert again.warm_up_timed == server.warm_up_timed  # the warm-up timed at the build
        assert again.fleet_build.projects == server.fleet_build.projects
        for s in (server, again):  # both on: the same world from here
            with in_process_client(s, api_key=KEY) as api:
                api.advance(20 * 3_600)
        assert _answers(again) == _answers(server)
        assert builds == []
    finally:
        if again.journal is not None:
            again.journal.close()


@pytest.mark.parametrize("snapshot_kind", ["none", "stale"])
def test_without_a_snapshot_that_loads_the_fleet_is_built_and_the_journal_replayed(
        tmp_path: Path, builds: list[str], snapshot_kind: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    scenario, state = _scenario_file(tmp_path), tmp_path / "state.db"
    server, _ = _open(state, scenario)
    _a_served_history(server)
    if snapshot_kind == "stale":
        server.take_snapshot()

        def another_version(data: bytes) -> object:
            raise snapshot.Stale("made by another version")

        monkeypatch.setattr(snapshot, "loads", another_version)
    before = _answers(server)
    assert server.journal is not None
    server.journal.close()  # as a crash: no snapshot at the stop

    builds.clear()
    again, restored = _open(state, scenario)
    try:
        assert builds == ["shop[0]", "shop[1]", "shop[2]"] and restored.built
        assert restored.snapshot_after == 0 and restored.requests == 1
        assert _answers(again) == before
    finally:
        if again.journal is not None:
            again.journal.close()

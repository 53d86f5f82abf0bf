"""A state file the server wrote always opens: a row a restart cannot apply holds the file.

- a row whose replay raises (made to, for one row) and a row the writer journaled that
  answers otherwise on replay (written with the file's key, through the journal's own
  writer) each start the server: the world up to the row before it is served, the row is
  named (sequence number, method, path, why) in the log, `GET /_sim/state` and a header;
  every call that would change the world answers 503 `STATE_FILE_HELD`; the file is left
  byte for byte as it was, and a start that can apply the row opens all of it;
- the quickstart with a project and a branch without a compute, advanced 15 days (the
  daily fold runs while the kernel holds the project), then SIGKILLed: the restart replays
  it and answers as before.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sim.api import restore
from sim.api.held_file import CODE, HEADER
from sim.api.journal import Entry
from tests.reliability.test_persistence import KEY, ROOT, Kept, ok
from tests.reliability.test_persistence_support import Serve, sim_call
from tests.reliability.test_state_file import stored_bytes

SEED = 5


@pytest.fixture
def kept(tmp_path: Path) -> Iterator[Kept]:
    k = Kept(tmp_path / "state.db", {"seed": SEED})
    yield k
    k.close()


def three_projects(kept: Kept) -> list[str]:
    """Three projects, made one after another (one journal row each), and an advance."""
    made = [ok(kept.api.post("projects", json={"project": {"name": f"p{n}"}}), 201)
            for n in range(3)]
    ok(kept.api.post(kept.api.base_url.join("/_sim/advance"), json={"seconds": 600}))
    return [m["project"]["id"] for m in made]


def request_rows(kept: Kept) -> list[tuple[int, str, str]]:
    return [(r["seq"], r["method"], r["path"]) for r in kept.server.journal.entries()
            if r["kind"] == "request"]


def project_ids(kept: Kept) -> set[str]:
    return {p["id"] for p in ok(kept.api.get("projects", params={"limit": 400}))["projects"]}


def assert_held_at(kept: Kept, seq: int, method: str, path: str, applied_through: int,
                   not_applied: int) -> dict[str, Any]:
    held = kept.restored.held
    assert held is not None and kept.server.held is held
    assert (held.seq, held.method, held.path) == (seq, method, path)
    assert (held.applied_through, held.not_applied) == (applied_through, not_applied)
    state = kept.api.get(kept.api.base_url.join("/_sim/state"))
    assert state.status_code == 200 and state.headers[HEADER] == f"row {seq}"
    view = state.json()
    assert view["file"] == kept.path.name and view["held"]["seq"] == seq
    assert view["held"]["method"] == method and view["held"]["path"] == path
    for call in (lambda: kept.api.post("projects", json={"project": {}}),
                 lambda: kept.api.post(kept.api.base_url.join("/_sim/advance"),
                                       json={"seconds": 60}),
                 lambda: kept.api.post("api_keys", json={"key_name": "x"})):
        refused = call()
        assert refused.status_code == 503 and refused.json()["code"] == CODE
        assert f"row {seq} ({method} {path}" in refused.json()["message"]
    assert kept.server.journal is None  # nothing can be written to the file
    return view


def test_a_row_whose_replay_raises_holds_the_file_at_the_row_before(
        kept: Kept, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    ids = three_projects(kept)
    rows = request_rows(kept)
    seq, method, path = next(r for r in rows if r[1] == "POST" and r[2] == "/api/v2/projects"
                             and r[0] > rows[0][0])  # the second project's row
    last = max(r["seq"] for r in kept.server.journal.entries())
    kept.close()
    before = stored_bytes(kept.path)
    real = restore._replay_request

    async def failing(client: Any, journal: Any, row: Any) -> None:
        await real(client, journal, row)  # applied first: the world has part of the row
        if row["seq"] == seq:
            raise ValueError("a failure made for the test")

    monkeypatch.setattr(restore, "_replay_request", failing)
    with caplog.at_level(logging.WARNING, logger="sim.api.state_file"):
        kept.open()
    view = assert_held_at(kept, seq, method, path, applied_through=seq - 1,
                          not_applied=last - seq + 1)
    assert view["held"]["reason"] == "ValueError: a failure made for the test"
    # the world up to the row before: the first project, not the second (made, then
    # thrown away with the world that held it), nor the third, nor the advance
    assert project_ids(kept) == {ids[0]}
    assert [r.getMessage() for r in caplog.records if "cannot be applied" in r.getMessage()] \
        == [kept.restored.held.line()]
    assert f"journal row {seq} (POST /api/v2/projects at" in kept.restored.held.line()
    kept.close()
    assert stored_bytes(kept.path) == before  # not a byte of the file changed
    monkeypatch.undo()
    kept.open()  # a start that can apply the row opens all of it
    assert kept.restored.held is None and project_ids(kept) == set(ids)


def test_a_row_that_answers_otherwise_on_replay_is_named_and_the_rest_kept(
        kept: Kept) -> None:
    """A row journaled as applied (through the writer, with the file's key) for a project
    that does not exist: its replay answers 404, the journal and this sim disagree."""
    first = ok(kept.api.post("projects", json={"project": {"name": "a"}}), 201)["project"]["id"]
    row = kept.server.journal.entries()[-1]
    assert row["kind"] == "request"
    path = "/api/v2/projects/no-such-project/branches"
    journal = kept.server.journal
    with kept.server.lock:
        seq = journal.append(Entry("request", kept.server.cp.now, {
            "method": "POST", "route": "/api/v2/projects/{project_id}/branches", "path": path,
            "params": json.dumps({"project_id": "no-such-project"}), "query": "",
            "content_type": "application/json", "body": b'{"branch": {"name": "x"}}',
            "key": row["key"], "outcome": "applied"}))
    journal.wait_durable(seq)
    crafted = journal.entries()[-1]["seq"]
    later = ok(kept.api.post("projects", json={"project": {"name": "b"}}), 201)["project"]["id"]
    kept.restart()
    view = assert_held_at(kept, crafted, "POST", path, applied_through=crafted - 1,
                          not_applied=2)
    assert view["held"]["reason"].startswith(
        "it answered 404 where it had succeeded (project 'no-such-project' not found)")
    assert "disagree" in view["held"]["reason"]
    assert project_ids(kept) == {first}
    assert later not in project_ids(kept)
    ok(kept.api.get(f"projects/{first}/branches"))  # reads are served


def answers(client: Any, pid: str) -> list[Any]:
    return [ok(sim_call(client, "GET", "clock"))] + [ok(client.get(path)) for path in (
        f"projects/{pid}/operations?limit=400", f"projects/{pid}/branches",
        f"projects/{pid}/endpoints")]


def test_a_branch_archiving_under_the_kernel_replays_after_a_sigkill(tmp_path: Path) -> None:
    """`sim serve --scenario quickstart --state`; a project; a branch without a compute;
    15 days at once (answered 200); SIGKILL; the restart replays the file (no snapshot
    taken) and answers the same, the branch archived."""
    state = tmp_path / "s.db"
    options = ("--scenario", str(ROOT / "scenarios" / "quickstart.yaml"), "--state",
               str(state), "--rate-limit", "off", "--snapshot-every", "100000")
    serve = Serve(*options, log=tmp_path / "first.log", timeout=180)
    with serve.client(timeout=180) as client:
        pid = ok(client.post("projects", json={"project": {}}), 201)["project"]["id"]
        ok(client.post(f"projects/{pid}/branches", json={"branch": {"name": "plain"}}), 201)
        ok(sim_call(client, "POST", "advance", json={"seconds": 1_296_000}))
        before = answers(client, pid)
    serve.kill()
    assert "timeline_archive" in [o["action"] for o in before[1]["operations"]]
    serve = Serve(*options, log=tmp_path / "second.log", timeout=180)
    try:
        with serve.client(timeout=60) as client:
            assert ok(sim_call(client, "GET", "state"))["held"] is None
            assert answers(client, pid) == before
    finally:
        serve.stop()
    assert "requests" in (tmp_path / "second.log").read_text()
    assert KEY not in state.read_bytes().decode("latin-1")


def test_an_advance_is_journaled_by_its_steps_never_as_a_request(kept: Kept) -> None:
    """An advance whose target is already reached (0 s here; under load, another client's
    advance of the same day that got there first) moves nothing and writes no row: a row of
    the request itself, replayed, would move the clock by its whole `seconds`."""
    advance = kept.api.base_url.join("/_sim/advance")
    for seconds in (0, 600, 0):
        ok(kept.api.post(advance, json={"seconds": seconds}))
    rows = kept.server.journal.entries()
    assert [r["kind"] for r in rows if r["kind"] != "request"] == ["advance"]
    assert not [r for r in rows if r["kind"] == "request" and r["path"] == "/_sim/advance"]
    kept.restart()
    assert kept.restored.held is None and kept.server.cp.now == 600

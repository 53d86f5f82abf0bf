"""A served world keeps ended operations of past days as columns, listed as before, a week;
its usage ledger sums hours older than the hourly frames reach by the day.

- within the week, the world that moved them answers every page of every
  project's operations, every operation by id, every branch and the console's
  count exactly as the same world that never folded;
- after it, an operation created more than a week before the last fold is gone
  (404, not listed), but for those that made a branch; what is listed is the
  unfolded world's list cut there;
- past operations survive a snapshot, and columns a snapshot could not have
  held are refused.
"""

from __future__ import annotations

import dataclasses

import pytest

from sim.api import SimServer, in_process_client, snapshot
from sim.engine.past_operations import KEPT_S, PastOperations
from tests.reliability.test_persistence import KEY, digest, ok
from tests.reliability.test_served_history import _served, _unfolded

DAY_S = 86_400


def _all_pages(api, project_id: str, limit: int = 7) -> list[dict]:  # noqa: ANN001
    """Every operation of a project, newest first, page by page (pages cross the line
    between past operations and those still held as objects)."""
    out, cursor = [], None
    while True:
        params = {"limit": limit, **({"cursor": cursor} if cursor else {})}
        body = ok(api.get(f"projects/{project_id}/operations", params=params))
        out += body["operations"]
        if len(body["operations"]) < limit:
            return out
        cursor = body["pagination"]["cursor"]


def _apis(*servers):  # noqa: ANN002, ANN202
    apis = []
    for server in servers:
        server.add_personal_key(KEY)
        apis.append(in_process_client(server, api_key=KEY))
    return apis


def test_past_operations_answer_as_the_objects_did() -> None:
    folded = _served(3)
    unfolded = _unfolded()
    unfolded.cp.advance(3 * DAY_S)
    cp = folded.cp
    moved = sum(len(p.past_operations) for p in cp.projects.values()
                if p.past_operations is not None)
    held = sum(len(p.operations) for p in cp.projects.values())
    assert moved > 10 * held > 0  # most are columns now, the last day's are objects
    assert len(cp.operations) == held < len(unfolded.cp.operations)
    apis = _apis(folded, unfolded)
    projects = ok(apis[0].get("projects"))["projects"]
    for p in projects:
        pid = p["id"]
        listed = _all_pages(apis[0], pid)
        assert listed == _all_pages(apis[1], pid)
        assert len(listed) == cp.operation_count(cp.projects[pid])
        for op in listed[:: max(1, len(listed) // 20)]:
            path = f"projects/{pid}/operations/{op['id']}"
            assert ok(apis[0].get(path)) == ok(apis[1].get(path)) == {"operation": op}
        path = f"projects/{pid}/branches"
        assert ok(apis[0].get(path)) == ok(apis[1].get(path))
    console = [ok(api.get(api.base_url.join("/_sim/console"))) for api in apis]
    assert console[0]["projects"] == console[1]["projects"]
    for api in apis:
        api.close()


def test_an_operation_older_than_a_week_is_gone_but_for_a_branch_s_making() -> None:
    days = 9
    folded = _served(days)
    unfolded = _unfolded()
    unfolded.cp.advance(days * DAY_S)
    cut_us = round((days * DAY_S - KEPT_S) * 1_000_000)  # the last fold was at day 9
    apis = _apis(folded, unfolded)
    projects = ok(apis[0].get("projects"))["projects"]
    clock = folded.cp.clock
    gone = 0
    for p in projects:
        pid = p["id"]
        everything = _all_pages(apis[1], pid, limit=1000)
        kept = [op for op in everything if clock.parse_us(op["created_at"]) >= cut_us
                or op["action"] in ("create_timeline", "create_branch")]
        assert _all_pages(apis[0], pid) == kept
        for op in everything:
            if op not in kept:
                gone += 1
                r = apis[0].get(f"projects/{pid}/operations/{op['id']}")
                assert r.status_code == 404, r.text
                break
        path = f"projects/{pid}/branches"
        assert ok(apis[0].get(path)) == ok(apis[1].get(path))  # creation times kept
    assert gone > 0
    for api in apis:
        api.close()


def test_past_operations_survive_a_snapshot() -> None:
    server = _served(2)
    state = server.world_state()
    again = snapshot.loads(snapshot.dumps(state))
    assert digest(again[0]) == digest(server.cp)
    for pid, project in server.cp.projects.items():
        past, restored = project.past_operations, again[0].projects[pid].past_operations
        if past is None:
            assert restored is None
            continue
        assert ([dataclasses.astuple(op) for op in restored.operations(pid)]
                == [dataclasses.astuple(op) for op in past.operations(pid)])


def _spoil(past: PastOperations, column: str, at: int, value) -> None:  # noqa: ANN001
    spoiled = getattr(past, column).copy()
    spoiled[at] = value
    setattr(past, column, spoiled)


SPOILS = {  # what a file could say that no world holds, and the error it must bring
    "order": (lambda p, past: setattr(past, "created_us", past.created_us[::-1].copy()),
              "out of order"),
    "branch": (lambda p, past: _spoil(past, "branch", 0, len(past.names) + 5), "branch"),
    "action": (lambda p, past: _spoil(past, "action", 0, 250), "unknown actions"),
    "status": (lambda p, past: _spoil(past, "status", 0, 3), "not ended"),
    "column": (lambda p, past: setattr(past, "updated_at", past.updated_at[:-1].copy()),
               "not a column"),
    "id": (lambda p, past: _spoil(past, "ids", 0, b"\xff" * 36), "not UUIDs"),
    "nan": (lambda p, past: _spoil(past, "updated_at", 0, float("nan")), "no instant"),
    "stamp": (lambda p, past: _spoil(past, "created_us", 0, -2**62), "no instant"),
    "newer": (lambda p, past: _spoil(past, "created_us", -1, p.operations[0].created_us),
              "not its oldest"),
    # refused by the field's declared type before the class's own check
    "field": (lambda p, past: setattr(p, "past_operations", 5),
              "past_operations is a int, not of its declared type"),
}


@pytest.fixture(scope="module")
def day_and_a_half() -> bytes:
    """A served world after a day and a half, as a snapshot (each test spoils a copy)."""
    return snapshot.dumps(_served(1.5).world_state())


@pytest.mark.parametrize("spoil", sorted(SPOILS))
def test_past_operations_a_snapshot_could_not_hold_are_refused(spoil: str,
                                                              day_and_a_half: bytes) -> None:
    """Refused when the snapshot is read, before any answer could trip on them."""
    world = snapshot.loads(day_and_a_half)
    project = next(p for p in world[0].projects.values()
                   if p.past_operations is not None and len(p.past_operations) > 2
                   and p.operations)
    how, message = SPOILS[spoil]
    how(project, project.past_operations)
    data = snapshot.dumps(world)
    with pytest.raises(snapshot.Refused, match=message):
        snapshot.loads(data)


def test_a_rest_of_sessions_of_another_kind_is_refused() -> None:
    from sim.kernel.handover import RestOfSessions
    from sim.kernel.physics_run import Sessions
    from tests.api.test_served_kernel import fleet

    server = SimServer(scenario=fleet(1, web=1, pooled=1, sized=1))
    server.advance(3_600)
    feeds = [c.runtime.feed for c in server.cp.computes.values()
             if c.runtime is not None and type(c.runtime.feed) is RestOfSessions]
    assert feeds
    s = feeds[0].sessions
    snapshot.loads(snapshot.dumps(server.world_state()))  # as it is: read back
    feeds[0].sessions = Sessions(s.arrival_s.astype("S8"), *s[1:])
    with pytest.raises(snapshot.Refused, match="rest of sessions"):
        snapshot.loads(snapshot.dumps(server.world_state()))


def test_hours_older_than_eight_days_are_summed_by_the_day() -> None:
    """The usage ledger folds hours past the hourly frames' reach into days: fewer cells,
    and every daily, monthly and (within its 168 hours) hourly answer as before."""
    days = 10
    folded = _served(days)
    unfolded = _unfolded()
    unfolded.cp.advance(days * DAY_S)

    def cells(server) -> int:  # noqa: ANN001
        return sum(len(hours) for hours in server.cp.usage.computes.values())

    assert cells(folded) < cells(unfolded)
    usage = folded.cp.usage
    cut = usage.hour_of(folded.cp.now - 8 * DAY_S)
    old = [h for hours in usage.computes.values() for h in hours if h < cut - 24]
    assert old and all((h + usage.first_hour_of_day) % 24 == 0 for h in old)  # one a day
    apis = _apis(folded, unfolded)
    clock, now = folded.cp.clock, folded.cp.now
    spans = [("daily", "2026-01-01T00:00:00Z", clock.iso(now)),
             ("monthly", "2026-01-01T00:00:00Z", clock.iso(now)),
             ("hourly", clock.iso(now - 167 * 3600), clock.iso(now))]
    for granularity, start, end in spans:
        params = {"from": start, "to": end, "granularity": granularity, "limit": 100}
        answers = [ok(api.get("consumption_history/projects", params=params)) for api in apis]
        assert answers[0] == answers[1], granularity
        seconds = sum(f["compute_time_seconds"] for p in answers[0]["projects"]
                      for f in p["periods"][0]["consumption"])
        assert seconds > 0
    for api in apis:
        api.close()


def _split(server) -> dict[str, tuple[int, int]]:  # noqa: ANN001
    """Per project: (past operations, operations held as objects)."""
    return {p.key: (len(p.past_operations or ()), len(p.operations))
            for p in server.cp.projects.values()}


def test_where_the_clock_stops_does_not_move_the_line_between_past_and_held() -> None:
    """The kernel files a project's operations when it gives the project back, after the
    folds it ran past: they go where those folds would have put them. One advance of nine
    days, hourly advances and the engine alone: the same pages, the same split."""
    from tests.api.test_served_kernel import fleet

    scenario = fleet(9, web=2, pooled=2, sized=1)
    worlds = [SimServer(scenario=scenario), SimServer(scenario=scenario),
              SimServer(scenario=scenario, kernel=False)]
    worlds[0].advance(9 * DAY_S)
    for _ in range(9 * 24):
        worlds[1].advance(3_600)
    worlds[2].advance(9 * DAY_S)
    assert worlds[0].advancing.counts["handed"] > 0
    splits = [_split(w) for w in worlds]
    assert splits[0] == splits[1] == splits[2]
    assert all(past > 0 for past, _held in splits[0].values())
    apis = _apis(*worlds)
    for p in ok(apis[2].get("projects"))["projects"]:
        pages = [_all_pages(api, p["id"]) for api in apis]
        assert pages[0] == pages[1] == pages[2]
    for api in apis:
        api.close()


def test_an_operation_underway_at_a_fold_stays_held_whoever_runs_the_day() -> None:
    """Stopped in the middle of a day, with operations that fail and retry across midnight:
    the kernel's give-back moves only what had ended by the fold's instant, as the fold
    itself did in the engine's world."""
    from sim.scenario.loader import parse_scenario
    from tests.api import test_served_kernel as served

    text = (served.FLEET.replace("operation_failure_rate: 0.02", "operation_failure_rate: 0.3")
            .replace("arrivals: {{kind: poisson, per_hour: 0.3}}",
                     "arrivals: {{kind: poisson, per_hour: 40}}")
            .replace("session: {{dist: exponential, mean_s: 120}}",
                     "session: {{dist: exponential, mean_s: 5}}"))
    scenario = parse_scenario(text.format(days=3, web=12, pooled=1, sized=1, seed=3))
    stop = 2.5 * DAY_S
    worlds = [SimServer(scenario=scenario), SimServer(scenario=scenario),
              SimServer(scenario=scenario, kernel=False)]
    worlds[0].advance(stop - worlds[0].cp.now)
    while worlds[1].cp.now < stop:
        worlds[1].advance(min(3_600, stop - worlds[1].cp.now))
    worlds[2].advance(stop - worlds[2].cp.now)
    splits = [_split(w) for w in worlds]
    assert splits[0] == splits[1] == splits[2]

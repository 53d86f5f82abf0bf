"""`sim serve --state FILE`: the journal in SQLite, replayed on start (sim/api/journal.py).

In process: a restart replays to the very same world (state digest equal), for
every kind of mutation, with refusals in between (which change nothing and are
not journaled), a reset, a realtime clock and a scenario with scripted actions;
keys are kept as hashes; a file of another seed, a changed scenario, a file in
use and a failed write are refused. Then a real one: `sim serve` in a
subprocess, SIGKILLed while a client drives it, restarted on the same file.
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
import shutil
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from sim.api import SimClient, SimServer, in_process_client
from sim.api.restore import open_server
from sim.api.state_file import StateError
from sim.testing import state_digest
from tests.reliability.test_persistence_support import KEY, Serve, dump

ROOT = Path(__file__).resolve().parents[2]
SEED = 7


class FakeWall:
    def __init__(self, t: float = 1000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@dataclass
class Kept:
    """A journaled server and its client; `restart()` closes it and replays the file."""

    path: Path
    options: dict[str, Any] = field(default_factory=dict)
    server: SimServer = field(init=False)
    api: SimClient = field(init=False)

    def __post_init__(self) -> None:
        self.open()

    def open(self, **options: Any) -> None:
        self.server, self.restored = open_server(self.path, **{**self.options, **options})
        if not self.server.saved_keys:
            self.server.keep_key(self.server.add_personal_key(KEY))
        self.api = in_process_client(self.server, api_key=KEY)

    def close(self) -> None:
        self.api.close()
        if self.server.journal is not None:
            self.server.journal.close()

    def restart(self, **options: Any) -> None:
        self.close()
        self.open(**options)

    def rows(self) -> list[tuple[Any, ...]]:
        self.close()
        with closing(sqlite3.connect(self.path)) as conn:
            rows = conn.execute("SELECT kind, route, outcome FROM journal ORDER BY seq").fetchall()
        self.open()
        return rows


@pytest.fixture
def kept(tmp_path: Path) -> Iterator[Kept]:
    k = Kept(tmp_path / "state.db", {"seed": SEED})
    yield k
    k.close()


def digest(cp: Any) -> str:
    """`sim.testing.state_digest.digest(cp)`.

    Its record counts take len() of every field of the recorder; the engine's recorder
    has since gained fields that are not sequences (per-minute arrays, None in the API
    path). Until the digest learns them, it is given a view of the recorder with the
    fields len() applies to; everything else it covers stays as it is.
    """
    try:
        return state_digest.digest(cp)
    except TypeError:
        recorder = cp.recorder
        sized = {f.name: getattr(recorder, f.name) for f in dataclasses.fields(recorder)
                 if hasattr(getattr(recorder, f.name), "__len__")}
        view = dataclasses.make_dataclass("RecorderView", list(sized))(**sized)
        cp.recorder = view
        try:
            return state_digest.digest(cp)
        finally:
            cp.recorder = recorder


def ok(r: httpx.Response, status: int = 200) -> Any:
    assert r.status_code == status, r.text
    return r.json() if r.content else None


# ---- a session that touches every mutating route -------------------------------------------


def busy_session(api: SimClient) -> dict[str, int]:
    """Mutations of every kind, refusals in between. Counts of what was done."""
    done = {"applied": 0, "refused": 0}

    def call(method: str, path: str, body: Any = None, status: int = 200) -> Any:
        kwargs = {} if body is None else {"json": body}
        r = api.request(method, path, **kwargs)
        assert r.status_code == status, (method, path, r.text)
        done["applied" if status < 400 else "refused"] += 1
        return r.json() if r.content else None

    made = call("POST", "projects", {"project": {"name": "shop"}}, 201)
    pid, main = made["project"]["id"], made["branch"]["id"]
    primary = made["endpoints"][0]["id"]
    E = f"projects/{pid}/endpoints"
    call("POST", E, {"endpoint": {"branch_id": main, "type": "read_write"}}, 409)
    api.advance(20)
    replica = call("POST", E, {"endpoint": {"branch_id": main, "type": "read_only"}},
                   201)["endpoint"]["id"]
    call("PATCH", f"{E}/{replica}", {"endpoint": {"autoscaling_limit_max_cu": 2}}, 423)
    dev = call("POST", f"projects/{pid}/branches", {"branch": {"name": "dev"}, "endpoints": [
        {"type": "read_write"}]}, 201)
    call("POST", f"projects/{pid}/branches", {"branch": {"name": "dev"}}, 409)
    api.advance(30)
    call("PATCH", f"{E}/{primary}", {"endpoint": {"autoscaling_limit_min_cu": 0.5,
                                                  "autoscaling_limit_max_cu": 4}})
    call("PATCH", f"{E}/{replica}", {"endpoint": {"suspend_timeout_seconds": 600}})
    call("POST", f"{E}/{dev['endpoints'][0]['id']}/suspend")
    call("PATCH", f"projects/{pid}", {"project": {"name": "shop-2"}})
    ok(api.sim("POST", "faults", json={"operation_failure_rate": 0.4}))  # a "faults" entry
    api.advance(40)
    call("POST", f"{E}/{dev['endpoints'][0]['id']}/restart", None, 422)
    call("POST", f"{E}/{dev['endpoints'][0]['id']}/start")
    call("POST", f"{E}/{replica}/restart")
    ok(api.sim("POST", "connections", json={"project_id": pid, "endpoint_id": primary,
                                            "count": 5, "duration_seconds": 30}))
    done["applied"] += 1
    api.advance(60)
    # managed auth
    call("POST", "projects/auth/create", {"auth_provider": "stack", "project_id": pid,
                                          "branch_id": main}, 201)
    user = call("POST", "projects/auth/user", {"auth_provider": "stack", "project_id": pid,
                                               "email": "ada@example.com", "name": "Ada"}, 201)
    call("POST", "projects/auth/user", {"auth_provider": "stack", "project_id": pid,
                                        "email": "ada@example.com"}, 409)
    call("POST", "projects/auth/user", {"auth_provider": "stack", "project_id": pid,
                                        "email": "bob@example.com"}, 201)
    call("POST", "projects/auth/keys", {"auth_provider": "stack", "project_id": pid}, 201)
    call("POST", f"projects/{pid}/auth/oauth_providers", {"id": "github"})
    call("PATCH", f"projects/{pid}/auth/oauth_providers/github",
         {"client_id": "id-1", "client_secret": "secret-1"})
    call("POST", f"projects/{pid}/auth/oauth_providers", {"id": "google"})
    call("DELETE", f"projects/{pid}/auth/oauth_providers/google", None, 200)
    call("POST", f"projects/{pid}/auth/domains",
         {"domain": "https://app.example.com", "auth_provider": "stack"}, 201)
    call("PATCH", f"projects/{pid}/auth/email_server", {"type": "shared"})
    api.advance(5)
    call("DELETE", f"projects/{pid}/auth/users/{user['id']}", None, 204)
    transfer = call("POST", "projects/auth/transfer_ownership",
                    {"auth_provider": "stack", "project_id": pid})
    ok(api.sim("POST", "auth/confirm_transfer", json={"project_id": pid,
                                                       "url": transfer["url"]}))
    done["applied"] += 1
    ok(api.sim("POST", "auth/query", json={"project_id": pid,
                                           "sql": "SELECT id FROM svc_auth.users_sync"}))
    # deletions, a second project
    other = call("POST", "projects", {"project": {"name": "tmp"}}, 201)["project"]["id"]
    api.advance(10)
    call("DELETE", f"projects/{pid}/branches/{dev['branch']['id']}")
    call("DELETE", f"{E}/{replica}")
    call("DELETE", f"projects/{other}")
    api.advance(7 * 86_400)  # past the detach of idle storage
    call("POST", f"{E}/{primary}/start")
    api.advance(3)
    return done


def test_restart_replays_to_the_same_world(kept: Kept, figures) -> None:  # noqa: ANN001
    done = busy_session(kept.api)
    before, listed = digest(kept.server.cp), dump(kept.api)
    kept.restart()
    assert digest(kept.server.cp) == before
    assert dump(kept.api) == listed
    assert kept.restored.requests == done["applied"]  # refusals are not journaled
    kinds = [kind for kind, _, _ in kept.rows()]
    assert kinds.count("request") == done["applied"] and kinds.count("faults") == 1
    # and the world goes on from there as it would have: a second restart agrees too
    made = ok(kept.api.post("projects", json={"project": {"name": "after"}}), 201)
    kept.api.advance(30)
    before = digest(kept.server.cp)
    kept.restart()
    assert digest(kept.server.cp) == before
    assert ok(kept.api.get(f"projects/{made['project']['id']}"))["project"]["name"] == "after"
    figures.notes.append(f"persistence: {done['applied']} mutating requests replayed to an equal "
                         f"digest, {done['refused']} refusals not journaled")


def test_fault_changes_and_a_reset_are_journaled(kept: Kept) -> None:
    api = kept.api
    ok(api.post("projects", json={"project": {"name": "gone"}}), 201)
    ok(api.sim("POST", "faults", json={"operation_failure_rate": 0.5,
                                       "outage": {"start_in_seconds": 10, "duration_seconds": 5}}))
    api.advance(100)
    ok(api.sim("POST", "reset"))
    made = ok(api.post("projects", json={"project": {"name": "kept"}}), 201)
    api.advance(12)
    before = digest(kept.server.cp)
    kept.restart()
    assert digest(kept.server.cp) == before
    names = [p["name"] for p in ok(kept.api.get("projects"))["projects"]]
    assert names == ["kept"] and made["project"]["name"] == "kept"
    assert kept.server.faults.outages == []  # the reset cleared them, as before the restart
    assert [k for k, _, _ in kept.rows()] == ["request", "faults", "advance", "reset",
                                               "request", "advance"]


# ---- refusals: they change nothing, so they need no journal ----------------------------------


@dataclass(frozen=True)
class Refusal:
    method: str
    path: str
    body: Any
    status: int


def refusals(w: dict[str, str]) -> list[Refusal]:
    p, main, dev = w["project"], w["main"], w["dev"]
    E = f"projects/{p}/endpoints"
    auth = {"auth_provider": "stack", "project_id": p}
    return [
        Refusal("POST", "projects", {"project": {"name": ""}}, 400),
        Refusal("POST", "projects", {"project": {"pg_version": 3}}, 400),
        Refusal("POST", "projects", {"project": {"default_endpoint_settings": {
            "autoscaling_limit_max_cu": 99}}}, 400),
        Refusal("POST", E, {"endpoint": {"branch_id": main, "type": "read_write"}}, 409),
        Refusal("POST", E, {"endpoint": {"branch_id": "br-nope", "type": "read_only"}}, 404),
        Refusal("POST", E, {"endpoint": {"branch_id": main, "type": "read_only",
                                         "autoscaling_limit_min_cu": 3,
                                         "autoscaling_limit_max_cu": 2}}, 400),
        Refusal("PATCH", f"{E}/{w['starting']}", {"endpoint": {"autoscaling_limit_max_cu": 2}},
                423),
        Refusal("PATCH", f"{E}/{w['primary']}", {"endpoint": {"branch_id": dev}}, 409),
        Refusal("PATCH", f"{E}/{w['primary']}", {"endpoint": {"suspend_timeout_seconds": 5}},
                400),
        Refusal("POST", f"{E}/{w['idle']}/restart", None, 422),
        Refusal("POST", f"{E}/{w['starting']}/restart", None, 423),
        Refusal("POST", f"{E}/{w['starting']}/suspend", None, 423),
        Refusal("DELETE", f"{E}/{w['starting']}", None, 423),
        Refusal("DELETE", f"{E}/ep-nope", None, 404),
        Refusal("POST", f"projects/{p}/branches", {"branch": {"name": "dev"}}, 409),
        Refusal("POST", f"projects/{p}/branches", {"branch": {"parent_id": "br-x"}}, 404),
        Refusal("POST", f"projects/{p}/branches", {"endpoints": [
            {"type": "read_write"}, {"type": "read_write"}]}, 409),
        Refusal("DELETE", f"projects/{p}/branches/{main}", None, 409),
        Refusal("PATCH", f"projects/{p}", {"project": {"history_retention_seconds": -1}}, 400),
        Refusal("DELETE", "projects/nope", None, 404),
        Refusal("POST", "projects/auth/create", {**auth, "branch_id": main}, 409),
        Refusal("POST", "projects/auth/user", {**auth, "email": "ada@example.com"}, 409),
        Refusal("POST", "projects/auth/user", {**auth, "email": "not-an-email"}, 400),
        Refusal("POST", f"projects/{p}/auth/oauth_providers", {"id": "github"}, 409),
        Refusal("POST", f"projects/{p}/auth/domains",
                {"domain": "https://app.example.com", "auth_provider": "stack"}, 409),
        Refusal("DELETE", f"projects/{p}/auth/users/nope", None, 404),
        Refusal("PATCH", f"projects/{p}/auth/email_server", {"type": "standard"}, 400),
        Refusal("POST", "projects/auth/keys", {"project_id": p, "auth_provider": "nope"}, 400),
        Refusal("POST", "projects/auth/transfer_ownership", {**auth, "project_id": "nope"}, 404),
        Refusal("POST", "projects", {"project": {"name": "x"}, "unknown": 1}, 400),
    ]


def refusal_world(api: SimClient) -> dict[str, str]:
    made = ok(api.post("projects", json={"project": {"name": "w"}}), 201)
    p, main = made["project"]["id"], made["branch"]["id"]
    dev = ok(api.post(f"projects/{p}/branches", json={"branch": {"name": "dev"}, "endpoints": [
        {"type": "read_write"}]}), 201)
    auth = {"auth_provider": "stack", "project_id": p}
    ok(api.post("projects/auth/create", json={**auth, "branch_id": main}), 201)
    ok(api.post("projects/auth/user", json={**auth, "email": "ada@example.com"}), 201)
    ok(api.post(f"projects/{p}/auth/oauth_providers", json={"id": "github"}))
    ok(api.post(f"projects/{p}/auth/domains", json={"domain": "https://app.example.com",
                                                    "auth_provider": "stack"}), 201)
    api.advance(60)
    idle = dev["endpoints"][0]["id"]
    ok(api.post(f"projects/{p}/endpoints/{idle}/suspend"))
    api.advance(30)
    starting = ok(api.post(f"projects/{p}/endpoints", json={"endpoint": {
        "branch_id": main, "type": "read_only"}}), 201)["endpoint"]["id"]
    return {"project": p, "main": main, "dev": dev["branch"]["id"],
            "primary": made["endpoints"][0]["id"], "idle": idle, "starting": starting}


def test_refusals_change_nothing_draw_nothing_and_are_not_journaled(kept: Kept,
                                                                    figures) -> None:  # noqa: ANN001
    world = refusal_world(kept.api)
    journal = kept.server.journal
    assert journal is not None
    cases = refusals(world)
    for case in cases:
        before, appended = digest(kept.server.cp), journal.appended
        kwargs = {} if case.body is None else {"json": case.body}
        r = kept.api.request(case.method, case.path, **kwargs)
        assert r.status_code == case.status, (case, r.text)
        # the digest covers every random stream: a refusal that drew a number would show
        assert digest(kept.server.cp) == before, case
        assert journal.appended == appended, case
    project_key = kept.server.keys.for_project(world["project"]).secret
    before = digest(kept.server.cp)
    assert in_process_client(kept.server, api_key=project_key).post(
        "projects", json={"project": {"name": "x"}}).status_code == 403
    assert kept.api.get("projects", headers={"authorization": "Bearer wrong"}).status_code == 401
    assert digest(kept.server.cp) == before
    figures.notes.append(f"persistence: {len(cases) + 2} kinds of refusal left the digest "
                         f"(random streams included) unchanged; none drew a random number")


# ---- keys, clocks, scenarios ---------------------------------------------------------------


def test_keys_are_kept_as_hashes_and_accepted_after_a_restart(kept: Kept) -> None:
    ok(kept.api.post("projects", json={"project": {"name": "k"}}), 201)
    kept.close()
    stored = b"".join(p.read_bytes() for p in kept.path.parent.glob(kept.path.name + "*"))
    assert KEY.encode() not in stored
    assert hashlib.sha256(KEY.encode()).hexdigest().encode() in stored
    kept.open()
    assert kept.restored.keys == 1
    assert ok(kept.api.get("projects"))["projects"][0]["name"] == "k"
    assert kept.api.get("projects", headers={"authorization": f"Bearer {KEY}x"}
                        ).status_code == 401


def test_realtime_clock_is_journaled_and_resumes_where_it_stopped(tmp_path: Path) -> None:
    wall = FakeWall()
    kept = Kept(tmp_path / "rt.db", {"seed": SEED, "clock": "realtime", "speed": 10,
                                     "wall": wall})
    try:
        made = ok(kept.api.post("projects", json={"project": {"name": "rt"}}), 201)
        for _ in range(5):
            wall.t += 1.5  # 15 simulated seconds each
            ok(kept.api.get(f"projects/{made['project']['id']}"))
        assert kept.api.clock()["seconds"] == 75
        before = digest(kept.server.cp)
        rows = kept.rows()
        assert [k for k, _, _ in rows] == ["request", "clock"]  # five moves, one row
        wall.t += 1000  # the server was down: the world did not move meanwhile
        kept.restart()
        assert digest(kept.server.cp) == before
        assert kept.api.clock()["seconds"] == 75
        wall.t += 2
        assert kept.api.clock()["seconds"] == 95
    finally:
        kept.close()


def test_a_scenario_with_scripted_actions_replays(tmp_path: Path) -> None:
    scenario = tmp_path / "dev-branches.yaml"
    shutil.copy(ROOT / "scenarios" / "dev-branches.yaml", scenario)
    kept = Kept(tmp_path / "sc.db", {"scenario_path": scenario})
    try:
        api = kept.api
        projects = ok(api.get("projects", params={"limit": 100}))["projects"]
        ok(api.patch(f"projects/{projects[0]['id']}", json={"project": {"name": "renamed"}}))
        api.advance(26 * 3600 + 60)  # past the scenario's first action (dispatch) at 1d2h
        before = digest(kept.server.cp)
        kept.restart(scenario_path=None)  # the file remembers its scenario
        assert digest(kept.server.cp) == before
        kept.close()
        scenario.write_text(scenario.read_text() + "\n# changed\n")
        with pytest.raises(StateError, match="not that file"):
            open_server(kept.path)
        kept.open(scenario_path=ROOT / "scenarios" / "dev-branches.yaml")  # same content: fine
    finally:
        kept.close()


def test_a_file_of_another_seed_in_use_or_not_a_state_file_is_refused(tmp_path: Path) -> None:
    kept = Kept(tmp_path / "s.db", {"seed": 3})
    try:
        with pytest.raises(StateError, match="another sim serve"):
            open_server(kept.path)
        kept.close()
        with pytest.raises(StateError, match="seed 3, not 4"):
            open_server(kept.path, seed=4)
        server, _ = open_server(kept.path)  # no seed given: the file's
        assert server.seed == 3
        server.journal.close()  # type: ignore[union-attr]
    finally:
        kept.close()
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database" * 100)
    with pytest.raises(StateError, match="not a state file"):
        open_server(junk)


def test_a_failed_write_is_not_acknowledged_and_stops_the_service(kept: Kept) -> None:
    journal = kept.server.journal
    assert journal is not None

    def broken(batch: Any) -> None:
        raise OSError(28, "No space left on device")

    journal._commit = broken  # type: ignore[method-assign]
    r = kept.api.post("projects", json={"project": {"name": "lost"}})
    assert (r.status_code, r.json()["code"]) == (503, "SERVICE_UNAVAILABLE")  # not acknowledged
    r = kept.api.get("projects")
    assert (r.status_code, r.json()["code"]) == (503, "SERVICE_UNAVAILABLE")
    assert "state file" in r.json()["message"]


# ---- a real crash ----------------------------------------------------------------------------


@dataclass
class Call:
    method: str
    path: str
    body: Any = None

    def send(self, client: httpx.Client) -> httpx.Response:
        if self.path.startswith("/_sim/"):
            url: Any = client.base_url.join(self.path)
        else:
            url = self.path
        kwargs = {} if self.body is None else {"json": self.body}
        return client.request(self.method, url, **kwargs)


@dataclass
class Model:
    """What the client has been told exists: ids to aim the next calls at."""

    projects: dict[str, list[str]] = field(default_factory=dict)  # project -> branches
    computes: dict[str, tuple[str, str, str]] = field(default_factory=dict)  # id -> (p, b, type)
    names: int = 0

    def learn(self, call: Call, body: Any) -> None:
        if call.method == "POST" and call.path == "projects":
            pid = body["project"]["id"]
            self.projects[pid] = [body["branch"]["id"]]
            for e in body["endpoints"]:
                self.computes[e["id"]] = (pid, e["branch_id"], e["type"])
        elif call.method == "POST" and call.path.endswith("/branches"):
            pid = body["branch"]["project_id"]
            self.projects[pid].append(body["branch"]["id"])
        elif call.method == "POST" and call.path.endswith("/endpoints"):
            e = body["endpoint"]
            self.computes[e["id"]] = (e["project_id"], e["branch_id"], e["type"])
        elif call.method == "DELETE" and "/endpoints/" in call.path:
            self.computes.pop(call.path.rsplit("/", 1)[1], None)
        elif call.method == "DELETE" and "/branches/" in call.path:
            branch = call.path.rsplit("/", 1)[1]
            for branches in self.projects.values():
                if branch in branches:
                    branches.remove(branch)
            self.computes = {c: v for c, v in self.computes.items() if v[1] != branch}

    def next_call(self, rng: random.Random) -> Call:
        self.names += 1
        if not self.projects or (len(self.projects) < 5 and rng.random() < 0.06):
            return Call("POST", "projects", {"project": {"name": f"p{self.names}"}})
        pid = rng.choice(sorted(self.projects))
        branches = self.projects[pid]
        mine = sorted(c for c, v in self.computes.items() if v[0] == pid)
        roll = rng.random()
        if roll < 0.12:
            return Call("POST", f"projects/{pid}/branches", {"branch": {"name": f"b{self.names}"}})
        if roll < 0.30 or not mine:
            branch = rng.choice(branches)
            has_primary = any(v[1] == branch and v[2] == "read_write"
                              for v in self.computes.values())
            kind = "read_only" if has_primary or rng.random() < 0.7 else "read_write"
            return Call("POST", f"projects/{pid}/endpoints",
                        {"endpoint": {"branch_id": branch, "type": kind}})
        compute = rng.choice(mine)
        E = f"projects/{pid}/endpoints/{compute}"
        if roll < 0.50:
            lo = rng.choice([0.25, 0.5, 1])
            change = rng.choice([
                {"autoscaling_limit_min_cu": lo, "autoscaling_limit_max_cu": lo * 4},
                {"suspend_timeout_seconds": rng.choice([0, -1, 300, 900])},
                {"name": f"n{self.names}"}])
            return Call("PATCH", E, {"endpoint": change})
        if roll < 0.64:
            return Call("POST", f"{E}/{rng.choice(['suspend', 'start', 'restart'])}")
        if roll < 0.67:
            return Call("DELETE", E)
        if roll < 0.69 and len(branches) > 1:
            return Call("DELETE", f"projects/{pid}/branches/{rng.choice(branches[1:])}")
        if roll < 0.73:
            return Call("PATCH", f"projects/{pid}", {"project": {"name": f"r{self.names}"}})
        if roll < 0.78:
            return Call("POST", "/_sim/connections", {
                "project_id": pid, "endpoint_id": compute, "count": rng.randint(1, 20),
                "duration_seconds": rng.choice([5, 60, 600])})
        return Call("POST", "/_sim/advance", {"seconds": rng.choice([1, 2, 5, 30, 120])})


def drive(client: httpx.Client, rng: random.Random, model: Model, calls: int,
          on_call: Any = None) -> tuple[list[tuple[Call, Any]], Call | None, int]:
    """Up to `calls` calls; (acknowledged mutations with their answers, the call that got
    no answer, refusals)."""
    acked: list[tuple[Call, Any]] = []
    refused = 0
    for _ in range(calls):
        call = model.next_call(rng)
        if on_call is not None:
            on_call(len(acked))
        try:
            r = call.send(client)
        except httpx.TransportError:
            return acked, call, refused
        assert r.status_code < 500, (call, r.text)
        if r.status_code < 300:
            body = r.json() if r.content else None
            acked.append((call, body))
            model.learn(call, body)
        else:
            assert r.status_code in (409, 422, 423), (call, r.text)
            refused += 1
    return acked, None, refused


def test_sigkill_loses_no_acknowledged_mutation(tmp_path: Path, figures) -> None:  # noqa: ANN001
    """Every acknowledged mutation is in the restarted server, nothing else half-applied.

    Precisely: the restarted world equals a fresh world (same seed) given exactly the
    acknowledged calls in order, or those plus the one call in flight at the kill (its
    client got no answer, so it may or may not have been committed; either way whole).
    """
    state = tmp_path / "state.db"
    serve = Serve("--state", str(state), "--seed", str(SEED), "--rate-limit", "off",
                  log=tmp_path / "serve.log")
    rng = random.Random(20_26)
    kill_at = rng.randint(150, 200)  # acknowledged mutations before the kill is armed
    killer = threading.Timer(rng.uniform(0.0, 0.01), serve.kill)
    model = Model()

    def arm(acked: int) -> None:
        if acked >= kill_at and not killer.is_alive() and not killer.finished.is_set():
            killer.start()

    try:
        with serve.client() as client:
            acked, in_flight, refused = drive(client, rng, model, 2000, arm)
    finally:
        killer.join()
        serve.kill()
    assert len(acked) >= kill_at and in_flight is not None

    restarted = Serve("--state", str(state), "--rate-limit", "off", log=tmp_path / "serve.log")
    try:
        with restarted.client() as client:
            recovered = dump(client)
            expected_server = SimServer(seed=SEED)
            expected_server.add_personal_key(KEY)
            with in_process_client(expected_server, api_key=KEY) as expected:
                for call, _ in acked:
                    assert call.send(expected).status_code < 300, call
                without = dump(expected)
                in_flight_applied = recovered != without
                if in_flight_applied:
                    assert in_flight.send(expected).status_code < 300, in_flight
                assert recovered == dump(expected)
                # and the recovered server goes on exactly as the uninterrupted one
                after = rng.randint(0, 10**6)
                more, lost, _ = drive(client, random.Random(after), Model(**_copy(model)), 40)
                again, _, _ = drive(expected, random.Random(after), Model(**_copy(model)), 40)
                assert lost is None and [b for _, b in more] == [b for _, b in again]
                final = dump(expected)
            assert dump(client) == final
    finally:
        restarted.stop()
    # a clean stop keeps it too
    third = Serve("--state", str(state), "--rate-limit", "off", log=tmp_path / "serve.log")
    try:
        with third.client() as client:
            assert dump(client) == final
    finally:
        third.stop()
    check_acknowledged_ids(acked, in_flight, recovered)
    figures.notes.append(
        f"crash (SIGKILL): {len(acked)} acknowledged mutations recovered of {len(acked)} "
        f"({refused} refusals before the kill); the request in flight was "
        f"{'committed' if in_flight_applied else 'not committed'}: "
        f"{in_flight.method} {in_flight.path}")
    print(figures.notes[-1])


def check_acknowledged_ids(acked: list[tuple[Call, Any]], in_flight: Call,
                           recovered: dict[str, Any]) -> None:
    """Spelled out (the equal dumps imply it): every project, branch, compute and operation
    an answer named is listed, unless a later acknowledged call (or the one in flight)
    deleted it, or the branch it was on."""
    named: dict[str, set[str]] = {"projects": set(), "branches": set(), "endpoints": set(),
                                  "operations": set()}
    on_branch: dict[str, str] = {}
    deleted: set[str] = set()
    for call, body in [*acked, (in_flight, None)]:
        if call.method == "DELETE":
            deleted.add(call.path.rsplit("/", 1)[1])
        if not isinstance(body, dict):
            continue
        endpoints = [*body.get("endpoints", ()), *([body["endpoint"]] if "endpoint" in body
                                                    else [])]
        for e in endpoints:
            named["endpoints"].add(e["id"])
            on_branch[e["id"]] = e["branch_id"]
        for kind, plural in (("project", "projects"), ("branch", "branches")):
            if isinstance(body.get(kind), dict):
                named[plural].add(body[kind]["id"])
        named["operations"] |= {op["id"] for op in body.get("operations", ())}
    listed = {kind: {item["id"] for p in recovered["projects"].values() for item in p[kind]}
              for kind in ("branches", "endpoints", "operations")}
    listed["projects"] = set(recovered["projects"])
    for kind, ids in named.items():
        kept = {i for i in ids if i not in deleted and on_branch.get(i) not in deleted}
        assert kept <= listed[kind], (kind, sorted(kept - listed[kind])[:5])
    assert len(named["operations"]) > 50


def _copy(model: Model) -> dict[str, Any]:
    return {"projects": {p: list(b) for p, b in model.projects.items()},
            "computes": dict(model.computes), "names": model.names}

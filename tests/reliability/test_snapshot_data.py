"""A snapshot is data: restored without unpickling, hostile ones refused, the world the same.

- a served world (random requests, seeded) snapshot at random instants and
  restored into a second server goes on exactly as the first: every answer of
  the same following requests equal, and the final world too;
- restoring a state file calls no pickle or cloudpickle load (they are made to
  raise meanwhile);
- a crafted snapshot, sealed with the file's valid key (a pickle that would run
  a command, a name outside sim, a handler sim does not have, a field of the
  wrong type, a dangling reference), is refused in one line and runs nothing;
- one written by another version of sim (a module it names has changed) is set
  aside: the whole journal is replayed.
"""

from __future__ import annotations

import copy
import os
import pickle
import random
from pathlib import Path
from typing import Any

import msgpack
import pytest

from sim.api import SimServer, in_process_client, snapshot, world_codec, world_decode
from sim.api.journal import Entry
from sim.api.restore import open_server
from sim.api.state_file import StateError
from sim.scenario.loader import load_scenario
from tests.reliability.test_persistence import KEY, ROOT, Kept, Model, digest, ok

SEED = 11


def _twin(server: SimServer) -> SimServer:
    """A server restored from a snapshot of `server` (through its bytes), built as a restart
    builds it: from the same scenario (so on the same road: the kernel or the engine alone)."""
    twin = SimServer(seed=server.seed, scenario=server.scenario)
    twin.restore_world(snapshot.loads(snapshot.dumps(server.world_state())))
    twin.add_personal_key(KEY)
    return twin


def _answer(client: Any, call: Any) -> tuple[int, Any]:
    """Status and body; a refusal's request id counts this process's requests, not the world's."""
    r = call.send(client)
    body = r.json() if r.content else None
    if isinstance(body, dict):
        body.pop("request_id", None)
    return r.status_code, body


@pytest.mark.parametrize("scenario", [None, "dev-branches.yaml"])
def test_a_restored_world_answers_as_the_original(scenario: str | None) -> None:
    """At random instants of a seeded served world: snapshot, restore, run both on."""
    rng = random.Random(SEED)
    loaded = None if scenario is None else load_scenario(ROOT / "scenarios" / scenario)
    server = SimServer(seed=SEED, scenario=loaded)
    server.add_personal_key(KEY)
    api = in_process_client(server, api_key=KEY)
    model = Model()
    instants = sorted(rng.sample(range(10, 160), 3))
    compared = 0
    for n in range(170):
        if instants and n == instants[0]:
            instants.pop(0)
            twin = _twin(server)
            twin_api = in_process_client(twin, api_key=KEY)
            # the same next requests to both: a copy of the model and of its random stream
            rng_twin, model_twin = copy.deepcopy(rng), copy.deepcopy(model)
            for _ in range(40):
                call = model.next_call(rng)
                assert model_twin.next_call(rng_twin) == call
                got, expected = _answer(twin_api, call), _answer(api, call)
                assert got == expected, call
                if expected[0] < 300:
                    model.learn(call, expected[1])
                    model_twin.learn(call, got[1])
                compared += 1
            for path in ("projects", *(f"projects/{p}/operations" for p in model.projects)):
                assert ok(twin_api.get(path)) == ok(api.get(path)), path
            assert digest(twin.cp) == digest(server.cp)
            twin_api.close()
        call = model.next_call(rng)
        status, body = _answer(api, call)
        if status < 300:
            model.learn(call, body)
    api.close()
    assert compared == 120


def test_restoring_a_state_file_unpickles_nothing(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    kept = Kept(tmp_path / "s.db", {"seed": SEED})
    made = ok(kept.api.post("projects", json={"project": {"name": "p"}}), 201)
    pid = made["project"]["id"]
    ok(kept.api.post("projects/auth/create", json={"auth_provider": "stack", "project_id": pid,
                                                   "branch_id": made["branch"]["id"]}), 201)
    kept.api.advance(120)
    before = digest(kept.server.cp)
    kept.server.close_state()

    def forbidden(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a pickle load on the state file's path")

    for name in ("loads", "load", "Unpickler"):
        monkeypatch.setattr(pickle, name, forbidden)
    import _pickle
    for name in ("loads", "load", "Unpickler"):
        monkeypatch.setattr(_pickle, name, forbidden)
    kept.open()
    assert kept.restored.snapshot_after > 0 and kept.restored.entries == 0
    assert digest(kept.server.cp) == before
    assert ok(kept.api.get(f"projects/{pid}"))["project"]["id"] == pid
    kept.close()


# ---- hostile snapshots, sealed with the file's own key --------------------------------------


class _RunsACommand:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return os.system, (f"id > {self.marker}",)


def _tree(data: bytes) -> list[Any]:
    return msgpack.unpackb(world_decode.inflate(data), raw=False, strict_map_key=False)


def _pack(tree: list[Any]) -> bytes:
    return world_codec.frame(msgpack.packb(tree, use_bin_type=True))


def _ref(i: int) -> msgpack.ExtType:
    return msgpack.ExtType(0, i.to_bytes(4, "little"))


def _genuine(kept: Kept) -> bytes:
    return snapshot.dumps(kept.server.world_state())


def _first(tree: list[Any], tag: str, name: str | None = None) -> int:
    """The first entry of a tag (an object: of a class, by its shape's name)."""
    shapes = tree[0]["shapes"]
    return next(i for i, e in enumerate(tree[1])
                if e[0] == tag and (name is None or shapes[e[1]][0] == name))


def _a_pickle(kept: Kept, marker: Path) -> bytes:
    return pickle.dumps(_RunsACommand(marker))


def _a_name_outside_sim(kept: Kept, marker: Path) -> bytes:
    tree = _tree(_genuine(kept))
    tree[0]["modules"]["os"] = "0"
    tree[1].append(["f", "os:system"])
    return _pack(tree)


def _a_function_reached_through_a_module(kept: Kept, marker: Path) -> bytes:
    tree = _tree(_genuine(kept))
    i = _first(tree, "c")  # a pending event's handler swapped for a way out of sim
    tree[1][i] = ["f", "sim.engine.auth_sql:sqlite3.connect"]
    return _pack(tree)


def _a_method_that_is_no_handler(kept: Kept, marker: Path) -> bytes:
    tree = _tree(_genuine(kept))
    i = _first(tree, "c")
    tree[1][i] = ["m", tree[2], "__reduce_ex__"]
    return _pack(tree)


def _a_handler_sim_lacks(kept: Kept, marker: Path) -> bytes:
    tree = _tree(_genuine(kept))
    i = _first(tree, "c")
    module = tree[1][i][1].partition(":")[0]
    tree[1][i][1] = f"{module}:no_such_handler#0"
    return _pack(tree)


def _a_field_of_the_wrong_type(kept: Kept, marker: Path) -> bytes:
    tree = _tree(_genuine(kept))
    i = _first(tree, "o", "sim.engine.model:Operation")
    names = tree[0]["shapes"][tree[1][i][1]][1]
    tree[1][i][2][names.index("status")] = 12345
    return _pack(tree)


def _a_dangling_reference(kept: Kept, marker: Path) -> bytes:
    tree = _tree(_genuine(kept))
    i = _first(tree, "l")
    tree[1][i][1].append(_ref(10**8))
    return _pack(tree)


def _a_class_not_allowed(kept: Kept, marker: Path) -> bytes:
    tree = _tree(_genuine(kept))
    tree[0]["modules"]["sim.engine.auth_sql"] = world_codec._module_hash("sim.engine.auth_sql")
    i = _first(tree, "o", "sim.engine.model:Operation")
    tree[0]["shapes"][tree[1][i][1]][0] = "sim.engine.auth_sql:BranchDatabase"  # not data
    return _pack(tree)


HOSTILE = [
    ("a pickle that runs a command", _a_pickle),
    ("a function outside sim", _a_name_outside_sim),
    ("a function reached through a module", _a_function_reached_through_a_module),
    ("a method that is no handler", _a_method_that_is_no_handler),
    ("a handler sim does not have", _a_handler_sim_lacks),
    ("a field of the wrong type", _a_field_of_the_wrong_type),
    ("a reference to nothing", _a_dangling_reference),
    ("a class that is not plain data", _a_class_not_allowed),
]


@pytest.mark.parametrize(("what", "craft"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_a_hostile_snapshot_sealed_with_the_key_is_refused(
        tmp_path: Path, what: str, craft: Any) -> None:
    marker = tmp_path / "ran"
    kept = Kept(tmp_path / "s.db", {"seed": SEED})
    made = ok(kept.api.post("projects", json={"project": {"name": "p"}}), 201)
    ok(kept.api.post(f"projects/{made['project']['id']}/branches",
                     json={"branch": {"name": "dev"}, "endpoints": [{"type": "read_write"}]}),
       201)
    kept.api.advance(5)  # operations still running: handlers pending on the event heap
    data = craft(kept, marker)
    journal = kept.server.journal
    assert journal is not None
    journal.append(Entry("snapshot", kept.server.cp.now, {"world": data}))  # sealed, MACed
    kept.api.close()
    journal.close()
    with pytest.raises(StateError) as err:
        open_server(kept.path)
    message = str(err.value)
    assert "\n" not in message and "its snapshot is not a world sim wrote" in message, message
    assert not marker.exists()


def test_a_snapshot_of_another_version_is_set_aside(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Its header names a module whose source has changed: the journal is replayed instead."""
    kept = Kept(tmp_path / "s.db", {"seed": SEED})
    ok(kept.api.post("projects", json={"project": {"name": "p"}}), 201)
    kept.api.advance(30)
    before = digest(kept.server.cp)
    kept.server.close_state()
    monkeypatch.setitem(world_codec._HASHES, "sim.engine.model", "changed")
    kept.open()
    assert kept.restored.snapshot_after == 0 and kept.restored.entries > 0
    assert digest(kept.server.cp) == before
    kept.close()


def test_a_class_a_snapshot_cannot_hold_is_named_when_writing() -> None:
    class Stranger:
        pass

    with pytest.raises(TypeError, match=r"cannot hold a .*Stranger.*held by .*Stranger <- list"):
        snapshot.dumps([Stranger()])


def test_every_registered_plain_class_exists() -> None:
    """A module moved or a class renamed leaves no stale name behind (snapshots would fail)."""
    import importlib

    for name in sorted(world_codec.PLAIN_CLASSES):
        module, _, qualname = name.partition(":")
        found: Any = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part, None)
        assert isinstance(found, type) and f"{found.__module__}:{found.__qualname__}" == name, name


def test_a_timer_naming_another_verb_is_refused() -> None:
    """A timer is data naming a verb of the control plane: only the verbs timers schedule."""
    from sim.engine.control_plane import ControlPlane
    from sim.engine.timers import Timer

    cp = ControlPlane(seed=SEED)
    data = snapshot.dumps([Timer(cp, "expire_branch", ("br-1", "2026-01-05T00:00:10Z"), 10.0)])
    assert snapshot.loads(data)[0].verb == "expire_branch"
    tree = _tree(data)
    i = _first(tree, "o", "sim.engine.timers:Timer")
    names = tree[0]["shapes"][tree[1][i][1]][1]
    tree[1][i][2][names.index("verb")] = "advance"  # a public verb, not a timer's
    with pytest.raises(world_codec.Refused, match="no known verb"):
        snapshot.loads(_pack(tree))

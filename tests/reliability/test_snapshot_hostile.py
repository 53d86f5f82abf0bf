"""Hostile snapshots sealed with the file's valid key: each is refused in one line, runs
nothing, writes nothing outside the state file's folder, and costs bounded memory.

Every case starts from a genuine snapshot of one served world (a project, a branch that
expires, a compute, managed auth, operations still running) and changes it as a holder
of the key could: gadgets through every event kind and every class the world holds,
zlib bombs, deep nesting, clocks and numbers no running world holds, huge faults, paths.
The crafted bytes go into the state file through the server's own journal writer
(sealed and authenticated), and the file is opened as `sim serve --state` opens it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tracemalloc
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack
import pytest

from sim.api import snapshot, world_codec
from sim.api.event_kinds import EVENT_KINDS
from sim.api.journal import Entry
from sim.api.restore import open_server
from sim.api.state_file import StateError
from tests.reliability.test_persistence import Kept, ok
from tests.reliability.test_snapshot_data import _first, _pack, _ref, _tree

SEED = 13
REFUSED = "its snapshot is not a world sim wrote"
Tree = list[Any]


@dataclass
class World:
    """The served world every case starts from: its state folder and genuine snapshot."""

    folder: Path
    genuine: bytes
    tree_size: int


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    folder = tmp_path_factory.mktemp("world")
    kept = Kept(folder / "s.db", {"seed": SEED})
    made = ok(kept.api.post("projects", json={"project": {"name": "p"}}), 201)
    pid, main = made["project"]["id"], made["branch"]["id"]
    ok(kept.api.post(f"projects/{pid}/branches", json={
        "branch": {"name": "dev", "expires_at": "2026-01-09T00:00:00Z"},
        "endpoints": [{"type": "read_write"}]}), 201)
    ok(kept.api.post("projects/auth/create", json={"auth_provider": "stack", "project_id": pid,
                                                   "branch_id": main}), 201)
    kept.api.advance(5)  # operations still running: handlers pending on the event heap
    genuine = snapshot.dumps(kept.server.world_state())
    kept.server.close_state()
    kept.close()
    return World(folder, genuine, len(world_codec_inflate(genuine)))


def world_codec_inflate(data: bytes) -> bytes:
    from sim.api.world_decode import inflate

    return inflate(data)


# ---- crafting --------------------------------------------------------------------------------


def _shape_names(tree: Tree, i: int) -> list[str]:
    return tree[0]["shapes"][tree[1][i][1]][1]


def _set_field(tree: Tree, cls: str, field: str, value: Any) -> Tree:
    i = _first(tree, "o", cls)
    tree[1][i][2][_shape_names(tree, i).index(field)] = value
    return tree


def _add(tree: Tree, entry: list[Any]) -> msgpack.ExtType:
    tree[1].append(entry)
    return _ref(len(tree[1]) - 1)


def _at(ref: msgpack.ExtType) -> int:
    return int.from_bytes(ref.data, "little")


def _module(tree: Tree, module: str) -> None:
    tree[0]["modules"][module] = world_codec._module_hash(module)


def _env(tree: Tree) -> list[Any]:
    return tree[1][_first(tree, "env")]


def _heap_emptied(tree: Tree, now: float) -> Tree:
    """The clock at `now` with nothing pending (the reproduction: an empty heap)."""
    env = _env(tree)
    env[1] = now
    env[3] = _add(tree, ["l", []])
    return tree


def _a_closure_naming_a_dunder(tree: Tree) -> Tree:
    """`BranchDatabase.__init__` as a pending event, its path among the defaults."""
    _module(tree, "sim.engine.auth_sql")
    i = _first(tree, "c")
    tree[1][i] = ["c", "sim.engine.auth_sql:BranchDatabase.__init__#0",
                  ("p", "b", "n", "/tmp/outside/x.sqlite"), None, []]
    return tree


def _a_dataclass_generated_init(tree: Tree) -> Tree:
    i = _first(tree, "c")
    module = tree[1][i][1].partition(":")[0]
    tree[1][i][1] = f"{module}:__create_fn__.<locals>.__init__#0"
    return tree


def _an_event_of_another_kind(tree: Tree) -> Tree:
    """A real handler of sim, but no event of the world's (a scenario's merge)."""
    _module(tree, "sim.scenario.merge")
    i = _first(tree, "c")
    tree[1][i] = ["c", "sim.scenario.merge:canonical_result.<locals>.<lambda>#0", None, None,
                  []]
    return tree


def _an_event_given_another_object(tree: Tree) -> Tree:
    """A pending event whose first field (a compute, the control plane...) is the auth
    service instead."""
    i = next(k for k, e in enumerate(tree[1]) if e[0] == "c" and e[4])
    tree[1][_at(tree[1][i][4][0])] = ["cell", _ref(_first(tree, "o",
                                                        "sim.engine.auth:ManagedAuth"))]
    return tree


def _an_event_given_extra_defaults(tree: Tree) -> Tree:
    i = _first(tree, "c")
    tree[1][i][2] = _add(tree, ["t", ["rm -rf /", 1]])
    return tree


def _a_method_not_an_event(tree: Tree) -> Tree:
    i = _first(tree, "m")
    tree[1][i][2] = "advance"  # a public verb of the control plane, no event of it
    return tree


def _an_event_method_on_another_class(tree: Tree) -> Tree:
    i = _first(tree, "m")
    tree[1][i][1] = _ref(_first(tree, "o", "sim.engine.auth:ManagedAuth"))
    return tree


def _a_class_as_a_callback(tree: Tree) -> Tree:
    """A pending event (a timer's) whose callback is a class of sim (calling it makes an
    object)."""
    i = _first(tree, "m")
    tree[1][i] = ["cls", "sim.engine.model:Operation"]
    return tree


def _a_function_not_listed(tree: Tree) -> Tree:
    _module(tree, "sim.scenario.runner")
    i = _first(tree, "c")
    tree[1][i] = ["f", "sim.scenario.runner:schedule_actions"]
    return tree


def _a_timer_of_another_control_plane(tree: Tree) -> Tree:
    auth = _ref(_first(tree, "o", "sim.engine.auth:ManagedAuth"))
    return _set_field(tree, "sim.engine.timers:Timer", "cp", auth)


def _a_timer_of_a_second_control_plane(tree: Tree) -> Tree:
    i = _first(tree, "o", "sim.engine.control_plane:ControlPlane")
    twin = _add(tree, list(tree[1][i]))
    return _set_field(tree, "sim.engine.timers:Timer", "cp", twin)


def _a_timer_firing_itself(tree: Tree) -> Tree:
    return _set_field(tree, "sim.engine.timers:Timer", "verb", "fire")


def _a_timer_of_other_arguments(tree: Tree) -> Tree:
    args = _add(tree, ["t", ["/tmp/outside", _add(tree, ["l", []])]])
    return _set_field(tree, "sim.engine.timers:Timer", "args", args)


def _a_path_for_auth_databases(tree: Tree) -> Tree:
    i = _first(tree, "o", "sim.engine.auth:ManagedAuth")
    shape = tree[1][i][1]
    tree[0]["shapes"][shape][1].append("data_dir")
    for e in tree[1]:  # every object of that shape gets the path
        if e[0] == "o" and e[1] == shape:
            e[2].append("/tmp/outside")
    return tree


def _a_model_not_listed(tree: Tree) -> Tree:
    """A scenario's trace spec (it names a file to read) among the world's values."""
    _module(tree, "sim.scenario.schema")
    spec = _add(tree, ["p", "sim.scenario.schema:ReplaySpec",
                       _add(tree, ["d", ["kind", "replay", "path", "/etc/passwd"]]),
                       _add(tree, ["s", []]), None, None])
    tree[1][_first(tree, "l")][1].append(spec)
    return tree


def _deep_outages(tree: Tree) -> Tree:
    """`Faults.outages` as lists 100,000 deep."""
    inner = _add(tree, ["l", []])
    for _ in range(100_000):
        inner = _add(tree, ["l", [inner]])
    return _set_field(tree, "sim.api.server:Faults", "outages", inner)


def _a_list_holding_itself(tree: Tree) -> Tree:
    i = len(tree[1])
    tree[1].append(["l", [_ref(i)]])
    return _set_field(tree, "sim.api.server:Faults", "outages", _ref(i))


def _many_outages(tree: Tree) -> Tree:
    windows = [_add(tree, ["t", [float(k), float(k) + 1.0]]) for k in range(100_000)]
    return _set_field(tree, "sim.api.server:Faults", "outages", _add(tree, ["l", windows]))


def _an_infinite_latency(tree: Tree) -> Tree:
    return _set_field(tree, "sim.api.server:Faults", "extra_latency_ms", float("inf"))


def _a_latency_of_days(tree: Tree) -> Tree:
    return _set_field(tree, "sim.api.server:Faults", "extra_latency_ms", 1e9)


def _a_nan_latency(tree: Tree) -> Tree:
    return _set_field(tree, "sim.api.server:Faults", "extra_latency_ms", float("nan"))


def _a_failure_rate_of_five(tree: Tree) -> Tree:
    return _set_field(tree, "sim.engine.executor:Executor", "failure_rate", 5.0)


def _an_event_due_never(tree: Tree) -> Tree:
    queue = tree[1][_at(_env(tree)[3])][1]
    last = tree[1][_at(queue[-1])]  # the heap's last leaf: the heap stays in order
    last[1][0] = 1e300
    return tree


def _an_operation_at_nan(tree: Tree) -> Tree:
    return _set_field(tree, "sim.engine.model:Operation", "updated_at", float("nan"))


Craft = Callable[[Tree], Tree]
CASES: list[tuple[str, Craft, str]] = [  # what, how, a word of its refusal
    ("a closure naming a dunder", _a_closure_naming_a_dunder, "no known kind"),
    ("a dataclass's generated __init__", _a_dataclass_generated_init, "no known kind"),
    ("a handler of sim that is no event", _an_event_of_another_kind, "no known kind"),
    ("an event given another object", _an_event_given_another_object, "ManagedAuth"),
    ("an event given extra defaults", _an_event_given_extra_defaults, "fields of its kind"),
    ("a method that is no event", _a_method_not_an_event, "advance"),
    ("an event's method on another class", _an_event_method_on_another_class, "ManagedAuth"),
    ("a function not listed", _a_function_not_listed, "schedule_actions"),
    ("a class as a callback", _a_class_as_a_callback, "not an event of the world"),
    ("a timer of another control plane", _a_timer_of_another_control_plane, "Timer.cp"),
    ("a timer of a second control plane", _a_timer_of_a_second_control_plane,
     "more than one ControlPlane"),
    ("a timer firing itself", _a_timer_firing_itself, "no known verb"),
    ("a timer of other arguments", _a_timer_of_other_arguments, "arguments"),
    ("a path for auth's databases", _a_path_for_auth_databases, "data_dir"),
    ("a model naming a file", _a_model_not_listed, "ReplaySpec"),
    ("outages 100,000 deep", _deep_outages, "nested"),
    ("a list holding itself", _a_list_holding_itself, "holds itself"),
    ("100,000 outage windows", _many_outages, "outage windows"),
    ("an infinite latency", _an_infinite_latency, "latency"),
    ("a latency of days", _a_latency_of_days, "latency"),
    ("a NaN latency", _a_nan_latency, "NaN"),
    ("a failure rate of 5", _a_failure_rate_of_five, "failure rate"),
    ("an event due at 1e300 s", _an_event_due_never, "an event due"),
    ("an operation lasting NaN", _an_operation_at_nan, "NaN"),
    ("a clock at NaN", lambda t: _heap_emptied(t, float("nan")), "clock"),
    ("a clock at +inf", lambda t: _heap_emptied(t, float("inf")), "clock"),
    ("a clock at 1e300", lambda t: _heap_emptied(t, 1e300), "clock"),
    ("a clock before its start", lambda t: _heap_emptied(t, -5.0), "clock"),
]


# ---- opening ---------------------------------------------------------------------------------


@dataclass
class Opened:
    message: str
    peak_bytes: int  # traced by tracemalloc while the file was opened
    spawned: list[str]


def _with_snapshot(world: World, where: Path, data: bytes) -> Path:
    """A copy of the world's state file whose latest snapshot is `data`, sealed and
    authenticated by the server's own writer."""
    shutil.copytree(world.folder, where)
    path = where / "s.db"
    server, _restored = open_server(path, snapshot_every=None)
    journal = server.journal
    assert journal is not None
    journal.append(Entry("snapshot", server.cp.now, {"world": data}))
    journal.close()
    return path


def _open(path: Path, monkeypatch: pytest.MonkeyPatch) -> Opened:
    """Open the file as `sim serve --state` does, recording any attempt to start a process."""
    spawned: list[str] = []

    def refuse(name: str) -> Callable[..., Any]:
        def attempt(*args: Any, **kwargs: Any) -> Any:
            spawned.append(name)
            raise AssertionError(f"{name} called while opening a state file")
        return attempt

    with monkeypatch.context() as m:
        for name in ("fork", "system", "posix_spawn", "posix_spawnp", "execv", "execve"):
            if hasattr(os, name):
                m.setattr(os, name, refuse(f"os.{name}"))
        m.setattr(subprocess.Popen, "__init__", refuse("subprocess.Popen"))
        tracemalloc.start()
        try:
            with pytest.raises(StateError) as err:
                open_server(path)
            _size, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    return Opened(str(err.value), peak, spawned)


def _genuine_peak(world: World, where: Path) -> int:
    """What opening the world itself from its snapshot costs (tracemalloc's peak)."""
    path = _with_snapshot(world, where, world.genuine)
    tracemalloc.start()
    try:
        server, restored = open_server(path)
        _size, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert restored.snapshot_after > 0
    assert server.journal is not None
    server.journal.close()
    return peak


def _assert_refused_cleanly(opened: Opened, word: str, state: Path, before: set[str],
                            outside: Path) -> None:
    assert "\n" not in opened.message and REFUSED in opened.message, opened.message
    assert word in opened.message, opened.message
    assert opened.spawned == []
    assert not any(outside.iterdir())  # nothing made beside the state file's folder
    assert {p.name for p in state.iterdir()} <= before | {"s.db-wal", "s.db-shm"}


@pytest.mark.parametrize(("what", "craft", "word"), CASES, ids=[c[0] for c in CASES])
def test_a_hostile_snapshot_is_refused_in_one_line(
        world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        what: str, craft: Craft, word: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(outside))
    path = _with_snapshot(world, tmp_path / "state", _pack(craft(_tree(world.genuine))))
    before = {p.name for p in path.parent.iterdir()}
    opened = _open(path, monkeypatch)
    _assert_refused_cleanly(opened, word, path.parent, before, outside)


def test_every_class_the_world_holds_refuses_a_field_it_does_not_declare(
        world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One gadget per class of the snapshot: an object given a field its class lacks."""
    shapes = _tree(world.genuine)[0]["shapes"]
    classes = sorted({name for name, _fields in shapes if not name.startswith("simpy")})
    assert len(classes) >= 20
    refused = 0
    for n, name in enumerate(classes):
        tree = _tree(world.genuine)
        for shape in tree[0]["shapes"]:
            if shape[0] == name:
                shape[1].append("run")
        for e in tree[1]:
            if e[0] == "o" and tree[0]["shapes"][e[1]][0] == name:
                e[2].append("id > /tmp/outside/ran")
        outside = tmp_path / f"outside{n}"
        outside.mkdir()
        path = _with_snapshot(world, tmp_path / f"state{n}", _pack(tree))
        before = {p.name for p in path.parent.iterdir()}
        opened = _open(path, monkeypatch)
        _assert_refused_cleanly(opened, "'run' its class does not declare", path.parent,
                                before, outside)
        refused += 1
    assert refused == len(classes)


def test_every_event_kind_refuses_a_field_of_another_type(world: World) -> None:
    """Each kind of the closed list, given a file path where each of its fields belongs."""
    from sim.api.world_decode import Refused, _check_field

    checked = 0
    for kind, fields in EVENT_KINDS.items():
        for name, spec in fields.items():
            with pytest.raises(Refused, match=f"as its {name}, not a"):
                _check_field(kind, name, spec, Path("/tmp/outside"))
            checked += 1
    assert checked >= 2 * len(EVENT_KINDS)


def _bomb(claimed: int | None, inflated: int = 2 << 30) -> bytes:
    """zlib of `inflated` zero bytes (2 GiB: about 2 MB), saying its tree is `claimed`."""
    z = zlib.compressobj(9)
    chunk = bytes(1 << 24)
    parts = [z.compress(chunk) for _ in range(inflated // len(chunk))]
    body = b"".join(parts) + z.flush()
    size = inflated if claimed is None else claimed
    return world_codec.MAGIC + size.to_bytes(8, "little") + body


@pytest.fixture(scope="module")
def bomb_claiming_the_world(world: World) -> bytes:
    return _bomb(world.tree_size)


@pytest.mark.parametrize("claim", ["its own size", "the world's size", "the most it may"])
def test_a_zlib_bomb_is_refused_before_it_is_inflated(
        world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        bomb_claiming_the_world: bytes, claim: str) -> None:
    """2 GiB of zeros in about 2 MB: refused having allocated at most what it claims.
    Beside what opening the world it claims to be costs, only the file's own bytes are
    held (reading, authenticating and inflating the sealed snapshot holds up to four
    times its bytes at once; any snapshot of that many bytes costs that); one that
    claims the most a snapshot of its bytes may (32 times them) costs that tree too,
    and not twice it."""
    body = bomb_claiming_the_world[len(world_codec.MAGIC) + 8:]
    size = {"its own size": 2 << 30, "the world's size": world.tree_size,
            "the most it may": world_codec.MAX_INFLATION * len(body)}[claim]
    data = world_codec.MAGIC + size.to_bytes(8, "little") + body
    assert 1 << 20 < len(data) < 4 << 20
    outside = tmp_path / "outside"
    outside.mkdir()
    path = _with_snapshot(world, tmp_path / "state", data)
    before = {p.name for p in path.parent.iterdir()}
    opened = _open(path, monkeypatch)
    _assert_refused_cleanly(opened, "bytes", path.parent, before, outside)
    genuine = _genuine_peak(world, tmp_path / "genuine")
    # the sealed row, framed for its MAC, its plaintext, the piece being inflated
    read = 4 * len(data) + (1 << 20)
    claimed = size if claim == "the most it may" else 0  # a tree that large: what it says
    assert opened.peak_bytes < claimed + read + 2 * genuine, (opened.peak_bytes, genuine)
    print(f"{claim}: peak {opened.peak_bytes} bytes traced; opening the world itself "
          f"{genuine}; the file's snapshot {len(data)} bytes")

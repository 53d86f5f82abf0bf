"""A state file changed by someone without its key is refused at start, in one line.

Every attack is crafted with sqlite3 on a real state file (made by a server:
projects, a second key later revoked, snapshots, rows after the last one), as
someone who can write the folder but not read the key would. `open_server` (and,
for two of them, `sim serve --state` as a process) must refuse with one line
naming what is wrong: nothing served, no traceback, the file left as it was.
A key file of another user, or writable by others, is refused the same way.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from sim.api.keys import secret_sha256
from sim.api.restore import open_server
from sim.api.state_file import StateError, list_keys, revoke_key
from tests.reliability.test_persistence import ROOT, Kept, ok

SEED = 5
OTHER_KEY = "sim_" + "o" * 40


def _history(path: Path) -> dict[str, Any]:
    """A state file with a past: two lives, a revoked key, an older snapshot kept aside."""
    kept = Kept(path, {"seed": SEED})
    projects = [ok(kept.api.post("projects", json={"project": {"name": f"a{n}"}}), 201)
                ["project"]["id"] for n in range(4)]
    kept.server.keep_key(kept.server.add_personal_key(OTHER_KEY))
    kept.api.advance(60)
    kept.server.take_snapshot()
    kept.close()
    with closing(sqlite3.connect(path)) as conn:
        old_snapshot = conn.execute("SELECT * FROM snapshot").fetchone()
    other = next(r for r in list_keys(path) if r.sha256 == secret_sha256(OTHER_KEY))
    revoke_key(path, other.id)
    kept.open()
    projects += [ok(kept.api.post("projects", json={"project": {"name": f"b{n}"}}), 201)
                 ["project"]["id"] for n in range(4)]
    kept.server.take_snapshot()
    for n in range(3):  # rows after the last snapshot
        ok(kept.api.post("projects", json={"project": {"name": f"c{n}"}}), 201)
    kept.api.advance(30)
    kept.api.close()
    journal = kept.server.journal
    assert journal is not None
    journal.close()  # no snapshot at the close: rows stay after the latest one
    return {"old_snapshot": old_snapshot, "projects": projects}


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("made")
    (root / "a").mkdir()
    first = _history(root / "a" / "world.db")
    # a second file sealed with the same key (its key file copied before it was created)
    (root / "b").mkdir()
    shutil.copy(root / "a" / "world.db.key", root / "b" / "world.db.key")
    _history(root / "b" / "world.db")
    return {"root": root, **first}


@pytest.fixture
def state(made: dict[str, Any], tmp_path: Path) -> Path:
    """A fresh copy of the made file (with its key and `.seq`)."""
    for name in ("world.db", "world.db.key", "world.db.seq"):
        shutil.copy(made["root"] / "a" / name, tmp_path / name)
    return tmp_path / "world.db"


def other_file(made: dict[str, Any]) -> Path:
    return made["root"] / "b" / "world.db"


def edit(path: Path, *statements: tuple[str, tuple[Any, ...]]) -> None:
    with closing(sqlite3.connect(path)) as conn:
        for sql, args in statements:
            conn.execute(sql, args)
        conn.commit()


def rows(path: Path, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(sql, args).fetchall()


def last_seq(path: Path) -> int:
    return rows(path, "SELECT max(seq) FROM journal")[0][0]


def request_rows(path: Path) -> list[int]:
    return [r[0] for r in rows(path, "SELECT seq FROM journal WHERE kind = 'request' "
                                     "ORDER BY seq")]


def insert_at(path: Path, seq: int, values: dict[str, Any]) -> None:
    """A row put in at `seq`, the rows from there on moved one down, the last one dropped:
    the journal ends at the row number meta says."""
    names = ", ".join(values)
    edit(path,
         ("DELETE FROM journal WHERE seq = (SELECT max(seq) FROM journal)", ()),
         ("UPDATE journal SET seq = -seq WHERE seq >= ?", (seq,)),
         ("UPDATE journal SET seq = 1 - seq WHERE seq < 0", ()),
         (f"INSERT INTO journal (seq, {names}) VALUES (?, {', '.join('?' * len(values))})",
          (seq, *values.values())))


def copied_row(path: Path, seq: int) -> dict[str, Any]:
    with closing(sqlite3.connect(path)) as conn:
        conn.row_factory = sqlite3.Row
        row = conn.execute("SELECT * FROM journal WHERE seq = ?", (seq,)).fetchone()
        return {k: row[k] for k in row.keys() if k != "seq"}


# ---- the attacks -----------------------------------------------------------------------------


def _key_inserted(path: Path, made: dict[str, Any]) -> None:
    edit(path, ("INSERT INTO keys VALUES (99, ?, 'personal', 'user-1', NULL, NULL, 'mine', "
                "NULL, 0, '2026-01-01')", (hashlib.sha256(b"sim_mine").hexdigest(),)))


def _key_unrevoked(path: Path, made: dict[str, Any]) -> None:
    assert rows(path, "SELECT count(*) FROM keys WHERE revoked = 1")[0][0] == 1
    edit(path, ("UPDATE keys SET revoked = 0", ()))


def _row_rewritten(path: Path, made: dict[str, Any]) -> None:
    """A project's creation turned into the DELETE of another project."""
    seq = request_rows(path)[-1]
    victim = made["projects"][0]
    edit(path, ("UPDATE journal SET method = 'DELETE', route = '/api/v2/projects/{project_id}',"
                " path = ?, params = ?, body = NULL WHERE seq = ?",
                (f"/api/v2/projects/{victim}", json.dumps({"project_id": victim}), seq)))


def _row_inserted(path: Path, made: dict[str, Any]) -> None:
    """A DELETE of a project put in the middle, with a MAC copied from a genuine row."""
    seq = request_rows(path)[3]
    row = copied_row(path, seq)
    victim = made["projects"][0]
    row.update(method="DELETE", route="/api/v2/projects/{project_id}",
               path=f"/api/v2/projects/{victim}", params=json.dumps({"project_id": victim}),
               body=None)
    insert_at(path, seq + 1, row)


def _row_deleted(path: Path, made: dict[str, Any]) -> None:
    edit(path, ("DELETE FROM journal WHERE seq = ?", (request_rows(path)[2],)))


def _rows_reordered(path: Path, made: dict[str, Any]) -> None:
    a, b = request_rows(path)[1:3]
    edit(path, ("UPDATE journal SET seq = -1 WHERE seq = ?", (a,)),
         ("UPDATE journal SET seq = ? WHERE seq = ?", (a, b)),
         ("UPDATE journal SET seq = ? WHERE seq = -1", (b,)))


def _faults_injected(path: Path, made: dict[str, Any]) -> None:
    """A world that fails every operation (a rate the API itself refuses) from a row on."""
    seq = request_rows(path)[-2]
    row = copied_row(path, seq)
    args = json.dumps({"operation_failure_rate": 1.0, "extra_latency_ms": None, "outage": None,
                       "clear_outages": False})
    insert_at(path, seq, {"kind": "faults", "t": row["t"], "wall": row["wall"], "args": args,
                          "mac": row["mac"]})


def _reset_injected(path: Path, made: dict[str, Any]) -> None:
    seq = request_rows(path)[-2]
    insert_at(path, seq, {"kind": "reset", "t": 0.0, "wall": "2026-01-01",
                          "mac": copied_row(path, seq)["mac"]})


def _old_snapshot_back(path: Path, made: dict[str, Any]) -> None:
    edit(path, ("DELETE FROM snapshot", ()),
         ("INSERT INTO snapshot VALUES (?, ?, ?, ?, ?)", tuple(made["old_snapshot"])))


def _after_edited(path: Path, made: dict[str, Any]) -> None:
    edit(path, ("UPDATE snapshot SET after = ?", (last_seq(path),)))


def _tail_deleted(path: Path, made: dict[str, Any]) -> None:
    keep = request_rows(path)[-3] - 1
    edit(path, ("DELETE FROM journal WHERE seq > ?", (keep,)),
         ("UPDATE meta SET value = ? WHERE name = 'rows'", (str(keep),)))


def _snapshot_swapped(path: Path, made: dict[str, Any]) -> None:
    theirs = rows(other_file(made), "SELECT * FROM snapshot")[0]
    edit(path, ("DELETE FROM snapshot", ()),
         ("INSERT INTO snapshot VALUES (?, ?, ?, ?, ?)", theirs))


def _body_swapped(path: Path, made: dict[str, Any]) -> None:
    """The sealed body of the same row of another file with the same key (and its MAC)."""
    seq = request_rows(path)[-1]
    body, mac = rows(other_file(made), "SELECT body, mac FROM journal WHERE seq = ?", (seq,))[0]
    assert body is not None
    edit(path, ("UPDATE journal SET body = ?, mac = ? WHERE seq = ?", (body, mac, seq)))


def _scenario_pointed_elsewhere(path: Path, made: dict[str, Any]) -> None:
    other = path.with_name("mine.yaml")
    other.write_text("seed: 1\n")
    edit(path, ("INSERT OR REPLACE INTO meta VALUES ('scenario_path', ?)", (str(other),)),
         ("INSERT OR REPLACE INTO meta VALUES ('scenario_sha256', ?)",
          (hashlib.sha256(other.read_bytes()).hexdigest(),)))


ATTACKS: list[tuple[str, Callable[[Path, dict[str, Any]], None], str]] = [
    ("a keys row inserted", _key_inserted, "its keys table was changed"),
    ("a revoked key set revoked=0", _key_unrevoked, "its keys table was changed"),
    ("a journal row rewritten", _row_rewritten, r"journal row \d+ is not the row"),
    ("a journal row inserted", _row_inserted, r"journal row \d+ is not the row"),
    ("a journal row deleted", _row_deleted, r"journal row \d+ is not the row"),
    ("journal rows reordered", _rows_reordered, r"journal row \d+ is not the row"),
    ("a faults row injected", _faults_injected, r"journal row \d+ is not the row"),
    ("a reset row injected", _reset_injected, r"journal row \d+ is not the row"),
    ("an old snapshot put back", _old_snapshot_back, "its snapshot is not the one"),
    ("the snapshot's after edited", _after_edited, "its snapshot is not the one"),
    ("tail rows deleted, meta.rows fixed", _tail_deleted, "its meta was changed"),
    ("a snapshot from another file", _snapshot_swapped, "its snapshot is not the one"),
    ("a sealed body from another file", _body_swapped, r"journal row \d+ is not the row"),
    ("meta's scenario pointed at another YAML", _scenario_pointed_elsewhere,
     "its meta was changed"),
]


def refused(path: Path) -> str:
    """The one line `open_server` refuses `path` with; the file is left as it was."""
    before = path.read_bytes()
    with pytest.raises(StateError) as caught:
        server, _ = open_server(path)
        server.close_state()  # not reached when refused
    assert path.read_bytes() == before
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(path))
    return message


@pytest.mark.parametrize(("name", "attack", "expected"), ATTACKS, ids=[a[0] for a in ATTACKS])
def test_an_attack_is_refused_at_start_in_one_line(
        state: Path, made: dict[str, Any], name: str, attack: Callable[..., None],
        expected: str) -> None:
    attack(state, made)
    message = refused(state)
    assert re.search(expected, message), message
    assert "start over with --new" in message


def test_the_file_as_made_starts_with_its_world(state: Path, made: dict[str, Any]) -> None:
    """The control: the copy the attacks start from is whole, and restores every project."""
    server, restored = open_server(state)
    try:
        assert restored.snapshot_after > 0 and restored.entries > 3
        assert set(made["projects"]) <= set(server.cp.projects)
    finally:
        server.close_state()


def test_a_file_of_the_format_before_is_refused_with_new_as_the_way_on(state: Path) -> None:
    edit(state, ("UPDATE meta SET value = '2' WHERE name = 'format'", ()))
    assert "state format 2 is not 3" in refused(state)


def test_the_seed_changed_in_meta_is_refused(state: Path) -> None:
    edit(state, ("UPDATE meta SET value = '6' WHERE name = 'seed'", ()))
    assert "its meta was changed" in refused(state)


def test_a_key_file_others_can_write_is_refused(state: Path) -> None:
    key = state.with_name("world.db.key")
    for mode in (0o620, 0o602):
        key.chmod(mode)
        assert "can be written by group or others" in refused(state)
    key.chmod(0o600)
    open_server(state)[0].close_state()


@pytest.mark.skipif(os.getuid() != 0, reason="chown to another user needs root")
def test_a_key_file_of_another_user_is_refused(state: Path) -> None:
    key = state.with_name("world.db.key")
    os.chown(key, 65534, -1)  # nobody
    assert "is owned by uid 65534, not by the user running sim" in refused(state)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("attack", [_key_inserted, _rows_reordered], ids=lambda a: a.__name__)
def test_sim_serve_refuses_a_changed_file_in_one_line_and_serves_nothing(
        state: Path, made: dict[str, Any], attack: Callable[..., None]) -> None:
    attack(state, made)
    port = _free_port()
    r = subprocess.run([sys.executable, "-m", "sim", "serve", "--state", str(state),
                        "--port", str(port)], cwd=ROOT, capture_output=True, text=True,
                       timeout=120, env={k: v for k, v in os.environ.items()
                                         if k != "SIM_STATE_KEY"})
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
    assert "start over with --new" in r.stderr and r.stdout == ""
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


def test_a_column_dropped_is_refused_in_one_line(state: Path) -> None:
    from sim.api.integrity import JOURNAL_COLUMNS

    edit(state, (f"CREATE TABLE j AS SELECT {', '.join(JOURNAL_COLUMNS)} FROM journal", ()),
         ("DROP TABLE journal", ()), ("ALTER TABLE j RENAME TO journal", ()))
    assert "not a state file of this version of sim" in refused(state)

"""The state file at rest: no secret in it, revocations that last, snapshots, hostile files.

In process (`open_server`), on a real file:
- every secret a client sends or is given (OAuth client secrets, an SMTP
  password, SDK keys, new API keys) is absent from the file, its `-wal` and
  `.seq`, while the server runs and after it stops; the file and its key are 0600;
- a revoked key is refused at once and after a restart, by HTTP, by the
  library and when given again; a second revoke says so;
- a snapshot bounds what a restart replays, and the restored world is equal;
- every hostile file of the table in `sim.api.state_file` is refused with one
  line naming it, and `start_over` moves it aside;
- a disk that fills up is named as the cause in the log; nothing is acknowledged.
"""

from __future__ import annotations

import base64
import logging
import os
import shutil
import sqlite3
import stat
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path

import pytest

from sim.api import in_process_client
from sim.api.restore import open_server
from sim.api.sealing import ENV
from sim.api.state_file import StateError, list_keys, revoke_key, start_over
from tests.reliability.test_persistence import KEY, ROOT, Kept, busy_session, digest, ok

SEED = 5


@pytest.fixture
def kept(tmp_path: Path) -> Iterator[Kept]:
    k = Kept(tmp_path / "state.db", {"seed": SEED})
    yield k
    k.close()


def stored_bytes(path: Path) -> bytes:
    """The state file and every companion of it (`-wal`, `.seq`), as they are on disk now."""
    return b"".join(p.read_bytes() for p in sorted(path.parent.glob(path.name + "*"))
                    if not p.name.endswith(".key"))


def secret_session(kept: Kept) -> list[str]:
    """Writes that carry secrets, and answers that hold some. Every secret seen."""
    api = kept.api
    made = ok(api.post("projects", json={"project": {"name": "s"}}), 201)
    pid, main = made["project"]["id"], made["branch"]["id"]
    secrets = []
    integ = ok(api.post("projects/auth/create", json={"auth_provider": "stack",
                                                      "project_id": pid, "branch_id": main}), 201)
    secrets.append(integ["secret_server_key"])
    again = ok(api.post("projects/auth/keys", json={"auth_provider": "stack",
                                                    "project_id": pid}), 201)
    secrets.append(again["secret_server_key"])
    for n in range(2):  # the replaced secret must not stay behind either
        secret = f"oauth-client-secret-{n}-q8Z3vX1"
        ok(api.post(f"projects/{pid}/auth/oauth_providers",
                    json={"id": "github", "client_id": "c", "client_secret": secret})
           if n == 0 else
           api.patch(f"projects/{pid}/auth/oauth_providers/github",
                     json={"client_secret": secret}))
        secrets.append(secret)
    password = "smtp-password-Jw7Tq2"
    ok(api.patch(f"projects/{pid}/auth/email_server", json={
        "type": "standard", "host": "smtp.example.com", "port": 587, "username": "mailer",
        "password": password, "sender_email": "noreply@example.com", "sender_name": "S"}))
    secrets.append(password)
    created = ok(api.post("api_keys", json={"key_name": "ci"}))
    secrets += [created["key"], KEY]
    return secrets


def test_no_secret_is_in_the_file_its_wal_or_seq(kept: Kept) -> None:
    secrets = secret_session(kept)
    kept.server.take_snapshot()  # the world (with every secret) goes into the file, sealed
    ok(kept.api.get("projects"))
    running = stored_bytes(kept.path)
    assert len(running) > 10_000
    before = digest(kept.server.cp)
    kept.server.close_state()
    closed = stored_bytes(kept.path)
    for secret in secrets:
        for form in (secret.encode(), secret.encode("utf-16-le"),
                     base64.b64encode(secret.encode())):
            assert form not in running and form not in closed, secret
    for path in (kept.path, kept.path.with_name("state.db.key")):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    kept.open()  # the sealed snapshot opens again with the key: the same world
    assert digest(kept.server.cp) == before


def test_the_key_may_come_from_the_environment(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, base64.urlsafe_b64encode(b"k" * 32).decode())
    kept = Kept(tmp_path / "env.db", {"seed": SEED})
    ok(kept.api.post("projects", json={"project": {"name": "e"}}), 201)
    kept.close()
    assert not (tmp_path / "env.db.key").exists()
    monkeypatch.setenv(ENV, base64.urlsafe_b64encode(b"x" * 32).decode())
    with pytest.raises(StateError, match="does not open it"):
        open_server(kept.path)
    monkeypatch.delenv(ENV)
    with pytest.raises(StateError, match="key file .* is missing"):
        open_server(kept.path)


# ---- revocation --------------------------------------------------------------------------------


def test_a_revoked_key_stays_revoked_after_a_restart(kept: Kept) -> None:
    api = kept.api
    made = ok(api.post("api_keys", json={"key_name": "deploy"}))
    other = ok(api.post("api_keys", json={"key_name": "spare"}))
    listed = {k["name"]: k["id"] for k in ok(api.get("api_keys"))}
    assert {"deploy", "spare"} <= set(listed) and made["id"] == listed["deploy"]
    bearer = {"authorization": f"Bearer {made['key']}"}
    assert api.get("projects", headers=bearer).status_code == 200
    revoked = ok(api.delete(f"api_keys/{made['id']}"))
    assert revoked["revoked"] is True and revoked["name"] == "deploy"
    assert api.get("projects", headers=bearer).status_code == 401  # at once
    assert api.delete(f"api_keys/{made['id']}").status_code == 404  # a second time
    library = kept.server.add_personal_key("sim_library_key_0123456789abcdef")
    kept.server.keep_key(library)
    assert kept.server.keys.revoke(library.secret) is True
    kept.restart()
    api = kept.api
    assert api.get("projects", headers=bearer).status_code == 401
    assert api.get("projects", headers={"authorization": f"Bearer {library.secret}"}
                   ).status_code == 401
    assert kept.server.keys.revoke(library.secret) is False  # already revoked, also now
    assert api.get("projects", headers={"authorization": f"Bearer {other['key']}"}
                   ).status_code == 200  # the spare was created, never revoked
    kept.server.add_personal_key(library.secret)  # given again (--api-key, a scenario)
    assert api.get("projects", headers={"authorization": f"Bearer {library.secret}"}
                   ).status_code == 401
    assert {k["name"] for k in ok(api.get("api_keys"))} >= {"spare"}
    assert "deploy" not in {k["name"] for k in ok(api.get("api_keys"))}


def test_keys_can_be_listed_and_revoked_with_the_server_stopped(kept: Kept) -> None:
    made = ok(kept.api.post("api_keys", json={"key_name": "offline"}))
    kept.close()
    records = {r.name: r for r in list_keys(kept.path)}
    assert not records["offline"].revoked
    revoke_key(kept.path, made["id"])
    with pytest.raises(StateError, match="already revoked"):
        revoke_key(kept.path, made["id"])
    assert {r.name: r for r in list_keys(kept.path)}["offline"].revoked
    kept.open()
    assert kept.api.get("projects", headers={"authorization": f"Bearer {made['key']}"}
                        ).status_code == 401


# ---- snapshots -----------------------------------------------------------------------------------


def test_a_snapshot_bounds_what_a_restart_replays(tmp_path: Path) -> None:
    every = 12
    kept = Kept(tmp_path / "snap.db", {"seed": SEED, "snapshot_every": every})
    try:
        busy_session(kept.api)
        busy_session(kept.api)
        rows = int(kept.server.journal.meta()["rows"])  # type: ignore[union-attr]
        assert rows > 4 * every
        before = digest(kept.server.cp)
        kept.server.journal.close()  # as a crash: no snapshot at the stop  # type: ignore[union-attr]
        kept.open()
        assert kept.restored.snapshot_after > 0
        assert kept.restored.entries < 2 * every  # the last copy may not have landed
        assert digest(kept.server.cp) == before
        kept.server.close_state()  # a clean stop snapshots: nothing to replay
        kept.open()
        assert kept.restored.entries == 0 and digest(kept.server.cp) == before
        kept.server.cp.run_until(kept.server.cp.now + 86_400)  # and the world runs on alike
        after = digest(kept.server.cp)
        kept.close()
        kept.open(snapshot_every=None)
        kept.server.cp.run_until(kept.server.cp.now + 86_400)
        assert digest(kept.server.cp) == after
    finally:
        kept.close()


# ---- hostile files ---------------------------------------------------------------------------------


def _made(tmp_path: Path, crash: bool = False) -> Path:
    """A state file with some history; `crash`: left as a killed server leaves it."""
    kept = Kept(tmp_path / "h.db", {"seed": SEED})
    for n in range(30):
        ok(kept.api.post("projects", json={"project": {"name": f"p{n}"}}), 201)
    if crash:
        kept.api.close()
        return kept.path  # the journal stays open: the -wal is not folded in
    kept.close()
    return kept.path


def _copy(src: Path, dst_dir: Path, *suffixes: str) -> Path:
    dst_dir.mkdir()
    for suffix in ("", *suffixes):
        shutil.copy(src.with_name(src.name + suffix), dst_dir / (src.name + suffix))
    return dst_dir / src.name


def _empty(tmp: Path) -> Path:
    (tmp / "e.db").write_bytes(b"")
    return tmp / "e.db"


def _garbage(tmp: Path) -> Path:
    (tmp / "g.db").write_bytes(os.urandom(8192))
    return tmp / "g.db"


def _foreign(tmp: Path) -> Path:
    with closing(sqlite3.connect(tmp / "f.db")) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        conn.commit()
    return tmp / "f.db"


def _random_pages(tmp: Path) -> Path:
    path = _made(tmp)
    data = bytearray(path.read_bytes())
    assert len(data) > 3 * 4096
    data[4096:len(data)] = os.urandom(len(data) - 4096)  # every page past the first
    path.write_bytes(bytes(data))
    return path


def _wal_deleted(tmp: Path) -> Path:
    path = _made(tmp, crash=True)
    return _copy(path, tmp / "copy", ".key", ".seq")


def _wal_cut(tmp: Path) -> Path:
    path = _made(tmp, crash=True)
    copy = _copy(path, tmp / "copy", ".key", ".seq", "-wal")
    wal = copy.with_name(copy.name + "-wal")
    wal.write_bytes(wal.read_bytes()[: wal.stat().st_size // 2])
    return copy


def _main_file_alone_while_open(tmp: Path) -> Path:
    path = _made(tmp, crash=True)
    return _copy(path, tmp / "copy", ".key")


def _no_key(tmp: Path) -> Path:
    path = _made(tmp)
    path.with_name(path.name + ".key").unlink()
    return path


def _rows_removed(tmp: Path) -> Path:
    path = _made(tmp)
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("DELETE FROM journal WHERE seq > 20")
        conn.commit()
    return path


def _main_file_gone(tmp: Path) -> Path:
    path = _made(tmp, crash=True)
    copy = _copy(path, tmp / "copy", "-wal", ".key")
    copy.unlink()
    return copy


HOSTILE: list[tuple[str, Callable[[Path], Path], str]] = [
    ("an empty file", _empty, "an empty file"),
    ("random bytes", _garbage, "not an SQLite database"),
    ("another program's SQLite file", _foreign, "not a state file of sim"),
    ("random bytes over a checkpointed file", _random_pages, "damaged|not a state file"),
    ("the -wal deleted after a crash", _wal_deleted, "holds \\d+ commits but its last run"),
    ("the -wal cut in half", _wal_cut, "holds \\d+ commits but its last run"),
    ("the main file copied alone while open", _main_file_alone_while_open,
     "a server had it open"),
    ("the key file missing", _no_key, "key file .* is missing"),
    ("journal rows removed", _rows_removed, "rows were removed"),
    ("the main file gone, its -wal left", _main_file_gone, "does not exist but"),
]


@pytest.mark.parametrize(("case", "make", "message"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_a_hostile_file_is_refused_never_started_fresh(tmp_path: Path, case: str,
                                                       make: Callable[[Path], Path],
                                                       message: str) -> None:
    path = make(tmp_path)
    before = {p.name: p.read_bytes() for p in path.parent.glob(path.name + "*")}
    with pytest.raises(StateError, match=message) as refused:
        open_server(path)
    assert "\n" not in str(refused.value) and str(path) in str(refused.value)
    after = {p.name: p.read_bytes() for p in path.parent.glob(path.name + "*")}
    assert after == before, "refusing changed the files"
    moved = start_over(path)  # --new: the one way to start over; nothing deleted
    assert moved and not path.exists()
    server, restored = open_server(path)
    assert restored.created and server.cp.list_projects() == []
    server.close_state()


def test_a_full_disk_is_named_and_nothing_is_acknowledged(kept: Kept,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="sim.api.journal")
    conn = kept.server.journal._conn  # type: ignore[union-attr]
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")  # no room for one more page
    names = []
    for n in range(40):  # until a commit needs a new page
        r = kept.api.post("projects", json={"project": {"name": f"full-{n}-" + "x" * 200}})
        names.append(f"full-{n}")
        if r.status_code != 201:
            break
    assert (r.status_code, r.json()["code"]) == (503, "SERVICE_UNAVAILABLE")
    assert "database or disk is full" in caplog.text
    assert "cannot rollback" not in caplog.text
    r = kept.api.get("projects")
    assert r.status_code == 503 and "state file" in r.json()["message"]


def test_a_nul_byte_in_sql_is_a_400_naming_sql(kept: Kept) -> None:
    made = ok(kept.api.post("projects", json={"project": {"name": "q"}}), 201)
    ok(kept.api.post("projects/auth/create", json={
        "auth_provider": "stack", "project_id": made["project"]["id"],
        "branch_id": made["branch"]["id"]}), 201)
    r = kept.api.sim("POST", "auth/query", json={"project_id": made["project"]["id"],
                                                 "sql": "SELECT 1\x00; DROP TABLE x"})
    assert r.status_code == 400
    assert r.json()["message"].startswith("sql: ") and "NUL" in r.json()["message"]


def test_405_names_every_method_of_the_path(tmp_path: Path) -> None:
    from sim.api import SimServer

    api = in_process_client(SimServer(seed=SEED))
    r = api.options("projects")
    assert r.status_code == 405
    assert {m.strip() for m in r.headers["allow"].split(",")} == {"GET", "POST"}
    assert "GET, POST" in r.json()["message"]
    r = api.put("projects/p-1/endpoints/ep-1")
    assert (r.status_code, r.headers["allow"]) == (405, "DELETE, GET, PATCH")




def test_a_scenario_world_snapshots_and_runs_on_alike(tmp_path: Path) -> None:
    """A scenario's fleet (workloads, scripted actions) survives a snapshot: restored and run
    on for a simulated day, it equals the world that never stopped."""
    scenario = tmp_path / "dev-branches.yaml"
    shutil.copy(ROOT / "scenarios" / "dev-branches.yaml", scenario)
    kept = Kept(tmp_path / "sc.db", {"scenario_path": scenario})
    try:
        kept.api.advance(3600)
        twin = Kept(tmp_path / "twin.db", {"scenario_path": scenario})
        twin.api.advance(3600)
        kept.server.close_state()
        kept.open()
        assert kept.restored.snapshot_after > 0 and kept.restored.entries == 0
        for k in (kept, twin):
            k.api.advance(86_400)
        assert digest(kept.server.cp) == digest(twin.server.cp)
        twin.close()
    finally:
        kept.close()


def test_a_snapshot_that_cannot_be_loaded_falls_back_to_the_whole_journal(
        kept: Kept, monkeypatch: pytest.MonkeyPatch) -> None:
    """A snapshot of another version of sim (genuine, but not loadable here) is set aside with
    a warning: the journal holds the whole history and replays to the same world."""
    from sim.api import snapshot

    busy_session(kept.api)
    before = digest(kept.server.cp)
    kept.server.close_state()

    def another_version(data: bytes) -> object:
        raise snapshot.Stale("made by another version")

    monkeypatch.setattr(snapshot, "loads", another_version)
    kept.open()
    assert kept.restored.snapshot_after == 0 and kept.restored.entries > 20
    assert digest(kept.server.cp) == before

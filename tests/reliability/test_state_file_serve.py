"""`sim serve --state` as a process: a clean stop on SIGTERM and SIGINT, stalled bodies, keys.

- SIGTERM and SIGINT drain, snapshot, fold the `-wal` into the file and exit 0:
  the main file copied alone (as a backup does) starts with every project;
- a hostile file stops the start with one line and exit 2; `--new` moves it aside;
- a body that never arrives whole gets 408 and its connection is closed;
- `sim keys list` / `sim keys revoke` work on a stopped server's file.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reliability.test_persistence_support import KEY, ROOT, Serve

SIGNALS = [signal.SIGTERM, signal.SIGINT]


def sim(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sim", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_a_signal_stops_cleanly_and_the_main_file_alone_holds_everything(
        tmp_path: Path, sig: signal.Signals) -> None:
    state = tmp_path / "world.db"
    serve = Serve("--state", str(state), "--rate-limit", "off", log=tmp_path / "serve.log")
    with serve.client() as client:
        ids = {client.post("projects", json={"project": {"name": f"p{n}"}}).json()["project"]["id"]
               for n in range(12)}
    serve.proc.send_signal(sig)
    assert serve.proc.wait(60) == 0, serve.log_path.read_text()
    serve.log.close()
    wal = state.with_name("world.db-wal")
    assert not wal.exists() or wal.stat().st_size == 0
    backup = tmp_path / "backup"
    backup.mkdir()
    for name in ("world.db", "world.db.key"):  # what a backup of the file and its key copies
        shutil.copy(tmp_path / name, backup / name)
    again = Serve("--state", str(backup / "world.db"), log=tmp_path / "again.log")
    try:
        with again.client() as client:
            listed = {p["id"] for p in client.get("projects", params={"limit": 100}
                                                  ).json()["projects"]}
        assert listed == ids
        out = again.log_path.read_text()
        assert "new state file" not in out and "snapshot after row" in out
    finally:
        again.stop()


def test_a_hostile_file_stops_the_start_in_one_line_and_new_starts_over(tmp_path: Path) -> None:
    state = tmp_path / "junk.db"
    state.write_bytes(b"")
    r = sim("serve", "--state", str(state), "--port", "1")
    assert r.returncode == 2 and "an empty file" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert state.read_bytes() == b""
    serve = Serve("--state", str(state), "--new", log=tmp_path / "new.log")
    serve.stop()
    assert "kept the old file aside as junk.db.old-" in serve.log_path.read_text()
    assert [p.name for p in tmp_path.glob("junk.db.old-*")]


def test_a_stalled_body_is_408_and_the_connection_closed(tmp_path: Path) -> None:
    serve = Serve("--body-timeout", "0.5", "--rate-limit", "off", log=tmp_path / "serve.log")
    try:
        stalled = []
        for _ in range(20):  # 20 clients announce 100 bytes and send 10
            s = socket.create_connection(("127.0.0.1", serve.port), timeout=30)
            s.sendall(b"POST /api/v2/projects HTTP/1.1\r\nhost: x\r\n"
                      b"authorization: Bearer " + KEY.encode() + b"\r\n"
                      b"content-type: application/json\r\ncontent-length: 100\r\n\r\n"
                      b'{"project"')
            stalled.append(s)
        for s in stalled:
            answer = b""
            while chunk := s.recv(4096):  # until the server closes the connection
                answer += chunk
            s.close()
            assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
            assert b"REQUEST_TIMEOUT" in answer
        with serve.client() as client:  # nothing was created by a half-sent body
            assert client.get("projects").json()["projects"] == []
    finally:
        serve.stop()


def test_keys_of_a_stopped_server_are_listed_and_revoked_from_the_command_line(
        tmp_path: Path) -> None:
    state = tmp_path / "k.db"
    serve = Serve("--state", str(state), log=tmp_path / "serve.log")
    with serve.client() as client:
        made = client.post("api_keys", json={"key_name": "robot"}).json()
    serve.stop()
    listed = sim("keys", "list", "--state", str(state))
    assert listed.returncode == 0 and "robot" in listed.stdout and made["key"] not in listed.stdout
    revoked = sim("keys", "revoke", str(made["id"]), "--state", str(state))
    assert revoked.returncode == 0, revoked.stderr
    assert "revoked" in sim("keys", "list", "--state", str(state)).stdout
    again = sim("keys", "revoke", str(made["id"]), "--state", str(state))
    assert again.returncode == 2 and "already revoked" in again.stderr
    serve = Serve("--state", str(state), log=tmp_path / "again.log")
    try:
        with serve.client() as client:
            assert client.get("projects").status_code == 200  # --api-key KEY: still accepted
            assert client.get("projects", headers={"authorization": f"Bearer {made['key']}"}
                              ).status_code == 401
    finally:
        serve.stop()
    r = sim("serve", "--state", str(state), "--api-key", made["key"], "--port", "1")
    assert r.returncode == 2 and "revoked" in r.stderr

"""`sim serve --state` over many lives: what a restart replays, and the key given at start.

- repeated SIGKILLs between writes: every restart replays fewer than twice
  `--snapshot-every` rows (the count of rows since the snapshot is the file's, not
  restarted at 0; a periodic snapshot still being written by its copy is lost to a kill),
  and a start that replayed more than `--snapshot-every` takes a snapshot at once;
- a key given at start (`--api-key`, `--api-key-file`, `$SIM_API_KEY`) replaces the key
  given at the previous start: the old one is refused after the restart; the banner names
  the live keys and never shows a secret; the key from a file or the environment is not in
  the process list.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import httpx

from tests.reliability.test_persistence_support import KEY, ROOT, Serve

EVERY = 20  # --snapshot-every of these tests
WRITES = 15  # per life: fewer than EVERY, so a count restarted at 0 never reaches it
LIVES = 6
REPLAYED = re.compile(r"\((\d+) journal entries\) replayed")


def test_repeated_crashes_replay_a_bounded_number_of_rows(tmp_path: Path) -> None:
    state = tmp_path / "world.db"
    replayed: list[int] = []
    made = 0
    for life in range(LIVES):
        serve = Serve("--state", str(state), "--rate-limit", "off", "--snapshot-every",
                      str(EVERY), log=tmp_path / f"life{life}.log")
        with serve.client() as client:
            for _ in range(WRITES):
                r = client.post("projects", json={"project": {"name": f"p{made}"}})
                assert r.status_code == 201, r.text
                made += 1
        serve.kill()  # SIGKILL between writes
        banner = serve.log_path.read_text()
        if life:
            replayed.append(int(REPLAYED.search(banner)[1]))  # type: ignore[index]
    serve = Serve("--state", str(state), "--snapshot-every", str(EVERY),
                  log=tmp_path / "last.log")
    try:
        replayed.append(int(REPLAYED.search(serve.log_path.read_text())[1]))  # type: ignore[index]
        with serve.client() as client:
            listed = client.get("projects", params={"limit": 400}).json()["projects"]
    finally:
        serve.stop()
    print(f"rows replayed by {LIVES} restarts after SIGKILL ({WRITES} writes a life, "
          f"--snapshot-every {EVERY}): {replayed}")
    assert len(listed) == made == LIVES * WRITES  # nothing acknowledged was lost
    # a count that restarted at 0 would never snapshot: 15, 30, 45, 60, 75, 90. A periodic
    # snapshot is written by a forked copy after its row: a kill right after that row loses
    # it, and the next start replays from the one before (fewer than 2 x EVERY rows), then
    # snapshots at once before serving
    assert max(replayed) < 2 * EVERY, replayed


def test_a_start_that_replayed_many_rows_takes_a_snapshot_at_once(tmp_path: Path) -> None:
    from tests.reliability.test_persistence import Kept

    kept = Kept(tmp_path / "w.db", {"seed": 3, "snapshot_every": None})
    for n in range(30):
        assert kept.api.post("projects", json={"project": {"name": f"p{n}"}}).status_code == 201
    kept.close()  # as a crash: no snapshot at the stop
    kept.open(snapshot_every=EVERY)
    assert kept.restored.entries >= 30 > EVERY
    kept.close()  # a crash before any request: the start's snapshot is in the file
    kept.open(snapshot_every=EVERY)
    try:
        assert kept.restored.entries == 0 and kept.restored.snapshot_after >= 30
    finally:
        kept.close()


def _status(serve: Serve, key: str) -> int:
    with httpx.Client(base_url=f"{serve.base}/api/v2/", timeout=30,
                      headers={"authorization": f"Bearer {key}"}) as client:
        return client.get("projects").status_code


def test_a_start_key_replaces_the_previous_one_given_any_of_three_ways(tmp_path: Path) -> None:
    state = tmp_path / "k.db"
    k2, k3, k4 = (f"sim_second_start_key_{n}_0123456789" for n in (2, 3, 4))
    serve = Serve("--state", str(state), log=tmp_path / "one.log")  # --api-key KEY
    with serve.client() as client:
        made = client.post("api_keys", json={"key_name": "robot"}).json()
        reserved = client.post("api_keys", json={"key_name": "sim serve --api-key"})
        assert reserved.status_code == 400 and "key_name" in reserved.json()["message"]
    serve.stop()

    serve = Serve("--state", str(state), log=tmp_path / "two.log", key=k2)  # --api-key K2
    try:
        assert _status(serve, k2) == 200
        assert _status(serve, KEY) == 401  # replaced: refused at once
        assert _status(serve, made["key"]) == 200  # a key made over HTTP stays
    finally:
        serve.kill()  # a crash: the revocation was committed before the banner
    banner = serve.log_path.read_text()
    assert "replaced by this one, revoked" in banner and k2 not in banner

    serve = Serve("--state", str(state), log=tmp_path / "three.log", key=k3,
                  key_option=False, env={"SIM_API_KEY": k3})
    try:
        assert _status(serve, k3) == 200 and _status(serve, k2) == 401
        assert _status(serve, KEY) == 401
        cmdline = Path(f"/proc/{serve.proc.pid}/cmdline").read_bytes()
        assert k3.encode() not in cmdline
    finally:
        serve.stop()
    banner = serve.log_path.read_text()
    assert "from $SIM_API_KEY, sim_seco…" in banner and k3 not in banner
    assert "robot" in banner and "sim serve --api-key" in banner

    key_file = tmp_path / "key.txt"
    key_file.write_text(k4 + "\n")
    serve = Serve("--state", str(state), "--api-key-file", str(key_file),
                  log=tmp_path / "four.log", key=k4, key_option=False)
    try:
        assert _status(serve, k4) == 200 and _status(serve, k3) == 401
        assert k4.encode() not in Path(f"/proc/{serve.proc.pid}/cmdline").read_bytes()
    finally:
        serve.stop()
    banner = serve.log_path.read_text()
    assert "from --api-key-file" in banner and k4 not in banner

    serve = Serve("--state", str(state), log=tmp_path / "five.log", key=k4, key_option=False)
    try:  # no key given: the last start key is still accepted, nothing replaced
        assert _status(serve, k4) == 200 and _status(serve, made["key"]) == 200
    finally:
        serve.stop()
    assert "replaced" not in serve.log_path.read_text()


def test_a_bad_start_key_is_refused_in_one_line(tmp_path: Path) -> None:
    def serve(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "sim", "serve", "--port", "1", *args],
                              cwd=ROOT, capture_output=True, text=True, timeout=120)

    two = tmp_path / "two.txt"
    two.write_text("sim_a_key\nsim_another\n")
    cases = [
        (("--api-key-file", str(tmp_path / "missing.txt")), "cannot be read"),
        (("--api-key-file", str(two)), "one key on one line"),
        (("--api-key", "a b"), "one word of printable characters"),
        (("--api-key", "k", "--api-key-file", str(two)), "not both"),
    ]
    for args, reason in cases:
        r = serve(*args)
        assert r.returncode == 2 and reason in r.stderr, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr

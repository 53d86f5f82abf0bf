"""Opening a state file of `sim serve --state`: create it, or check it and restore the world.

A file is never started fresh by accident. Only a name where nothing exists
(no file, no `-wal`, no key) gives a new state file, created with mode 0600.
Anything else must prove to be a whole state file of ours, or the start is
refused with one line that names the problem (`StateError`):

| found                                         | refused because                          |
|-----------------------------------------------|------------------------------------------|
| an empty file                                 | a state file is never empty              |
| bytes that are not SQLite, or a damaged file  | not a database / fails its integrity check |
| SQLite without our tables, or with others     | not a state file of sim                  |
| another format                                | made by another version                  |
| no key (file or $SIM_STATE_KEY), another key  | its sealed rows cannot be read           |
| fewer commits than `<state>.seq` recorded     | its `-wal` was lost or cut short         |
| marked open by a server, `-wal` missing, no `.seq` | it may lack its latest changes      |
| a journal whose last row is not the one its meta names | rows were removed                |
| a main file missing beside its `-wal` or key  | the state file itself is gone            |
| a key file of another user, or others can write it | the key may not be the owner's     |
| meta, the keys, a journal row or the snapshot | not as the file wrote it (changed, inserted, |
|   not matching its MAC (`sim.api.integrity`)  | removed, moved, older, or another file's)  |

`start_over` (`sim serve --state F --new`) is the one way to begin again: it
moves the old file and its companions aside (`F.old-<time>...`), never deletes.

A good file is restored: its latest snapshot is loaded, and the journal rows
after it are replayed through the same route handlers, on a control plane of
the saved seed (and scenario). A replayed request that does not succeed as it
did the first time stops the start (the journal and this version of `sim`
disagree).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import hmac
import json
import logging
import os
import secrets
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sim.api import integrity, snapshot
from sim.api.journal import FORMAT, SCHEMA, TABLES, Journal, StateError, seq_path, wall_now
from sim.api.keys import ApiKey, KeyKind, KeyRecord
from sim.api.sealing import CHECK, Seal, SealError, key_path, load_key
from sim.rules.errors import unauthorized

if TYPE_CHECKING:
    from sim.api.limits import RateLimit
    from sim.api.server import SimServer

log = logging.getLogger("sim.api.state_file")
SQLITE_HEADER = b"SQLite format 3\x00"
#: journal rows between snapshots: a restart replays at most about this many
SNAPSHOT_EVERY = 500


@dataclass
class Restored:
    created: bool
    entries: int = 0  # journal rows replayed
    requests: int = 0  # of which API requests
    seconds: float = 0.0  # wall time the restore took
    keys: int = 0  # saved keys restored (revoked ones not counted)
    snapshot_after: int = 0  # the journal row the snapshot loaded was taken after (0: none)


def companions(path: Path) -> list[Path]:
    """The files that belong to a state file, beside it."""
    return [path.with_name(path.name + suffix) for suffix in ("-wal", "-shm", ".seq", ".key")]


def start_over(path: Path) -> list[Path]:
    """Move a state file and its companions aside (never delete): `F` -> `F.old-<time>`."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    moved = []
    for p in [path, *companions(path)]:
        if p.exists():
            target = p.with_name(f"{path.name}.old-{stamp}{p.name[len(path.name):]}")
            p.rename(target)
            moved.append(target)
    return moved


# ---- checking ------------------------------------------------------------------------------------


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=0.2)
    try:
        # exclusive: a second server on the same file fails here instead of corrupting it
        conn.execute("PRAGMA locking_mode=EXCLUSIVE")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("COMMIT")
    except sqlite3.OperationalError as err:
        conn.close()
        if "locked" in str(err) or "busy" in str(err):
            raise StateError(f"{path}: in use (is another sim serve using it?)") from None
        raise StateError(f"{path}: cannot use this file as a state file ({err})") from None
    except sqlite3.DatabaseError as err:
        conn.close()
        raise StateError(f"{path}: cannot use this file as a state file ({err})") from None
    return conn


def _create(path: Path) -> tuple[sqlite3.Connection, Seal]:
    for other in companions(path):
        if other.exists() and other.suffix != ".key":
            raise StateError(f"{path} does not exist but {other.name} does: the state file "
                             f"was moved or deleted without it; restore it, or start over "
                             f"with --new")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.close(fd)
    seal = load_key(path, create=True)
    conn = _connect(path)
    conn.executescript(SCHEMA)
    return conn, seal


def _check_bytes(path: Path) -> None:
    size = path.stat().st_size
    if size == 0:
        raise StateError(f"{path}: an empty file, not a state file (a state file is never "
                         f"empty; was it truncated?); restore it, or start over with --new")
    with open(path, "rb") as f:
        header = f.read(100)
    if header[:len(SQLITE_HEADER)] != SQLITE_HEADER:
        raise StateError(f"{path}: not a state file (not an SQLite database); "
                         f"start over with --new to replace it")
    if header[18:20] != b"\x02\x02":  # a state file is in WAL mode from its first commit
        raise StateError(f"{path}: not a state file of sim (an SQLite database not in WAL "
                         f"mode); start over with --new to replace it")


def _inspect(path: Path) -> Seal:
    """`_check` and the key, on a read-only connection: a refused file is left exactly as
    it was (a writable one would fold a damaged `-wal` into the file and delete it on
    closing)."""
    made = [p for p in (path.with_name(path.name + "-shm"), path.with_name(path.name + "-wal"))
            if not p.exists()]
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=0.2)
    except sqlite3.Error as err:
        raise StateError(f"{path}: cannot be read ({err})") from None
    try:
        meta = _check(path, conn)
        seal = load_key(path, create=False)
        _check_key(path, meta, seal)
        return seal
    except sqlite3.OperationalError as err:
        if "locked" in str(err) or "busy" in str(err):
            raise StateError(f"{path}: in use (is another sim serve using it?)") from None
        raise StateError(f"{path}: cannot be read ({err})") from None
    finally:
        conn.close()
        for p in made:  # made by the read-only look (empty): gone again
            if p.exists() and (p.name.endswith("-shm") or p.stat().st_size == 0):
                p.unlink()


def _check(path: Path, conn: sqlite3.Connection) -> dict[str, str]:
    """The file's meta, once it has proved to be a whole state file of ours."""
    try:
        problems = [r[0] for r in conn.execute("PRAGMA quick_check").fetchall()]
        if problems != ["ok"]:
            raise StateError(f"{path}: damaged ({problems[0]}); restore a copy, or start "
                             f"over with --new")
        tables = {r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        if tables != TABLES:
            strange = sorted(tables - TABLES) or sorted(TABLES - tables)
            raise StateError(f"{path}: not a state file of sim (tables {', '.join(strange)} "
                             f"{'are not ours' if tables - TABLES else 'are missing'}); "
                             f"start over with --new to replace it")
        meta = dict(conn.execute("SELECT name, value FROM meta").fetchall())
        if meta.get("format") != str(FORMAT):
            raise StateError(f"{path}: state format {meta.get('format')} is not {FORMAT} "
                             f"(made by another version of sim); start over with --new")
        last = conn.execute("SELECT max(seq) FROM journal").fetchone()[0] or 0
    except sqlite3.OperationalError:
        raise
    except sqlite3.DatabaseError as err:
        raise StateError(f"{path}: damaged ({err}); restore a copy, or start over "
                         f"with --new") from None
    if str(last) != meta.get("rows", "0"):
        raise StateError(f"{path}: its journal ends at row {last} but the file says it holds "
                         f"{meta.get('rows')}: rows were removed; restore a copy, or start "
                         f"over with --new")
    _check_complete(path, int(meta.get("commits", "0")), meta.get("open") == "1")
    return meta


def _check_complete(path: Path, commits: int, was_open: bool) -> None:
    """Refuse a file that lost commits it once had: a `-wal` deleted or cut short."""
    recorded = None
    try:
        recorded = int(seq_path(path).read_text().strip() or "0")
    except (OSError, ValueError):
        pass
    if recorded is not None and commits < recorded:
        raise StateError(f"{path}: holds {commits} commits but its last run made {recorded}: "
                         f"its -wal was lost or cut short, so the latest changes are missing; "
                         f"restore the -wal, or start over with --new")
    if recorded is None and was_open:
        raise StateError(f"{path}: a server had it open and {seq_path(path).name} is missing, "
                         f"so whether its latest changes (kept in the -wal until a clean stop) "
                         f"are all here cannot be told; copy the file with its -wal and .seq, "
                         f"or start over with --new")


def _check_key(path: Path, meta: dict[str, str], seal: Seal) -> None:
    try:
        seal.open(bytes.fromhex(meta.get("key_check", "")), CHECK)
    except (SealError, ValueError):
        raise StateError(f"{path}: the key from {seal.source} does not open it (it was "
                         f"sealed with another key)") from None


# ---- opening -----------------------------------------------------------------------------


def open_journal(path: str | Path) -> tuple[Journal, dict[str, str], bool]:
    """The journal of `path`, checked (or created): (journal, meta, created)."""
    path = Path(path)
    created = not path.exists()
    try:
        if created:
            conn, seal = _create(path)
            meta: dict[str, str] = {}
        else:
            _check_bytes(path)
            seal = _inspect(path)
            conn = _connect(path)
            try:  # checked on the connection that is used (and locked), not another
                meta = dict(conn.execute("SELECT name, value FROM meta").fetchall())
                integrity.verify(path, conn, meta, seal)
            except sqlite3.Error as err:  # e.g. a column dropped by hand
                conn.close()
                raise StateError(f"{path}: not a state file of this version of sim ({err}); "
                                 f"start over with --new") from None
            except BaseException:
                conn.close()
                raise
    except SealError as err:
        raise StateError(f"{path}: {err}") from None
    except OSError as err:
        raise StateError(f"{path}: {err.strerror or err}") from None
    return Journal(path, conn, seal), meta, created


def open_server(
    path: str | Path, *, seed: int | None = None, clock: str = "manual", speed: float = 1.0,
    scenario_path: str | Path | None = None, rate_limit: RateLimit | None = None,
    max_body_bytes: int | None = None, snapshot_every: int | None = SNAPSHOT_EVERY,
    **server_options: Any,
) -> tuple[SimServer, Restored]:
    """A server kept in `path`: a new one (the file is created), or the saved one restored.

    The seed and scenario of an existing file are its own; giving others is a
    StateError. Clock mode and speed may change between runs: the journal holds
    simulated instants, and a realtime clock resumes where the world stopped.
    `snapshot_every` journal rows a snapshot is taken (None: only at a clean stop).
    """
    from sim.api.server import ClockMode, SimServer

    journal, meta, created = open_journal(path)
    try:
        scenario, scenario_meta = _scenario(meta, scenario_path, journal.path)
        if created:
            seed = seed if seed is not None else (scenario.seed if scenario else 0)
            journal.write_meta({"format": str(FORMAT), "file_id": secrets.token_hex(16),
                                "seed": str(seed), "created": wall_now(),
                                "key_check": journal.seal.seal(CHECK, CHECK).hex(),
                                "commits": "0", "rows": "0", "open": "0", **scenario_meta})
        else:
            saved = int(meta["seed"])
            if seed is not None and seed != saved:
                raise StateError(f"{journal.path} was created with seed {saved}, not {seed}")
            seed = saved
        server = SimServer(seed=seed, clock=ClockMode.MANUAL, speed=speed, scenario=scenario,
                           max_body_bytes=None, **server_options)
        restored = Restored(created=created)
        started = time.perf_counter()
        restored.snapshot_after = _load_snapshot(journal, server)
        restored.entries, restored.requests = replay(journal, server, restored.snapshot_after)
        restored.seconds = time.perf_counter() - started
        server.keys.restore(journal.key_records())
        restored.keys = len(server.keys.hashed)
        server.configure(clock=clock, speed=speed, rate_limit=rate_limit,
                         max_body_bytes=max_body_bytes)
        server.snapshot_every = snapshot_every
        # the rows a start after a crash would replay now: counted from the snapshot as the
        # file holds it, not from 0, or repeated crashes would replay ever more of them
        journal.since_snapshot = restored.entries
        journal.start(server.cp.now)
        server.attach_journal(journal)
        server.snapshot_if_due()  # now, rather than in the first request's time
    except BaseException:
        journal.close()
        raise
    return server, restored


def _load_snapshot(journal: Journal, server: SimServer) -> int:
    try:
        found = journal.latest_snapshot()
    except SealError as err:
        raise StateError(f"{journal.path}: its snapshot cannot be opened ({err})") from None
    if found is None:
        return 0
    after, _t, data = found
    try:
        world = snapshot.loads(data)
    except Exception as err:  # noqa: BLE001 - e.g. made by another version of sim
        log.warning("%s: its snapshot cannot be loaded (%s: %s); replaying the whole journal",
                    journal.path, type(err).__name__, err)
        return 0
    server.restore_world(world)
    return after


def _scenario(meta: dict[str, str], given: str | Path | None, state: Path):
    """The scenario of the file (loaded from its saved path) and what to save about it."""
    from sim.scenario.loader import load_scenario

    saved_path, saved_sha = meta.get("scenario_path"), meta.get("scenario_sha256")
    if given is None and saved_path is None:
        return None, {}
    if meta and saved_path is None:
        raise StateError(f"{state} was created without a scenario; start it without --scenario")
    source = Path(given if given is not None else saved_path or "")
    try:
        digest = hashlib.sha256(source.read_bytes()).hexdigest()
    except OSError as err:
        raise StateError(f"{state}: scenario {source}: {err.strerror or err}") from None
    if meta and not hmac.compare_digest(digest, saved_sha or ""):
        raise StateError(f"{state} was created with scenario {saved_path} (sha256 "
                         f"{(saved_sha or '')[:12]}...); {source} is not that file as it was")
    scenario = load_scenario(source)
    return scenario, {"scenario_path": str(source.resolve()), "scenario_sha256": digest}


# ---- keys, with the server stopped ----------------------------------------------------------


def _existing(path: str | Path) -> Journal:
    path = Path(path)
    if not path.exists():
        raise StateError(f"{path}: no such state file")
    journal, _meta, _created = open_journal(path)
    return journal


def list_keys(path: str | Path) -> list[KeyRecord]:
    """Every key the file keeps, revoked ones too (never a secret: there is none)."""
    journal = _existing(path)
    try:
        return journal.key_records()
    finally:
        journal.close()


def revoke_key(path: str | Path, key_id: int) -> KeyRecord:
    """Revoke a key of a stopped server's file: committed when this returns."""
    journal = _existing(path)
    try:
        record = next((r for r in journal.key_records() if r.id == key_id), None)
        if record is None or record.revoked:
            raise StateError(f"{path}: no accepted key with id {key_id} "
                             f"({'already revoked' if record else 'see: sim keys list'})")
        journal.start(0.0)
        revoked = dataclasses.replace(record, revoked=True)
        journal.save_key(revoked)
        return revoked
    finally:
        journal.close()


# ---- replaying -------------------------------------------------------------------------------


def replay(journal: Journal, server: SimServer, after: int = 0) -> tuple[int, int]:
    """Apply the journal rows after `after` to `server` (manual clock). (rows, requests)."""
    import anyio
    import httpx

    from sim.api.app import create_app
    from sim.api.deps import authenticate

    rows = journal.entries(after)
    if not rows:
        return 0, 0
    app = create_app(server)
    acting: list[ApiKey | None] = [None]

    def replay_key() -> ApiKey:
        if acting[0] is None:
            raise unauthorized("journaled request without a key")
        return acting[0]

    app.dependency_overrides[authenticate] = replay_key
    requests = 0

    def run_to(row: sqlite3.Row) -> None:
        with server.lock:
            if server.cp.now > row["t"]:
                raise StateError(f"{journal.path}: entry {row['seq']} is at {row['t']} s but "
                                 f"the replayed world is already at {server.cp.now} s")
            server.run_until(row["t"])

    async def run() -> None:
        nonlocal requests
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://replay") as client:
            for row in rows:
                kind = row["kind"]
                if kind == "reset":
                    server.reset()
                    continue
                run_to(row)
                if kind == "faults":
                    args = json.loads(row["args"])
                    if args.get("outage") is not None:
                        args["outage"] = tuple(args["outage"])
                    server.set_faults(**args)
                elif kind == "request":
                    requests += 1
                    acting[0] = _key_of(row["key"])
                    await _replay_request(client, journal, row)

    server.replaying = True
    try:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            anyio.run(run)
        else:  # called from async code (a notebook): replay on a helper thread
            with ThreadPoolExecutor(1) as pool:
                pool.submit(anyio.run, run).result()
    except SealError as err:
        raise StateError(f"{journal.path}: a journal row cannot be opened ({err})") from None
    finally:
        server.replaying = False
    return len(rows), requests


async def _replay_request(client: Any, journal: Journal, row: sqlite3.Row) -> None:
    url = row["path"] + (f"?{row['query']}" if row["query"] else "")
    headers = {"content-type": row["content_type"]} if row["content_type"] else {}
    response = await client.request(row["method"], url, content=journal.body(row),
                                    headers=headers)
    failed_before = row["outcome"] == "error"  # it failed unexpectedly: it fails again
    if (response.status_code >= 400) != failed_before:
        raise StateError(
            f"{journal.path}: replaying entry {row['seq']} ({row['method']} {row['path']} at "
            f"{row['t']} s) answered {response.status_code}: {response.text[:300]}; the "
            f"journal and this version of sim disagree")


def _key_of(identity: str | None) -> ApiKey | None:
    if identity is None:
        return None
    d = json.loads(identity)
    return ApiKey("", KeyKind(d["kind"]), d["user_id"], d.get("org_id"), d.get("project_id"))


__all__ = ["Restored", "StateError", "key_path", "list_keys", "open_journal", "open_server",
           "replay", "revoke_key", "start_over"]

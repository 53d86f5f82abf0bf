"""`sim serve --state FILE`: the control plane kept in SQLite as an append-only journal.

The world is deterministic for a seed: the same calls at the same simulated
instants give the same state, ids and durations. So the file holds what was
done, not what resulted (event sourcing):

- `meta`: the seed and the scenario (its path and SHA-256, never its text: it
  may hold API keys), written when the file is created;
- `journal`: in the order they were applied, every request that changed the
  world (method, route template, path, path parameters, query, body, the
  identity of its key, the simulated instant it was applied at), every clock
  advance, fault change and reset; with a realtime clock also the instant
  the clock reached before each request (consecutive ones share one row);
- `keys`: the API keys the server was started with, as SHA-256 hashes.

Refusals (4xx) are not journaled: a refused call changes nothing and draws no
random number (tests/reliability/test_persistence.py checks it for every kind
of refusal), so replaying without them gives the same world. A request that
failed unexpectedly (5xx) is journaled: it may have changed something before
it failed, and replaying it fails the same way.

Durability (group commit): an entry is appended in memory inside the
server's lock, in the order the world changed; a writer thread commits
whatever has been appended in one transaction (WAL, synchronous=FULL), and
every request, read or write, waits after leaving the lock until everything
it saw is committed before it answers. So an acknowledged mutation is on
disk, a response never shows a change that a crash could lose, and the file
always holds a prefix of the applied order; while one transaction is being
synced the next requests go on, and are committed together by the next one.

On start with an existing file the journal is replayed, through the same
route handlers, on a fresh control plane with the saved seed: the clock is
run to each entry's instant, then the entry is applied. A replayed request
that does not succeed as it did the first time stops the start (the journal
and this version of `sim` disagree). Keys are restored from their hashes.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import hmac
import json
import logging
import re
import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.types import ASGIApp, Receive, Scope, Send

from sim.api.keys import ApiKey, KeyKind
from sim.api.limits import read_body, replay_body
from sim.rules.errors import unauthorized

if TYPE_CHECKING:
    from fastapi import FastAPI

    from sim.api.limits import RateLimit
    from sim.api.server import SimServer

log = logging.getLogger("sim.api.journal")

FORMAT = 1
_BEARER = re.compile(r"Bearer\s+(\S+)\s*", re.IGNORECASE)
READS = frozenset({"GET", "HEAD", "OPTIONS"})
#: POST routes that read only: not journaled
READ_ONLY_ROUTES = frozenset({"/_sim/auth/query"})

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS keys (
    sha256 TEXT PRIMARY KEY, kind TEXT NOT NULL, user_id TEXT NOT NULL,
    org_id TEXT, project_id TEXT, added TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS journal (
    seq INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,          -- request | advance | clock | faults | reset
    t REAL NOT NULL,             -- simulated seconds: applied at (request, faults), reached
    wall TEXT NOT NULL,          -- when it was written (for people; replay ignores it)
    method TEXT, route TEXT, path TEXT, params TEXT, query TEXT, content_type TEXT,
    body BLOB, key TEXT,         -- key: its identity (kind, scope, sha256), never the secret
    outcome TEXT,                -- request: applied | error (a 5xx: replayed, fails again)
    args TEXT                    -- faults: the arguments of set_faults, as JSON
);
"""


class StateError(Exception):
    """The state file cannot be used: in use, of another seed or scenario, or diverging."""


# ---- what a request carries to the lock ---------------------------------------------------------


@dataclass(eq=False)
class RequestContext:
    """A mutating request on its way through `SimServer.world()` (a context variable)."""

    server: SimServer
    scope: Scope
    body: bytes
    key: ApiKey | None
    key_sha256: str | None  # of the secret the client sent
    journaled: bool = False

    @property
    def route(self) -> str | None:
        route = self.scope.get("route")
        return getattr(route, "path", None)

    @property
    def mutating(self) -> bool:
        return self.route not in READ_ONLY_ROUTES


CURRENT: contextvars.ContextVar[RequestContext | None] = contextvars.ContextVar(
    "sim_journal_request", default=None)


class JournalMiddleware:
    """Reads the body of a mutating request and makes it, with its key, the current request."""

    def __init__(self, app: ASGIApp, server: SimServer):
        self.app = app
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        server = self.server
        if scope["type"] != "http" or server.journal is None or scope["method"] in READS:
            await self.app(scope, receive, send)
            return
        body = await read_body(receive, None) or b""
        authorization = bearer = None
        for name, value in scope.get("headers", ()):
            if name.lower() == b"authorization":
                authorization = value.decode("latin-1")
                bearer = bearer_token(authorization)
        try:
            key: ApiKey | None = server.authenticate(authorization)
        except Exception:
            key = None  # refused with 401 before it reaches the world
        sha = key_sha256(bearer) if key is not None and bearer else None
        token = CURRENT.set(RequestContext(server, scope, body, key, sha))
        try:
            await self.app(scope, replay_body(body, receive), send)
        finally:
            CURRENT.reset(token)


def install(app: FastAPI, server: SimServer) -> None:
    app.add_middleware(JournalMiddleware, server=server)


# ---- the file --------------------------------------------------------------------------------


def key_sha256(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def bearer_token(authorization: str | None) -> str | None:
    """The key of an `authorization: Bearer <key>` header (None when malformed)."""
    match = _BEARER.fullmatch(authorization or "")
    return match[1] if match else None


def key_identity(key: ApiKey | None, sha256: str | None) -> str | None:
    """What replay needs of a key (its kind and reach), and which one it was: never the secret."""
    if key is None:
        return None
    return json.dumps({"kind": key.kind.value, "user_id": key.user_id, "org_id": key.org_id,
                       "project_id": key.project_id, "sha256": sha256})


def _wall_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass
class Entry:
    kind: str
    t: float
    fields: dict[str, Any] = field(default_factory=dict)
    wall: str = field(default_factory=_wall_now)


class Journal:
    """One state file. `append` under the server's lock; `wait_durable` after leaving it."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                               timeout=0.2)
        try:
            # exclusive: a second server on the same file fails here instead of corrupting it
            conn.execute("PRAGMA locking_mode=EXCLUSIVE")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("BEGIN IMMEDIATE")
            conn.executescript(_SCHEMA)  # commits
        except sqlite3.DatabaseError as err:
            conn.close()
            raise StateError(f"{self.path}: cannot use this file as a state file ({err}); "
                             f"is another sim serve using it?") from None
        self._conn = conn
        self._cond = threading.Condition()
        self._pending: list[Entry] = []
        self._appended = 0  # entries appended so far (a sequence number)
        self._durable = 0  # of those, committed
        self._failed: BaseException | None = None
        self._closing = False
        self._thread: threading.Thread | None = None
        self._last_kind: str | None = None  # of the last row written (clock rows are merged)
        self._last_row: int | None = None
        self.last_t = 0.0  # the latest simulated instant journaled

    # -- before serving: meta, keys, replay -----------------------------------------------
    def meta(self) -> dict[str, str]:
        return dict(self._conn.execute("SELECT name, value FROM meta").fetchall())

    def write_meta(self, values: dict[str, str]) -> None:
        with self._conn:
            self._conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", values.items())

    def saved_keys(self) -> dict[str, ApiKey]:
        rows = self._conn.execute("SELECT sha256, kind, user_id, org_id, project_id FROM keys")
        return {sha: ApiKey("", KeyKind(kind), user_id, org_id, project_id)
                for sha, kind, user_id, org_id, project_id in rows}

    def entries(self) -> list[sqlite3.Row]:
        self._conn.row_factory = sqlite3.Row
        try:
            return self._conn.execute("SELECT * FROM journal ORDER BY seq").fetchall()
        finally:
            self._conn.row_factory = None

    def start(self, now: float) -> None:
        """Start committing appended entries; `now` is the world's instant after replay."""
        row = self._conn.execute("SELECT seq, kind FROM journal ORDER BY seq DESC LIMIT 1"
                                 ).fetchone()
        if row is not None:
            self._last_row, self._last_kind = row
        self.last_t = now
        self._thread = threading.Thread(target=self._write_loop, name="sim-journal",
                                        daemon=True)
        self._thread.start()

    def close(self) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join()
        self._conn.close()

    # -- appending (under the server's lock) ----------------------------------------------
    @property
    def appended(self) -> int:
        return self._appended

    @property
    def failed(self) -> bool:
        return self._failed is not None

    def append(self, entry: Entry) -> int:
        with self._cond:
            if self._failed is not None or self._closing:
                raise StateError(f"{self.path}: the state file cannot be written "
                                 f"({self._failed or 'closed'}); restart the server")
            if (entry.kind == "clock" and self._pending
                    and self._pending[-1].kind == "clock"):
                self._pending[-1] = entry  # one row for consecutive clock moves
            else:
                self._pending.append(entry)
            self._appended += 1
            if entry.kind != "key":
                self.last_t = entry.t
            self._cond.notify_all()
            return self._appended

    def append_request(self, ctx: RequestContext, t: float, outcome: str) -> int:
        scope = ctx.scope
        raw = scope.get("raw_path") or scope["path"].encode()
        content_type = None
        for name, value in scope.get("headers", ()):
            if name.lower() == b"content-type":
                content_type = value.decode("latin-1")
        return self.append(Entry("request", t, {
            "method": scope["method"], "route": ctx.route,
            "path": raw.decode("latin-1"),
            "params": json.dumps(scope.get("path_params") or {}, sort_keys=True),
            "query": scope.get("query_string", b"").decode("latin-1"),
            "content_type": content_type, "body": ctx.body,
            "key": key_identity(ctx.key, ctx.key_sha256), "outcome": outcome,
        }))

    def note_clock(self, t: float) -> int | None:
        if t > self.last_t:
            return self.append(Entry("clock", t))
        return None

    def save_key(self, key: ApiKey) -> None:
        """Keep a key the server accepts, as its hash; durable when this returns."""
        self.wait_durable(self.append(Entry("key", 0.0, {"key": key})))

    # -- committing (the writer thread) -----------------------------------------------------
    def wait_durable(self, seq: int) -> None:
        """Block until every entry up to `seq` is committed (or the file failed)."""
        with self._cond:
            while self._durable < seq and self._failed is None:
                self._cond.wait()
            if self._durable < seq:
                raise StateError(f"{self.path}: the state file cannot be written "
                                 f"({self._failed}); restart the server")

    def _write_loop(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closing:
                    self._cond.wait()
                if not self._pending:
                    return
                batch, self._pending = self._pending, []
                upto = self._appended
            try:
                self._commit(batch)
            except BaseException as err:  # every waiter must hear of it
                log.error("state file %s: commit failed", self.path, exc_info=err)
                with self._cond:
                    self._failed = err
                    self._cond.notify_all()
                return
            with self._cond:
                self._durable = upto
                self._cond.notify_all()

    def _commit(self, batch: list[Entry]) -> None:
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            for entry in batch:
                self._write(conn, entry)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _write(self, conn: sqlite3.Connection, entry: Entry) -> None:
        if entry.kind == "key":
            key: ApiKey = entry.fields["key"]
            conn.execute("INSERT OR IGNORE INTO keys VALUES (?, ?, ?, ?, ?, ?)",
                         (key_sha256(key.secret), key.kind.value, key.user_id, key.org_id,
                          key.project_id, entry.wall))
            return
        if entry.kind == "clock" and self._last_kind == "clock":
            conn.execute("UPDATE journal SET t = ?, wall = ? WHERE seq = ?",
                         (entry.t, entry.wall, self._last_row))
            return
        names = ["kind", "t", "wall", *entry.fields]
        cursor = conn.execute(
            f"INSERT INTO journal ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
            (entry.kind, entry.t, entry.wall, *entry.fields.values()))
        self._last_row, self._last_kind = cursor.lastrowid, entry.kind


# ---- opening a state file: create, or replay ----------------------------------------------------


@dataclass
class Restored:
    created: bool
    entries: int = 0  # journal rows replayed
    requests: int = 0  # of which API requests
    seconds: float = 0.0  # wall time the replay took
    keys: int = 0  # saved keys restored


def open_server(
    path: str | Path, *, seed: int | None = None, clock: str = "manual", speed: float = 1.0,
    scenario_path: str | Path | None = None, rate_limit: RateLimit | None = None,
    max_body_bytes: int | None = None, **server_options: Any,
) -> tuple[SimServer, Restored]:
    """A server kept in `path`: a new one (the file is created), or the saved one replayed.

    The seed and scenario of an existing file are its own; giving others is a
    StateError. Clock mode and speed may change between runs: the journal holds
    simulated instants, and a realtime clock resumes where the world stopped.
    """
    from sim.api.server import ClockMode, SimServer

    journal = Journal(path)
    try:
        meta = journal.meta()
        scenario, scenario_meta = _scenario(meta, scenario_path, journal.path)
        if not meta:
            seed = seed if seed is not None else (scenario.seed if scenario else 0)
            journal.write_meta({"format": str(FORMAT), "seed": str(seed), "created": _wall_now(),
                                **scenario_meta})
        else:
            if meta.get("format") != str(FORMAT):
                raise StateError(f"{journal.path}: state format {meta.get('format')} is not "
                                 f"{FORMAT}")
            saved = int(meta["seed"])
            if seed is not None and seed != saved:
                raise StateError(f"{journal.path} was created with seed {saved}, not {seed}")
            seed = saved
        server = SimServer(seed=seed, clock=ClockMode.MANUAL, speed=speed, scenario=scenario,
                           max_body_bytes=None, **server_options)
        restored = Restored(created=not meta)
        started = time.perf_counter()
        restored.entries, restored.requests = replay(journal, server)
        restored.seconds = time.perf_counter() - started
        server.saved_keys = journal.saved_keys()
        restored.keys = len(server.saved_keys)
        server.configure(clock=clock, speed=speed, rate_limit=rate_limit,
                         max_body_bytes=max_body_bytes)
        journal.start(server.cp.now)
        server.journal = journal
    except BaseException:
        journal.close()
        raise
    return server, restored


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


def replay(journal: Journal, server: SimServer) -> tuple[int, int]:
    """Apply the journal to `server` (a fresh one, manual clock). (rows, requests) replayed."""
    import anyio
    import httpx

    from sim.api.app import create_app
    from sim.api.deps import authenticate

    rows = journal.entries()
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
            server.cp.run_until(row["t"])

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
    finally:
        server.replaying = False
    return len(rows), requests


async def _replay_request(client: Any, journal: Journal, row: sqlite3.Row) -> None:
    url = row["path"] + (f"?{row['query']}" if row["query"] else "")
    headers = {"content-type": row["content_type"]} if row["content_type"] else {}
    response = await client.request(row["method"], url, content=row["body"] or b"",
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

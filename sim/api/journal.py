"""`sim serve --state FILE`: the control plane kept in SQLite as a journal and snapshots.

The world is deterministic for a seed: the same calls at the same simulated
instants give the same state, ids and durations. So the file holds what was
done, not what resulted (event sourcing), and now and then the whole world:

- `meta`: format, a random file id, seed, the scenario (its path and SHA-256, never its text: it
  may hold API keys), a sealed check value of the file's key, whether a
  server has the file open, and how many commits and journal rows it holds;
- `journal`: in the order they were applied, every request that changed the
  world (method, route template, path, path parameters, query, the request
  body sealed, the identity of its key, the simulated instant it was applied
  at), every clock advance, fault change and reset; with a realtime clock also
  the instant the clock reached before each request (consecutive ones share
  one row);
- `snapshot`: the latest snapshot of the world (sealed) and the journal row it
  was taken after; a restart loads it and replays only the rows after it;
- `keys`: every API key the server has kept or revoked, as the SHA-256 of its
  secret, with its id, name, reach and whether it is revoked.

Nothing in the file is a secret in clear: request bodies (OAuth client
secrets, SMTP passwords) and snapshots (those and the generated SDK keys) are
sealed with the file's key (`sim.api.sealing`); keys are hashes. And every
part of the file (meta, each journal row, the snapshot, the keys) carries a MAC
binding it to the file, its place and what came before it (`sim.api.integrity`).

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
Every commit also writes its number to `<state>.seq` (not synced: a crash of
the process keeps it, and it only ever lags): a restart that finds the file
holding fewer commits than that refuses, rather than start on a world that
silently lost its last changes (a `-wal` deleted or cut short).

Opening, checking and replaying a file: `sim.api.state_file`.
"""

from __future__ import annotations

import contextvars
import json
import logging
import os
import re
import sqlite3
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.types import ASGIApp, Receive, Scope, Send

from sim.api import freed_memory, integrity
from sim.api.integrity import HEAD, JOURNAL_COLUMNS, KEYS_MAC, MAC, SNAPSHOT_MAC, StateError
from sim.api.journal_snapshot import SNAPSHOT, SnapshotWriting
from sim.api.keys import ApiKey, KeyKind, KeyRecord, secret_sha256
from sim.api.limits import ClientGone, read_body, replay_body

if TYPE_CHECKING:
    from fastapi import FastAPI

    from sim.api.sealing import Seal
    from sim.api.server import SimServer

log = logging.getLogger("sim.api.journal")

FORMAT = 3  # 3: every part authenticated (`sim.api.integrity`)
_BEARER = re.compile(r"Bearer\s+(\S+)\s*", re.IGNORECASE)
READS = frozenset({"GET", "HEAD", "OPTIONS"})
#: POST routes that read only: not journaled
READ_ONLY_ROUTES = frozenset({"/_sim/auth/query"})
#: associated data of what is sealed (with the file's id): a body cannot pass for a snapshot
BODY = b"request body"
#: seconds a stop waits for a snapshot a forked copy is still writing
CLOSE_WAIT_S = 5.0
#: seconds a due snapshot waits for the copy still writing the last one (then it is ended)
COPY_WAIT_S = 60.0

SCHEMA = """
CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE keys (
    id INTEGER PRIMARY KEY, sha256 TEXT NOT NULL UNIQUE, kind TEXT NOT NULL,
    user_id TEXT NOT NULL, org_id TEXT, project_id TEXT, name TEXT NOT NULL,
    created_at TEXT, revoked INTEGER NOT NULL DEFAULT 0, written TEXT NOT NULL);
CREATE TABLE journal (
    seq INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,          -- request | advance | clock | faults | reset
    t REAL NOT NULL,             -- simulated seconds: applied at (request, faults), reached
    wall TEXT NOT NULL,          -- when it was written (for people; replay ignores it)
    method TEXT, route TEXT, path TEXT, params TEXT, query TEXT, content_type TEXT,
    body BLOB,                   -- sealed (it may hold a client secret or a password)
    key TEXT,                    -- its identity (kind, scope, sha256), never the secret
    outcome TEXT,                -- request: applied | error (a 5xx: replayed, fails again)
    args TEXT,                   -- faults: the arguments of set_faults, as JSON
    mac BLOB NOT NULL            -- over the file id, the row and the MAC of the row before
);
CREATE TABLE snapshot (
    after INTEGER NOT NULL,      -- the last journal row it includes
    t REAL NOT NULL, wall TEXT NOT NULL, blob BLOB NOT NULL,
    mac BLOB NOT NULL);          -- over the file id, the row and the MAC of journal row `after`
"""
TABLES = frozenset({"meta", "keys", "journal", "snapshot"})



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
        try:
            body = await read_body(receive, None) or b""
        except ClientGone:
            return  # nothing to apply, no one to answer
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
    return secret_sha256(secret)


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


def wall_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def seq_path(state: Path) -> Path:
    return state.with_name(state.name + ".seq")


@dataclass
class Entry:
    kind: str
    t: float
    fields: dict[str, Any] = field(default_factory=dict)
    wall: str = field(default_factory=wall_now)


def _disk_message(err: BaseException) -> str:
    """The cause in one line ("database or disk is full"), not a wrapper's."""
    return str(err) or type(err).__name__


class Journal(SnapshotWriting):
    """One state file, checked and open. `append` under the server's lock; `wait_durable`
    after leaving it. Made by `sim.api.state_file`, which checks the file first."""

    def __init__(self, path: Path, conn: sqlite3.Connection, seal: Seal):
        self.path = path
        self.seal = seal
        self._conn = conn
        self._cond = threading.Condition()
        self._pending: list[Entry] = []
        self._appended = 0  # entries appended so far (a sequence number)
        self._durable = 0  # of those, committed
        self._failed: BaseException | None = None
        self._closing = False
        self._closed = False
        self._thread: threading.Thread | None = None
        self._last_kind: str | None = None  # of the last row written (clock rows are merged)
        self._last_row = conn.execute("SELECT max(seq) FROM journal").fetchone()[0] or 0
        self._meta = self.meta()  # as the file holds it (checked), kept in step with it
        self._on_disk = dict(self._meta)  # as committed: only the rows that change are written
        self._commits = int(self._meta.get("commits", "0"))
        # the MAC chain: of the last journal row, of the one before it, of the snapshot
        self._head = bytes.fromhex(self._meta.get(HEAD, ""))
        self._before_head = b""  # a merged clock row is never the first after a start
        self._snapshot_mac = bytes.fromhex(self._meta.get(SNAPSHOT_MAC, ""))
        self._keys_changed = False
        self._seq_fd: int | None = None
        self.since_snapshot = 0  # entries appended since the last snapshot
        self._copy: Any = None  # the `Pending` of the latest snapshot, if a copy writes it
        #: a snapshot a forked copy is still writing: (after, the MAC at that row, its
        #: entry, its `snapshot_fork.Pending`)
        self._deferred: tuple[int, bytes, Entry, Any] | None = None
        self._trim = False
        self.last_t = 0.0  # the latest simulated instant journaled

    # -- before serving ---------------------------------------------------------------------
    def meta(self) -> dict[str, str]:
        return dict(self._conn.execute("SELECT name, value FROM meta").fetchall())

    @property
    def file_id(self) -> str:
        return self._meta.get("file_id", "")

    def write_meta(self, values: dict[str, str]) -> None:
        """Set meta rows (a new file's), with their MAC; committed and checkpointed (the
        main file alone is a state file)."""
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        self._meta.update(values)
        self._keys_changed = True
        self._write_meta(conn)
        conn.execute("COMMIT")
        self._wrote_meta()
        self._checkpoint()

    def _write_meta(self, conn: sqlite3.Connection) -> None:
        """Every meta row, with the heads of the chain and the MAC over them all."""
        meta, fid = self._meta, self.file_id
        if self._keys_changed:
            meta[KEYS_MAC] = integrity.keys_mac(self.seal, fid, integrity.key_rows(conn)).hex()
            self._keys_changed = False
        meta[HEAD], meta[SNAPSHOT_MAC] = self._head.hex(), self._snapshot_mac.hex()
        meta[MAC] = integrity.meta_mac(self.seal, meta).hex()
        conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                         [(k, v) for k, v in meta.items() if self._on_disk.get(k) != v])

    def _wrote_meta(self) -> None:
        """Called once a commit holding `_write_meta` has succeeded."""
        self._on_disk = dict(self._meta)

    def key_records(self) -> list[KeyRecord]:
        rows = self._conn.execute("SELECT id, sha256, kind, user_id, org_id, project_id, name, "
                                  "created_at, revoked FROM keys ORDER BY id")
        return [KeyRecord(i, sha, KeyKind(kind), user, org, project, name, created, bool(rev))
                for i, sha, kind, user, org, project, name, created, rev in rows]

    def latest_snapshot(self) -> tuple[int, float, bytes] | None:
        """(after, t, the world's bytes) of the latest snapshot, opened with the key."""
        row = self._conn.execute("SELECT after, t, blob FROM snapshot ORDER BY after DESC "
                                 "LIMIT 1").fetchone()
        if row is None:
            return None
        return row[0], row[1], self.seal.open(row[2], SNAPSHOT + self.file_id.encode())

    def entries(self, after: int = 0) -> list[sqlite3.Row]:
        self._conn.row_factory = sqlite3.Row
        try:
            return self._conn.execute("SELECT * FROM journal WHERE seq > ? ORDER BY seq",
                                      (after,)).fetchall()
        finally:
            self._conn.row_factory = None

    def body(self, row: sqlite3.Row) -> bytes:
        if row["body"] is None:
            return b""
        return self.seal.open(row["body"], BODY + self.file_id.encode())

    def start(self, now: float) -> None:
        """Start committing appended entries; `now` is the world's instant after replay.

        The file is marked as open (and checkpointed, so a copy of the main file
        alone says so), and `<state>.seq` is kept from here on."""
        row = self._conn.execute("SELECT seq, kind FROM journal ORDER BY seq DESC LIMIT 1"
                                 ).fetchone()
        if row is not None:
            self._last_row, self._last_kind = row
        self._last_kind = "start"  # a clock row after a restart is a row of its own
        self.last_t = now
        self._seq_fd = os.open(seq_path(self.path), os.O_WRONLY | os.O_CREAT, 0o600)
        self._commit([Entry("open", now)])
        self._checkpoint()
        self._thread = threading.Thread(target=self._write_loop, name="sim-journal",
                                        daemon=True)
        self._thread.start()

    def close(self, wait_s: float = CLOSE_WAIT_S) -> None:
        """Commit what is pending, mark the file closed and fold the `-wal` into it: after
        a clean stop the main file alone holds everything (a backup may copy just it).
        A snapshot a copy is still writing is waited for up to `wait_s` seconds."""
        if self._closed:
            return
        self._finish_snapshot(wait_s)
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join()
        try:
            if self._thread is not None and self._failed is None:
                self._commit([Entry("close", self.last_t)])
                self._checkpoint()
        except sqlite3.Error as err:
            log.error("state file %s: not closed cleanly: %s", self.path, _disk_message(err))
        finally:
            self._closed = True
            if self._seq_fd is not None:
                os.close(self._seq_fd)
            self._conn.close()

    def _checkpoint(self) -> None:
        self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

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
                                 f"({self._failure()}); restart the server")
            if (entry.kind == "clock" and self._pending
                    and self._pending[-1].kind == "clock"):
                self._pending[-1] = entry  # one row for consecutive clock moves
            else:
                self._pending.append(entry)
            self._appended += 1
            if entry.kind in ("snapshot",):
                self.since_snapshot = 0
                world = entry.fields.get("world")
                self._copy = None if isinstance(world, bytes) else world
            elif entry.kind != "key":
                self.since_snapshot += 1
                self.last_t = entry.t
            self._cond.notify_all()
            return self._appended

    def wait_for_copy(self, limit_s: float = COPY_WAIT_S) -> bool:
        """Let the snapshot a forked copy is still writing land before the next is taken
        (True: none is being written any more). The next would replace it before it lands:
        a world whose snapshots take longer to write than the rows between them would never
        have one, and a start after a crash would replay ever more rows. Waiting keeps the
        rows a start replays below twice `--snapshot-every`; it makes a request wait only
        when writes outpace the copies. A copy stuck past `limit_s` is ended."""
        copy = self._copy
        if copy is None or copy.done():
            return True
        if copy.result(timeout=limit_s) is None and not copy.done():
            log.error("state file %s: a snapshot's copy took over %.0f s; ended, the next "
                      "snapshot is taken instead", self.path, limit_s)
            copy.stop()
            return False
        return True

    def _failure(self) -> str:
        return _disk_message(self._failed) if self._failed is not None else "closed"

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

    def save_key(self, record: KeyRecord) -> None:
        """Keep a key (its hash, reach, whether revoked); durable when this returns."""
        self.wait_durable(self.append(Entry("key", 0.0, {"record": record})))

    # -- committing (the writer thread) -----------------------------------------------------
    def wait_durable(self, seq: int) -> None:
        """Block until every entry up to `seq` is committed (or the file failed)."""
        with self._cond:
            while self._durable < seq and self._failed is None:
                self._cond.wait()
            if self._durable < seq:
                raise StateError(f"{self.path}: the state file cannot be written "
                                 f"({self._failure()}); restart the server")

    def _write_loop(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closing and not self._deferred_ready():
                    self._cond.wait()
                if not self._pending and not self._deferred_ready():
                    return
                if self._deferred_ready():  # a snapshot from a copy: a commit of its own
                    batch, upto = [], self._durable
                else:
                    batch, self._pending = self._pending, []
                    upto = self._appended
            try:
                self._commit(batch)
            except BaseException as err:  # every waiter must hear of it
                log.error("state file %s: commit failed: %s; nothing more is acknowledged "
                          "(restart the server)", self.path, _disk_message(err))
                log.debug("state file %s: commit failed", self.path, exc_info=err)
                with self._cond:
                    self._failed = err
                    self._cond.notify_all()
                return
            with self._cond:
                self._durable = upto
                self._cond.notify_all()
            if self._trim:
                self._trim = False
                freed_memory.give_back()  # a snapshot's bytes (glibc keeps them otherwise)

    def _commit(self, batch: list[Entry]) -> None:
        conn = self._conn
        kept = (self._last_row, self._last_kind, self._head, self._before_head,
                self._snapshot_mac, self._keys_changed, dict(self._meta))
        conn.execute("BEGIN IMMEDIATE")
        try:
            for entry in batch:
                self._write(conn, entry)
            if not batch:  # a snapshot from a copy: a commit of its own (see _write_loop)
                self._write_deferred(conn)
            commits = self._commits + 1
            self._meta.update(commits=str(commits), rows=str(self._last_row))
            self._write_meta(conn)
            conn.execute("COMMIT")
            self._wrote_meta()
        except BaseException:
            (self._last_row, self._last_kind, self._head, self._before_head,
             self._snapshot_mac, self._keys_changed, self._meta) = kept
            # SQLite may have rolled back already (disk full does): the first error is
            # the cause, never "cannot rollback - no transaction is active"
            if conn.in_transaction:
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
            raise
        self._commits = commits
        if self._seq_fd is not None:
            os.pwrite(self._seq_fd, f"{commits:020d}\n".encode(), 0)

    def _write(self, conn: sqlite3.Connection, entry: Entry) -> None:
        kind = entry.kind
        if kind == "key":
            r: KeyRecord = entry.fields["record"]
            conn.execute("INSERT OR REPLACE INTO keys VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         (r.id, r.sha256, r.kind.value, r.user_id, r.org_id, r.project_id,
                          r.name, r.created_at, int(r.revoked), entry.wall))
            self._keys_changed = True
            return
        if kind in ("open", "close"):
            self._meta["open"] = "1" if kind == "open" else "0"
            return
        file_id = self.file_id
        if kind == "snapshot":
            world = entry.fields["world"]
            self._last_kind = kind  # rows it includes are never changed again
            if isinstance(world, bytes):
                self._deferred = None  # a newer snapshot than the one still being written
                self._write_snapshot(conn, self._last_row, self._head, entry, world)
            else:  # written by a forked copy (sim.api.snapshot_fork): its place kept
                self._deferred = (self._last_row, self._head, entry, world)
            return
        if kind == "clock" and self._last_kind == "clock":
            row = (self._last_row, kind, float(entry.t), entry.wall,
                   *(None for _ in JOURNAL_COLUMNS[4:]))
            self._head = integrity.journal_mac(self.seal, file_id, row, self._before_head)
            conn.execute("UPDATE journal SET t = ?, wall = ?, mac = ? WHERE seq = ?",
                         (entry.t, entry.wall, self._head, self._last_row))
            return
        fields = dict(entry.fields)
        if fields.get("body") is not None:
            fields["body"] = self.seal.seal(fields["body"], BODY + file_id.encode())
        unknown = set(fields) - set(JOURNAL_COLUMNS)
        assert not unknown, unknown  # every column is in the MAC
        seq = self._last_row + 1
        row = (seq, kind, float(entry.t), entry.wall,
               *(fields.get(name) for name in JOURNAL_COLUMNS[4:]))
        mac = integrity.journal_mac(self.seal, file_id, row, self._head)
        conn.execute(f"INSERT INTO journal ({', '.join(JOURNAL_COLUMNS)}, mac) "
                     f"VALUES ({', '.join('?' * (len(JOURNAL_COLUMNS) + 1))})", (*row, mac))
        self._last_row, self._last_kind = seq, kind
        self._before_head, self._head = self._head, mac


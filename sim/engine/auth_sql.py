"""The customer's database as real SQL: where managed auth syncs its users.

One SQLite database per (branch, database name), with the schema `svc_auth`
ATTACHed to it (SQLite's nearest thing to a Postgres schema) holding
`users_sync`, so `SELECT id, email, name, created_at FROM svc_auth.users_sync`
works as it does against the real service.

Customers only read (`query`): the connection stays `PRAGMA query_only = ON`
and an authorizer allows nothing but reading while their SQL runs, so neither
a write nor an ATTACH/DETACH/PRAGMA gets through. The engine writes through
`_writable()`. The HTTP server calls in from worker threads, so the connection
is shared across threads and every use holds the database's lock.
"""

from __future__ import annotations

import re
import sqlite3
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sim.rules.auth import SCHEMA_NAME, TABLE_NAME
from sim.rules.errors import invalid

MAX_ROWS = 10_000
#: the progress handler runs every 1000 SQLite VM steps; this many calls abort a query
MAX_PROGRESS_CALLS = 50_000

_READ_ONLY_ACTIONS = frozenset({
    sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION,
    sqlite3.SQLITE_RECURSIVE,
})
_LEADING = re.compile(r"(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/)*", re.DOTALL)
_FIRST_WORD = re.compile(r"[A-Za-z]+")

USERS_SYNC_DDL = f"""
CREATE TABLE IF NOT EXISTS {SCHEMA_NAME}.{TABLE_NAME} (
    raw_json TEXT NOT NULL,
    id TEXT PRIMARY KEY NOT NULL,
    name TEXT,
    email TEXT,
    created_at TEXT,
    updated_at TEXT,
    deleted_at TEXT
)"""
COLUMNS = ("raw_json", "id", "name", "email", "created_at", "updated_at", "deleted_at")


def _read_only(action: int, *_args: Any) -> int:
    return sqlite3.SQLITE_OK if action in _READ_ONLY_ACTIONS else sqlite3.SQLITE_DENY


def check_select(sql: Any, field: str = "sql") -> str:
    """One statement, starting with SELECT or WITH (a trailing ';' is fine)."""
    if not isinstance(sql, str) or not sql.strip():
        raise invalid(field, "required: one SELECT statement")
    if "\x00" in sql:  # SQLite's API takes C strings: it would raise ValueError (a 500)
        raise invalid(field, "contains a NUL character (U+0000)")
    if not sqlite3.complete_statement(sql.rstrip() + ";"):
        raise invalid(field, "incomplete statement (an unterminated string or comment?)")
    start = _LEADING.match(sql)
    word = _FIRST_WORD.match(sql, start.end() if start else 0)
    if word is None or word.group().upper() not in ("SELECT", "WITH"):
        raise invalid(field, "only a single read-only SELECT statement is allowed")
    return sql


class BranchDatabase:
    """One database of one branch, holding the synced users table."""

    def __init__(self, project_id: str, branch_id: str, name: str, path: Path | None = None):
        self.project_id = project_id
        self.branch_id = branch_id
        self.name = name
        self.path = path
        self.lock = threading.Lock()
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        # autocommit; no statement cache, so every customer statement meets the authorizer
        self.conn = sqlite3.connect(":memory:" if path is None else str(path),
                                    check_same_thread=False, isolation_level=None,
                                    cached_statements=0)
        self.conn.execute("PRAGMA query_only = ON")
        # a dropped control plane closes its databases (no unclosed-connection warning)
        self._finalizer = weakref.finalize(self, self.conn.close)

    # -- the engine's side -------------------------------------------------------
    @contextmanager
    def _writable(self) -> Iterator[sqlite3.Connection]:
        with self.lock:
            self.conn.execute("PRAGMA query_only = OFF")
            try:
                yield self.conn
            finally:
                self.conn.execute("PRAGMA query_only = ON")

    def _schema_attached(self) -> bool:
        names = [row[1] for row in self.conn.execute("PRAGMA database_list")]
        return SCHEMA_NAME in names

    @property
    def has_users_table(self) -> bool:
        with self.lock:
            return self._schema_attached()

    def create_users_table(self) -> None:
        """The schema and table (kept as they are when they already exist)."""
        with self._writable() as conn:
            if not self._schema_attached():
                target = (":memory:" if self.path is None
                          else str(self.path.with_suffix(f".{SCHEMA_NAME}.sqlite")))
                conn.execute(f"ATTACH DATABASE ? AS {SCHEMA_NAME}", (target,))
            conn.execute(USERS_SYNC_DDL)

    def drop_schema(self) -> None:
        """DROP SCHEMA svc_auth CASCADE: the table and its rows go."""
        with self._writable() as conn:
            if self._schema_attached():
                conn.execute(f"DROP TABLE IF EXISTS {SCHEMA_NAME}.{TABLE_NAME}")
                conn.execute(f"DETACH DATABASE {SCHEMA_NAME}")

    def upsert_user(self, row: dict[str, Any]) -> None:
        with self._writable() as conn:
            if self._schema_attached():
                conn.execute(
                    f"INSERT OR REPLACE INTO {SCHEMA_NAME}.{TABLE_NAME} ({', '.join(COLUMNS)}) "
                    f"VALUES ({', '.join('?' * len(COLUMNS))})",
                    tuple(row.get(c) for c in COLUMNS),
                )

    def delete_user(self, user_id: str) -> None:
        with self._writable() as conn:
            if self._schema_attached():
                conn.execute(f"DELETE FROM {SCHEMA_NAME}.{TABLE_NAME} WHERE id = ?", (user_id,))

    def users(self) -> list[dict[str, Any]] | None:
        """Every synced row ordered by id; None when the schema is gone."""
        with self.lock:
            if not self._schema_attached():
                return None
            cur = self.conn.execute(
                f"SELECT id, email, name, created_at, updated_at, deleted_at "
                f"FROM {SCHEMA_NAME}.{TABLE_NAME} ORDER BY id")
            names = [d[0] for d in cur.description]
            return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def close(self) -> None:
        with self.lock:
            self._finalizer()

    # -- the customer's side -------------------------------------------------------
    def query(self, sql: Any, field: str = "sql") -> list[dict[str, Any]]:
        """Run one read-only SELECT; a refusal or SQL error is a 400 naming `field`."""
        check_select(sql, field)
        calls = 0

        def too_long() -> int:
            nonlocal calls
            calls += 1
            return int(calls > MAX_PROGRESS_CALLS)

        with self.lock:
            self.conn.set_authorizer(_read_only)
            self.conn.set_progress_handler(too_long, 1000)
            try:
                cur = self.conn.execute(sql)
                rows = cur.fetchmany(MAX_ROWS + 1)
                names = [d[0] for d in cur.description or ()]
            except sqlite3.Error as err:
                reason = "query ran too long" if calls > MAX_PROGRESS_CALLS else str(err)
                raise invalid(field, reason) from None
            finally:
                self.conn.set_progress_handler(None, 1000)
                self.conn.set_authorizer(None)
        if len(rows) > MAX_ROWS:
            raise invalid(field, f"more than {MAX_ROWS} rows; add a LIMIT")
        return [dict(zip(names, row, strict=True)) for row in rows]

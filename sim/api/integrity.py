"""Every part of a state file bound to the file, its place in it and what came before it.

Sealing (`sim.api.sealing`) keeps secrets; this module keeps the file whole. All
MACs are HMAC-SHA-256 under a key derived from the state key, over an
unambiguous encoding of their parts (each typed and length-prefixed):

- the file has a random id (`meta.file_id`), in every MAC below: a row, a
  snapshot or a sealed body copied from another file with the same key fails;
- journal row N: (file id, "journal", N, every column, the MAC of the row
  before it): a chain, so a row changed, inserted, removed or moved breaks it
  at that row (the first row chains from nothing);
- the snapshot: (file id, "snapshot", every column, the MAC of the journal row
  it was taken after);
- the keys table: one MAC over all its rows, in id order;
- meta: one MAC over every other meta row, which include the MAC of the last
  journal row, of the keys table and of the snapshot. So a journal cut at its
  end, an older snapshot put back, a key added or un-revoked, a scenario path
  or hash pointed elsewhere is refused.

What it cannot see: the whole file put back as an older copy of itself (every
part of it is then genuine); only something kept outside the file could tell.
And whoever holds the key can write any file the key opens.
"""

from __future__ import annotations

import hashlib
import hmac
import sqlite3
import struct
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sim.api.sealing import Seal



class StateError(Exception):
    """The state file cannot be used: in use, not ours, of another seed or scenario,
    missing its latest changes, or diverging."""


JOURNAL_COLUMNS = ("seq", "kind", "t", "wall", "method", "route", "path", "params", "query",
                   "content_type", "body", "key", "outcome", "args")
SNAPSHOT_COLUMNS = ("after", "t", "wall", "blob")
KEYS_COLUMNS = ("id", "sha256", "kind", "user_id", "org_id", "project_id", "name",
                "created_at", "revoked", "written")
#: meta rows this module keeps (besides `mac` itself)
HEAD, KEYS_MAC, SNAPSHOT_MAC, MAC = "journal_head", "keys_mac", "snapshot_mac", "mac"
_AGAIN = "restore a copy, or start over with --new"


def _part(value: Any) -> bytes:
    if value is None:
        tag, data = b"N", b""
    elif isinstance(value, bool | int):
        tag, data = b"I", str(int(value)).encode()
    elif isinstance(value, float):
        tag, data = b"F", value.hex().encode()
    elif isinstance(value, str):
        tag, data = b"S", value.encode("utf-8", "surrogatepass")
    elif isinstance(value, bytes | bytearray | memoryview):
        tag, data = b"B", bytes(value)
    else:
        raise TypeError(f"cannot authenticate a {type(value).__name__}")
    return tag + struct.pack(">Q", len(data)) + data


def encode(*parts: Any) -> bytes:
    return b"".join(_part(p) for p in parts)


def journal_mac(seal: Seal, file_id: str, row: tuple[Any, ...], before: bytes) -> bytes:
    """`row`: the values of JOURNAL_COLUMNS; `before`: the MAC of the row before (b"": none)."""
    return seal.mac(encode(file_id, "journal", *row, before))


def snapshot_mac(seal: Seal, file_id: str, row: tuple[Any, ...], at_after: bytes) -> bytes:
    """`row`: SNAPSHOT_COLUMNS; `at_after`: the MAC of journal row `after` (b"": none)."""
    return seal.mac(encode(file_id, "snapshot", *row, at_after))


def keys_mac(seal: Seal, file_id: str, rows: list[tuple[Any, ...]]) -> bytes:
    return seal.mac(encode(file_id, "keys", len(rows), *(v for row in rows for v in row)))


def meta_mac(seal: Seal, meta: dict[str, str]) -> bytes:
    items = sorted((k, v) for k, v in meta.items() if k != MAC)
    return seal.mac(encode("meta", len(items), *(x for kv in items for x in kv)))


def key_rows(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
    return conn.execute(f"SELECT {', '.join(KEYS_COLUMNS)} FROM keys ORDER BY id").fetchall()


def _same(mac: bytes, hex_text: str | None) -> bool:
    return hmac.compare_digest(mac.hex(), hex_text or "")


def verify(path: Path, conn: sqlite3.Connection, meta: dict[str, str], seal: Seal) -> None:
    """Refuse (StateError, one line) a file any part of which is not as the file wrote it.

    `seal` has already opened the file's key check: the key is the file's."""
    if not meta.get("file_id") or not _same(meta_mac(seal, meta), meta.get(MAC)):
        raise StateError(f"{path}: its meta was changed (its values, such as the scenario, "
                         f"seed or row count, do not match their MAC); {_AGAIN}")
    file_id = meta["file_id"]
    snapshots = conn.execute(f"SELECT {', '.join(SNAPSHOT_COLUMNS)}, mac FROM snapshot"
                             ).fetchall()
    if len(snapshots) > 1 or (not snapshots and meta.get(SNAPSHOT_MAC)):
        raise StateError(f"{path}: its snapshot is not the one the file last wrote; {_AGAIN}")
    after = snapshots[0][0] if snapshots else None
    at_after = b""
    before = b""
    cursor = conn.execute(f"SELECT {', '.join(JOURNAL_COLUMNS)}, mac FROM journal "
                          f"ORDER BY seq")
    for *row, mac in cursor:
        if not isinstance(mac, bytes) or not hmac.compare_digest(
                journal_mac(seal, file_id, tuple(row), before), mac):
            raise StateError(f"{path}: journal row {row[0]} is not the row the file wrote there "
                             f"(changed, inserted, moved, or a row before it removed); {_AGAIN}")
        before = mac
        if row[0] == after:
            at_after = mac
    if not _same(before, meta.get(HEAD)):
        raise StateError(f"{path}: its journal does not end with the row the file last wrote "
                         f"(rows removed at its end); {_AGAIN}")
    if not _same(keys_mac(seal, file_id, key_rows(conn)), meta.get(KEYS_MAC)):
        raise StateError(f"{path}: its keys table was changed (a key added, removed or edited, "
                         f"such as a revoked key marked live again); {_AGAIN}")
    if snapshots:
        *row, mac = snapshots[0]
        if (not isinstance(mac, bytes)
                or not hmac.compare_digest(snapshot_mac(seal, file_id, tuple(row), at_after),
                                           mac)
                or not _same(mac, meta.get(SNAPSHOT_MAC))):
            raise StateError(f"{path}: its snapshot is not the one the file last wrote "
                             f"(changed, an older one put back, or taken from another file); "
                             f"{_AGAIN}")


def derive(key: bytes) -> bytes:
    """The MAC key, derived from the state key (never the sealing key itself)."""
    return hmac.new(key, b"sim state file: MAC key", hashlib.sha256).digest()

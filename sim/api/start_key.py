"""The API key given when `sim serve` starts: where it comes from, what it replaces, and the
banner lines that say which keys are live (docs/reliability.md, "Keys").

The key comes from `--api-key KEY`, `--api-key-file PATH` (its first line) or,
when neither is given, `$SIM_API_KEY`: the last two keep it out of the process
list. It is kept under the name `START_KEY_NAME`; with a state file, a start
with another key revokes the previous start key (journaled like any
revocation), so a replaced key stops working. Keys created over HTTP, a
scenario's keys and a generated key are not start keys and stay until revoked.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from sim.api.keys import ApiKey, KeyRecord, secret_sha256

if TYPE_CHECKING:
    from sim.api.server import SimServer

START_KEY_NAME = "sim serve --api-key"
ENV = "SIM_API_KEY"
SHOWN_PREFIX = 8  # characters of a key's secret the banner shows
BANNER_KEYS = 10  # keys the banner lists by name; the rest are counted


class StartKeyError(ValueError):
    """The key given at start cannot be used (one line naming the option)."""


def given_key(option: str | None, file: str | None,
              environ: Mapping[str, str] = os.environ) -> tuple[str | None, str | None]:
    """(the key, where it came from), or (None, None) when none was given."""
    if option is not None and file is not None:
        raise StartKeyError("give the key one way: --api-key or --api-key-file, not both")
    if option is not None:
        return _checked(option, "--api-key"), "--api-key"
    if file is not None:
        try:
            text = Path(file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            reason = getattr(err, "strerror", None) or str(err)
            raise StartKeyError(f"--api-key-file {file}: cannot be read ({reason})") from None
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if len(lines) != 1:
            raise StartKeyError(f"--api-key-file {file}: must hold one key on one line "
                                f"(found {len(lines)} non-empty lines)")
        return _checked(lines[0], f"--api-key-file {file}"), "--api-key-file"
    value = environ.get(ENV)
    if value is not None and value.strip():
        return _checked(value.strip(), f"${ENV}"), f"${ENV}"
    return None, None


def _checked(secret: str, where: str) -> str:
    if any(c.isspace() for c in secret) or not secret.isprintable():
        raise StartKeyError(f"{where}: a key is one word of printable characters")
    return secret


def settle(server: SimServer, secret: str | None, source: str | None,
           state: str | None) -> list[str]:
    """Accept the key given at start, or generate one for a server that has none: the
    banner lines about keys. StartKeyError for a key revoked in the state file."""
    known: dict[str, str] = {}  # sha256 -> what the banner says of a key it knows
    replaced: list[KeyRecord] = []
    generated = None
    if secret is not None:
        if server.keys.is_revoked(secret):
            raise StartKeyError(f"{source}: that key was revoked in {state}; give another")
        _key, replaced = accept(server, secret)
        known[secret_sha256(secret)] = f"from {source}, {prefix(secret)}"
    elif not server.saved_keys:
        generated = server.add_personal_key()
        server.keep_key(generated)  # with a state file, as its SHA-256: a restart accepts it
        known[secret_sha256(generated.secret)] = "generated now, shown below"
    lines = banner(server, known)
    lines += [f"API key {r.id} ({START_KEY_NAME} of an earlier start): replaced by this one, "
              f"revoked" for r in replaced]
    if generated is not None:
        lines.append(f"API key (personal, shown once): {generated.secret}")
    return lines


def accept(server: SimServer, secret: str) -> tuple[ApiKey, list[KeyRecord]]:
    """Accept `secret` as the start key: (the key, the previous start keys it revoked)."""
    sha = secret_sha256(secret)
    replaced = [r for r in server.keys.records() if r.name == START_KEY_NAME and r.sha256 != sha]
    for record in replaced:
        server.keys.revoke_record(record)  # with a state file: journaled, durable
    key = server.keys.personal(secret, name=START_KEY_NAME)
    server.keep_key(key)
    return key, replaced


def banner(server: SimServer, known: dict[str, str]) -> list[str]:
    """Lines naming the keys accepted now: id, kind, name, and for a key whose secret this
    start knows (`known`: sha256 -> where it came from) its first characters; never more."""
    records = server.keys.records()
    lines = [f"API keys accepted: {len(records)}"]
    for record in records[:BANNER_KEYS]:
        line = f"  {record.id:>3}  {record.kind.value:<12} {record.name}"
        where = known.get(record.sha256)
        if where is not None:
            line += f"  ({where})"
        lines.append(line)
    if len(records) > BANNER_KEYS:
        lines.append(f"  ... and {len(records) - BANNER_KEYS} more (sim keys list, or "
                     f"GET /api/v2/api_keys)")
    return lines


def prefix(secret: str) -> str:
    return secret[:SHOWN_PREFIX] + "…"

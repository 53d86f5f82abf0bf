"""Secrets at rest in a state file: sealed under a key the server holds, never in clear.

What a state file keeps that may carry a secret (request bodies: OAuth client
secrets, SMTP passwords; snapshots of the world: those and the generated SDK
keys) is sealed with AES-256-GCM: encrypted and authenticated, so a copy of
the file, of its `-wal` or of a backup tells nothing without the key, and a
row changed by hand is refused instead of replayed.

The key is 32 random bytes, from (first found):

1. the environment variable `SIM_STATE_KEY` (URL-safe base64), for deployments
   that keep keys in a secret store;
2. a key file beside the state file, `<state>.key`, created with mode 0600
   when the state file is created.

A sealed value is `version byte | 12-byte nonce | ciphertext and tag`; the
nonce is random (2^-96 collision odds per pair: far beyond any file's rows).
`purpose` (with the file's random id) is bound as associated data, so a sealed
body cannot be passed off as a snapshot or the other way round, nor one file's
as another's. A key file not owned by the user running sim, or writable by
group or others, is refused: whoever can write the key can write a file it opens.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import secrets
import stat
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from sim.api.integrity import derive

ENV = "SIM_STATE_KEY"
VERSION = b"\x01"
_NONCE = 12
#: sealed in the file's meta when it is created: opens only with the right key
CHECK = b"sim state file key check"


class SealError(Exception):
    """No key, a key that does not open the file, or a sealed value changed."""


def key_path(state: Path) -> Path:
    return state.with_name(state.name + ".key")


class Seal:
    def __init__(self, key: bytes, source: str):
        if len(key) != 32:
            raise SealError(f"{source}: a state key is 32 bytes (URL-safe base64 of them), "
                            f"not {len(key)}")
        self._aead = AESGCM(key)
        self._mac_key = derive(key)
        self.source = source  # where the key came from, for messages (never the key)

    def __repr__(self) -> str:
        return f"Seal(from {self.source})"

    def seal(self, data: bytes, purpose: bytes) -> bytes:
        nonce = secrets.token_bytes(_NONCE)
        return VERSION + nonce + self._aead.encrypt(nonce, data, purpose)

    def mac(self, data: bytes) -> bytes:
        """HMAC-SHA-256 of `data` under a key derived from this one (`sim.api.integrity`)."""
        return hmac.new(self._mac_key, data, hashlib.sha256).digest()

    def open(self, sealed: bytes, purpose: bytes) -> bytes:
        if len(sealed) < 1 + _NONCE + 16 or sealed[:1] != VERSION:
            raise SealError("not a sealed value")
        nonce = sealed[1:1 + _NONCE]
        try:
            # a view, not a copy: a snapshot is opened holding it and its plaintext only
            return self._aead.decrypt(nonce, memoryview(sealed)[1 + _NONCE:], purpose)
        except InvalidTag:
            raise SealError("the key does not open it, or it was changed") from None


def _decode(text: str, source: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text.strip().encode("ascii") + b"==")
    except (binascii.Error, ValueError, UnicodeEncodeError):
        raise SealError(f"{source}: not URL-safe base64") from None


def load_key(state: Path, *, create: bool) -> Seal:
    """The key of `state`: from $SIM_STATE_KEY, else its key file (made 0600 if `create`)."""
    given = os.environ.get(ENV)
    if given:
        return Seal(_decode(given, f"${ENV}"), f"${ENV}")
    path = key_path(state)
    if create:
        key = secrets.token_bytes(32)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass  # a key file kept from before: use it (it may seal other copies)
        else:
            with os.fdopen(fd, "w") as f:
                f.write(base64.urlsafe_b64encode(key).decode() + "\n")
                f.flush()
                os.fsync(f.fileno())
            return Seal(key, str(path))
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            _check_owner(path, os.fstat(f.fileno()))
            text = f.read()
    except FileNotFoundError:
        raise SealError(f"its key file {path} is missing (or set ${ENV}): without it the "
                        f"sealed requests and snapshots cannot be read") from None
    except OSError as err:
        raise SealError(f"its key file {path}: {err.strerror or err}") from None
    return Seal(_decode(text, str(path)), str(path))


def _check_owner(path: Path, st: os.stat_result) -> None:
    """A key file someone else could have written is not trusted: whoever can write the key
    can write a file it opens."""
    if st.st_uid != os.getuid():
        raise SealError(f"its key file {path} is owned by uid {st.st_uid}, not by the user "
                        f"running sim (uid {os.getuid()}): refused, as another user could "
                        f"have replaced it")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise SealError(f"its key file {path} can be written by group or others (mode "
                        f"{stat.S_IMODE(st.st_mode):04o}): refused; make it 0600 "
                        f"(chmod 600) if its key is still to be trusted")

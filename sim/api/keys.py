"""API keys and what each may reach (the specification, Authentication; the design notes, API keys).

The simulated service has one account: a user who belongs to one organization.

| kind         | reaches                                              | projects it creates belong to |
|--------------|------------------------------------------------------|-------------------------------|
| personal     | projects the user owns, and those of its orgs        | the user                      |
| organization | projects of its organization                         | the organization              |
| project      | one project; may not create or delete projects (403) | -                             |

A project outside a key's reach answers 404, exactly as an unknown one, so a
key never learns that the project exists. Keys are compared in constant time
and never written to a log or a response.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from sim.engine.model import USER_ID, Project
from sim.rules.errors import forbidden, not_found, unauthorized

if TYPE_CHECKING:
    from sim.engine.control_plane import ControlPlane
    from sim.scenario.schema import KeySpec

ORG_ID = "org-1"
_BEARER = re.compile(r"Bearer\s+(\S+)\s*", re.IGNORECASE)


class KeyKind(StrEnum):
    PERSONAL = "personal"
    ORGANIZATION = "organization"
    PROJECT = "project"
    INTERNAL = "internal"  # scenario actions (dispatch): every project; never served


@dataclass(frozen=True)
class ApiKey:
    secret: str
    kind: KeyKind
    user_id: str = USER_ID
    org_id: str | None = None  # organization keys
    project_id: str | None = None  # project-scoped keys

    def __repr__(self) -> str:  # never show the secret
        return f"ApiKey(kind={self.kind.value!r}, project_id={self.project_id!r})"

    # -- reach -----------------------------------------------------------------
    def reaches(self, project: Project) -> bool:
        kind = self.kind
        if kind is KeyKind.INTERNAL:
            return True
        if kind is KeyKind.PROJECT:
            return project.id == self.project_id
        if kind is KeyKind.ORGANIZATION:
            return project.org_id is not None and project.org_id == self.org_id
        return project.owner_id == self.user_id or project.org_id == ORG_ID

    def project(self, cp: ControlPlane, project_id: str) -> Project:
        """The project, or 404 when it does not exist or lies outside this key's reach."""
        project = cp.get_project(project_id)
        if not self.reaches(project):
            raise not_found("project", project_id, "project_id")
        return project

    def project_to_delete(self, cp: ControlPlane, project_id: str) -> Project:
        """The project, if this key may delete it: a project-scoped key has member-level
        access and may not delete the project it is scoped to (403, as the real API)."""
        project = self.project(cp, project_id)
        if self.kind is KeyKind.PROJECT:
            raise forbidden("a project-scoped API key cannot delete its project")
        return project

    def owner_of_new_project(self, org_id: str | None) -> tuple[str, str | None]:
        """(owner_id, org_id) of a project this key creates; refuses project keys."""
        if self.kind is KeyKind.PROJECT:
            raise forbidden("a project-scoped API key cannot create projects")
        if self.kind is KeyKind.ORGANIZATION:
            if org_id is not None and org_id != self.org_id:
                raise not_found("organization", org_id, "project.org_id")
            return self.org_id or ORG_ID, self.org_id
        if org_id is not None and org_id != ORG_ID:
            raise not_found("organization", org_id, "project.org_id")
        return self.user_id, ORG_ID  # without org_id: the user's default organization


def new_secret() -> str:
    return "sim_" + secrets.token_urlsafe(32)


@dataclass(frozen=True)
class KeyRecord:
    """What is kept of a key: never its secret, only the SHA-256 of it."""

    id: int
    sha256: str
    kind: KeyKind
    user_id: str
    org_id: str | None
    project_id: str | None
    name: str
    created_at: str | None  # simulated instant, ISO 8601 UTC
    revoked: bool = False

    def key(self) -> ApiKey:
        return ApiKey("", self.kind, self.user_id, self.org_id, self.project_id)


def secret_sha256(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class KeyStore:
    """The keys a server accepts, and the record of every key it has known.

    Keys given in memory (`personal()`, a scenario's, `--api-key`) are held by
    their secret; keys restored from a state file by the SHA-256 of it. Both are
    compared in constant time over the whole store. A revoked key is refused at
    once and for good: re-adding its secret (a scenario rebuilt, a restart)
    does not bring it back. `on_revoke(record)` lets the server journal it.

    Writes replace the dicts instead of changing them in place: `authenticate`
    walks every key on request threads, and a dict that changes size under that
    walk raises (a 500 found by a test adding keys while others authenticate).
    """

    def __init__(self) -> None:
        self._keys: dict[str, ApiKey] = {}
        self._hashed: dict[str, ApiKey] = {}
        self._revoked: frozenset[str] = frozenset()
        self._records: dict[str, KeyRecord] = {}  # sha256 -> record, revoked ones included
        self._next_id = 1
        self._last_used: dict[str, str | None] = {}
        self.now: Callable[[], str | None] = lambda: None
        self.on_revoke: Callable[[KeyRecord], None] | None = None

    def __len__(self) -> int:
        return len(self._keys) + len(self._hashed)

    @property
    def hashed(self) -> dict[str, ApiKey]:
        """The keys restored from a state file, by the SHA-256 of their secret."""
        return self._hashed

    def add(self, key: ApiKey, name: str | None = None) -> ApiKey:
        """Accept `key` from now on, unless it was revoked (then it stays refused)."""
        sha = secret_sha256(key.secret)
        if sha in self._revoked:
            return key
        self._keys = {**self._keys, key.secret: key}
        if sha not in self._records:
            self._record(KeyRecord(self._next_id, sha, key.kind, key.user_id, key.org_id,
                                   key.project_id, name or f"{key.kind.value} key",
                                   self.now()))
        return key

    def _record(self, record: KeyRecord) -> KeyRecord:
        self._records = {**self._records, record.sha256: record}
        self._next_id = max(self._next_id, record.id + 1)
        return record

    def record_of(self, secret: str) -> KeyRecord | None:
        return self._records.get(secret_sha256(secret))

    def is_revoked(self, secret: str) -> bool:
        return secret_sha256(secret) in self._revoked

    def used(self, secret: str) -> None:
        """Note the simulated instant a key was last accepted (kept in memory only)."""
        sha, now = secret_sha256(secret), self.now()
        if sha in self._last_used:
            self._last_used[sha] = now  # same size: safe under concurrent reads
        else:
            self._last_used = {**self._last_used, sha: now}

    def last_used(self, record: KeyRecord) -> str | None:
        return self._last_used.get(record.sha256)

    def records(self) -> list[KeyRecord]:
        """The keys accepted now, by id."""
        return sorted((r for r in self._records.values() if not r.revoked), key=lambda r: r.id)

    def restore(self, records: list[KeyRecord]) -> None:
        """Keys of a state file: accepted by hash; revoked ones refused, even if given again.

        Keys already here (a scenario's) that the file knows take the file's id."""
        saved = {r.sha256: r for r in records}
        self._revoked = frozenset(sha for sha, r in saved.items() if r.revoked)
        self._hashed = {sha: r.key() for sha, r in saved.items() if not r.revoked}
        self._keys = {s: k for s, k in self._keys.items() if secret_sha256(s) not in self._revoked}
        mine = self._records
        self._records = {}
        self._next_id = 1
        for record in records:
            self._record(record)
        for sha, record in mine.items():
            if sha not in saved:
                self._record(dataclasses.replace(record, id=self._next_id))

    def revoke(self, secret: str) -> bool:
        """Stop accepting a key, at once and for good; False when it was not a key here."""
        record = self.record_of(secret)
        return record is not None and self.revoke_record(record) is not None

    def revoke_id(self, key_id: int) -> KeyRecord | None:
        """Revoke the key with this id; None when no accepted key has it."""
        record = next((r for r in self._records.values() if r.id == key_id), None)
        return None if record is None else self.revoke_record(record)

    def revoke_record(self, record: KeyRecord) -> KeyRecord | None:
        if record.revoked:
            return None
        sha = record.sha256
        self._revoked = self._revoked | {sha}
        self._keys = {s: k for s, k in self._keys.items() if secret_sha256(s) != sha}
        self._hashed = {h: k for h, k in self._hashed.items() if h != sha}
        revoked = self._record(dataclasses.replace(record, revoked=True))
        if self.on_revoke is not None:
            self.on_revoke(revoked)
        return revoked

    def personal(self, secret: str | None = None, name: str | None = None) -> ApiKey:
        return self.add(ApiKey(secret or new_secret(), KeyKind.PERSONAL), name)

    def organization(self, secret: str | None = None, org_id: str = ORG_ID) -> ApiKey:
        return self.add(ApiKey(secret or new_secret(), KeyKind.ORGANIZATION, org_id=org_id))

    def for_project(self, project_id: str, secret: str | None = None) -> ApiKey:
        return self.add(ApiKey(secret or new_secret(), KeyKind.PROJECT, project_id=project_id))

    def discard_project_keys(self) -> None:
        self._keys = {s: k for s, k in self._keys.items() if k.kind is not KeyKind.PROJECT}

    def authenticate(self, authorization: str | None) -> ApiKey:
        """The key of an `authorization: Bearer <key>` header, or 401."""
        if not authorization:
            raise unauthorized("missing authorization header (Bearer <API key>)")
        match = _BEARER.fullmatch(authorization)
        if match is None:
            raise unauthorized("authorization header must be: Bearer <API key>")
        offered = match[1].encode()
        found = None
        for secret, key in self._keys.items():  # no early exit: constant time over the store
            if hmac.compare_digest(secret.encode(), offered):
                found = key
        if self._hashed:
            offered_sha = hashlib.sha256(offered).hexdigest()
            for sha, key in self._hashed.items():
                if hmac.compare_digest(sha, offered_sha):
                    found = key
        if found is None:
            raise unauthorized("invalid API key")
        self.used(match[1])
        return found


def scenario_keys(store: KeyStore, specs: list[KeySpec], projects: dict[str, str]) -> None:
    """Add a scenario's `keys:`; `projects` maps "shop[2]" to a project id."""
    for spec in specs:
        if spec.kind == "personal":
            store.personal(spec.key)
        elif spec.kind == "organization":
            store.organization(spec.key)
        else:
            ref = spec.project or ""
            ref = ref if "[" in ref else f"{ref}[0]"
            if ref in projects:  # a template with count 0 has no instance to scope to
                store.for_project(projects[ref], spec.key)

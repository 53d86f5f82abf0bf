"""API keys and what each may reach (spec.md, Authentication; DESIGN.md, API keys).

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

import hmac
import re
import secrets
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from sim.engine.model import Project
from sim.rules.errors import forbidden, not_found, unauthorized

if TYPE_CHECKING:
    from sim.engine.control_plane import ControlPlane
    from sim.scenario.schema import KeySpec

USER_ID = "user-1"  # the engine's default project owner
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
        return self.user_id, org_id


def new_secret() -> str:
    return "sim_" + secrets.token_urlsafe(32)


class KeyStore:
    """The keys a server accepts.

    Writes replace the dict instead of changing it in place: `authenticate` walks
    every key (constant time) on request threads, and a dict that changes size
    under that walk raises (a 500 found by a test adding keys while others
    authenticate).
    """

    def __init__(self) -> None:
        self._keys: dict[str, ApiKey] = {}

    def __len__(self) -> int:
        return len(self._keys)

    def add(self, key: ApiKey) -> ApiKey:
        self._keys = {**self._keys, key.secret: key}
        return key

    def revoke(self, secret: str) -> bool:
        """Stop accepting a key, at once and for good; False when it was not a key here."""
        known = secret in self._keys
        self._keys = {s: k for s, k in self._keys.items() if s != secret}
        return known

    def personal(self, secret: str | None = None) -> ApiKey:
        return self.add(ApiKey(secret or new_secret(), KeyKind.PERSONAL))

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
        if found is None:
            raise unauthorized("invalid API key")
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

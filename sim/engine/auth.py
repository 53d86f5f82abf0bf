"""Managed auth administration (the specification #1-#16): integrations, SDK keys, users,
OAuth providers, the redirect whitelist and the email server.

`ManagedAuth` hangs off the ControlPlane (`cp.auth`); its verbs are named after
the API actions and are the whole behaviour, so the HTTP routes only parse and
serialise. Every verb checks, in this order, that the project exists (404),
that the request is well formed (400), that the project has the integration
(404) and that the change fits the current state (409, or 404 for a missing
user, OAuth provider or domain); only then does it change anything, so a
refusal leaves `state()` as it was. Random draws happen after the checks too,
so a refused call does not shift the ids a seed gives.

Users created at the provider reach the branch database's `svc_auth.users_sync`
table `cp.config.user_sync_delay_s` of simulated time later (a SimPy timeout);
deletions leave it after the same delay. A change is visible once simulated
time has moved past that instant (a run that stops exactly at it has not
processed it yet, as with every other timed change of the engine).
"""

from __future__ import annotations

import json
import threading
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

import numpy as np

from sim.engine.auth_model import AuthUser, EmailServer, Integration, OAuthProvider
from sim.engine.auth_sql import BranchDatabase
from sim.rules import auth as rules
from sim.rules.auth import OwnedBy
from sim.rules.errors import ApiError, conflict, invalid, not_found

if TYPE_CHECKING:
    from collections.abc import Callable

    from sim.engine.control_plane import ControlPlane
    from sim.engine.model import Project

KEY_LENGTH = 48


def transfer_token_of(url: str) -> str:
    """The one-time code of a confirmation URL from `transfer_ownership`."""
    return parse_qs(urlsplit(url).query)["code"][0]


class ManagedAuth:
    def __init__(self, cp: ControlPlane, data_dir: Path | None = None):
        self.cp = cp
        #: None: databases in memory; else one SQLite file per branch database under it
        self.data_dir = data_dir
        self._integrations: dict[tuple[str, str], Integration] = {}
        self._databases: dict[tuple[str, str], BranchDatabase] = {}
        self._uuids: set[str] = set()
        self._pending_syncs = 0
        self._lock = threading.RLock()  # guards the databases map against server threads

    # -- lookups -----------------------------------------------------------------------
    def _rng(self, project: Project) -> np.random.Generator:
        return self.cp.streams.get(f"auth/{project.key}")

    def _uuid(self, rng: np.random.Generator) -> str:
        while True:
            ident = str(uuid.UUID(bytes=rng.bytes(16), version=4))
            if ident not in self._uuids:
                self._uuids.add(ident)
                return ident

    def _of_project(self, project_id: str) -> list[Integration]:
        return [i for (p, _), i in self._integrations.items() if p == project_id]

    def integration(self, project_id: str, auth_provider: str,
                    field: str = "auth_provider") -> Integration:
        """The project's integration with the provider, or 404 (project, then integration)."""
        self.cp.get_project(project_id)
        rules.check_auth_provider(auth_provider)
        found = self._integrations.get((project_id, auth_provider))
        if found is None:
            raise _no_integration(project_id, auth_provider, field)
        return found

    def _sole(self, project_id: str) -> Integration:
        """For the verbs whose path names no provider: the project's integration."""
        found = self._of_project(project_id)
        if not found:
            raise _no_integration(project_id, None, "project_id")
        return found[0]

    def is_current_key(self, project_id: str, auth_provider: str, key: str) -> bool:
        """True for the integration's present pub/secret key; rotated keys are not."""
        found = self._integrations.get((project_id, auth_provider))
        return found is not None and key in (found.pub_client_key, found.secret_server_key)

    # -- integrations (#1, #2, #3, #6, #7) ---------------------------------------------
    def create_integration(
        self, project_id: str, branch_id: str, auth_provider: str = "stack",
        database_name: str = rules.DEFAULT_DATABASE_NAME,
        role_name: str = rules.DEFAULT_ROLE_NAME,
    ) -> Integration:
        project = self.cp.get_project(project_id)
        rules.check_auth_provider(auth_provider)
        rules.check_text("branch_id", branch_id)
        rules.check_identifier("database_name", database_name)
        rules.check_identifier("role_name", role_name)
        branch = self.cp.get_branch(project_id, branch_id)
        if (project_id, auth_provider) in self._integrations:
            raise conflict("auth_provider",
                           f"project {project_id!r} already has a {auth_provider!r} integration")
        rng = self._rng(project)
        provider_project_id = self._uuid(rng)
        pub, secret = self._draw_keys(rng)
        integ = Integration(
            project_id=project_id, auth_provider=auth_provider,
            auth_provider_project_id=provider_project_id, branch_id=branch.id,
            db_name=database_name, role_name=role_name, created_at=self.cp.now,
            jwks_url=rules.jwks_url(auth_provider, provider_project_id),
            pub_client_key=pub, secret_server_key=secret,
        )
        self._database(project_id, branch.id, database_name, create=True).create_users_table()
        self._integrations[(project_id, auth_provider)] = integ
        return integ

    def _draw_keys(self, rng: np.random.Generator) -> tuple[str, str]:
        ids = self.cp.ids
        return ids.opaque(rng, "pck_", KEY_LENGTH), ids.opaque(rng, "ssk_", KEY_LENGTH)

    def list_integrations(self, project_id: str) -> list[dict[str, Any]]:
        """The items of #2, in creation order (no keys)."""
        self.cp.get_project(project_id)
        return [{
            "auth_provider": i.auth_provider,
            "auth_provider_project_id": i.auth_provider_project_id,
            "branch_id": i.branch_id,
            "db_name": i.db_name,
            "created_at": self.cp.clock.iso(i.created_at),
            "owned_by": i.owned_by,
            "jwks_url": i.jwks_url,
        } for i in self._of_project(project_id)]

    def generate_sdk_keys(self, project_id: str, auth_provider: str) -> Integration:
        """New pub/secret keys; the previous ones stop being valid at once."""
        integ = self.integration(project_id, auth_provider)
        integ.pub_client_key, integ.secret_server_key = self._draw_keys(
            self._rng(self.cp.projects[project_id]))
        return integ

    def transfer_ownership(self, project_id: str, auth_provider: str) -> str:
        """A confirmation URL with a one-time code; a newer request voids the older code."""
        integ = self.integration(project_id, auth_provider)
        if integ.owned_by == OwnedBy.USER.value:
            raise conflict("auth_provider", "ownership was already transferred to the user")
        rng = self._rng(self.cp.projects[project_id])
        integ.transfer_token = self.cp.ids.opaque(rng, "", 32)
        return rules.transfer_url(auth_provider, integ.transfer_token)

    def confirm_transfer(self, project_id: str, token: str) -> Integration:
        """The customer accepted in the provider's dashboard (a /_sim call): owned_by user."""
        self.cp.get_project(project_id)
        rules.check_text("token", token, 256)
        integ = next((i for i in self._of_project(project_id)
                      if i.transfer_token is not None and i.transfer_token == token), None)
        if integ is None:
            raise not_found("ownership transfer", "with this code", "token")
        integ.owned_by = OwnedBy.USER.value
        integ.transfer_token = None
        return integ

    def delete_integration(self, project_id: str, auth_provider: str,
                           delete_data: bool = False) -> None:
        """Remove the integration and its provider project (users, keys, settings).

        The synced table: with delete_data the schema `svc_auth` is dropped with
        `users_sync` and its rows (as the real API's delete_data drops the auth
        schema); without it the table and its rows stay as they are and syncing
        stops at once: changes still waiting for their sync delay are dropped.
        A later integration on the same database reuses a kept table.
        """
        self.cp.get_project(project_id)
        rules.check_auth_provider(auth_provider)
        rules.check_bool("delete_data", delete_data)
        integ = self.integration(project_id, auth_provider)
        del self._integrations[(project_id, auth_provider)]
        if delete_data:
            db = self._databases.get((integ.branch_id, integ.db_name))
            if db is not None:
                db.drop_schema()

    # -- users (#4, #5) ----------------------------------------------------------------
    def create_user(self, project_id: str, auth_provider: str, email: str,
                    name: str | None = None) -> str:
        self.cp.get_project(project_id)
        rules.check_auth_provider(auth_provider)
        rules.check_email(email)
        rules.check_user_name(name)
        integ = self.integration(project_id, auth_provider)
        if integ.user_by_email(email) is not None:
            raise conflict("email", f"a user with email {email!r} already exists")
        user = AuthUser(self._uuid(self._rng(self.cp.projects[project_id])), email, name,
                        self.cp.now)
        integ.users[user.id] = user
        row = self._row(user)
        self._sync_later(integ, lambda db: db.upsert_user(row))
        return user.id

    def delete_user(self, project_id: str, auth_user_id: str) -> None:
        self.cp.get_project(project_id)
        rules.check_text("auth_user_id", auth_user_id, 256)
        integs = self._of_project(project_id)
        if not integs:
            raise _no_integration(project_id, None, "project_id")
        integ = next((i for i in integs if auth_user_id in i.users), None)
        if integ is None:
            raise not_found("auth user", auth_user_id, "auth_user_id")
        del integ.users[auth_user_id]
        self._sync_later(integ, lambda db: db.delete_user(auth_user_id))

    def _row(self, user: AuthUser) -> dict[str, Any]:
        created = self.cp.clock.iso(user.created_at)
        raw = {"id": user.id, "primary_email": user.email, "display_name": user.name,
               "signed_up_at_millis": int(round(user.created_at * 1000))}
        return {"raw_json": json.dumps(raw, sort_keys=True), "id": user.id, "name": user.name,
                "email": user.email, "created_at": created, "updated_at": created,
                "deleted_at": None}

    def _sync_later(self, integ: Integration, apply: Callable[[BranchDatabase], None]) -> None:
        """Apply a change to the synced table after the sync delay, unless the
        integration (or the branch) is gone by then."""
        key = (integ.project_id, integ.auth_provider)

        def sync(_event: object = None) -> None:
            self._pending_syncs -= 1
            db = self._databases.get((integ.branch_id, integ.db_name))
            if self._integrations.get(key) is integ and db is not None:
                apply(db)

        self._pending_syncs += 1
        delay = self.cp.config.user_sync_delay_s
        if delay <= 0:
            sync()
        else:
            self.cp.env.timeout(delay).callbacks.append(sync)

    # -- OAuth providers (#8-#11) -------------------------------------------------------------
    def list_oauth_providers(self, project_id: str) -> list[dict[str, Any]]:
        self.cp.get_project(project_id)
        return [p.item() for p in self._sole(project_id).oauth_providers.values()]

    def add_oauth_provider(self, project_id: str, id: str, client_id: str | None = None,
                           client_secret: str | None = None) -> dict[str, Any]:
        """Without client_id and client_secret the provider uses the shared keys."""
        self.cp.get_project(project_id)
        rules.check_oauth_provider_id(id)
        rules.check_credential("client_id", client_id)
        rules.check_credential("client_secret", client_secret)
        rules.oauth_type(client_id, client_secret)
        integ = self._sole(project_id)
        if id in integ.oauth_providers:
            raise conflict("id", f"OAuth provider {id!r} is already added")
        provider = OAuthProvider(id, client_id, client_secret)
        integ.oauth_providers[id] = provider
        return provider.response()

    def update_oauth_provider(self, project_id: str, oauth_provider_id: str,
                              client_id: str | None = None,
                              client_secret: str | None = None) -> dict[str, Any]:
        """Replaces the credentials sent; the shared/standard rule applies to the result."""
        self.cp.get_project(project_id)
        rules.check_credential("client_id", client_id)
        rules.check_credential("client_secret", client_secret)
        provider = self._oauth_provider(project_id, oauth_provider_id)
        new_id = provider.client_id if client_id is None else client_id
        new_secret = provider.client_secret if client_secret is None else client_secret
        rules.oauth_type(new_id, new_secret)
        provider.client_id, provider.client_secret = new_id, new_secret
        return provider.response()

    def delete_oauth_provider(self, project_id: str, oauth_provider_id: str) -> None:
        self.cp.get_project(project_id)
        self._oauth_provider(project_id, oauth_provider_id)
        del self._sole(project_id).oauth_providers[oauth_provider_id]

    def _oauth_provider(self, project_id: str, oauth_provider_id: str) -> OAuthProvider:
        provider = self._sole(project_id).oauth_providers.get(oauth_provider_id)
        if provider is None:
            raise not_found("OAuth provider", oauth_provider_id, "oauth_provider_id")
        return provider

    # -- redirect whitelist (#12-#14) ------------------------------------------------------------
    def list_redirect_domains(self, project_id: str) -> list[dict[str, str]]:
        self.cp.get_project(project_id)
        self._sole(project_id)
        return [{"domain": d, "auth_provider": i.auth_provider}
                for i in self._of_project(project_id) for d in i.domains]

    def add_redirect_domain(self, project_id: str, domain: str, auth_provider: str) -> None:
        """The domain is stored as its origin with scheme and host in lower case."""
        self.cp.get_project(project_id)
        rules.check_auth_provider(auth_provider)
        origin = rules.check_redirect_domain(domain)
        integ = self.integration(project_id, auth_provider)
        if origin in integ.domains:
            raise conflict("domain", f"{origin!r} is already in the redirect whitelist")
        integ.domains.append(origin)

    def delete_redirect_domains(self, project_id: str, auth_provider: str,
                                domains: list[Any]) -> None:
        """Remove exactly the listed domains (items {"domain": ...} or plain strings);
        if one is not whitelisted, 404 naming the first such, and nothing is removed."""
        self.cp.get_project(project_id)
        rules.check_auth_provider(auth_provider)
        if not isinstance(domains, list) or not domains:
            raise invalid("domains", "required: a non-empty array of {domain}")
        origins = []
        for i, item in enumerate(domains):
            value = item.get("domain") if isinstance(item, dict) else item
            origins.append(rules.check_redirect_domain(value, f"domains[{i}].domain"))
        integ = self.integration(project_id, auth_provider)
        for i, origin in enumerate(origins):
            if origin not in integ.domains:
                raise not_found("redirect domain", origin, f"domains[{i}].domain")
        gone = set(origins)
        integ.domains = [d for d in integ.domains if d not in gone]

    # -- email server (#15, #16) -------------------------------------------------------
    def get_email_server(self, project_id: str) -> dict[str, Any]:
        self.cp.get_project(project_id)
        return self._sole(project_id).email_server.view()

    def update_email_server(
        self, project_id: str, type: str, host: str | None = None, port: int | None = None,
        username: str | None = None, password: str | None = None,
        sender_email: str | None = None, sender_name: str | None = None,
    ) -> dict[str, Any]:
        """Returns every field sent (the password too); going back to shared drops them."""
        self.cp.get_project(project_id)
        sent = rules.check_email_server(type, host, port, username, password, sender_email,
                                        sender_name)
        integ = self._sole(project_id)
        integ.email_server = EmailServer(**sent)
        return dict(sent)

    # -- the synced table as SQL -------------------------------------------------------
    def _database(self, project_id: str, branch_id: str, name: str,
                  create: bool = False) -> BranchDatabase:
        with self._lock:
            db = self._databases.get((branch_id, name))
            if db is None:
                if not create:
                    raise not_found("database", name, "database_name")
                path = (None if self.data_dir is None
                        else Path(self.data_dir) / branch_id / f"{name}.sqlite")
                db = self._databases[(branch_id, name)] = BranchDatabase(
                    project_id, branch_id, name, path)
            return db

    def query(self, project_id: str, sql: str, branch_id: str | None = None,
              database_name: str | None = None) -> list[dict[str, Any]]:
        """Run one read-only SELECT on a branch database, rows as dicts.

        Defaults: the branch and database of the project's integration (when
        there is none: the default branch and `svcdb`). 404 for a database that
        no integration ever created; 400 naming `sql` for anything but a single
        SELECT, or an SQL error (such as the table after delete_data).
        """
        project = self.cp.get_project(project_id)
        integs = self._of_project(project_id)
        if branch_id is None:
            branch_id = integs[0].branch_id if integs else project.default_branch_id
        branch = self.cp.get_branch(project_id, branch_id)
        if database_name is None:
            bound = [i.db_name for i in integs if i.branch_id == branch.id]
            database_name = bound[0] if bound else rules.DEFAULT_DATABASE_NAME
        return self._database(project_id, branch.id, database_name).query(sql)

    # -- the rest of the control plane -------------------------------------------------
    def branch_deleted(self, project_id: str, branch_id: str) -> None:
        """A branch is gone: its databases with it, and an integration bound to it."""
        for key, integ in list(self._integrations.items()):
            if integ.project_id == project_id and integ.branch_id == branch_id:
                del self._integrations[key]
        with self._lock:
            for key, db in list(self._databases.items()):
                if db.branch_id == branch_id:
                    db.close()
                    del self._databases[key]

    def project_deleted(self, project_id: str) -> None:
        """A project is gone: its integrations (and provider projects) and databases."""
        for key in [k for k in self._integrations if k[0] == project_id]:
            del self._integrations[key]
        with self._lock:
            for key, db in list(self._databases.items()):
                if db.project_id == project_id:
                    db.close()
                    del self._databases[key]

    # -- snapshot ----------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """Everything, as plain data and without secrets (tests compare snapshots)."""
        with self._lock:
            databases = {f"{b}/{n}": db.users() for (b, n), db in sorted(self._databases.items())}
        return {
            "integrations": [_integration_state(i) for i in self._integrations.values()],
            "databases": databases,
            "pending_syncs": self._pending_syncs,
        }


def _integration_state(i: Integration) -> dict[str, Any]:
    return {
        "project_id": i.project_id, "auth_provider": i.auth_provider,
        "auth_provider_project_id": i.auth_provider_project_id, "branch_id": i.branch_id,
        "db_name": i.db_name, "role_name": i.role_name, "created_at": i.created_at,
        "owned_by": i.owned_by, "jwks_url": i.jwks_url, "pub_client_key": i.pub_client_key,
        "transfer_pending": i.transfer_token is not None,
        "users": [{"id": u.id, "email": u.email, "name": u.name, "created_at": u.created_at}
                  for u in i.users.values()],
        "oauth_providers": [{"id": p.id, "type": p.type, "client_id": p.client_id}
                            for p in i.oauth_providers.values()],
        "domains": list(i.domains),
        "email_server": i.email_server.view(),
    }


def _no_integration(project_id: str, auth_provider: str | None, field: str) -> ApiError:
    """404 with a message that says what to do (not_found's status and code)."""
    base = not_found("auth integration", auth_provider or "", field)
    which = f"no {auth_provider!r} auth integration" if auth_provider else "no auth integration"
    return ApiError(base.status, base.code,
                    f"project {project_id!r} has {which}; "
                    "create one with POST /projects/auth/create", field)

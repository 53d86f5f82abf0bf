"""A Hypothesis state machine for managed auth (the specification #1-#16) against a tiny model.

The machine drives a *driver* (the engine verbs here; the HTTP layer can
supply its own driver with the same methods) and a dict model side by side.
Every rule predicts its outcome from the model first: a refusal must come back
as an ApiError with exactly the predicted status (and field, when the driver
reports one) and must change nothing; a success is applied to the model. The
invariants compare every listing, the email server and the synced users table
with the model after every step.

Drivers return the JSON shapes of the specification and raise `ApiError` on refusals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from sim.engine.auth import transfer_token_of
from sim.engine.config import EngineConfig
from sim.engine.control_plane import ControlPlane
from sim.rules.errors import ApiError

SYNC_DELAY_S = 2.0
BOGUS_PROJECT = "no-such-project-00000000"
USERS_SQL = "SELECT id, email, name FROM svc_auth.users_sync ORDER BY id"

PROVIDERS = ("stack",) * 4 + ("clerk",)  # only stack is supported; mostly valid values
EMAILS = ("ANN@example.com", "ann@example.com", "bob@example.com", "cy+tag@mail.example.org")
BAD_EMAILS = ("", "@example.com", "ann@", "not-an-email")
NAMES = (None, "Ann", "x" * 255)
BAD_NAMES = ("", "x" * 256)
OAUTH_IDS = ("github", "google", "microsoft", "facebook")  # facebook is not supported
CREDENTIALS = (None, "cred-1", "cred-2") * 2 + ("",)  # "" is malformed
DOMAINS = ("http://localhost:3000", "https://app.example.com", "https://example.com:8443")
BAD_DOMAINS = ("example.com", "ftp://example.com", "https://example.com/",
               "https://example.com/path", "https://example.com?x=1", "https://example.com#top",
               "https://u@example.com")
SMTP = {"host": "smtp.example.com", "port": 587, "username": "mailer", "password": "pw-1",
        "sender_email": "noreply@example.com", "sender_name": "Example"}
BAD_SMTP = {"host": "bad host", "port": 70_000, "sender_email": "nobody"}


class EngineDriver:
    """The engine verbs in the shapes the HTTP layer will serve."""

    def __init__(self, seed: int = 0):
        self.cp = ControlPlane(EngineConfig(user_sync_delay_s=SYNC_DELAY_S), seed=seed)
        self.auth = self.cp.auth

    def create_project(self) -> tuple[str, str]:
        created = self.cp.create_project(with_compute=False)
        return created.project.id, created.branch.id

    def advance(self, seconds: float) -> None:
        self.cp.advance(seconds)

    def snapshot(self) -> Any:
        return self.auth.state()

    def create_integration(self, project_id: str, branch_id: str, auth_provider: str) -> dict:
        return self.auth.create_integration(project_id, branch_id, auth_provider).response()

    def list_integrations(self, project_id: str) -> list[dict]:
        return self.auth.list_integrations(project_id)

    def generate_sdk_keys(self, project_id: str, auth_provider: str) -> dict:
        return self.auth.generate_sdk_keys(project_id, auth_provider).response()

    def create_user(self, project_id: str, auth_provider: str, email: str, name: str | None):
        return self.auth.create_user(project_id, auth_provider, email, name)

    def delete_user(self, project_id: str, auth_user_id: str) -> None:
        self.auth.delete_user(project_id, auth_user_id)

    def transfer_ownership(self, project_id: str, auth_provider: str) -> str:
        return self.auth.transfer_ownership(project_id, auth_provider)

    def confirm_transfer(self, project_id: str, token: str) -> None:
        self.auth.confirm_transfer(project_id, token)

    def delete_integration(self, project_id: str, auth_provider: str, delete_data: bool):
        self.auth.delete_integration(project_id, auth_provider, delete_data)

    def list_oauth_providers(self, project_id: str) -> list[dict]:
        return self.auth.list_oauth_providers(project_id)

    def add_oauth_provider(self, project_id: str, body: dict) -> dict:
        return self.auth.add_oauth_provider(project_id, **body)

    def update_oauth_provider(self, project_id: str, oauth_provider_id: str, body: dict) -> dict:
        return self.auth.update_oauth_provider(project_id, oauth_provider_id, **body)

    def delete_oauth_provider(self, project_id: str, oauth_provider_id: str) -> None:
        self.auth.delete_oauth_provider(project_id, oauth_provider_id)

    def list_redirect_domains(self, project_id: str) -> list[dict]:
        return self.auth.list_redirect_domains(project_id)

    def add_redirect_domain(self, project_id: str, domain: str, auth_provider: str) -> None:
        self.auth.add_redirect_domain(project_id, domain, auth_provider)

    def delete_redirect_domains(self, project_id: str, auth_provider: str, domains: list):
        self.auth.delete_redirect_domains(project_id, auth_provider, domains)

    def get_email_server(self, project_id: str) -> dict:
        return self.auth.get_email_server(project_id)

    def update_email_server(self, project_id: str, body: dict) -> dict:
        return self.auth.update_email_server(project_id, **body)

    def synced_users(self, project_id: str) -> list[dict]:
        return self.auth.query(project_id, USERS_SQL)


# -- the model -------------------------------------------------------------------------
@dataclass(frozen=True)
class Refusal:
    status: int
    field: str | None = None


@dataclass(eq=False)
class MIntegration:
    provider_project_id: str
    keys: tuple[str, str]
    owned_by: str = "neon"
    token: str | None = None
    users: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    oauth: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    domains: list[str] = field(default_factory=list)
    email_server: dict[str, Any] = field(default_factory=lambda: {"type": "shared"})


@dataclass(eq=False)
class MProject:
    branch_id: str
    integration: MIntegration | None = None
    table_created: bool = False
    rows: dict[str, tuple[str, str | None]] | None = None  # None: dropped (delete_data)


@dataclass
class MSync:
    due: float
    seq: int
    project_id: str
    integration: MIntegration
    user_id: str
    row: tuple[str, str | None] | None  # None: a deletion


class AuthModel:
    def __init__(self) -> None:
        self.projects: dict[str, MProject] = {}
        self.now = 0.0
        self.pending: list[MSync] = []
        self.seq = 0
        self.user_ids: set[str] = set()  # every id ever returned
        self.tokens: set[str] = set()  # every transfer code ever returned

    # checks shared by the rules, in the engine's order
    def project(self, pid: str) -> Refusal | None:
        return None if pid in self.projects else Refusal(404, "project_id")

    def integration(self, pid: str, field: str) -> Refusal | None:
        return None if self.projects[pid].integration else Refusal(404, field)

    def integ(self, pid: str) -> MIntegration:
        found = self.projects[pid].integration
        assert found is not None
        return found

    def sync(self, pid: str, user_id: str, row: tuple[str, str | None] | None) -> None:
        self.seq += 1
        self.pending.append(MSync(self.now + SYNC_DELAY_S, self.seq, pid, self.integ(pid),
                                  user_id, row))

    def advance(self, seconds: float) -> None:
        # a run up to t processes what is due strictly before t
        self.now += seconds
        due = sorted((s for s in self.pending if s.due < self.now), key=lambda s: (s.due, s.seq))
        self.pending = [s for s in self.pending if s.due >= self.now]
        for s in due:
            project = self.projects[s.project_id]
            if project.integration is not s.integration or project.rows is None:
                continue
            if s.row is None:
                project.rows.pop(s.user_id, None)
            else:
                project.rows[s.user_id] = s.row


def _bad_provider(provider: str) -> Refusal | None:
    return None if provider == "stack" else Refusal(400, "auth_provider")


def _smtp_body(kind: str, broken: str | None) -> tuple[dict[str, Any], Refusal | None]:
    """An email server body and the refusal it earns (None: accepted)."""
    if kind == "shared":
        if broken is None:
            return {"type": "shared"}, None
        # a shared server takes the sender's address and name, no server setting
        body = {"type": "shared", broken: SMTP[broken]}
        return body, None if broken in ("sender_email", "sender_name") else Refusal(400, broken)
    if kind != "standard":
        return {"type": kind}, Refusal(400, "type")
    body: dict[str, Any] = {"type": "standard", **SMTP}
    if broken is None:
        return body, None
    if broken in BAD_SMTP:
        body[broken] = BAD_SMTP[broken]
    else:
        del body[broken]
    return body, Refusal(400, broken)


class AuthMachine(RuleBasedStateMachine):
    """Override `make_driver` to run the same machine through another layer."""

    def make_driver(self) -> Any:
        return EngineDriver()

    def __init__(self) -> None:
        super().__init__()
        self.driver = self.make_driver()
        self.model = AuthModel()
        for _ in range(2):
            pid, bid = self.driver.create_project()
            self.model.projects[pid] = MProject(bid)

    # -- helpers ---------------------------------------------------------------------------
    def _pids(self) -> list[str]:
        return sorted(self.model.projects) + [BOGUS_PROJECT]

    def _integration_or_none(self, pid: str) -> MIntegration | None:
        project = self.model.projects.get(pid)
        return None if project is None else project.integration

    def _pick_oauth_id(self, data, pid: str) -> str:
        """Mostly a provider the project has added."""
        integ = self._integration_or_none(pid)
        added = [] if integ is None else sorted(integ.oauth)
        return data.draw(st.sampled_from(added * 3 + list(OAUTH_IDS)), label="oauth_id")

    def _pick(self, data) -> str:
        """A project, the unknown one now and then."""
        return data.draw(st.sampled_from(sorted(self.model.projects) * 3 + [BOGUS_PROJECT]),
                         label="project")

    def _call(self, refusal: Refusal | None, call) -> Any:
        if refusal is None:
            return call()
        before = self.driver.snapshot()
        try:
            call()
        except ApiError as err:
            note(f"refused as predicted: {err!r}")
            assert err.status == refusal.status, (err, refusal)
            if refusal.field is not None and err.field is not None:
                assert err.field == refusal.field, (err, refusal)
            assert self.driver.snapshot() == before, "a refusal changed the state"
            return None
        raise AssertionError(f"expected {refusal}, but the call succeeded")

    @initialize()
    def first_integration(self):
        """Start with one integration, so most steps reach past the 404 for a missing one."""
        pid = sorted(self.model.projects)[0]
        got = self.driver.create_integration(pid, self.model.projects[pid].branch_id, "stack")
        self._created(pid, got)

    # -- integrations ----------------------------------------------------------------------
    @rule(data=st.data(), provider=st.sampled_from(PROVIDERS),
          own_branch=st.sampled_from((True,) * 3 + (False,)))
    def create_integration(self, data, provider, own_branch):
        pid = self._pick(data)
        m = self.model
        branch = m.projects[pid].branch_id if pid in m.projects and own_branch else "br-none"
        refusal = m.project(pid) or _bad_provider(provider)
        if refusal is None and branch == "br-none":
            refusal = Refusal(404, "branch_id")
        if refusal is None and m.projects[pid].integration is not None:
            refusal = Refusal(409, "auth_provider")
        got = self._call(refusal, lambda: self.driver.create_integration(pid, branch, provider))
        if refusal is None:
            self._created(pid, got)

    def _created(self, pid: str, got: dict[str, Any]) -> None:
        m = self.model
        assert got["schema_name"] == "svc_auth" and got["table_name"] == "users_sync"
        assert got["auth_provider_project_id"] in got["jwks_url"]
        project = m.projects[pid]
        project.integration = MIntegration(got["auth_provider_project_id"],
                                           (got["pub_client_key"], got["secret_server_key"]))
        if not project.table_created or project.rows is None:
            project.rows = {}
        project.table_created = True

    def _integration_refusal(self, pid: str, provider: str) -> Refusal | None:
        m = self.model
        return (m.project(pid) or _bad_provider(provider)
                or m.integration(pid, "auth_provider"))

    @rule(data=st.data(), provider=st.sampled_from(PROVIDERS))
    def generate_sdk_keys(self, data, provider):
        pid = self._pick(data)
        refusal = self._integration_refusal(pid, provider)
        got = self._call(refusal, lambda: self.driver.generate_sdk_keys(pid, provider))
        if refusal is None:
            integ = self.model.integ(pid)
            keys = (got["pub_client_key"], got["secret_server_key"])
            assert set(keys).isdisjoint(integ.keys), "keys did not rotate"
            assert got["auth_provider_project_id"] == integ.provider_project_id
            integ.keys = keys

    @rule(data=st.data(), provider=st.sampled_from(PROVIDERS))
    def transfer_ownership(self, data, provider):
        pid = self._pick(data)
        refusal = self._integration_refusal(pid, provider)
        if refusal is None and self.model.integ(pid).owned_by == "user":
            refusal = Refusal(409, "auth_provider")
        url = self._call(refusal, lambda: self.driver.transfer_ownership(pid, provider))
        if refusal is None:
            token = transfer_token_of(url)
            assert token not in self.model.tokens
            self.model.tokens.add(token)
            self.model.integ(pid).token = token

    @rule(data=st.data())
    def confirm_transfer(self, data):
        pid = self._pick(data)
        m = self.model
        current = [p.integration.token for _, p in sorted(m.projects.items())
                   if p.integration is not None and p.integration.token is not None]
        token = data.draw(st.sampled_from(current * 3 + sorted(m.tokens) + ["bogus-code"]),
                          label="token")
        refusal = m.project(pid)
        integ = m.projects[pid].integration if refusal is None else None
        if refusal is None and (integ is None or integ.token != token):
            refusal = Refusal(404, "token")
        self._call(refusal, lambda: self.driver.confirm_transfer(pid, token))
        if refusal is None and integ is not None:
            integ.owned_by, integ.token = "user", None

    @rule(data=st.data(), provider=st.sampled_from(PROVIDERS), delete_data=st.booleans())
    def delete_integration(self, data, provider, delete_data):
        pid = self._pick(data)
        refusal = self._integration_refusal(pid, provider)
        self._call(refusal, lambda: self.driver.delete_integration(pid, provider, delete_data))
        if refusal is None:
            project = self.model.projects[pid]
            project.integration = None
            if delete_data:
                project.rows = None

    # -- users -----------------------------------------------------------------------------
    @rule(data=st.data(), provider=st.sampled_from(PROVIDERS),
          email=st.sampled_from(EMAILS * 4 + BAD_EMAILS),
          name=st.sampled_from(NAMES * 4 + BAD_NAMES))
    def create_user(self, data, provider, email, name):
        pid = self._pick(data)
        m = self.model
        refusal = (m.project(pid) or _bad_provider(provider)
                   or (Refusal(400, "email") if email in BAD_EMAILS else None)
                   or (Refusal(400, "name") if name in BAD_NAMES else None)
                   or m.integration(pid, "auth_provider"))
        if refusal is None and any(e.casefold() == email.casefold()
                                   for e, _ in m.integ(pid).users.values()):
            refusal = Refusal(409, "email")
        user_id = self._call(refusal, lambda: self.driver.create_user(pid, provider, email, name))
        if refusal is None:
            assert isinstance(user_id, str) and user_id not in m.user_ids
            m.user_ids.add(user_id)
            m.integ(pid).users[user_id] = (email, name)
            m.sync(pid, user_id, (email, name))

    @rule(data=st.data())
    def delete_user(self, data):
        pid = self._pick(data)
        m = self.model
        integ = self._integration_or_none(pid)
        live = [] if integ is None else sorted(integ.users)
        user_id = data.draw(st.sampled_from(live * 3 + sorted(m.user_ids) + ["no-such-user"]),
                            label="user")
        refusal = m.project(pid) or m.integration(pid, "project_id")
        if refusal is None and user_id not in m.integ(pid).users:
            refusal = Refusal(404, "auth_user_id")
        self._call(refusal, lambda: self.driver.delete_user(pid, user_id))
        if refusal is None:
            del m.integ(pid).users[user_id]
            m.sync(pid, user_id, None)

    @rule(seconds=st.sampled_from((0.5, 1.0, 2.0, 3.0)))
    def advance(self, seconds):
        self.driver.advance(seconds)
        self.model.advance(seconds)

    # -- OAuth providers -------------------------------------------------------------------
    @staticmethod
    def _credential_refusal(client_id, client_secret) -> Refusal | None:
        if client_id == "":
            return Refusal(400, "client_id")
        if client_secret == "":
            return Refusal(400, "client_secret")
        return None

    @staticmethod
    def _pair_refusal(client_id, client_secret) -> Refusal | None:
        if client_id is None and client_secret is not None:
            return Refusal(400, "client_id")
        if client_secret is None and client_id is not None:
            return Refusal(400, "client_secret")
        return None

    @rule(data=st.data(), oauth_id=st.sampled_from(OAUTH_IDS),
          client_id=st.sampled_from(CREDENTIALS), client_secret=st.sampled_from(CREDENTIALS))
    def add_oauth_provider(self, data, oauth_id, client_id, client_secret):
        pid = self._pick(data)
        m = self.model
        refusal = (m.project(pid) or (Refusal(400, "id") if oauth_id == "facebook" else None)
                   or self._credential_refusal(client_id, client_secret)
                   or self._pair_refusal(client_id, client_secret)
                   or m.integration(pid, "project_id"))
        if refusal is None and oauth_id in m.integ(pid).oauth:
            refusal = Refusal(409, "id")
        body = {k: v for k, v in (("id", oauth_id), ("client_id", client_id),
                                  ("client_secret", client_secret)) if v is not None}
        got = self._call(refusal, lambda: self.driver.add_oauth_provider(pid, body))
        if refusal is None:
            kind = "shared" if client_id is None else "standard"
            assert got == {"id": oauth_id, "type": kind, "client_id": client_id,
                           "client_secret": client_secret}
            m.integ(pid).oauth[oauth_id] = (client_id, client_secret)

    @rule(data=st.data(), client_id=st.sampled_from(CREDENTIALS),
          client_secret=st.sampled_from(CREDENTIALS))
    def update_oauth_provider(self, data, client_id, client_secret):
        pid = self._pick(data)
        oauth_id = self._pick_oauth_id(data, pid)
        m = self.model
        refusal = (m.project(pid) or self._credential_refusal(client_id, client_secret)
                   or m.integration(pid, "project_id"))
        if refusal is None and oauth_id not in m.integ(pid).oauth:
            refusal = Refusal(404, "oauth_provider_id")
        merged = (None, None)
        if refusal is None:
            old_id, old_secret = m.integ(pid).oauth[oauth_id]
            merged = (client_id if client_id is not None else old_id,
                      client_secret if client_secret is not None else old_secret)
            refusal = self._pair_refusal(*merged)
        body = {k: v for k, v in (("client_id", client_id), ("client_secret", client_secret))
                if v is not None}
        got = self._call(refusal, lambda: self.driver.update_oauth_provider(pid, oauth_id, body))
        if refusal is None:
            kind = "shared" if merged[0] is None else "standard"
            assert got == {"id": oauth_id, "type": kind, "client_id": merged[0],
                           "client_secret": merged[1]}
            m.integ(pid).oauth[oauth_id] = merged

    @rule(data=st.data())
    def delete_oauth_provider(self, data):
        pid = self._pick(data)
        oauth_id = self._pick_oauth_id(data, pid)
        m = self.model
        refusal = m.project(pid) or m.integration(pid, "project_id")
        if refusal is None and oauth_id not in m.integ(pid).oauth:
            refusal = Refusal(404, "oauth_provider_id")
        self._call(refusal, lambda: self.driver.delete_oauth_provider(pid, oauth_id))
        if refusal is None:
            del m.integ(pid).oauth[oauth_id]

    # -- redirect whitelist ----------------------------------------------------------------
    @rule(data=st.data(), provider=st.sampled_from(PROVIDERS),
          domain=st.sampled_from(DOMAINS * 6 + BAD_DOMAINS))
    def add_redirect_domain(self, data, provider, domain):
        pid = self._pick(data)
        m = self.model
        refusal = (m.project(pid) or _bad_provider(provider)
                   or (Refusal(400, "domain") if domain in BAD_DOMAINS else None)
                   or m.integration(pid, "auth_provider"))
        if refusal is None and domain in m.integ(pid).domains:
            refusal = Refusal(409, "domain")
        self._call(refusal, lambda: self.driver.add_redirect_domain(pid, domain, provider))
        if refusal is None:
            m.integ(pid).domains.append(domain)

    @rule(data=st.data(), provider=st.sampled_from(PROVIDERS),
          extra=st.lists(st.sampled_from(DOMAINS * 3 + BAD_DOMAINS[:2]), max_size=1))
    def delete_redirect_domains(self, data, provider, extra):
        pid = self._pick(data)
        listed = self._integration_or_none(pid)
        domains = list(extra)
        if listed is not None and listed.domains:
            domains = data.draw(st.lists(st.sampled_from(listed.domains), min_size=1, max_size=2),
                                label="listed") + domains
        m = self.model
        bad = [i for i, d in enumerate(domains) if d in BAD_DOMAINS]
        refusal = (m.project(pid) or _bad_provider(provider)
                   or (Refusal(400, "domains") if not domains else None)
                   or (Refusal(400, f"domains[{bad[0]}].domain") if bad else None)
                   or m.integration(pid, "auth_provider"))
        if refusal is None:
            missing = [i for i, d in enumerate(domains) if d not in m.integ(pid).domains]
            if missing:
                refusal = Refusal(404, f"domains[{missing[0]}].domain")
        items = [{"domain": d} for d in domains]
        self._call(refusal, lambda: self.driver.delete_redirect_domains(pid, provider, items))
        if refusal is None:
            integ = m.integ(pid)
            integ.domains = [d for d in integ.domains if d not in domains]

    # -- email server ----------------------------------------------------------------------
    @rule(data=st.data(), kind=st.sampled_from(("standard", "shared") * 2 + ("smtp",)),
          broken=st.sampled_from((None,) * 6 + tuple(SMTP)))
    def update_email_server(self, data, kind, broken):
        pid = self._pick(data)
        m = self.model
        body, bad = _smtp_body(kind, broken)
        refusal = m.project(pid) or bad or m.integration(pid, "project_id")
        got = self._call(refusal, lambda: self.driver.update_email_server(pid, body))
        if refusal is None:
            assert got == body
            # GET shows only the type of a shared server (its sender too is kept, not shown)
            shown = body if body["type"] == "standard" else {"type": "shared"}
            m.integ(pid).email_server = {k: v for k, v in shown.items() if k != "password"}

    # -- invariants ------------------------------------------------------------------------
    def _view(self, read) -> Any:
        try:
            return read()
        except ApiError as err:
            return Refusal(err.status)

    def _expect(self, pid: str, shown) -> Any:
        project = self.model.projects.get(pid)
        if project is None or project.integration is None:
            return Refusal(404)
        return shown(project.integration)

    @invariant()
    def listings_match_the_model(self):
        d = self.driver
        for pid in self._pids():
            project = self.model.projects.get(pid)
            listed = self._view(lambda: d.list_integrations(pid))  # noqa: B023
            if project is None:
                assert listed == Refusal(404)
            else:
                integ = project.integration
                want = [] if integ is None else [("stack", integ.provider_project_id,
                                                  project.branch_id, "svcdb", integ.owned_by)]
                assert [(i["auth_provider"], i["auth_provider_project_id"], i["branch_id"],
                         i["db_name"], i["owned_by"]) for i in listed] == want
            assert self._view(lambda: d.list_oauth_providers(pid)) == self._expect(  # noqa: B023
                pid, lambda i: [{"id": k, "type": "shared" if c[0] is None else "standard"}
                                for k, c in i.oauth.items()])
            assert self._view(lambda: d.list_redirect_domains(pid)) == self._expect(  # noqa: B023
                pid, lambda i: [{"domain": x, "auth_provider": "stack"} for x in i.domains])
            assert self._view(lambda: d.get_email_server(pid)) == self._expect(  # noqa: B023
                pid, lambda i: i.email_server)

    @invariant()
    def synced_table_matches_the_model(self):
        for pid, project in sorted(self.model.projects.items()):
            rows = self._view(lambda: self.driver.synced_users(pid))  # noqa: B023
            if not project.table_created:
                assert rows == Refusal(404)
            elif project.rows is None:
                assert rows == Refusal(400)
            else:
                want = [{"id": k, "email": e, "name": n}
                        for k, (e, n) in sorted(project.rows.items())]
                assert rows == want

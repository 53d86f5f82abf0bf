"""API keys on every route of the OpenAPI document, for every kind of key.

- 401 with no key, a malformed header, a wrong key or a revoked one (KeyStore.revoke);
- 404 for a project outside the key's reach, word for word as for a project
  that does not exist: a key never learns that the project is there;
- 403 for what the key's kind may not do. As the real API (project-scoped keys
  have member-level access): a project-scoped key may neither create a project
  nor delete the project it is scoped to; only a personal key manages API keys.
  The /_sim calls that change the whole world (advance, faults, reset) need a
  personal or organization key; everything else within reach is allowed to
  every kind;
- keys are compared in constant time: every stored key is compared, through
  hmac.compare_digest, whichever matches and whether one does (counted here;
  the time it takes is benchmarks/key_lookup.py);
- keys never reach a log (DEBUG, in process and under uvicorn) nor an answer;
- keys added or revoked while requests authenticate never break a request.
"""

from __future__ import annotations

import hmac
import logging
import threading
import time
from typing import Any

import pytest

from sim.api import SimServer, create_app, in_process_client
from sim.api import keys as keys_module
from sim.api.keys import ORG_ID, KeyStore
from sim.api.orgs import MEMBER_ID
from sim.testing.state_digest import digest
from tests.reliability.conftest import SEED, World, build_world

P = "/api/v2/projects/{project_id}"
E = P + "/endpoints/{endpoint_id}"
A = P + "/auth"
B = P + "/branches/{branch_id}"
AUTH = {"project_id": "{project_id}", "auth_provider": "stack"}

SPAN = "from=2026-01-05T00:00:00Z&to=2026-01-06T00:00:00Z&granularity=daily"
CONSUMPTION_V1 = "/api/v2/consumption_history/projects?" + SPAN
CONSUMPTION_V2_PROJECTS = ("/api/v2/consumption_history/v2/projects?" + SPAN
                           + "&org_id=org-1&metrics=compute_unit_seconds")
CONSUMPTION_V2_BRANCHES = CONSUMPTION_V2_PROJECTS.replace("v2/projects", "v2/branches") + (
    "&project_ids=unknown-0")

#: every route, with a body that would succeed for a key that reaches the world's project
ROUTES: list[tuple[str, str, Any]] = [
    ("POST", "/api/v2/projects", {"project": {"name": "x"}}),
    ("GET", "/api/v2/projects", None),
    ("GET", P, None),
    ("PATCH", P, {"project": {"name": "renamed"}}),
    ("DELETE", P, None),
    ("POST", P + "/endpoints", {"endpoint": {"branch_id": "{branch_id}", "type": "read_only"}}),
    ("GET", P + "/endpoints", None),
    ("GET", E, None),
    ("PATCH", E, {"endpoint": {"suspend_timeout_seconds": 600}}),
    ("DELETE", E, None),
    ("POST", E + "/restart", None),
    ("POST", E + "/start", None),
    ("POST", E + "/suspend", None),
    ("GET", P + "/branches/{branch_id}/endpoints", None),
    ("POST", P + "/branches", {"branch": {"name": "b"}}),
    ("GET", P + "/branches", None),
    ("GET", P + "/branches/{branch_id}", None),
    ("DELETE", P + "/branches/{dev_branch_id}", None),
    ("PATCH", B, {"branch": {"name": "renamed"}}),
    ("POST", B + "/set_as_default", None),
    ("GET", B + "/roles", None),
    ("POST", B + "/roles", {"role": {"name": "alice"}}),
    ("GET", B + "/roles/{role_name}", None),
    ("DELETE", B + "/roles/{role_name}", None),
    ("GET", B + "/roles/{role_name}/reveal_password", None),
    ("POST", B + "/roles/{role_name}/reset_password", None),
    ("GET", B + "/databases", None),
    ("POST", B + "/databases", {"database": {"name": "shop", "owner_name": "{role_name}"}}),
    ("GET", B + "/databases/{database_name}", None),
    ("PATCH", B + "/databases/{database_name}", {"database": {"name": "store"}}),
    ("DELETE", B + "/databases/{database_name}", None),
    ("GET", P + "/connection_uri", None),
    ("GET", "/api/v2/projects/shared", None),
    ("GET", "/api/v2/users/me", None),
    ("GET", "/api/v2/regions", None),
    ("GET", P + "/operations", None),
    ("GET", P + "/operations/{operation_id}", None),
    ("POST", "/api/v2/projects/auth/create", {**AUTH, "branch_id": "{branch_id}"}),
    ("GET", A + "/integrations", None),
    ("POST", "/api/v2/projects/auth/keys", AUTH),
    ("POST", "/api/v2/projects/auth/user", {**AUTH, "email": "k@example.com"}),
    ("DELETE", A + "/users/{auth_user_id}", None),
    ("POST", "/api/v2/projects/auth/transfer_ownership", AUTH),
    ("DELETE", A + "/integration/{auth_provider}", None),
    ("GET", A + "/oauth_providers", None),
    ("POST", A + "/oauth_providers", {"id": "google"}),
    ("PATCH", A + "/oauth_providers/{oauth_provider_id}", {"client_id": "c", "client_secret": "s"}),
    ("DELETE", A + "/oauth_providers/{oauth_provider_id}", None),
    ("GET", A + "/domains", None),
    ("POST", A + "/domains", {"domain": "https://k.example.com", "auth_provider": "stack"}),
    ("DELETE", A + "/domains", {"auth_provider": "stack",
                                "domains": [{"domain": "https://app.example.com"}]}),
    ("GET", A + "/email_server", None),
    ("PATCH", A + "/email_server", {"type": "shared"}),
    ("GET", "/_sim/clock", None),
    ("GET", "/_sim/state", None),
    ("POST", "/_sim/advance", {"seconds": 1}),
    ("POST", "/_sim/connections", {"project_id": "{project_id}", "endpoint_id": "{endpoint_id}"}),
    ("GET", "/_sim/faults", None),
    ("POST", "/_sim/faults", {"extra_latency_ms": 0}),
    ("GET", "/_sim/console", None),
    ("POST", "/_sim/auth/confirm_transfer", {"project_id": "{project_id}", "token": "t"}),
    ("POST", "/_sim/auth/query", {"project_id": "{project_id}", "sql": "SELECT 1"}),
    ("POST", "/_sim/reset", None),
    ("GET", "/api/v2/api_keys", None),
    ("POST", "/api/v2/api_keys", {"key_name": "k"}),
    ("DELETE", "/api/v2/api_keys/{key_id}", None),
    # the lifecycle over time
    ("GET", CONSUMPTION_V1, None),
    ("GET", CONSUMPTION_V2_PROJECTS, None),
    ("GET", CONSUMPTION_V2_BRANCHES, None),
    ("GET", P + "/branches/count", None),
    ("POST", P + "/recover", None),
    ("POST", B + "/recover", None),
    ("POST", P + "/branches/{dev_branch_id}/restore", {"source_branch_id": "{branch_id}"}),
    ("POST", B + "/finalize_restore", None),
    ("POST", B + "/snapshot", None),
    ("GET", P + "/snapshots", None),
    ("PATCH", P + "/snapshots/{snapshot_id}", {"snapshot": {"name": "renamed"}}),
    ("DELETE", P + "/snapshots/{snapshot_id}", None),
    ("POST", P + "/snapshots/{snapshot_id}/restore", {"name": "restored"}),
    ("GET", B + "/backup_schedule", None),
    ("PUT", B + "/backup_schedule", {"schedule": [{"frequency": "daily", "hour": 6}]}),
    ("GET", P + "/permissions", None),
    ("POST", P + "/permissions", {"email": "k@example.com"}),
    ("DELETE", P + "/permissions/{permission_id}", None),
    ("GET", "/api/v2/users/me/organizations", None),
    ("GET", "/api/v2/auth", None),
    ("GET", "/api/v2/organizations/{org_id}", None),
    ("GET", "/api/v2/organizations/{org_id}/members", None),
    ("GET", "/api/v2/organizations/{org_id}/members/{member_id}", None),
    ("GET", "/api/v2/organizations/{org_id}/api_keys", None),
    ("POST", "/api/v2/organizations/{org_id}/api_keys", {"key_name": "k"}),
    ("DELETE", "/api/v2/organizations/{org_id}/api_keys/{key_id}", None),
    ("GET", "/api/v2/organizations/{org_id}/invitations", None),
    ("POST", "/api/v2/organizations/{org_id}/invitations", {"invitations": []}),
    ("GET", "/api/v2/organizations/{org_id}/billing/spending_limit", None),
    ("PUT", "/api/v2/organizations/{org_id}/billing/spending_limit", {"spending_limit_cents": 1}),
    ("DELETE", "/api/v2/organizations/{org_id}/billing/spending_limit", None),
    ("GET", "/api/v2/organizations/{org_id}/vpc/vpc_endpoints", None),
    ("GET", "/api/v2/organizations/{org_id}/vpc/region/{region_id}/vpc_endpoints", None),
    ("POST", "/api/v2/users/me/projects/transfer",
     {"destination_org_id": "{org_id}", "project_ids": ["{project_id}"]}),
]
#: routes that name no project: reach does not apply (any valid key; POST /projects: 403 below)
UNSCOPED = {("POST", "/api/v2/projects"), ("GET", "/api/v2/projects"), ("GET", "/_sim/clock"),
            ("GET", "/_sim/state"),
            ("GET", "/api/v2/projects/shared"), ("GET", "/api/v2/users/me"),
            ("GET", "/api/v2/regions"),
            ("POST", "/_sim/advance"), ("GET", "/_sim/faults"), ("POST", "/_sim/faults"),
            ("GET", "/_sim/console"), ("POST", "/_sim/reset"), ("GET", "/api/v2/api_keys"),
            ("POST", "/api/v2/api_keys"), ("DELETE", "/api/v2/api_keys/{key_id}"),
            ("GET", CONSUMPTION_V1), ("GET", CONSUMPTION_V2_PROJECTS),
            ("GET", CONSUMPTION_V2_BRANCHES),
            ("GET", "/api/v2/users/me/organizations"), ("GET", "/api/v2/auth"),
            ("POST", "/api/v2/users/me/projects/transfer"),
            *{(m, p) for m, p, _ in ROUTES if p.startswith("/api/v2/organizations/")}}
#: what a project-scoped key may not do outside any project (403)
WORLD_WIDE = [("POST", "/_sim/advance", {"seconds": 1}), ("POST", "/_sim/faults",
              {"extra_latency_ms": 0}), ("POST", "/_sim/reset", None)]
KEY_ROUTES = [r for r in ROUTES if r[1].startswith("/api/v2/api_keys")]
KINDS = ("personal", "organization", "project")


def test_the_table_covers_every_route() -> None:
    doc = create_app(SimServer(seed=SEED)).openapi()
    documented = {(m.upper(), p) for p, ops in doc["paths"].items() for m in ops}
    listed = {(m, p.replace("{dev_branch_id}", "{branch_id}").partition("?")[0])
              for m, p, _ in ROUTES}
    assert listed == documented


# ---- the world: one project every kind reaches, one that none reaches -----------------------------


class Setup:
    def __init__(self) -> None:
        self.server = SimServer(seed=SEED)
        store = self.server.keys
        self.world = self.rebuild()
        self.secrets = {"personal": store.personal().secret,
                        "organization": store.organization().secret,
                        "project": store.for_project(self.world.project_id).secret}
        spare = store.personal(name="spare")  # the one DELETE /api_keys/{key_id} revokes
        self.spare_id = str(store.record_of(spare.secret).id)  # type: ignore[union-attr]
        self.api = in_process_client(self.server, api_key="unused")
        self.api.headers.pop("authorization")

    def rebuild(self) -> World:
        """The world afresh (same ids, so the project-scoped key still fits); keys are kept."""
        self.world = build_world(self.server)
        cp = self.server.cp
        cp.projects[self.world.project_id].org_id = ORG_ID  # the organization's: all kinds reach it
        self.foreign = cp.create_project("foreign", key="foreign", owner_id="user-2",
                                         org_id="org-2").project.id
        return self.world

    def ids(self, project_id: str | None = None) -> dict[str, str]:
        w = self.world
        return {"project_id": project_id or w.project_id, "branch_id": w.main_branch_id,
                "dev_branch_id": w.dev_branch_id, "endpoint_id": w.primary_id,
                "operation_id": w.operation_ids[0], "auth_user_id": w.auth_user_id,
                "auth_provider": "stack", "oauth_provider_id": w.oauth_provider_id,
                "role_name": "neondb_owner", "database_name": "neondb",
                "key_id": self.spare_id, "snapshot_id": w.snapshot_id,
                "permission_id": "no-such-grant",
                "org_id": ORG_ID, "member_id": MEMBER_ID, "region_id": "aws-us-east-2"}

    def call(self, method: str, path: str, body: Any, *, key: str | None,
             project_id: str | None = None, header: str | None = None) -> Any:
        ids = self.ids(project_id)
        headers = {}
        if header is not None:
            headers["authorization"] = header
        elif key is not None:
            headers["authorization"] = f"Bearer {key}"
        kwargs: dict[str, Any] = {"headers": headers}
        if body is not None:
            kwargs["json"] = fill(body, ids)
        return self.api.request(method, self.api.base_url.join(path.format(**ids)), **kwargs)


def fill(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str):
        return value.format(**ids)
    if isinstance(value, dict):
        return {k: fill(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, ids) for v in value]
    return value


@pytest.fixture
def setup() -> Setup:
    return Setup()


def error(r: Any, status: int, code: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"code", "message", "request_id"} and body["code"] == code, body
    return body


# ---- 401 -----------------------------------------------------------------------------------------

BAD_HEADERS = [None, "", "Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "Bearer wrong-key",
               "Token {key}", "Bearer {key}x", "Bearer x{key}", "Bearer {key_upper}",
               "Bearer {key} {key}", "{key}", "Bearer\t"]


@pytest.mark.parametrize("template", BAD_HEADERS)
def test_no_valid_key_is_401_on_every_route(setup: Setup, template: str | None) -> None:
    key = setup.secrets["personal"]
    header = None if template is None else template.format(key=key, key_upper=key.upper())
    before = digest(setup.server.cp)
    for method, path, body in ROUTES:
        r = setup.call(method, path, body, key=None, header=header)
        assert r.status_code == 401, (method, path, r.text)
        error(r, 401, "UNAUTHORIZED")
    assert digest(setup.server.cp) == before


@pytest.mark.parametrize("kind", KINDS)
def test_a_revoked_key_is_401_everywhere_at_once(setup: Setup, kind: str) -> None:
    key = setup.secrets[kind]
    assert setup.call("GET", "/api/v2/projects", None, key=key).status_code == 200
    assert setup.server.keys.revoke(key) is True
    assert setup.server.keys.revoke(key) is False  # already gone
    before = digest(setup.server.cp)
    for method, path, body in ROUTES:
        error(setup.call(method, path, body, key=key), 401, "UNAUTHORIZED")
    assert digest(setup.server.cp) == before
    others = [k for name, k in setup.secrets.items() if name != kind]
    for other in others:  # revoking one key leaves the others alone
        assert setup.call("GET", "/api/v2/projects", None, key=other).status_code == 200


# ---- 404 outside the key's reach -------------------------------------------------------------------


SCOPED = [r for r in ROUTES if (r[0], r[1]) not in UNSCOPED]


@pytest.mark.parametrize("kind", KINDS)
def test_a_project_outside_reach_is_404_as_if_unknown(setup: Setup, kind: str) -> None:
    key = setup.secrets[kind]
    before = digest(setup.server.cp)
    for method, path, body in SCOPED:
        foreign = error(setup.call(method, path, body, key=key, project_id=setup.foreign),
                        404, "NOT_FOUND")
        unknown = error(setup.call(method, path, body, key=key, project_id="no-such-project-1"),
                        404, "NOT_FOUND")
        assert foreign["message"] == f"project {setup.foreign!r} not found", (method, path)
        assert unknown["message"] == "project 'no-such-project-1' not found", (method, path)
    assert digest(setup.server.cp) == before


@pytest.mark.parametrize("kind", KINDS)
def test_listing_shows_only_projects_within_reach(setup: Setup, kind: str) -> None:
    r = setup.call("GET", "/api/v2/projects", None, key=setup.secrets[kind])
    listed = [p["id"] for p in r.json()["projects"]]
    assert listed == [setup.world.project_id]


@pytest.mark.parametrize("kind", KINDS)
def test_within_reach_every_kind_may_act(setup: Setup, kind: str) -> None:
    for method, path, body in SCOPED:
        if (method, path) == ("DELETE", P) or (
                (method, path) == ("POST", P + "/recover") and kind == "project"):
            continue  # a project-scoped key may not: the 403 tests below
        setup.rebuild()
        r = setup.call(method, path, body, key=setup.secrets[kind])
        if r.status_code >= 400:  # refused, if at all, for another reason than the key
            answer = r.json()
            assert answer["code"] not in ("UNAUTHORIZED", "FORBIDDEN"), (kind, path, answer)
            assert not answer["message"].startswith("project "), (kind, path, answer)


# ---- 403: what a kind may not do -------------------------------------------------------------------


def test_a_project_scoped_key_may_not_create_projects(setup: Setup) -> None:
    before = digest(setup.server.cp)
    r = setup.call("POST", "/api/v2/projects", {"project": {"name": "x"}},
                   key=setup.secrets["project"])
    assert "project-scoped" in error(r, 403, "FORBIDDEN")["message"]
    assert digest(setup.server.cp) == before
    for kind in ("personal", "organization"):
        r = setup.call("POST", "/api/v2/projects", {"project": {"name": kind}},
                       key=setup.secrets[kind])
        assert r.status_code == 201, r.text


def test_a_project_scoped_key_may_not_delete_its_project(setup: Setup) -> None:
    before = digest(setup.server.cp)
    r = setup.call("DELETE", P, None, key=setup.secrets["project"])
    assert "project-scoped" in error(r, 403, "FORBIDDEN")["message"]
    assert digest(setup.server.cp) == before
    # outside its reach it is a 404 first: a 403 would tell that the project exists
    error(setup.call("DELETE", P, None, key=setup.secrets["project"], project_id=setup.foreign),
          404, "NOT_FOUND")
    assert setup.call("DELETE", P, None, key=setup.secrets["organization"]).status_code == 200
    # nor recover it
    setup.server.cp.advance(60)  # (its computes stopped)
    r = setup.call("POST", P + "/recover", None, key=setup.secrets["project"])
    assert "project-scoped" in error(r, 403, "FORBIDDEN")["message"]
    assert setup.call("POST", P + "/recover", None,
                      key=setup.secrets["organization"]).status_code == 200


def test_world_wide_controls_need_a_personal_or_organization_key(setup: Setup) -> None:
    before = digest(setup.server.cp)
    for method, path, body in WORLD_WIDE:
        r = setup.call(method, path, body, key=setup.secrets["project"])
        assert "project-scoped" in error(r, 403, "FORBIDDEN")["message"], path
    assert digest(setup.server.cp) == before  # the clock included: no advance, no reset
    for kind in ("personal", "organization"):
        for method, path, body in WORLD_WIDE:
            assert setup.call(method, path, body, key=setup.secrets[kind]).status_code == 200


def test_only_a_personal_key_manages_api_keys(setup: Setup) -> None:
    for kind in ("organization", "project"):
        for method, path, body in KEY_ROUTES:
            r = setup.call(method, path, body, key=setup.secrets[kind])
            assert "personal API key" in error(r, 403, "FORBIDDEN")["message"], (kind, path)
    assert setup.server.keys.record_of(setup.secrets["personal"]) is not None
    listed = setup.call("GET", "/api/v2/api_keys", None, key=setup.secrets["personal"]).json()
    assert setup.spare_id in {str(k["id"]) for k in listed}


def test_the_documented_403s() -> None:
    doc = create_app(SimServer(seed=SEED)).openapi()["paths"]
    assert "403" in doc["/api/v2/projects"]["post"]["responses"]
    assert "403" in doc["/api/v2/projects/{project_id}"]["delete"]["responses"]


# ---- constant time ---------------------------------------------------------------------------------


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[tuple[bytes, bytes]]:
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def compare(a: Any, b: Any) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(keys_module.hmac, "compare_digest", compare)
    return calls


def test_every_stored_key_is_compared_whichever_matches(counted) -> None:
    store = KeyStore()
    secrets = [store.personal().secret for _ in range(50)]
    offers = [secrets[0], secrets[25], secrets[-1], "wrong", secrets[0][:-1], secrets[0] + "x"]
    for offered in offers:
        counted.clear()
        try:
            store.authenticate(f"Bearer {offered}")
        except Exception as err:  # noqa: BLE001 - a miss is an ApiError; only the count matters
            assert getattr(err, "status", None) == 401
        assert len(counted) == len(secrets), offered  # no early exit, on a hit or a miss
        assert {a for a, _ in counted} == {s.encode() for s in secrets}
        assert all(b == offered.encode() for _, b in counted)


# ---- never logged, never answered ----------------------------------------------------------------


def test_keys_never_reach_a_log_or_an_answer(setup: Setup, caplog: pytest.LogCaptureFixture,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    caplog.set_level(logging.DEBUG)
    texts: list[str] = []
    # an unexpected failure logs a traceback: still no key in it
    with monkeypatch.context() as patch:
        patch.setattr(setup.server.cp, "list_computes", _boom)
        r = setup.call("GET", P + "/endpoints", None, key=setup.secrets["personal"])
        assert r.status_code == 500
        assert "unexpected" in caplog.text  # the log did capture the failure
    for key in setup.secrets.values():
        for method, path, body in ROUTES:
            if path == "/_sim/reset":
                continue
            r = setup.call(method, path, body, key=key)
            texts += [r.text, str(r.headers)]
        r = setup.call("GET", P, None, key=key + "x")  # a wrong key, one character off
        texts += [r.text, str(r.headers)]
    for key in setup.secrets.values():
        assert key not in caplog.text
        assert all(key not in text for text in texts)
        assert key not in repr(setup.server.keys.authenticate(f"Bearer {key}"))


def _boom(*_a: Any, **_k: Any) -> None:
    raise RuntimeError("unexpected")


def test_keys_never_reach_uvicorns_debug_log(caplog: pytest.LogCaptureFixture,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import httpx
    import uvicorn

    # an earlier server in this process may have configured uvicorn's loggers not to
    # propagate (its default logging config): capture them here whatever came before
    for name in ("uvicorn", "uvicorn.access", "uvicorn.error"):
        logger = logging.getLogger(name)
        monkeypatch.setattr(logger, "propagate", True)
        monkeypatch.setattr(logger, "disabled", False)

    from tests.api.conftest import _free_port

    server = SimServer(seed=SEED)
    key = server.add_personal_key().secret
    port = _free_port()
    config = uvicorn.Config(create_app(server), host="127.0.0.1", port=port, log_level="debug",
                            access_log=True, log_config=None, ws="none", lifespan="off")
    uv = uvicorn.Server(config)
    caplog.set_level(logging.DEBUG)
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not uv.started and time.monotonic() < deadline:
            time.sleep(0.02)
        assert uv.started
        with httpx.Client(base_url=f"http://127.0.0.1:{port}/api/v2/",
                          headers={"authorization": f"Bearer {key}"}) as client:
            made = client.post("projects", json={"project": {"name": "logged"}})
            assert made.status_code == 201
            client.get(f"projects/{made.json()['project']['id']}/endpoints")
            client.get("projects/nope", headers={"authorization": f"Bearer {key}x"})
    finally:
        uv.should_exit = True
        thread.join(10)
    assert "GET /api/v2/projects/nope" in caplog.text  # the access log was captured
    assert key not in caplog.text


# ---- keys change while requests authenticate --------------------------------------------------------


def test_adding_and_revoking_keys_never_breaks_a_request_in_flight() -> None:
    store = KeyStore()
    for _ in range(200):
        store.personal()
    good = store.personal().secret
    failures: list[str] = []
    stop = threading.Event()

    def authenticate() -> None:
        while not stop.is_set():
            try:
                store.authenticate(f"Bearer {good}")
            except Exception as err:  # noqa: BLE001 - any failure is the finding
                failures.append(repr(err))
                return

    threads = [threading.Thread(target=authenticate) for _ in range(4)]
    for t in threads:
        t.start()
    try:
        for _ in range(1000):
            store.revoke(store.personal().secret)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert failures == []

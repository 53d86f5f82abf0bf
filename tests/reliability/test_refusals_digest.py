"""A refusal changes nothing: for every answer >= 400, digest(cp) before == after.

Hypothesis drives sequences of calls over every route of the OpenAPI document
through the in-process client, on the seeded world of `build_world`: valid and
invalid bodies, real, freshly created and unknown ids, computes in the wrong
state (restart of an idle one, calls on one still starting: 423), a second
read_write on a branch, sizes off the CU table, bad suspend timeouts, keys of
the wrong kind or of another project, no key, outages (503). Successful calls
are kept, so later calls meet a world that has moved on (deleted computes,
moved time, new branches). `sim.testing.state_digest.digest` covers the whole
control plane, including runtime queues, random streams and SimPy's event heap.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from sim.api import SimClient, SimServer, create_app, in_process_client
from sim.testing.state_digest import describe, digest, digest_of
from tests.reliability.conftest import SEED, THOROUGH, Figures, World, build_world

STEPS = 40 if THOROUGH else 20

# ---- values ------------------------------------------------------------------------------------

UNKNOWN = ("unknown-0", "ep-missing-1", "br-missing-1", "00000000-0000-4000-8000-000000000000",
           "999999")
CU = st.sampled_from([0.25, 0.5, 1, 2, 4, 8, 16, 18, 56, 0, 0.3, 3.5, 17, 57, -1, 1e9, "2", True])
TIMEOUT = st.sampled_from([0, -1, 60, 300, 604_800, 5, 59, 604_801, -2, "300", 1.5])
NAME = st.one_of(st.sampled_from(["main", "dev", "x", "", "n" * 257]), st.text(max_size=8))
COMPUTE_TYPE = st.sampled_from(["read_write", "read_only", "primary", 7])
JUNK = st.sampled_from([{}, {"unknown": 1}, [], "text", None, {"endpoint": []}, {"project": 5}])


def maybe(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional=fields)


def body_or_junk(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly the route's own shape, sometimes junk, sometimes with an unknown key."""
    with_extra = valid.map(lambda b: {**b, "bogus": 1} if isinstance(b, dict) else b)
    return st.one_of(valid, valid, valid, valid, valid, valid, JUNK, with_extra)


# ---- the world as the calls see it -------------------------------------------------------------


@dataclass
class Pool:
    """Ids the calls may name: the world's, those created since, and unknown ones."""

    ids: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, world: World) -> Pool:
        return cls({name: list(values) for name, values in world.real_ids().items()})

    def pick(self, kind: str) -> st.SearchStrategy[str]:
        """A real id three times in four, else an unknown one."""
        real = st.sampled_from(sorted(set(self.ids.get(kind, []))) or UNKNOWN)
        return st.one_of(real, real, real, st.sampled_from(UNKNOWN))

    def learn(self, body: Any) -> None:
        if not isinstance(body, dict):
            return
        for key, kind in (("project", "project_id"), ("branch", "branch_id"),
                          ("endpoint", "endpoint_id"), ("snapshot", "snapshot_id")):
            if isinstance(body.get(key), dict) and "id" in body[key]:
                self._add(kind, body[key]["id"])
        for item in body.get("endpoints", []) if isinstance(body.get("endpoints"), list) else []:
            self._add("endpoint_id", item["id"])
        for item in body.get("operations", []) if isinstance(body.get("operations"), list) else []:
            self._add("operation_id", item["id"])
        if isinstance(body.get("id"), str) and "-" in body["id"]:
            self._add("auth_user_id", body["id"])

    def _add(self, kind: str, ident: str) -> None:
        if ident not in self.ids.setdefault(kind, []):
            self.ids[kind].append(ident)


@dataclass(frozen=True)
class Call:
    method: str
    path: str  # under /api/v2/, or absolute for /_sim
    json: Any = None
    params: dict[str, Any] | None = None
    has_body: bool = False


Route = Callable[[Pool], st.SearchStrategy[Call]]
P = "projects/{project_id}"
E = P + "/endpoints/{endpoint_id}"
A = P + "/auth"
B = P + "/branches/{branch_id}"
ROLE_NAME = st.sampled_from(["neondb_owner", "alice", "", "pg_x", "r" * 64])
DB_NAME = st.sampled_from(["neondb", "shop", "", "template1", "d" * 64])


def route(method: str, template: str, body: Callable[[Pool], st.SearchStrategy[Any]] | None = None,
          params: st.SearchStrategy[dict[str, Any]] | None = None) -> Route:
    names = [part[1:-1] for part in template.split("/") if part.startswith("{")]

    def strategy(pool: Pool) -> st.SearchStrategy[Call]:
        ids = st.fixed_dictionaries({n: pool.pick(n) for n in names})
        bodies = body(pool) if body is not None else st.just(None)
        queries = params if params is not None else st.just(None)
        return st.builds(lambda i, b, q: Call(method, template.format(**i), b, q, body is not None),
                         ids, bodies, queries)

    strategy.key = (method, template)  # type: ignore[attr-defined]
    return strategy


def endpoint_fields(pool: Pool, *, create: bool) -> st.SearchStrategy[dict[str, Any]]:
    fields: dict[str, st.SearchStrategy[Any]] = dict(
        autoscaling_limit_min_cu=CU, autoscaling_limit_max_cu=CU, suspend_timeout_seconds=TIMEOUT,
        pooler_enabled=st.sampled_from([True, False, "yes"]),
        pooler_mode=st.sampled_from(["transaction", "session", "bogus"]),
        region_id=st.sampled_from(["aws-us-east-2", "aws-eu-central-1"]),
        name=NAME, pool_size=st.sampled_from([1, 10, 0, -5, 10**6]),
        disabled=st.booleans(), settings=st.just({"pg_settings": {"work_mem": "4MB"}}),
    )
    if create:
        required = {"branch_id": pool.pick("branch_id"), "type": COMPUTE_TYPE}
        return st.fixed_dictionaries(required, optional=fields)
    return maybe(branch_id=pool.pick("branch_id"), **fields)


def auth_body(pool: Pool, **more: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"project_id": pool.pick("project_id"),
                                  "auth_provider": st.sampled_from(["stack", "clerk", ""]),
                                  **more})


EMAIL = st.sampled_from(["ada@example.com", "new@example.com", "not-an-email", "", "a@b"])
DOMAIN = st.sampled_from(["https://app.example.com", "https://new.example.com",
                          "http://insecure.example.com", "not a url", "https://x.example.com/p"])
CREDENTIAL = st.sampled_from(["cid", "secret", ""])
INSTANT = st.sampled_from(["2026-01-05T00:00:00Z", "2026-01-05T00:01:00Z", "2030-01-01T00:00:00Z",
                           "2000-01-01T00:00:00Z", "yesterday"])
GRANULARITY = st.sampled_from(["hourly", "daily", "monthly", "weekly"])
ORG = st.sampled_from(["org-1", "org-elsewhere"])

ROUTES: list[Route] = [
    # projects
    route("POST", "projects", lambda pool: body_or_junk(st.fixed_dictionaries({"project": maybe(
        name=NAME, pg_version=st.sampled_from([14, 17, 9, "17"]),
        history_retention_seconds=st.sampled_from([0, 86_400, -1, 10**9]),
        plan=st.sampled_from(["free", "launch", "galactic"]),
        org_id=st.sampled_from(["org-1", "org-elsewhere"]),
        default_endpoint_settings=maybe(autoscaling_limit_min_cu=CU,
                                        autoscaling_limit_max_cu=CU,
                                        suspend_timeout_seconds=TIMEOUT),
    )}))),
    route("GET", "projects", params=maybe(limit=st.sampled_from([1, 400, 0, 401, "x"]),
                                          cursor=st.sampled_from(["nope", "", "unknown-0"]))),
    route("GET", P),
    route("PATCH", P, lambda pool: body_or_junk(st.fixed_dictionaries({"project": maybe(
        name=NAME, history_retention_seconds=st.sampled_from([0, 3600, -1, 10**9, "1"]))}))),
    route("DELETE", P),
    # branches
    route("POST", P + "/branches", lambda pool: body_or_junk(maybe(
        branch=maybe(name=NAME, parent_id=pool.pick("branch_id")),
        endpoints=st.lists(maybe(type=COMPUTE_TYPE, autoscaling_limit_max_cu=CU,
                                 suspend_timeout_seconds=TIMEOUT), max_size=3)))),
    route("GET", P + "/branches/{branch_id}"),
    route("DELETE", P + "/branches/{branch_id}"),
    route("GET", P + "/branches/{branch_id}/endpoints"),
    route("GET", P + "/branches", params=maybe(
        limit=st.sampled_from([1, 10_000, 0, 10_001]), cursor=st.sampled_from(["nope", ""]),
        search=st.sampled_from(["ma", ""]), sort_by=st.sampled_from(["name", "size"]),
        sort_order=st.sampled_from(["asc", "up"]))),
    route("PATCH", P + "/branches/{branch_id}", lambda pool: body_or_junk(st.fixed_dictionaries(
        {"branch": maybe(name=NAME, protected=st.sampled_from([True, False, "yes"]))}))),
    route("POST", P + "/branches/{branch_id}/set_as_default"),
    # roles and databases
    route("GET", B + "/roles"),
    route("POST", B + "/roles", lambda pool: body_or_junk(st.fixed_dictionaries(
        {"role": st.fixed_dictionaries({"name": ROLE_NAME})}))),
    route("GET", B + "/roles/{role_name}"),
    route("DELETE", B + "/roles/{role_name}"),
    route("GET", B + "/roles/{role_name}/reveal_password"),
    route("POST", B + "/roles/{role_name}/reset_password"),
    route("GET", B + "/databases"),
    route("POST", B + "/databases", lambda pool: body_or_junk(st.fixed_dictionaries(
        {"database": st.fixed_dictionaries({"name": DB_NAME, "owner_name": ROLE_NAME})}))),
    route("GET", B + "/databases/{database_name}"),
    route("PATCH", B + "/databases/{database_name}", lambda pool: body_or_junk(
        st.fixed_dictionaries({"database": maybe(name=DB_NAME, owner_name=ROLE_NAME)}))),
    route("DELETE", B + "/databases/{database_name}"),
    route("GET", P + "/connection_uri", params=maybe(
        branch_id=st.just("br-missing-1"), pooled=st.booleans(),
        role_name=ROLE_NAME, database_name=DB_NAME)),
    route("GET", "projects/shared"),
    route("GET", "users/me"),
    route("GET", "regions"),
    # computes
    route("POST", P + "/endpoints", lambda pool: body_or_junk(
        st.fixed_dictionaries({"endpoint": endpoint_fields(pool, create=True)}))),
    route("GET", P + "/endpoints"),
    route("GET", E),
    route("PATCH", E, lambda pool: body_or_junk(
        st.fixed_dictionaries({"endpoint": endpoint_fields(pool, create=False)}))),
    route("DELETE", E),
    route("POST", E + "/restart"),
    route("POST", E + "/start"),
    route("POST", E + "/suspend"),
    # operations
    route("GET", P + "/operations", params=maybe(
        limit=st.sampled_from([1, 5, 1000, 0, 1001, -1, "x"]),
        cursor=st.sampled_from(["2026-01-05T00:00:00.000001Z", "yesterday", "", "9999"]))),
    route("GET", P + "/operations/{operation_id}"),
    # managed auth
    route("POST", "projects/auth/create", lambda pool: body_or_junk(auth_body(
        pool, branch_id=pool.pick("branch_id")).flatmap(lambda b: st.fixed_dictionaries(
            {k: st.just(v) for k, v in b.items()},
            optional={"database_name": st.sampled_from(["svcdb", "other_db", "bad name!"]),
                      "role_name": st.sampled_from(["svcdb_owner", "1bad"])})))),
    route("GET", A + "/integrations"),
    route("POST", "projects/auth/keys", lambda pool: body_or_junk(auth_body(pool))),
    route("POST", "projects/auth/user", lambda pool: body_or_junk(auth_body(
        pool, email=EMAIL).flatmap(lambda b: st.fixed_dictionaries(
            {k: st.just(v) for k, v in b.items()},
            optional={"name": st.sampled_from(["Ada", "", "n" * 256])})))),
    route("DELETE", A + "/users/{auth_user_id}"),
    route("POST", "projects/auth/transfer_ownership", lambda pool: body_or_junk(auth_body(pool))),
    route("DELETE", A + "/integration/{auth_provider}"),
    route("GET", A + "/oauth_providers"),
    route("POST", A + "/oauth_providers", lambda pool: body_or_junk(st.fixed_dictionaries(
        {"id": st.sampled_from(["google", "github", "microsoft", "myspace"])},
        optional={"client_id": CREDENTIAL, "client_secret": CREDENTIAL}))),
    route("PATCH", A + "/oauth_providers/{oauth_provider_id}", lambda pool: body_or_junk(
        maybe(client_id=CREDENTIAL, client_secret=CREDENTIAL))),
    route("DELETE", A + "/oauth_providers/{oauth_provider_id}"),
    route("GET", A + "/domains"),
    route("POST", A + "/domains", lambda pool: body_or_junk(st.fixed_dictionaries(
        {"domain": DOMAIN, "auth_provider": st.sampled_from(["stack", "clerk"])}))),
    route("DELETE", A + "/domains", lambda pool: body_or_junk(st.fixed_dictionaries(
        {"auth_provider": st.sampled_from(["stack", "clerk"]),
         "domains": st.lists(st.fixed_dictionaries({"domain": DOMAIN}), max_size=2)}))),
    route("GET", A + "/email_server"),
    route("PATCH", A + "/email_server", lambda pool: body_or_junk(st.fixed_dictionaries(
        {"type": st.sampled_from(["shared", "standard", "carrier-pigeon"])},
        optional={"host": st.sampled_from(["smtp.example.com", ""]),
                  "port": st.sampled_from([25, 587, 0, 70_000]),
                  "username": st.just("u"), "password": st.just("p"),
                  "sender_email": EMAIL, "sender_name": st.just("Shop")}))),
    # the lifecycle over time: consumption, restore and recovery, snapshots and schedules
    route("GET", "consumption_history/projects", params=maybe(
        **{"from": INSTANT, "to": INSTANT}, granularity=GRANULARITY,
        metrics=st.sampled_from(["compute_time_seconds", "cpu"]))),
    route("GET", "consumption_history/v2/projects", params=maybe(
        **{"from": INSTANT, "to": INSTANT}, granularity=GRANULARITY, org_id=ORG,
        metrics=st.sampled_from(["compute_unit_seconds", "", "cpu"]))),
    route("GET", "consumption_history/v2/branches", params=maybe(
        **{"from": INSTANT, "to": INSTANT}, granularity=GRANULARITY, org_id=ORG,
        project_ids=st.sampled_from(["unknown-0", ""]),
        metrics=st.sampled_from(["compute_unit_seconds", "cpu"]))),
    route("GET", P + "/branches/count", params=maybe(search=st.sampled_from(["ma", ""]))),
    route("POST", P + "/recover"),
    route("POST", B + "/recover"),
    route("POST", B + "/restore", lambda pool: body_or_junk(st.fixed_dictionaries(
        {"source_branch_id": pool.pick("branch_id")},
        optional={"source_timestamp": INSTANT, "source_lsn": st.sampled_from(["0/16B3748", "x"]),
                  "preserve_under_name": NAME}))),
    route("POST", B + "/finalize_restore", lambda pool: body_or_junk(maybe(name=NAME))),
    route("POST", B + "/snapshot", params=maybe(
        timestamp=INSTANT, lsn=st.sampled_from(["0/16B3748", "FF/0", "x"]), name=NAME,
        expires_at=INSTANT)),
    route("GET", P + "/snapshots"),
    route("PATCH", P + "/snapshots/{snapshot_id}", lambda pool: body_or_junk(
        st.fixed_dictionaries({"snapshot": maybe(name=NAME)}))),
    route("DELETE", P + "/snapshots/{snapshot_id}"),
    route("POST", P + "/snapshots/{snapshot_id}/restore", lambda pool: body_or_junk(maybe(
        name=NAME, target_branch_id=pool.pick("branch_id"),
        finalize_restore=st.sampled_from([True, False, "yes"])))),
    route("GET", B + "/backup_schedule"),
    route("PUT", B + "/backup_schedule", lambda pool: body_or_junk(st.fixed_dictionaries(
        {"schedule": st.lists(st.fixed_dictionaries(
            {"frequency": st.sampled_from(["hourly", "daily", "often"])},
            optional={"hour": st.sampled_from([0, 23, 24]),
                      "retention_seconds": st.sampled_from([3600, 60])}), max_size=3)}))),
    # the simulator's controls (time moves only by small steps: timers stay interesting)
    route("/_sim", "GET clock"),
    route("/_sim", "GET state"),
    route("/_sim", "POST advance", lambda pool: body_or_junk(st.fixed_dictionaries(
        {"seconds": st.sampled_from([0, 1, 5, 30, 301, -1, "5", 10**12])}))),
    route("/_sim", "POST connections", lambda pool: body_or_junk(st.fixed_dictionaries(
        {"project_id": pool.pick("project_id"), "endpoint_id": pool.pick("endpoint_id")},
        optional={"count": st.sampled_from([1, 3, 0, 10_001]),
                  "duration_seconds": st.sampled_from([1, 60, 0, -5])}))),
    route("GET", "api_keys"),
    route("POST", "api_keys", lambda pool: body_or_junk(maybe(
        key_name=st.sampled_from(["ci", "", "k" * 65, 7])))),
    route("DELETE", "api_keys/{key_id}"),  # unknown ids only: the keys stay as they are
    route("GET", P + "/permissions"),
    route("POST", P + "/permissions", lambda pool: body_or_junk(maybe(email=EMAIL))),
    route("DELETE", P + "/permissions/{permission_id}"),
    route("GET", "users/me/organizations"),
    route("GET", "auth"),
    route("GET", "organizations/{org_id}"),
    route("GET", "organizations/{org_id}/members"),
    route("GET", "organizations/{org_id}/members/{member_id}"),
    route("GET", "organizations/{org_id}/api_keys"),
    route("POST", "organizations/{org_id}/api_keys", lambda pool: body_or_junk(maybe(
        key_name=st.sampled_from(["ci", "k" * 65, 7]), project_id=pool.pick("project_id")))),
    route("DELETE", "organizations/{org_id}/api_keys/{key_id}"),
    route("GET", "organizations/{org_id}/invitations"),
    route("POST", "organizations/{org_id}/invitations", lambda pool: body_or_junk(
        st.fixed_dictionaries({"invitations": st.lists(maybe(
            email=EMAIL, role=st.sampled_from(["member", "admin", "owner"])), max_size=2)}))),
    route("GET", "organizations/{org_id}/billing/spending_limit"),
    route("PUT", "organizations/{org_id}/billing/spending_limit", lambda pool: body_or_junk(
        maybe(spending_limit_cents=st.sampled_from([1, 500, 0, -1, "5"])))),
    route("DELETE", "organizations/{org_id}/billing/spending_limit"),
    route("GET", "organizations/{org_id}/vpc/vpc_endpoints"),
    route("GET", "organizations/{org_id}/vpc/region/{region_id}/vpc_endpoints"),
    route("POST", "users/me/projects/transfer", lambda pool: body_or_junk(maybe(
        destination_org_id=pool.pick("org_id"),
        project_ids=st.lists(pool.pick("project_id"), max_size=2)))),
    route("/_sim", "GET faults"),
    route("/_sim", "POST faults", lambda pool: body_or_junk(maybe(
        operation_failure_rate=st.sampled_from([0.0, 0.5, -0.1, 1.0, 2]),
        extra_latency_ms=st.sampled_from([0.0, -1, 60_001]),  # a valid delay really sleeps
        outage=maybe(start_in_seconds=st.sampled_from([0, 10, -1]),
                     duration_seconds=st.sampled_from([5, 60, 0, -1])),
        clear_outages=st.booleans()))),
    route("/_sim", "POST reset"),
    route("/_sim", "GET console"),
    route("/_sim", "POST auth/confirm_transfer", lambda pool: body_or_junk(st.fixed_dictionaries(
        {"project_id": pool.pick("project_id")},
        optional={"token": st.sampled_from(["nope", ""]),
                  "url": st.sampled_from(["https://example.com/?code=x", "no-code"])}))),
    route("/_sim", "POST auth/query", lambda pool: body_or_junk(st.fixed_dictionaries(
        {"project_id": pool.pick("project_id"),
         "sql": st.sampled_from(["SELECT id FROM svc_auth.users_sync", "DELETE FROM x",
                                 "SELECT 1; SELECT 2", ""])}))),
]


#: calls that wipe the world: drawn one time in five
RARE = {("DELETE", P), ("/_sim", "POST reset")}


def _sim_call(call: Call) -> Call:
    """`route("/_sim", "POST advance")` reads as method POST, path /_sim/advance."""
    if call.method != "/_sim":
        return call
    method, _, rest = call.path.partition(" ")
    return Call(method, f"/_sim/{rest}", call.json, call.params, call.has_body)


def _route_key(r: Route) -> tuple[str, str]:
    method, template = r.key  # type: ignore[attr-defined]
    if method == "/_sim":
        verb, _, rest = template.partition(" ")
        return verb, f"/_sim/{rest}"
    return method, "/api/v2/" + template


def test_the_calls_cover_every_route() -> None:
    doc = create_app(SimServer(seed=SEED)).openapi()
    documented = {(m.upper(), p) for p, ops in doc["paths"].items() for m in ops}
    assert {_route_key(r) for r in ROUTES} == documented


# ---- keys --------------------------------------------------------------------------------------


def keys_of(server: SimServer, world: World) -> dict[str, str | None]:
    other = server.cp.create_project("other", key="other").project.id
    return {
        "personal": server.add_personal_key().secret,
        "organization": server.keys.organization().secret,
        "project": server.keys.for_project(world.project_id).secret,
        "other-project": server.keys.for_project(other).secret,
        "wrong": "sim_not-a-key",
        "none": None,
    }


KEY_CHOICE = st.sampled_from(["personal"] * 15 + ["organization", "project", "project",
                                                  "other-project", "wrong", "none"])


def send(api: SimClient, call: Call, key: str | None) -> Any:
    headers = {"authorization": f"Bearer {key}"} if key is not None else {}
    url = api.base_url.join(call.path)
    kwargs: dict[str, Any] = {"headers": headers, "params": call.params}
    if call.has_body:
        kwargs["json"] = call.json
    return api.request(call.method, url, **kwargs)


def _diff(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    return [k for k in sorted(set(before) | set(after)) if before.get(k) != after.get(k)]


@pytest.mark.slow
@settings(max_examples=60 if THOROUGH else 15)
@given(data=st.data())
def test_a_refusal_changes_nothing(data: st.DataObject, figures: Figures) -> None:
    server = SimServer(seed=SEED)
    world = build_world(server)
    keys = keys_of(server, world)
    pool = Pool.of(world)
    api = in_process_client(server, api_key="unused")
    api.headers.pop("authorization")
    checked = 0
    for _ in range(STEPS):
        make = data.draw(st.sampled_from(ROUTES), label="route")
        if make.key in RARE and data.draw(st.integers(0, 4), label="rare"):
            continue  # wiping the world early leaves only 404s to check
        call = _sim_call(data.draw(make(pool), label="call"))
        key_kind = data.draw(KEY_CHOICE, label="key")
        note(f"{call.method} {call.path} {call.params or ''} {call.json!r} [{key_kind}]")
        before_state = describe(server.cp)
        before = digest_of(before_state)
        r = send(api, call, keys[key_kind])
        note(f"  -> {r.status_code} {r.text[:200]}")
        assert r.status_code < 500, r.text
        if r.status_code >= 400:
            after = digest(server.cp)
            if after != before:
                changed = _diff(before_state, describe(server.cp))
                raise AssertionError(f"{call.method} {call.path} answered {r.status_code} "
                                     f"{r.text[:200]} but changed {changed}")
            body = r.json()
            assert set(body) == {"code", "message", "request_id"}, body
            figures.refusals[str(r.status_code)] += 1
            checked += 1
        elif r.content and r.headers.get("content-type", "").startswith("application/json"):
            pool.learn(r.json())
    note(f"{checked} refusals checked")


# ---- the refusals every state offers, each once --------------------------------------------------


def known_refusals(world: World) -> list[tuple[str, Call, int]]:
    """(key kind, call, status) for each refusal the design notes names, aimed at the world's state."""
    p, main, dev = world.project_id, world.main_branch_id, world.dev_branch_id
    ep = f"projects/{p}/endpoints"
    rw_on_main = {"endpoint": {"branch_id": main, "type": "read_write"}}
    return [
        ("personal", Call("POST", f"{ep}/{world.idle_id}/restart"), 422),
        ("personal", Call("POST", ep, rw_on_main, has_body=True), 409),
        ("personal", Call("PATCH", f"{ep}/{world.primary_id}",
                          {"endpoint": {"branch_id": dev}}, has_body=True), 409),
        ("personal", Call("DELETE", f"{ep}/{world.starting_id}"), 423),
        ("personal", Call("POST", f"{ep}/{world.starting_id}/suspend"), 423),
        ("personal", Call("PATCH", f"{ep}/{world.primary_id}",
                          {"endpoint": {"autoscaling_limit_max_cu": 64}}, has_body=True), 400),
        ("personal", Call("PATCH", f"{ep}/{world.primary_id}",
                          {"endpoint": {"autoscaling_limit_min_cu": 4,
                                        "autoscaling_limit_max_cu": 1}}, has_body=True), 400),
        ("personal", Call("PATCH", f"{ep}/{world.primary_id}",
                          {"endpoint": {"autoscaling_limit_max_cu": 3.5}}, has_body=True), 400),
        ("personal", Call("PATCH", f"{ep}/{world.primary_id}",
                          {"endpoint": {"suspend_timeout_seconds": 30}}, has_body=True), 400),
        ("personal", Call("PATCH", f"{ep}/{world.primary_id}",
                          {"endpoint": {"suspend_timeout_seconds": 604_801}}, has_body=True), 400),
        ("personal", Call("POST", f"projects/{p}/branches",
                          {"branch": {"name": "dev"}}, has_body=True), 409),
        ("personal", Call("POST", f"projects/{p}/branches",
                          {"endpoints": [{"type": "read_write"}, {"type": "read_write"}]},
                          has_body=True), 409),
        ("personal", Call("DELETE", f"projects/{p}/branches/{main}"), 409),
        ("personal", Call("POST", "projects/auth/create",
                          {"project_id": p, "branch_id": main, "auth_provider": "stack"},
                          has_body=True), 409),
        ("personal", Call("POST", "projects/auth/user",
                          {"project_id": p, "auth_provider": "stack",
                           "email": "ada@example.com"}, has_body=True), 409),
        ("personal", Call("POST", f"projects/{p}/auth/oauth_providers", {"id": "github"},
                          has_body=True), 409),
        ("project", Call("POST", "projects", {"project": {"name": "no"}}, has_body=True), 403),
        ("other-project", Call("GET", f"projects/{p}"), 404),
        ("other-project", Call("DELETE", f"projects/{p}"), 404),
        ("wrong", Call("DELETE", f"projects/{p}"), 401),
        ("none", Call("POST", "/_sim/advance", {"seconds": 60}, has_body=True), 401),
        ("personal", Call("POST", "/_sim/advance", {"seconds": -1}, has_body=True), 400),
        ("personal", Call("POST", "/_sim/connections",
                          {"project_id": p, "endpoint_id": world.primary_id, "count": 10_001},
                          has_body=True), 400),
    ]


def test_each_kind_of_refusal_changes_nothing(figures: Figures) -> None:
    server = SimServer(seed=SEED)
    world = build_world(server)
    keys = keys_of(server, world)
    api = in_process_client(server, api_key="unused")
    api.headers.pop("authorization")
    for key_kind, call, status in known_refusals(world):
        before = digest(server.cp)
        r = send(api, call, keys[key_kind])
        assert r.status_code == status, (call, r.text)
        assert digest(server.cp) == before, (call, r.text)
        figures.refusals[str(status)] += 1
    # an outage: every management call is a 503 and changes nothing; /_sim still answers
    assert send(api, Call("POST", "/_sim/faults", {"outage": {"duration_seconds": 60}},
                          has_body=True), keys["personal"]).status_code == 200
    for call in (Call("DELETE", f"projects/{world.project_id}"),
                 Call("POST", f"projects/{world.project_id}/endpoints/{world.primary_id}/restart"),
                 Call("POST", "projects", {"project": {}}, has_body=True)):
        before = digest(server.cp)
        r = send(api, call, keys["personal"])
        assert (r.status_code, r.json()["code"]) == (503, "SERVICE_UNAVAILABLE"), r.text
        assert digest(server.cp) == before
        figures.refusals["503"] += 1


# ---- the digest sees what no listing shows -------------------------------------------------------


def test_the_digest_is_deterministic_and_sees_hidden_state() -> None:
    a, b = SimServer(seed=SEED), SimServer(seed=SEED)
    world = build_world(a)
    build_world(b)
    assert digest(a.cp) == digest(b.cp)
    cp = a.cp
    primary = cp.computes[world.primary_id]
    changes: list[Callable[[], Any]] = [
        lambda: cp.streams.get("ops/fuzz").random(),  # a draw: the future differs
        lambda: cp.env.timeout(5),  # an event on SimPy's heap
        lambda: primary.runtime.open_ends.append(1e9),  # a runtime queue
        lambda: setattr(primary, "suspend_timeout_seconds", 600),
        lambda: cp.ids._issued.add("ep-leaked"),
        lambda: cp.auth.add_redirect_domain(world.project_id, "https://b.example.com", "stack"),
        lambda: setattr(cp.operations[world.operation_ids[0]], "failures_count", 1),
        lambda: cp.advance(1),
    ]
    seen = {digest(cp)}
    for change in changes:
        change()
        seen.add(digest(cp))
    assert len(seen) == len(changes) + 1


def test_a_leaky_refusal_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """A verb that draws a random number before refusing: exactly what the check is for."""
    server = SimServer(seed=SEED)
    world = build_world(server)
    api = in_process_client(server)
    restart = server.cp.restart_compute

    def leaky(*args: Any, **kwargs: Any) -> Any:
        server.cp.streams.get("ops/fuzz").random()
        return restart(*args, **kwargs)

    monkeypatch.setattr(server.cp, "restart_compute", leaky)
    before = digest(server.cp)
    r = api.post(f"projects/{world.project_id}/endpoints/{world.idle_id}/restart")
    assert r.status_code == 422
    assert digest(server.cp) != before

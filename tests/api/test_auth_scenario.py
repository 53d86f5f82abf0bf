"""Managed auth in scenario files: scripted `actions:` through the API, and the `auth:` block
(an integration at t=0, user sign-ups as a Poisson process) seen in the synced table."""

from __future__ import annotations

import re
from typing import Any

import pytest

from sim.api import SimServer, in_process_client
from sim.scenario.loader import ScenarioError, parse_scenario
from sim.scenario.runner import run_scenario

COUNT_SQL = "SELECT count(*) AS n FROM svc_auth.users_sync"
MAIN = {"name": "main", "computes": [{"type": "read_write"}]}


def user_action(at: str, email: str) -> dict[str, Any]:
    return {"at": at, "call": "POST /projects/auth/user",
            "body": {"project_id": "{shop[1]}", "auth_provider": "stack", "email": email}}


SCRIPTED: dict[str, Any] = {
    "name": "auth-actions", "seed": 5, "duration": "1h",
    "projects": [{"name": "shop", "count": 2, "branches": [MAIN]}],
    "actions": [
        {"at": "1m", "call": "POST /projects/auth/create",
         "body": {"auth_provider": "stack", "project_id": "{shop[1]}",
                  "branch_id": "{shop[1].main}"}},
        user_action("2m", "ann@example.com"),
        user_action("3m", "bob@example.com"),
        user_action("4m", "ANN@example.com"),  # the same user: 409
        {"at": "5m", "call": "POST /projects/{shop[1]}/auth/domains",
         "body": {"domain": "https://shop.example.com", "auth_provider": "stack"}},
    ],
}


def signups(per_hour: float, count: int = 3, **auth: Any) -> dict[str, Any]:
    return {
        "name": "auth-signups", "seed": 21, "duration": "6h",
        "projects": [{"name": "shop", "count": count,
                      "branches": [MAIN, {"name": "dev", "computes": []}],
                      "auth": {"signups": {"per_hour": per_hour}, **auth}}],
    }


def rows(api, project_id: str, sql: str = COUNT_SQL) -> Any:
    r = api.sim("POST", "auth/query", json={"project_id": project_id, "sql": sql})
    assert r.status_code == 200, r.text
    return r.json()["rows"]


def test_scripted_actions_call_the_auth_endpoints() -> None:
    result = run_scenario(parse_scenario(SCRIPTED))
    assert [(a.at_s, a.call.split()[1].split("/")[-1], a.status, a.code)
            for a in result.actions] == [
        (60.0, "create", 201, ""), (120.0, "user", 201, ""), (180.0, "user", 201, ""),
        (240.0, "user", 409, "CONFLICT"), (300.0, "domains", 201, "")]
    assert "auth users created" not in result.assumptions  # no `auth:` block


def test_scripted_users_reach_the_synced_table_of_sim_serve() -> None:
    server = SimServer(scenario=parse_scenario(SCRIPTED))
    with in_process_client(server) as api:
        shop1 = next(p["id"] for p in api.get("projects").json()["projects"]
                     if p["name"] == "shop-1")
        assert api.get(f"projects/{shop1}/auth/integrations").json() == {"data": []}
        api.advance(150)  # create at 60 s, ann at 120 s (synced 2 s later)
        assert rows(api, shop1, "SELECT email FROM svc_auth.users_sync") == [
            {"email": "ann@example.com"}]
        api.advance(300)
        emails = rows(api, shop1, "SELECT email FROM svc_auth.users_sync ORDER BY email")
        assert emails == [{"email": "ann@example.com"}, {"email": "bob@example.com"}]
        assert api.get(f"projects/{shop1}/auth/domains").json()["domains"] == [
            {"domain": "https://shop.example.com", "auth_provider": "stack"}]
        assert [a.status for a in server.actions] == [201, 201, 201, 409, 201]


def test_a_reference_in_an_auth_body_is_checked() -> None:
    bad = {**SCRIPTED, "actions": [user_action("1m", "x@example.com")]}
    bad["actions"][0]["body"]["project_id"] = "{shop[5]}"
    with pytest.raises(ScenarioError, match=r"actions\[0\]\.body\.project_id: \{shop\[5\]\}"):
        parse_scenario(bad)


def test_signups_grow_the_synced_table() -> None:
    server = SimServer(scenario=parse_scenario(signups(per_hour=20)))
    with in_process_client(server) as api:
        projects = sorted((p["name"], p["id"]) for p in api.get("projects").json()["projects"])
        assert len(projects) == 3
        for _, pid in projects:  # the integration is there at t=0, on the first branch
            [item] = api.get(f"projects/{pid}/auth/integrations").json()["data"]
            branches = api.get(f"projects/{pid}/branches").json()["branches"]
            main = next(b["id"] for b in branches if b["name"] == "main")
            assert (item["branch_id"], item["db_name"], item["owned_by"]) == (
                main, "svcdb", "neon")
        seen = []
        for _ in range(3):
            api.advance(3600)
            seen.append([rows(api, pid)[0]["n"] for _, pid in projects])
        for earlier, later in zip(seen, seen[1:], strict=False):
            assert all(b >= a for a, b in zip(earlier, later, strict=True))
            assert sum(later) > sum(earlier)
        assert 20 * 3 * 3 * 0.6 < sum(seen[-1]) < 20 * 3 * 3 * 1.4
        users = rows(api, projects[0][1], "SELECT email, name FROM svc_auth.users_sync "
                                          "ORDER BY created_at, email LIMIT 2")
        assert users == [{"email": "user1@shop-0.example.com", "name": "User 1"},
                         {"email": "user2@shop-0.example.com", "name": "User 2"}]


def test_the_run_reports_the_users_created() -> None:
    scenario = parse_scenario(signups(per_hour=20))
    result = run_scenario(scenario)
    facts = result.assumptions
    assert facts["auth sign-ups per project (Poisson)"] == "shop 20/h"
    match = re.fullmatch(r"(\d+) by sign-ups; (\d+) rows in svc_auth.users_sync at the end",
                         facts["auth users created"])
    assert match is not None, facts["auth users created"]
    created, synced = int(match[1]), int(match[2])
    mean = 20 * 6 * 3  # per hour x hours x projects
    assert abs(created - mean) < 5 * mean ** 0.5
    assert created - 3 <= synced <= created  # the last ones may still wait for the sync
    # the same seed gives the same sign-ups; a shard leaves the count out (shards must agree)
    assert run_scenario(scenario).assumptions == facts
    shard = run_scenario(scenario, instances=scenario.instances()[:1])
    assert "auth users created" not in shard.assumptions
    assert shard.assumptions["auth sign-ups per project (Poisson)"] == "shop 20/h"


def test_auth_on_another_branch_and_without_signups() -> None:
    scenario = parse_scenario(signups(per_hour=0, count=1, branch="dev"))
    assert run_scenario(scenario).assumptions["auth users created"] == (
        "0 by sign-ups; 0 rows in svc_auth.users_sync at the end")
    server = SimServer(scenario=scenario)
    with in_process_client(server) as api:
        [project] = api.get("projects").json()["projects"]
        [item] = api.get(f"projects/{project['id']}/auth/integrations").json()["data"]
        branches = api.get(f"projects/{project['id']}/branches").json()["branches"]
        assert item["branch_id"] == next(b["id"] for b in branches if b["name"] == "dev")


@pytest.mark.parametrize(("auth", "problem"), [
    ({"provider": "clerk"}, r"projects\[0\]\.auth\.provider: must be one of \['stack'\]"),
    ({"branch": "staging"}, r"auth\.branch: 'staging' is not a branch of this project"),
    ({"signups": {"per_hour": -1}}, r"projects\[0\]\.auth\.signups\.per_hour"),
    ({"signups": {"rate": 5}}, r"projects\[0\]\.auth\.signups"),
])
def test_a_bad_auth_block_is_refused(auth: dict[str, Any], problem: str) -> None:
    spec = signups(per_hour=1)
    spec["projects"][0]["auth"] = auth
    with pytest.raises(ScenarioError, match=problem):
        parse_scenario(spec)

"""Routes of roles, databases, connection URIs, branch edits, users and regions over HTTP."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from sim.api import SimClient
from sim.engine.model import USER_ID
from tests.api.conftest import make_project

OWNER, DB = "neondb_owner", "neondb"


@pytest.fixture
def made(api: SimClient) -> dict[str, Any]:
    made = make_project(api, "shop")
    api.advance(60)  # the primary's start_compute has ended: changes are not locked
    return made


def ids(made: dict[str, Any]) -> tuple[str, str]:
    return made["project"]["id"], made["branch"]["id"]


def test_project_creation_lists_role_database_and_a_uri_that_agree(api: SimClient,
                                                                   made: dict[str, Any]) -> None:
    p, b = ids(made)
    (role,), (db,), (uri,) = made["roles"], made["databases"], made["connection_uris"]
    assert (role["name"], db["name"], db["owner_name"]) == (OWNER, DB, OWNER)
    password = api.get(f"projects/{p}/branches/{b}/roles/{OWNER}/reveal_password").json()
    assert role["password"] == password["password"] == uri["connection_parameters"]["password"]
    host = made["endpoints"][0]["host"]
    assert uri["connection_uri"] == f"postgresql://{OWNER}:{role['password']}@{host}/{DB}" \
                                    "?sslmode=require"
    assert api.get(f"projects/{p}/connection_uri").json() == {"uri": uri["connection_uri"]}
    pooled = api.get(f"projects/{p}/connection_uri",
                     params={"pooled": "true", "role_name": OWNER, "database_name": DB}).json()
    assert pooled["uri"].split("@")[1].split("/")[0] == uri["connection_parameters"]["pooler_host"]


def test_project_creation_takes_role_and_database_names(api: SimClient) -> None:
    made = make_project(api, "named", branch={"role_name": "app", "database_name": "shop"})
    assert [r["name"] for r in made["roles"]] == ["app"]
    assert made["databases"][0]["name"] == "shop"
    assert made["connection_uris"][0]["connection_uri"].endswith("/shop?sslmode=require")


def test_roles_lifecycle_with_operations(api: SimClient, made: dict[str, Any]) -> None:
    p, b = ids(made)
    roles = f"projects/{p}/branches/{b}/roles"
    r = api.post(roles, json={"role": {"name": "alice"}})
    assert r.status_code == 201, r.text
    created = r.json()
    assert created["role"]["password"].startswith("npg_")
    assert [o["action"] for o in created["operations"]] == ["apply_config"]
    assert created["operations"][0]["endpoint_id"] == made["endpoints"][0]["id"]
    assert api.post(roles, json={"role": {"name": "bob"}}).status_code == 423  # still applying
    api.advance(30)
    listed = api.get(roles).json()["roles"]
    assert [x["name"] for x in listed] == [OWNER, "alice"]
    assert all("password" not in x for x in listed)
    assert api.get(f"{roles}/alice").json()["role"]["name"] == "alice"
    reset = api.post(f"{roles}/alice/reset_password").json()
    assert reset["role"]["password"] != created["role"]["password"]
    assert api.get(f"{roles}/alice/reveal_password").json()["password"] == \
        reset["role"]["password"]
    api.advance(30)
    deleted = api.delete(f"{roles}/alice").json()
    assert deleted["role"]["name"] == "alice" and len(deleted["operations"]) == 1
    assert api.get(f"{roles}/alice").status_code == 404


def test_databases_lifecycle(api: SimClient, made: dict[str, Any]) -> None:
    p, b = ids(made)
    dbs = f"projects/{p}/branches/{b}/databases"
    r = api.post(dbs, json={"database": {"name": "shop", "owner_name": OWNER}})
    assert r.status_code == 201, r.text
    assert r.json()["database"]["owner_name"] == OWNER
    api.advance(30)
    renamed = api.patch(f"{dbs}/shop", json={"database": {"name": "store"}}).json()
    assert renamed["database"]["name"] == "store"
    api.advance(30)
    assert [d["name"] for d in api.get(dbs).json()["databases"]] == [DB, "store"]
    assert api.get(f"{dbs}/store").json()["database"]["id"] == r.json()["database"]["id"]
    assert api.delete(f"{dbs}/store").status_code == 200
    assert api.get(f"{dbs}/store").status_code == 404


@pytest.mark.parametrize("path,body,status,field", [
    ("roles", {"role": {"name": OWNER}}, 409, "role.name"),
    ("roles", {"role": {"name": "pg_x"}}, 400, "role.name"),
    ("roles", {"role": {"name": "x", "colour": "red"}}, 400, "role.colour"),
    ("databases", {"database": {"name": "x", "owner_name": "nobody"}}, 400,
     "database.owner_name"),
    ("databases", {"database": {"name": "x"}}, 400, "database.owner_name"),
])
def test_refusals_name_the_field(api: SimClient, made: dict[str, Any], path: str,
                                 body: dict[str, Any], status: int, field: str) -> None:
    p, b = ids(made)
    r = api.post(f"projects/{p}/branches/{b}/{path}", json=body)
    assert r.status_code == status, r.text
    assert field in r.json()["message"]


def test_passwords_never_reach_the_logs(api: SimClient, made: dict[str, Any],
                                        caplog: pytest.LogCaptureFixture) -> None:
    p, b = ids(made)
    caplog.set_level(logging.DEBUG)
    created = api.post(f"projects/{p}/branches/{b}/roles", json={"role": {"name": "alice"}})
    secret = created.json()["role"]["password"]
    api.get(f"projects/{p}/branches/{b}/roles/alice/reveal_password")
    assert secret not in caplog.text


# ---- branches ------------------------------------------------------------------------------------


def test_branch_creation_returns_roles_databases_uris_and_annotation(
        api: SimClient, made: dict[str, Any]) -> None:
    p, _ = ids(made)
    r = api.post(f"projects/{p}/branches", json={
        "branch": {"name": "dev", "protected": True}, "endpoints": [{"type": "read_write"}],
        "annotation_value": {"ci": "yes"}})
    assert r.status_code == 201, r.text
    body = r.json()
    dev = body["branch"]
    assert dev["protected"] is True
    assert [x["name"] for x in body["roles"]] == [OWNER]
    assert [x["name"] for x in body["databases"]] == [DB]
    assert body["roles"][0]["password"] == made["roles"][0]["password"]  # a copy
    assert body["endpoints"][0]["host"] in body["connection_uris"][0]["connection_uri"]
    got = api.get(f"projects/{p}/branches/{dev['id']}").json()
    assert got["annotation"]["value"] == {"ci": "yes"}
    assert got["annotation"]["object"]["id"] == dev["id"]
    listed = api.get(f"projects/{p}/branches").json()
    assert listed["annotations"][dev["id"]]["value"] == {"ci": "yes"}
    assert listed["annotations"][made["branch"]["id"]]["value"] == {}
    plain = api.get(f"projects/{p}/branches/{made['branch']['id']}").json()
    assert plain["annotation"]["value"] == {}


def test_branch_without_compute_has_no_uri(api: SimClient, made: dict[str, Any]) -> None:
    p, _ = ids(made)
    body = api.post(f"projects/{p}/branches", json={"branch": {"name": "bare"}}).json()
    assert body["connection_uris"] == [] and len(body["roles"]) == 1


def test_patch_rename_protect_and_set_default(api: SimClient, made: dict[str, Any]) -> None:
    p, main = ids(made)
    dev = api.post(f"projects/{p}/branches", json={"branch": {"name": "dev"}}).json()["branch"]
    r = api.patch(f"projects/{p}/branches/{dev['id']}", json={"branch": {"name": "feature"}})
    assert r.status_code == 200 and r.json()["branch"]["name"] == "feature"
    assert r.json()["operations"] == []
    clash = api.patch(f"projects/{p}/branches/{dev['id']}", json={"branch": {"name": "main"}})
    assert clash.status_code == 409 and "branch.name" in clash.json()["message"]
    api.patch(f"projects/{p}/branches/{dev['id']}", json={"branch": {"protected": True}})
    assert api.delete(f"projects/{p}/branches/{dev['id']}").status_code == 409
    r = api.post(f"projects/{p}/branches/{dev['id']}/set_as_default")
    assert r.status_code == 200 and r.json()["branch"]["default"] is True
    branches = {x["id"]: x for x in api.get(f"projects/{p}/branches").json()["branches"]}
    assert (branches[dev["id"]]["default"], branches[main]["default"]) == (True, False)
    back = api.post(f"projects/{p}/branches/{main}/set_as_primary")  # the former name
    assert back.json()["branch"]["default"] is True


def test_branch_list_parameters(api: SimClient, made: dict[str, Any]) -> None:
    p, _ = ids(made)
    for name in ("alpha", "beta", "gamma", "delta"):
        api.post(f"projects/{p}/branches", json={"branch": {"name": name}})
        api.advance(1)
    everything = api.get(f"projects/{p}/branches", params={"sort_by": "name",
                                                          "sort_order": "asc"}).json()
    names = [x["name"] for x in everything["branches"]]
    assert names == sorted(names) and len(names) == 5
    assert everything["pagination"] == {"sort_by": "name", "sort_order": "asc"}
    seen: list[str] = []
    params: dict[str, Any] = {"sort_by": "name", "sort_order": "asc", "limit": 2}
    for _ in range(5):
        page = api.get(f"projects/{p}/branches", params=params).json()
        seen += [x["name"] for x in page["branches"]]
        if "next" not in page["pagination"]:
            break
        params["cursor"] = page["pagination"]["next"]
    assert seen == names
    found = api.get(f"projects/{p}/branches", params={"search": "ALP"}).json()["branches"]
    assert [x["name"] for x in found] == ["alpha"]
    bad = api.get(f"projects/{p}/branches", params={"sort_by": "size"})
    assert bad.status_code == 400 and "sort_by" in bad.json()["message"]


# ---- projects, users, regions --------------------------------------------------------------------


def test_shared_projects_is_an_empty_list_not_a_project(api: SimClient,
                                                        made: dict[str, Any]) -> None:
    r = api.get("projects/shared")
    assert r.status_code == 200 and r.json()["projects"] == []


def test_project_list_search_and_org(api: SimClient) -> None:
    assert api.get("projects").json()["projects"] == []
    make_project(api, "shop-eu")
    make_project(api, "blog")
    found = api.get("projects", params={"search": "SHOP"}).json()["projects"]
    assert [x["name"] for x in found] == ["shop-eu"]
    assert api.get("projects", params={"org_id": "org-2"}).json()["projects"] == []
    org = make_project(api, "org-project", org_id="org-1")["project"]
    listed = api.get("projects", params={"org_id": "org-1"}).json()["projects"]
    # without org_id a project is the default organization's: all three are org-1's
    assert [x["name"] for x in listed] == ["shop-eu", "blog", "org-project"]
    assert listed[-1]["id"] == org["id"]


def test_current_user_and_regions(api: SimClient) -> None:
    me = api.get("users/me").json()
    assert me["id"] == USER_ID and me["plan"] == "launch"
    assert me["billing_account"]["subscription_type"] == "launch"
    regions = api.get("regions").json()["regions"]
    assert [x["region_id"] for x in regions if x["default"]] == ["aws-us-east-2"]
    assert len({x["region_id"] for x in regions}) == len(regions)

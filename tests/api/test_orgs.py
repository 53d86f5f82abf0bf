"""The organization, its members and API keys, the key's auth details, project permissions."""

from __future__ import annotations

from sim.api import SimClient, in_process_client
from sim.api.keys import ORG_ID
from sim.api.orgs import MEMBER_ID
from sim.engine.model import USER_ID
from sim.testing.state_digest import digest
from tests.api.conftest import make_project


def test_the_user_belongs_to_one_organization(api: SimClient) -> None:
    orgs = api.get("users/me/organizations").json()["organizations"]
    assert [o["id"] for o in orgs] == [ORG_ID]
    assert api.get(f"organizations/{ORG_ID}").json() == orgs[0]
    assert orgs[0]["plan"] == api.get("users/me").json()["plan"]
    r = api.get("organizations/org-elsewhere")
    assert r.status_code == 404 and r.json()["message"] == "organization 'org-elsewhere' not found"
    # projects made without org_id are the default organization's, and listed under it
    made = make_project(api, "plain")["project"]
    assert made["org_id"] == ORG_ID
    listed = api.get("projects", params={"org_id": ORG_ID}).json()["projects"]
    assert [p["id"] for p in listed] == [made["id"]]


def test_members(api: SimClient) -> None:
    page = api.get(f"organizations/{ORG_ID}/members", params={"sort_by": "email"}).json()
    assert [(m["member"]["user_id"], m["member"]["role"]) for m in page["members"]] == \
        [(USER_ID, "admin")]
    assert page["pagination"] == {"sort_by": "email", "sort_order": "asc"}
    assert api.get(f"organizations/{ORG_ID}/members", params={"cursor": "x"}).json()[
        "members"] == []
    assert api.get(f"organizations/{ORG_ID}/members/{MEMBER_ID}").json()["id"] == MEMBER_ID
    other = "00000000-0000-4000-8000-000000000000"
    assert api.get(f"organizations/{ORG_ID}/members/{other}").status_code == 404
    assert api.get(f"organizations/{ORG_ID}/members", params={"limit": 501}).status_code == 400


def test_auth_details_by_kind_of_key(api: SimClient) -> None:
    assert api.get("auth").json() == {"account_id": USER_ID, "auth_method": "api_key_user"}
    org = in_process_client(api.server, api_key=api.server.keys.organization().secret)
    assert org.get("auth").json() == {"account_id": ORG_ID, "auth_method": "api_key_org"}


def test_organization_keys_and_their_scopes(api: SimClient) -> None:
    p = make_project(api, "scoped")["project"]["id"]
    q = make_project(api, "other")["project"]["id"]
    whole = api.post(f"organizations/{ORG_ID}/api_keys", json={"key_name": "all"}).json()
    one = api.post(f"organizations/{ORG_ID}/api_keys",
                   json={"key_name": "one", "project_id": p}).json()
    assert "project_id" not in whole and one["project_id"] == p
    listed = api.get(f"organizations/{ORG_ID}/api_keys").json()
    assert [(k["name"], k.get("project_id")) for k in listed] == [("all", None), ("one", p)]
    # organization keys are not the account's: neither listed nor revoked there
    assert {k["name"] for k in api.get("api_keys").json()} == {"personal key"}
    assert api.delete(f"api_keys/{whole['id']}").status_code == 404

    all_client = in_process_client(api.server, api_key=whole["key"])
    one_client = in_process_client(api.server, api_key=one["key"])
    assert {x["id"] for x in all_client.get("projects").json()["projects"]} == {p, q}
    assert [x["id"] for x in one_client.get("projects").json()["projects"]] == [p]
    assert one_client.get(f"projects/{q}").status_code == 404
    assert one_client.get(f"organizations/{ORG_ID}/api_keys").status_code == 403
    # an organization key manages the organization's keys; the use shows as last_used_at
    used = {k["id"]: k.get("last_used_at") for k in
            all_client.get(f"organizations/{ORG_ID}/api_keys").json()}
    assert used[whole["id"]] is not None and used[one["id"]] is not None

    r = api.post(f"organizations/{ORG_ID}/api_keys", json={"key_name": "x", "project_id": "nope"})
    assert r.status_code == 404 and r.json()["message"] == "project 'nope' not found"
    revoked = api.delete(f"organizations/{ORG_ID}/api_keys/{one['id']}").json()
    assert revoked["revoked"] is True and revoked["project_id"] == p
    assert one_client.get("projects").status_code == 401
    assert api.delete(f"organizations/{ORG_ID}/api_keys/{one['id']}").status_code == 404
    assert [k["name"] for k in api.get(f"organizations/{ORG_ID}/api_keys").json()] == ["all"]


def test_project_permissions(api: SimClient) -> None:
    p = make_project(api, "shared")["project"]["id"]
    base = f"projects/{p}/permissions"
    assert api.get(base).json() == {"project_permissions": []}
    bob = api.post(base, json={"email": "bob@example.com"}).json()
    assert bob["granted_to_email"] == "bob@example.com" and "revoked_at" not in bob
    assert api.post(base, json={"email": "BOB@example.com"}).json() == bob  # the same grant
    ann = api.post(base, json={"email": "ann@example.com"}).json()
    assert ann["id"] != bob["id"]
    assert api.get(base).json()["project_permissions"] == [bob, ann]

    before = digest(api.server.cp)
    for bad in ("bob", "", "a b@example.com", "x@" + "e" * 260 + ".com"):
        r = api.post(base, json={"email": bad})
        assert r.status_code == 400 and r.json()["message"].startswith("email: "), bad
    assert api.delete(f"{base}/no-such").status_code == 404
    assert digest(api.server.cp) == before  # refusals change nothing

    api.advance(30)
    gone = api.delete(f"{base}/{bob['id']}").json()
    assert gone["id"] == bob["id"] and gone["revoked_at"] > gone["granted_at"]
    assert api.get(base).json()["project_permissions"] == [ann]


def test_invitations_and_the_spending_limit(api: SimClient) -> None:
    base = f"organizations/{ORG_ID}"
    assert api.get(f"{base}/invitations").json() == {"invitations": []}
    sent = api.post(f"{base}/invitations", json={"invitations": [
        {"email": "ann@example.com", "role": "member"}]}).json()["invitations"]
    assert [(i["email"], i["role"], i["invited_by"]) for i in sent] == \
        [("ann@example.com", "member", USER_ID)]
    assert api.get(f"{base}/invitations").json()["invitations"] == sent
    before = digest(api.server.cp)
    for bad in ({"email": "ann", "role": "member"}, {"email": "b@example.com", "role": "owner"}):
        assert api.post(f"{base}/invitations", json={"invitations": [bad]}).status_code == 400
    limit = f"{base}/billing/spending_limit"
    assert api.put(limit, json={"spending_limit_cents": 0}).status_code == 400  # positive only
    assert digest(api.server.cp) == before
    assert api.get(limit).json() == {"spending_limit_cents": None}
    assert api.put(limit, json={"spending_limit_cents": 5000}).json() == \
        {"spending_limit_cents": 5000}
    assert api.get(limit).json() == {"spending_limit_cents": 5000}
    assert api.delete(limit).json() == {}
    assert api.get(limit).json() == {"spending_limit_cents": None}
    assert api.get(f"{base}/vpc/vpc_endpoints").json() == {"endpoints": []}


def test_moving_projects_into_the_organization(api: SimClient) -> None:
    p = make_project(api, "moved")["project"]["id"]
    transfer = {"destination_org_id": ORG_ID, "project_ids": [p]}
    assert api.post("users/me/projects/transfer", json=transfer).json() == {}
    assert api.get(f"projects/{p}").json()["project"]["org_id"] == ORG_ID
    r = api.post("users/me/projects/transfer", json={**transfer, "project_ids": ["nope"]})
    assert r.status_code == 404
    r = api.post("users/me/projects/transfer", json={**transfer, "destination_org_id": "org-9"})
    assert r.status_code == 404
    org = in_process_client(api.server, api_key=api.server.keys.organization().secret)
    assert org.post("users/me/projects/transfer", json=transfer).status_code == 403

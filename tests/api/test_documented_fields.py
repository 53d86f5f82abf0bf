"""Request fields of the official document that the simulator keeps without modelling them.

Each is accepted, checked for shape, kept and answered back where the
document's answer has a place for it; a field the document lacks, at any
depth, is still refused with a 400 naming it, and a refusal changes nothing.
Also the shapes the document requires of answers (`annotation(s)`,
`applications`, `integrations`, a cursor on every page), the 405 `Allow`
header and the 200 of deleting an OAuth provider.
"""

from __future__ import annotations

from typing import Any

import pytest

from sim.api import SimClient, in_process_client
from sim.api.documented import ShapeError, check, documented_fields
from tests.api.conftest import make_project

SETTINGS = {"allowed_ips": {"ips": ["203.0.113.0/24"], "protected_branches_only": True},
            "quota": {"active_time_seconds": 3600, "compute_time_seconds": 7200},
            "enable_logical_replication": True, "audit_log_level": "base"}


def refused(api: SimClient, method: str, path: str, body: Any, field: str, reason: str) -> None:
    before = api.get("projects").json()
    r = api.request(method, path, json=body)
    assert r.status_code == 400, r.text
    assert r.json()["message"].startswith(f"{field}: {reason}"), r.json()
    assert api.get("projects").json() == before  # nothing changed


# ---- projects ----------------------------------------------------------------------------


def test_project_settings_and_store_passwords_are_kept_and_answered(api: SimClient):
    made = make_project(api, settings=SETTINGS, store_passwords=False,
                        default_endpoint_settings={"suspend_timeout_seconds": 600})
    project = made["project"]
    assert (project["settings"], project["store_passwords"]) == (SETTINGS, False)
    assert project["default_endpoint_settings"] == {"suspend_timeout_seconds": 600}
    assert made["endpoints"][0]["suspend_timeout_seconds"] == 600  # modelled as well
    got = api.get(f"projects/{project['id']}").json()["project"]
    assert (got["settings"], got["store_passwords"]) == (SETTINGS, False)
    [listed] = api.get("projects").json()["projects"]
    assert listed["settings"] == SETTINGS


def test_patching_settings_merges_them_and_keeps_default_endpoint_settings(api: SimClient):
    pid = make_project(api, settings={"hipaa": False, "audit_log_level": "base"})["project"]["id"]
    r = api.patch(f"projects/{pid}", json={"project": {
        "settings": {"audit_log_level": "full"},
        "default_endpoint_settings": {"autoscaling_limit_max_cu": 2}}})
    assert r.status_code == 200, r.text
    assert r.json()["project"]["settings"] == {"hipaa": False, "audit_log_level": "full"}
    got = api.get(f"projects/{pid}").json()["project"]
    assert got["default_endpoint_settings"] == {"autoscaling_limit_max_cu": 2}


def test_the_default_branch_gets_the_role_and_database_named(api: SimClient):
    made = make_project(api, branch={"name": "trunk", "database_name": "shop"})
    # as the real API: the role defaults to <database>_owner
    assert [r["name"] for r in made["roles"]] == ["shop_owner"]
    assert [(d["name"], d["owner_name"]) for d in made["databases"]] == [("shop", "shop_owner")]
    assert "/shop?" in made["connection_uris"][0]["connection_uri"]


def test_postgres_18(api: SimClient):
    assert make_project(api, pg_version=18)["project"]["pg_version"] == 18


# ---- branches ----------------------------------------------------------------------------


def test_branch_fields_are_kept_and_answered(api: SimClient):
    pid = make_project(api)["project"]["id"]
    sent = {"name": "preview", "expires_at": "2026-02-01T00:00:00Z", "init_source": "schema-only",
            "parent_timestamp": "2026-01-05T00:00:00Z", "parent_lsn": "0/16B3748",
            "protected": True}
    r = api.post(f"projects/{pid}/branches",
                 json={"branch": sent, "annotation_value": {"ticket": "T-1"}})
    assert r.status_code == 201, r.text
    made = r.json()
    assert {k: made["branch"][k] for k in sent} == sent
    assert made["roles"] and made["databases"]  # the document requires both
    bid = made["branch"]["id"]
    got = api.get(f"projects/{pid}/branches/{bid}").json()
    assert got["annotation"]["value"] == {"ticket": "T-1"}
    assert got["annotation"]["object"] == {"type": "console/branch", "id": bid}
    listed = api.get(f"projects/{pid}/branches").json()
    assert set(listed["annotations"]) == {b["id"] for b in listed["branches"]}
    assert listed["annotations"][bid]["value"] == {"ticket": "T-1"}


# ---- computes ----------------------------------------------------------------------------


def test_endpoint_preload_libraries_are_kept_in_settings(api: SimClient):
    made = make_project(api)
    pid, bid = made["project"]["id"], made["branch"]["id"]
    libraries = {"use_defaults": False, "enabled_libraries": ["timescaledb"]}
    r = api.post(f"projects/{pid}/endpoints", json={"endpoint": {
        "branch_id": bid, "type": "read_only",
        "settings": {"pg_settings": {"work_mem": "64MB"}, "preload_libraries": libraries}}})
    assert r.status_code == 201, r.text
    settings = r.json()["endpoint"]["settings"]
    assert settings == {"pg_settings": {"work_mem": "64MB"}, "preload_libraries": libraries}
    eid = r.json()["endpoint"]["id"]
    api.advance(60)  # its start has finished: the compute takes changes
    r = api.patch(f"projects/{pid}/endpoints/{eid}", json={"endpoint": {
        "settings": {"preload_libraries": {"use_defaults": True}}}})
    assert r.status_code == 200, r.text
    assert r.json()["endpoint"]["settings"]["preload_libraries"] == {"use_defaults": True}


# ---- refusals ----------------------------------------------------------------------------


@pytest.mark.parametrize("body, field, reason", [
    ({"project": {"colour": "red"}}, "project.colour", "unknown field"),
    ({"project": {"settings": {"colour": "red"}}}, "project.settings.colour", "unknown field"),
    ({"project": {"settings": {"quota": {"cpu": 1}}}}, "project.settings.quota.cpu",
     "unknown field"),
    ({"project": {"settings": {"hipaa": "yes"}}}, "project.settings.hipaa", "must be a boolean"),
    ({"project": {"settings": {"audit_log_level": "loud"}}}, "project.settings.audit_log_level",
     "must be one of base, extended, full"),
    ({"project": {"settings": {"quota": {"active_time_seconds": -1}}}},
     "project.settings.quota.active_time_seconds", "must be at least 0"),
    ({"project": {"store_passwords": "true"}}, "project.store_passwords", "must be a boolean"),
    # role_name and annotation_value are modelled fields: pydantic words their refusals
    ({"project": {"branch": {"role_name": 7}}}, "project.branch.role_name",
     "Input should be a valid string"),
    ({"project": {"settings": {"allowed_ips": {"ips": "10.0.0.1"}}}},
     "project.settings.allowed_ips.ips", "must be an array"),
])
def test_fields_the_document_lacks_or_bad_shapes_are_refused(api: SimClient, body, field, reason):
    refused(api, "POST", "projects", body, field, reason)


def test_a_branch_field_in_the_wrong_form_is_refused(api: SimClient):
    pid = make_project(api)["project"]["id"]
    before = api.get(f"projects/{pid}/branches").json()
    for body, field, reason in [
        ({"branch": {"expires_at": "tomorrow"}}, "branch.expires_at", "must be an RFC 3339"),
        ({"branch": {"colour": "red"}}, "branch.colour", "unknown field"),
        ({"annotation_value": {"ticket": 1}}, "annotation_value.ticket",
         "Input should be a valid string"),
    ]:
        r = api.post(f"projects/{pid}/branches", json=body)
        assert r.status_code == 400 and r.json()["message"].startswith(f"{field}: {reason}"), r.text
    assert api.get(f"projects/{pid}/branches").json() == before


def test_the_servers_own_document_lists_the_documented_fields(api: SimClient):
    schemas = api.get(api.base_url.join("/openapi.json")).json()["components"]["schemas"]
    settings = schemas["ProjectCreate"]["properties"]["settings"]
    assert settings["additionalProperties"] is False  # closed, as the server checks it
    assert settings["properties"]["audit_log_level"]["enum"] == ["base", "extended", "full"]
    assert "preload_libraries" in schemas["EndpointSettings"]["properties"]
    assert schemas["EndpointSettings"]["additionalProperties"] is False


def test_shape_checks():
    shape = documented_fields("ProjectCreate")["settings"]
    check({"maintenance_window": {"weekdays": [1, 2], "start_time": "01:00",
                                  "end_time": "02:00"}}, shape, "settings")
    with pytest.raises(ShapeError) as bad:
        check({"maintenance_window": {"weekdays": [True], "start_time": "01:00",
                                      "end_time": "02:00"}}, shape, "settings")
    assert bad.value.path == "settings.maintenance_window.weekdays.0"  # bool is not an integer
    # a partial window would be answered back as the project's, breaking the answer's schema
    with pytest.raises(ShapeError) as bad:
        check({"maintenance_window": {"weekdays": [1]}}, shape, "settings")
    assert (bad.value.path, bad.value.reason) == ("settings.maintenance_window.start_time",
                                                  "required")
    assert documented_fields("NoSuchModel") == {}


# ---- answers the document requires -------------------------------------------------------


def test_project_lists_carry_applications_integrations_and_a_cursor(api: SimClient):
    empty = api.get("projects").json()
    assert empty["projects"] == [] and empty["pagination"]["cursor"]
    assert (empty["applications"], empty["integrations"]) == ({}, {})
    again = api.get("projects", params={"cursor": empty["pagination"]["cursor"]}).json()
    assert again["projects"] == []
    pid = make_project(api)["project"]["id"]
    listed = api.get("projects").json()
    assert (listed["applications"], listed["integrations"]) == ({pid: []}, {pid: []})
    assert listed["pagination"]["cursor"] == pid


@pytest.mark.parametrize("method, path, allowed", [
    ("PUT", "projects/p-1", "DELETE, GET, PATCH"),
    ("PUT", "projects", "GET, POST"),
    ("POST", "projects/p-1/endpoints/ep-1", "DELETE, GET, PATCH"),
    ("GET", "projects/p-1/endpoints/ep-1/restart", "POST"),
    ("PUT", "projects/p-1/auth/domains", "DELETE, GET, POST"),
])
def test_a_405_names_every_method_of_the_path(api: SimClient, method, path, allowed):
    r = api.request(method, path)
    assert (r.status_code, r.headers["allow"]) == (405, allowed)
    assert r.json()["code"] == "METHOD_NOT_ALLOWED"


def test_oauth_providers_take_vercel_and_a_microsoft_tenant(api: SimClient):
    made = make_project(api)
    pid, bid = made["project"]["id"], made["branch"]["id"]
    r = api.post("projects/auth/create",
                 json={"auth_provider": "stack", "project_id": pid, "branch_id": bid})
    assert r.status_code == 201, r.text
    base = f"projects/{pid}/auth/oauth_providers"
    assert api.post(base, json={"id": "vercel"}).json() == {"id": "vercel", "type": "shared"}
    r = api.post(base, json={"id": "microsoft", "client_id": "c", "client_secret": "s",
                             "microsoft_tenant_id": "tenant-1"})
    assert r.status_code == 200, r.text
    r = api.patch(f"{base}/microsoft", json={"microsoft_tenant_id": "tenant-2"})
    assert r.status_code == 200, r.text
    r = api.delete(f"{base}/vercel")
    assert (r.status_code, r.json()) == (200, {})
    assert [p["id"] for p in api.get(base).json()["providers"]] == ["microsoft"]


def test_kept_fields_survive_a_restart_from_the_state_file(tmp_path):
    # the state file holds requests, and replays them through the same routes
    from sim.api.restore import open_server

    path = tmp_path / "world.db"
    server, _ = open_server(path)
    key = server.add_personal_key()
    server.keep_key(key)
    with in_process_client(server, api_key=key.secret) as api:
        made = make_project(api, settings=SETTINGS, store_passwords=False,
                            branch={"role_name": "sally"})
        pid = made["project"]["id"]
        r = api.post(f"projects/{pid}/branches",
                     json={"branch": {"protected": True}, "annotation_value": {"a": "b"}})
        assert r.status_code == 201, r.text
        before = (api.get(f"projects/{pid}").json(), api.get(f"projects/{pid}/branches").json())
    server.journal.close()  # type: ignore[union-attr]

    again, _ = open_server(path)
    with in_process_client(again, api_key=key.secret) as api:
        after = (api.get(f"projects/{pid}").json(), api.get(f"projects/{pid}/branches").json())
    again.journal.close()  # type: ignore[union-attr]
    assert after == before
    assert after[0]["project"]["settings"] == SETTINGS

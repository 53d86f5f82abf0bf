"""The synced users table as real SQL: read-only queries, one database per branch."""

import threading

import pytest

from sim.engine import ControlPlane
from tests.engine.support import auth_refused as refused


@pytest.fixture
def cp():
    return ControlPlane(seed=5)


@pytest.fixture
def pid(cp):
    created = cp.create_project("shop", with_compute=False)
    cp.auth.create_integration(created.project.id, created.branch.id)
    cp.auth.create_user(created.project.id, "stack", "ann@example.com", "Ann")
    cp.advance(cp.config.user_sync_delay_s + 1)
    return created.project.id




def test_select_with_columns_and_defaults(cp, pid):
    rows = cp.auth.query(pid, "SELECT id, email, name, created_at FROM svc_auth.users_sync;")
    assert [(r["email"], r["name"]) for r in rows] == [("ann@example.com", "Ann")]
    cols = cp.auth.query(pid, "SELECT * FROM svc_auth.users_sync")[0]
    assert set(cols) == {"raw_json", "id", "name", "email", "created_at", "updated_at",
                         "deleted_at"}
    assert cp.auth.query(pid, "-- users\n  with u as (select email from svc_auth.users_sync) "
                              "select count(*) as n from u") == [{"n": 1}]


@pytest.mark.parametrize("sql", [
    "DELETE FROM svc_auth.users_sync",
    "INSERT INTO svc_auth.users_sync (raw_json, id) VALUES ('{}', 'x')",
    "DETACH DATABASE svc_auth",
    "ATTACH DATABASE ':memory:' AS other",
    "PRAGMA query_only = OFF",
    "DROP TABLE svc_auth.users_sync",
    "SELECT 1; DELETE FROM svc_auth.users_sync",
    "SELECT 1; SELECT 2",
    "SELECT 'unterminated",
    "SELECT * FROM pragma_table_info('users_sync')",
    "WITH x AS (SELECT 1) DELETE FROM svc_auth.users_sync",
    "SELECT * FROM svc_auth.no_such_table",
    "",
    None,
])
def test_only_a_single_select_is_allowed(cp, pid, sql):
    refused(cp, 400, "sql", cp.auth.query, pid, sql)
    assert len(cp.auth.query(pid, "SELECT id FROM svc_auth.users_sync")) == 1


def test_a_runaway_query_is_stopped(cp, pid):
    err = refused(cp, 400, "sql", cp.auth.query, pid,
                  "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) "
                  "SELECT count(*) FROM r")
    assert "too long" in err.message


def test_database_and_branch_lookup(cp, pid):
    branch_id = cp.auth.integration(pid, "stack").branch_id
    assert cp.auth.query(pid, "SELECT 1 AS one", branch_id=branch_id,
                         database_name="svcdb") == [{"one": 1}]
    refused(cp, 404, "database_name", cp.auth.query, pid, "SELECT 1", database_name="other")
    refused(cp, 404, "branch_id", cp.auth.query, pid, "SELECT 1", branch_id="br-none")
    refused(cp, 404, "project_id", cp.auth.query, "no-such-project", "SELECT 1")
    fresh = cp.create_project("fresh", with_compute=False).project.id
    refused(cp, 404, "database_name", cp.auth.query, fresh, "SELECT 1")


def test_queries_from_other_threads(cp, pid):
    results = []
    threads = [threading.Thread(target=lambda: results.append(
        cp.auth.query(pid, "SELECT email FROM svc_auth.users_sync"))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [[{"email": "ann@example.com"}]] * 4


def test_file_backed_databases(tmp_path):
    cp = ControlPlane(seed=5)
    cp.auth.data_dir = tmp_path
    created = cp.create_project("shop", with_compute=False)
    pid = created.project.id
    cp.auth.create_integration(pid, created.branch.id)
    cp.auth.create_user(pid, "stack", "ann@example.com")
    cp.advance(cp.config.user_sync_delay_s + 1)
    assert cp.auth.query(pid, "SELECT email FROM svc_auth.users_sync") == [
        {"email": "ann@example.com"}]
    assert (tmp_path / created.branch.id / "svcdb.sqlite").exists()
    assert (tmp_path / created.branch.id / "svcdb.svc_auth.sqlite").exists()
    cp.delete_project(pid)

"""Roles and databases of a branch: defaults, copies, apply_config on the computes, locking."""

from __future__ import annotations

import re

import pytest

from sim.engine.model import Branch
from sim.rules import roles as rules
from tests.engine.support import COLD, OP, actions, control_plane, refused, running_compute

PASSWORD = re.compile(r"^npg_[A-Za-z0-9]{12}$")


def settled(cp, name: str = "p"):
    """A project whose primary compute has started: its lane is free."""
    project, compute = running_compute(cp)
    return project, cp.branches[project.default_branch_id], compute


def test_a_new_project_has_an_owner_role_and_a_database_it_owns() -> None:
    cp = control_plane()
    made = cp.create_project("p")
    branch = made.branch
    assert list(branch.roles) == [rules.DEFAULT_ROLE]
    db = branch.databases[rules.DEFAULT_DATABASE]
    assert (db.owner_name, db.branch_id) == (rules.DEFAULT_ROLE, branch.id)
    assert PASSWORD.match(cp.password_of(branch.roles[rules.DEFAULT_ROLE]))


def test_the_project_request_names_the_role_and_database() -> None:
    cp = control_plane()
    branch = cp.create_project("p", role_name="app", database_name="shop").branch
    assert list(branch.roles) == ["app"] and branch.databases["shop"].owner_name == "app"
    alone = cp.create_project("q", database_name="blog").branch  # as the real API
    assert list(alone.roles) == ["blog_owner"] and alone.databases["blog"].owner_name == \
        "blog_owner"


@pytest.mark.parametrize("field,value", [("role_name", "pg_admin"), ("role_name", ""),
                                         ("database_name", "template0"),
                                         ("database_name", ""),
                                         ("database_name", "d" * 64),
                                         ("database_name", "d" * 60)])  # d..d_owner: too long
def test_bad_names_at_project_creation_are_refused(field: str, value: str) -> None:
    cp = control_plane()
    err = refused(cp, 400, cp.create_project, "p", **{field: value})
    assert err.field == f"project.branch.{field}"
    assert not cp.projects


def test_passwords_depend_on_the_seed_not_on_the_order_of_calls() -> None:
    def passwords(seed: int, reveal_first: bool) -> list[str]:
        cp = control_plane(seed=seed)
        a = cp.create_project("a").branch
        if reveal_first:
            cp.password_of(a.roles[rules.DEFAULT_ROLE])
        b = cp.create_project("b").branch
        return [cp.password_of(x.roles[rules.DEFAULT_ROLE]) for x in (a, b)]

    first = passwords(7, False)
    assert first == passwords(7, True)
    assert len(set(first)) == 2
    assert passwords(8, False) != first


def test_a_child_branch_copies_roles_databases_and_passwords() -> None:
    cp = control_plane()
    project, main, _ = settled(cp)
    cp.create_role(project.id, main.id, "alice")
    cp.advance(OP)
    child = cp.create_branch(project.id, "dev").branch
    assert list(child.roles) == [rules.DEFAULT_ROLE, "alice"]
    assert list(child.databases) == [rules.DEFAULT_DATABASE]
    for name in child.roles:
        assert cp.password_of(child.roles[name]) == cp.password_of(main.roles[name])
    assert child.databases[rules.DEFAULT_DATABASE].id != main.databases[rules.DEFAULT_DATABASE].id


def test_a_protected_parent_gives_its_children_new_passwords() -> None:
    cp = control_plane()
    project, main, _ = settled(cp)
    cp.update_branch(project.id, main.id, protected=True)
    child = cp.create_branch(project.id, "dev").branch
    role = rules.DEFAULT_ROLE
    assert cp.password_of(child.roles[role]) != cp.password_of(main.roles[role])


def test_each_change_is_one_apply_config_per_compute_of_the_branch() -> None:
    cp = control_plane()
    project, main, primary = settled(cp)
    replica, _ = cp.create_compute(project.id, main.id, "read_only")
    cp.advance(OP + COLD + 0.5)
    role, ops = cp.create_role(project.id, main.id, "alice")
    assert actions(ops) == ["apply_config", "apply_config"]
    assert {o.endpoint_id for o in ops} == {primary.id, replica.id}
    assert all(o.branch_id == main.id for o in ops)
    assert "alice" in main.roles  # visible at once, as a console edit
    cp.advance(OP + 0.5)
    assert all(o.status == "finished" for o in ops)


def test_a_branch_without_a_compute_changes_without_an_operation() -> None:
    cp = control_plane()
    made = cp.create_project("p", with_compute=False)
    role, ops = cp.create_role(made.project.id, made.branch.id, "alice")
    assert ops == [] and "alice" in made.branch.roles


def test_a_change_while_a_compute_is_busy_is_423_and_changes_nothing() -> None:
    cp = control_plane()
    made = cp.create_project("p")  # its start_compute has not ended
    project, branch = made.project, made.branch
    refused(cp, 423, cp.create_role, project.id, branch.id, "alice")
    refused(cp, 423, cp.reset_password, project.id, branch.id, rules.DEFAULT_ROLE)
    refused(cp, 423, cp.create_database, project.id, branch.id, "shop", rules.DEFAULT_ROLE)
    refused(cp, 423, cp.delete_database, project.id, branch.id, rules.DEFAULT_DATABASE)
    cp.advance(OP + COLD + 0.5)
    _, ops = cp.create_role(project.id, branch.id, "alice")
    assert actions(ops) == ["apply_config"]
    refused(cp, 423, cp.delete_role, project.id, branch.id, "alice")  # its apply_config runs


def test_refusals_name_the_field() -> None:
    cp = control_plane()
    project, main, _ = settled(cp)
    p, b = project.id, main.id
    assert refused(cp, 409, cp.create_role, p, b, rules.DEFAULT_ROLE).field == "role.name"
    assert refused(cp, 400, cp.create_role, p, b, "pg_monitor").field == "role.name"
    assert refused(cp, 400, cp.create_role, p, b, "r" * 64).field == "role.name"
    assert refused(cp, 404, cp.get_role, p, b, "nobody").field == "role_name"
    assert refused(cp, 400, cp.create_database, p, b, "shop", "nobody").field == \
        "database.owner_name"
    assert refused(cp, 409, cp.create_database, p, b, rules.DEFAULT_DATABASE,
                   rules.DEFAULT_ROLE).field == "database.name"
    assert refused(cp, 400, cp.create_database, p, b, "postgres",
                   rules.DEFAULT_ROLE).field == "database.name"
    err = refused(cp, 409, cp.delete_role, p, b, rules.DEFAULT_ROLE)  # it owns neondb
    assert "neondb" in err.message
    assert refused(cp, 404, cp.update_database, p, b, "nope", name="x").field == "database_name"


def test_reset_gives_a_new_password_that_reveal_shows() -> None:
    cp = control_plane()
    project, main, _ = settled(cp)
    before = cp.reveal_password(project.id, main.id, rules.DEFAULT_ROLE)
    role, ops = cp.reset_password(project.id, main.id, rules.DEFAULT_ROLE)
    after = cp.reveal_password(project.id, main.id, rules.DEFAULT_ROLE)
    assert before != after and PASSWORD.match(after) and actions(ops) == ["apply_config"]
    assert cp.password_of(role) == after


def test_database_rename_owner_change_and_delete() -> None:
    cp = control_plane()
    project, main, _ = settled(cp)
    p, b = project.id, main.id
    cp.create_role(p, b, "alice")
    cp.advance(OP + 0.5)
    db, ops = cp.update_database(p, b, rules.DEFAULT_DATABASE, name="shop", owner_name="alice")
    assert (db.name, db.owner_name) == ("shop", "alice") and list(main.databases) == ["shop"]
    assert actions(ops) == ["apply_config"]
    cp.advance(OP + 0.5)
    assert cp.update_database(p, b, "shop", name="shop")[1] == []  # nothing changed
    refused(cp, 409, cp.delete_role, p, b, "alice")
    cp.delete_database(p, b, "shop")
    cp.advance(OP + 0.5)
    cp.delete_role(p, b, "alice")
    assert list(main.roles) == [rules.DEFAULT_ROLE] and not main.databases


def test_connection_uri_uses_the_branch_compute_role_and_database() -> None:
    cp = control_plane()
    project, main, primary = settled(cp)
    password = cp.password_of(main.roles[rules.DEFAULT_ROLE])
    direct = cp.connection_uri(project.id)
    assert direct == (f"postgresql://neondb_owner:{password}@{primary.host}/neondb"
                      "?sslmode=require")
    pooled = cp.connection_uri(project.id, pooled=True)
    assert pooled.split("@")[1].startswith(f"{primary.id}-pooler.")
    cp.create_role(project.id, main.id, "alice")
    err = refused(cp, 409, cp.connection_uri, project.id)  # two roles: name one
    assert err.field == "role_name"
    assert "alice:" in cp.connection_uri(project.id, role_name="alice")


def test_connection_uri_of_a_branch_without_a_compute_is_404() -> None:
    cp = control_plane()
    made = cp.create_project("p", with_compute=False)
    assert refused(cp, 404, cp.connection_uri, made.project.id).field == "endpoint_id"


# ---- branch edits ------------------------------------------------------------------------------


def test_rename_protect_and_the_protected_branch_cannot_be_deleted() -> None:
    cp = control_plane()
    project, main, _ = settled(cp)
    dev = cp.create_branch(project.id, "dev").branch
    assert refused(cp, 409, cp.update_branch, project.id, dev.id, name="main").field == \
        "branch.name"
    cp.update_branch(project.id, dev.id, name="feature", protected=True)
    assert (dev.name, dev.protected) == ("feature", True)
    refused(cp, 409, cp.delete_branch, project.id, dev.id)
    cp.update_branch(project.id, dev.id, protected=False)
    cp.delete_branch(project.id, dev.id)


def test_set_default_moves_the_flag() -> None:
    cp = control_plane()
    project, main, _ = settled(cp)
    dev = cp.create_branch(project.id, "dev").branch
    branch, ops = cp.set_default_branch(project.id, dev.id)
    assert ops == [] and branch is dev
    assert (dev.default, main.default, project.default_branch_id) == (True, False, dev.id)
    refused(cp, 409, cp.delete_branch, project.id, dev.id)  # now the default


def names(items: list[Branch]) -> list[str]:
    return [b.name for b in items]


def test_branch_pages_cover_every_branch_once_in_order() -> None:
    cp = control_plane()
    project, _, _ = settled(cp)
    for i in range(7):
        cp.create_branch(project.id, f"b{i}")
        cp.advance(1)
    everything, cursor = cp.page_branches(project.id, sort_by="name", sort_order="asc")
    assert cursor is None and names(everything) == sorted(names(everything))
    seen: list[Branch] = []
    cursor = None
    for _ in range(10):
        page, cursor = cp.page_branches(project.id, sort_by="name", sort_order="asc", limit=3,
                                        cursor=cursor)
        seen += page
        if cursor is None:
            break
    assert names(seen) == names(everything)
    newest, _ = cp.page_branches(project.id, sort_by="created_at", limit=2)
    assert names(newest) == ["b6", "b5"]
    assert names(cp.page_branches(project.id, search="B3")[0]) == ["b3"]
    assert refused(cp, 400, cp.page_branches, project.id, cursor="br-gone").field == "cursor"
    assert refused(cp, 400, cp.page_branches, project.id, sort_by="size").field == "sort_by"


def test_annotation_is_kept_and_checked() -> None:
    cp = control_plane()
    project, _, _ = settled(cp)
    dev = cp.create_branch(project.id, "dev", annotation={"ci": "yes"}).branch
    assert dev.annotation == {"ci": "yes"}
    too_many = {f"k{i}": "v" for i in range(51)}
    assert refused(cp, 400, cp.create_branch, project.id, "x",
                   annotation=too_many).field == "annotation_value"

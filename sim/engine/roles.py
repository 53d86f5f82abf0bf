"""Roles and databases of a branch, and the connection URIs built from them.

Every change of a branch's roles or databases is applied to the Postgres of
each of its computes: one apply_config operation per compute (the action that
creates, deletes and updates Postgres users and databases).
A change is refused with 423 while any of those computes has an operation
that has not ended, as every other change of a compute is; a branch without
a compute changes at once, with no operation. The change is visible at once
(a console edit takes effect immediately); the operations only say when the
computes have it.

Passwords are secrets: drawn from a seeded stream named after the role, the
branch and the instant (so the order of calls does not matter, and showing one
changes nothing), shown only where the real API shows them (role creation and
reset, reveal_password, connection URIs), never in a repr or a log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sim.engine.clock import to_us
from sim.engine.model import Branch, Compute, Database, Operation, Project, Role
from sim.rules import roles as rules
from sim.rules.errors import conflict, invalid, not_found
from sim.rules.operations import Action

if TYPE_CHECKING:
    from sim.engine.control_plane import ControlPlane


class RoleVerbs:
    # -- setting up a branch's roles ------------------------------------------
    def seed_roles(self: ControlPlane, branch: Branch, role_name: str, database_name: str) -> None:
        """A project's default branch: one owner role and one database it owns."""
        self._new_role(branch, role_name)
        self._add_database(branch, database_name, role_name)

    def _new_role(self: ControlPlane, branch: Branch, name: str) -> Role:
        now = self.env.now
        role = branch.roles[name] = Role(branch.id, name, now, now,
                                         secret=self._secret_name(branch, name, 0))
        return role

    def _secret_name(self: ControlPlane, branch: Branch, role_name: str, resets: int) -> str:
        project = self.projects[branch.project_id]
        return f"passwords/{project.key}/{branch.id}/{role_name}@{to_us(self.env.now)}#{resets}"

    def copy_roles(self: ControlPlane, parent: Branch, child: Branch) -> None:
        """A child branch starts with its parent's roles and databases. A protected
        parent keeps its passwords to itself: the child's roles get new ones."""
        now = self.env.now
        for role in parent.roles.values():
            secret = self._secret_name(child, role.name, 0) if parent.protected else role.secret
            child.roles[role.name] = Role(child.id, role.name, now, now, secret=secret,
                                          protected=role.protected)
        for db in parent.databases.values():
            self._add_database(child, db.name, db.owner_name)

    def _add_database(self: ControlPlane, branch: Branch, name: str, owner: str) -> Database:
        project = self.projects[branch.project_id]
        project.last_database_id += 1
        now = self.env.now
        db = Database(project.last_database_id, branch.id, name, owner, now, now)
        branch.databases[name] = db
        return db

    def password_of(self: ControlPlane, role: Role) -> str:
        return rules.new_password(self.streams.fresh(role.secret))

    # -- applying a change to the branch's computes ---------------------------------
    def _branch_computes(self: ControlPlane, branch: Branch) -> list[Compute]:
        return [self.computes[i] for i in branch.computes]

    def _check_branch_unlocked(self: ControlPlane, branch: Branch) -> None:
        for c in self._branch_computes(branch):
            self._check_unlocked(c)

    def _apply_config(self: ControlPlane, branch: Branch) -> list[Operation]:
        return [self.submit_compute_op(c, Action.APPLY_CONFIG)
                for c in self._branch_computes(branch)]

    # -- roles -------------------------------------------------------------------------
    def list_roles(self: ControlPlane, project_id: str, branch_id: str) -> list[Role]:
        return list(self.get_branch(project_id, branch_id).roles.values())

    def get_role(self: ControlPlane, project_id: str, branch_id: str, role_name: str) -> Role:
        role = self.get_branch(project_id, branch_id).roles.get(role_name)
        if role is None:
            raise not_found("role", role_name, "role_name")
        return role

    def create_role(self: ControlPlane, project_id: str, branch_id: str, name: str
                    ) -> tuple[Role, list[Operation]]:
        branch = self.get_branch(project_id, branch_id)
        rules.check_role_name("role.name", name)
        if name in branch.roles:
            raise conflict("role.name", f"branch {branch.id} already has a role named {name!r}")
        self._check_branch_unlocked(branch)
        role = self._new_role(branch, name)
        return role, self._apply_config(branch)

    def delete_role(self: ControlPlane, project_id: str, branch_id: str, role_name: str
                    ) -> tuple[Role, list[Operation]]:
        role = self.get_role(project_id, branch_id, role_name)
        branch = self.branches[role.branch_id]
        if role.protected:
            raise conflict("role_name", f"role {role_name!r} is protected")
        owned = [db.name for db in branch.databases.values() if db.owner_name == role_name]
        if owned:
            raise conflict("role_name", f"role {role_name!r} owns database {owned[0]!r}; "
                                        f"delete the database or give it another owner first")
        self._check_branch_unlocked(branch)
        del branch.roles[role_name]
        return role, self._apply_config(branch)

    def reveal_password(self: ControlPlane, project_id: str, branch_id: str, role_name: str
                        ) -> str:
        return self.password_of(self.get_role(project_id, branch_id, role_name))

    def reset_password(self: ControlPlane, project_id: str, branch_id: str, role_name: str
                       ) -> tuple[Role, list[Operation]]:
        role = self.get_role(project_id, branch_id, role_name)
        branch = self.branches[role.branch_id]
        self._check_branch_unlocked(branch)
        role.resets += 1
        role.secret = self._secret_name(branch, role.name, role.resets)
        role.updated_at = self.env.now
        return role, self._apply_config(branch)

    # -- databases -----------------------------------------------------------------------
    def list_databases(self: ControlPlane, project_id: str, branch_id: str) -> list[Database]:
        return list(self.get_branch(project_id, branch_id).databases.values())

    def get_database(self: ControlPlane, project_id: str, branch_id: str, database_name: str
                     ) -> Database:
        db = self.get_branch(project_id, branch_id).databases.get(database_name)
        if db is None:
            raise not_found("database", database_name, "database_name")
        return db

    def _check_owner(self: ControlPlane, branch: Branch, owner: str) -> None:
        if owner not in branch.roles:
            raise invalid("database.owner_name", f"branch {branch.id} has no role named {owner!r}")

    def create_database(self: ControlPlane, project_id: str, branch_id: str, name: str,
                        owner_name: str) -> tuple[Database, list[Operation]]:
        branch = self.get_branch(project_id, branch_id)
        rules.check_database_name("database.name", name)
        rules.check_name("database.owner_name", owner_name)
        if name in branch.databases:
            raise conflict("database.name",
                           f"branch {branch.id} already has a database named {name!r}")
        self._check_owner(branch, owner_name)
        self._check_branch_unlocked(branch)
        db = self._add_database(branch, name, owner_name)
        return db, self._apply_config(branch)

    def update_database(self: ControlPlane, project_id: str, branch_id: str, database_name: str,
                        *, name: str | None = None, owner_name: str | None = None
                        ) -> tuple[Database, list[Operation]]:
        db = self.get_database(project_id, branch_id, database_name)
        branch = self.branches[db.branch_id]
        if name is not None:
            rules.check_database_name("database.name", name)
            if name != db.name and name in branch.databases:
                raise conflict("database.name",
                               f"branch {branch.id} already has a database named {name!r}")
        if owner_name is not None:
            rules.check_name("database.owner_name", owner_name)
            self._check_owner(branch, owner_name)
        if (name in (None, db.name)) and (owner_name in (None, db.owner_name)):
            return db, []
        self._check_branch_unlocked(branch)
        if name is not None and name != db.name:
            # keep the branch's creation order: rebuild the map with the new key in place
            branch.databases = {(name if k == db.name else k): v
                                for k, v in branch.databases.items()}
            db.name = name
        if owner_name is not None:
            db.owner_name = owner_name
        db.updated_at = self.env.now
        return db, self._apply_config(branch)

    def delete_database(self: ControlPlane, project_id: str, branch_id: str,
                        database_name: str) -> tuple[Database, list[Operation]]:
        db = self.get_database(project_id, branch_id, database_name)
        branch = self.branches[db.branch_id]
        self._check_branch_unlocked(branch)
        del branch.databases[database_name]
        return db, self._apply_config(branch)

    # -- connection URIs ---------------------------------------------------------------
    def connection_uri(self: ControlPlane, project_id: str, *, branch_id: str | None = None,
                       endpoint_id: str | None = None, database_name: str | None = None,
                       role_name: str | None = None, pooled: bool = False) -> str:
        """The URI of a database through a compute: the branch's read_write compute
        (or the one named), the `-pooler` host when pooled."""
        project = self.get_project(project_id)
        branch = self.get_branch(project_id, branch_id or project.default_branch_id)
        compute = self._uri_compute(project, branch, endpoint_id)
        role = self._only("role", branch.roles, role_name, "role_name", branch)
        db = self._only("database", branch.databases, database_name, "database_name", branch)
        host = rules.pooler_host(compute.host, compute.id) if pooled else compute.host
        return rules.connection_uri(host, role.name, self.password_of(role), db.name)

    def _uri_compute(self: ControlPlane, project: Project, branch: Branch,
                     endpoint_id: str | None) -> Compute:
        if endpoint_id is not None:
            c = self.get_compute(project.id, endpoint_id)
            if c.branch_id != branch.id:
                raise conflict("endpoint_id", f"compute {c.id} is not on branch {branch.id}")
            return c
        computes = self._branch_computes(branch)
        if not computes:
            raise not_found("compute of branch", branch.id, "endpoint_id")
        return next((c for c in computes if c.is_read_write), computes[0])

    @staticmethod
    def _only(kind: str, items: dict, name: str | None, field: str, branch: Branch):
        """The one named, or the branch's only one when none is named."""
        if name is not None:
            found = items.get(name)
            if found is None:
                raise not_found(kind, name, field)
            return found
        if len(items) != 1:
            raise conflict(field, f"branch {branch.id} has {len(items)} {kind}s; name one")
        return next(iter(items.values()))

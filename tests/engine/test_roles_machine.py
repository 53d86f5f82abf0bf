"""Roles and databases of the control plane against a small model of their rules.

The model knows, per branch: the role names, the databases and their owners.
Each step applies one call to both; a call the model refuses must be refused
with exactly the status it predicts, and change nothing. The lock (423) is
predicted from the executor's lanes: its own rule is tested elsewhere.
"""

from __future__ import annotations

from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from sim.rules import roles as rules
from sim.rules.errors import ApiError
from sim.testing.control_plane_machine import state_digest
from tests.engine.support import control_plane

NAMES = st.sampled_from(["alice", "bob", "carol", rules.DEFAULT_ROLE, "pg_bad", ""])
DATABASES = st.sampled_from(["shop", "blog", rules.DEFAULT_DATABASE, "template1", ""])


class RolesMachine(RuleBasedStateMachine):
    @initialize(with_compute=st.booleans())
    def start(self, with_compute: bool) -> None:
        self.cp = control_plane(seed=3)
        made = self.cp.create_project("p", with_compute=with_compute)
        self.project = made.project.id
        self.branch_ids = [made.branch.id]
        self.roles = {made.branch.id: {rules.DEFAULT_ROLE}}
        self.dbs = {made.branch.id: {rules.DEFAULT_DATABASE: rules.DEFAULT_ROLE}}

    # -- helpers ---------------------------------------------------------------------------
    def busy(self, branch_id: str) -> bool:
        branch = self.cp.branches[branch_id]
        return any(self.cp.executor.lane_busy(c) for c in branch.computes)

    def expect(self, status: int | None, call, *args, **kwargs):
        """Call; None: it must succeed; else it must raise `status` and change nothing."""
        note(f"{call.__name__}{args} {kwargs} -> {status}")
        if status is None:
            return call(*args, **kwargs)
        before = state_digest(self.cp)
        try:
            call(*args, **kwargs)
        except ApiError as err:
            assert err.status == status, err
            assert state_digest(self.cp) == before
            return None
        raise AssertionError(f"expected {status}")

    @staticmethod
    def bad_role(name: str) -> bool:
        return not name or name.startswith("pg_")

    # -- rules -----------------------------------------------------------------------------
    @rule(data=st.data(), name=NAMES)
    def create_role(self, data: st.DataObject, name: str) -> None:
        b = data.draw(st.sampled_from(self.branch_ids))
        status = (400 if self.bad_role(name) else 409 if name in self.roles[b]
                  else 423 if self.busy(b) else None)
        if self.expect(status, self.cp.create_role, self.project, b, name) is not None:
            self.roles[b].add(name)

    @rule(data=st.data(), name=NAMES)
    def delete_role(self, data: st.DataObject, name: str) -> None:
        b = data.draw(st.sampled_from(self.branch_ids))
        owns = name in self.dbs[b].values()
        status = (404 if name not in self.roles[b] else 409 if owns
                  else 423 if self.busy(b) else None)
        if self.expect(status, self.cp.delete_role, self.project, b, name) is not None:
            self.roles[b].discard(name)

    @rule(data=st.data(), name=DATABASES, owner=NAMES)
    def create_database(self, data: st.DataObject, name: str, owner: str) -> None:
        b = data.draw(st.sampled_from(self.branch_ids))
        bad_name = not name or name == "template1"
        status = (400 if bad_name or not owner else 409 if name in self.dbs[b]
                  else 400 if owner not in self.roles[b] else 423 if self.busy(b) else None)
        if self.expect(status, self.cp.create_database, self.project, b, name,
                       owner) is not None:
            self.dbs[b][name] = owner

    @rule(data=st.data(), name=DATABASES, owner=NAMES)
    def give_database(self, data: st.DataObject, name: str, owner: str) -> None:
        b = data.draw(st.sampled_from(self.branch_ids))
        if name not in self.dbs[b]:
            status = 404
        elif not owner or owner not in self.roles[b]:
            status = 400
        elif owner == self.dbs[b][name] or not self.busy(b):
            status = None
        else:
            status = 423
        if self.expect(status, self.cp.update_database, self.project, b, name,
                       owner_name=owner) is not None:
            self.dbs[b][name] = owner

    @rule(data=st.data(), name=DATABASES)
    def delete_database(self, data: st.DataObject, name: str) -> None:
        b = data.draw(st.sampled_from(self.branch_ids))
        status = 404 if name not in self.dbs[b] else 423 if self.busy(b) else None
        if self.expect(status, self.cp.delete_database, self.project, b, name) is not None:
            del self.dbs[b][name]

    @precondition(lambda self: len(self.branch_ids) < 4)
    @rule(data=st.data(), compute=st.booleans())
    def create_branch(self, data: st.DataObject, compute: bool) -> None:
        parent = data.draw(st.sampled_from(self.branch_ids))
        endpoints = [{"type": "read_write"}] if compute else []
        child = self.cp.create_branch(self.project, None, parent, endpoints).branch
        self.branch_ids.append(child.id)
        self.roles[child.id] = set(self.roles[parent])
        self.dbs[child.id] = dict(self.dbs[parent])

    @rule(seconds=st.sampled_from([0.5, 1, 5, 60]))
    def advance(self, seconds: float) -> None:
        self.cp.advance(seconds)

    # -- invariants ------------------------------------------------------------------------
    @invariant()
    def matches_the_model(self) -> None:
        for b in self.branch_ids:
            branch = self.cp.branches[b]
            assert set(branch.roles) == self.roles[b]
            assert {n: d.owner_name for n, d in branch.databases.items()} == self.dbs[b]

    @invariant()
    def owners_exist_and_passwords_are_shaped(self) -> None:
        for b in self.branch_ids:
            branch = self.cp.branches[b]
            assert all(d.owner_name in branch.roles for d in branch.databases.values())
            for role in branch.roles.values():
                password = self.cp.password_of(role)
                assert password.startswith("npg_") and len(password) == 16


TestRolesMachine = RolesMachine.TestCase

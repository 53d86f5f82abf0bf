"""Branch restore, as `restoreProjectBranch` runs it (what `branches reset` and `branches
restore` call): the branch gets a new timeline from a source branch's head, a point in
time or an LSN, keeping its id, name and computes.

- From its own history a branch needs `preserve_under_name`: its state before the
  restore stays as a branch of that name (its children go with it).
- From another branch (its parent: a reset), it becomes that branch's child again.
- Operations: `create_timeline` for the new timeline (and `create_branch` for the
  preserved one); each running compute restarts on it, its sessions cut as a
  restart cuts them; an idle compute starts on the new timeline when woken.
- 423 while any of its computes has an operation that has not ended.

The simulator keeps no history of roles and databases: a branch restored from its own
history keeps its current ones; one restored from another branch takes copies of
that branch's (as a new child would).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sim.engine.lifecycle import ACTIVE
from sim.rules.errors import conflict, invalid
from sim.rules.operations import Action

if TYPE_CHECKING:
    from sim.engine.control_plane import ControlPlane
    from sim.engine.model import Branch, Compute, Operation, Project


class Restore:
    def restore_branch(self: ControlPlane, project_id: str, branch_id: str, *,
                       source_branch_id: Any, source_timestamp: Any = None,
                       source_lsn: Any = None, preserve_under_name: Any = None,
                       ) -> tuple[Branch, list[Operation]]:
        project = self.get_project(project_id)
        branch = self.get_branch(project_id, branch_id)
        if not isinstance(source_branch_id, str):
            raise invalid("source_branch_id", "must be a branch id")
        source = self.get_branch(project_id, source_branch_id, field="source_branch_id")
        at = self.point_in_time(project, source, source_timestamp, source_lsn,
                                fields=("source_timestamp", "source_lsn"))
        own = source.id == branch.id
        if own and at is None:
            raise invalid("source_timestamp", "restoring a branch from its own history needs "
                                              "source_timestamp or source_lsn")
        if own and preserve_under_name is None:
            raise invalid("preserve_under_name", "is required to restore a branch from its "
                                                 "own history")
        if preserve_under_name is not None:
            self.check_branch_name(project_id, "preserve_under_name", preserve_under_name)
        elif self._children(branch):
            raise conflict("branch_id", "the branch has children: restore it with "
                                        "preserve_under_name (the children stay with it)")
        if not own and self._descends_from(source, branch):
            raise conflict("source_branch_id", "a branch cannot be restored from its own "
                                               "descendant")
        for compute_id in branch.computes:
            self._check_unlocked(self.computes[compute_id])
        return branch, self._restored(project, branch, source, at, preserve_under_name)

    def _children(self: ControlPlane, branch: Branch) -> list[Branch]:
        project = self.projects[branch.project_id]
        return [self.branches[b] for b in project.branches
                if self.branches[b].parent_id == branch.id]

    def _descends_from(self: ControlPlane, branch: Branch, ancestor: Branch) -> bool:
        seen = branch
        while seen.parent_id is not None:
            if seen.parent_id == ancestor.id:
                return True
            seen = self.branches[seen.parent_id]
        return False

    def _restored(self: ControlPlane, project: Project, branch: Branch, source: Branch,
                  at: float | None, preserve_under_name: str | None) -> list[Operation]:
        now = self.now
        ops: list[Operation] = []
        if preserve_under_name is not None:
            ops.append(self._preserve(project, branch, preserve_under_name))
        kept = branch.documented
        for name in ("parent_timestamp", "parent_lsn", "restored_from", "restore_status"):
            kept.pop(name, None)
        point = now if at is None else at
        if source.id != branch.id:
            branch.parent_id = source.id
            branch.roles.clear()
            branch.databases.clear()
            self.copy_roles(source, branch)
        if at is not None:
            kept["parent_timestamp"] = self.clock.iso(point)
        kept["parent_lsn"] = self.lsn_of(project, point)
        kept["last_reset_at"] = self.clock.iso(now)
        if source.id != branch.id and "ttl_interval_seconds" in kept:
            # a reset from another branch sets the same time to live again
            self.set_expiry(branch, now + kept["ttl_interval_seconds"])
        branch.archived = False
        branch.updated_at = now
        ops.append(self.submit_project_op(project, Action.CREATE_TIMELINE, branch.id))
        ops += self._restart_on_new_timeline(branch)
        return ops

    def _preserve(self: ControlPlane, project: Project, branch: Branch, name: str
                  ) -> Operation:
        """The branch's state before the restore, kept as a branch named `name` that takes
        its children (the state they were made from)."""
        backup = self._add_branch(project, name, branch.parent_id)
        backup.protected = False
        backup.documented["restored_as"] = branch.id
        for key in ("parent_timestamp", "parent_lsn"):
            if key in branch.documented:
                backup.documented[key] = branch.documented[key]
        self.copy_roles(branch, backup)
        for child in self._children(branch):
            child.parent_id = backup.id
        self.branch_went_quiet(backup)
        return self.submit_project_op(project, Action.CREATE_BRANCH, backup.id)

    def _restart_on_new_timeline(self: ControlPlane, branch: Branch) -> list[Operation]:
        """Running computes restart (their sessions cut); idle ones wake onto it later."""
        ops: list[Operation] = []
        for compute_id in branch.computes:
            c: Compute = self.computes[compute_id]
            if c.current_state == ACTIVE and c.pending_state is None:
                ops += self._restart_ops(c)
        return ops

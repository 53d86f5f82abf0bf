"""Recovering what was deleted: a project within 7 days, a branch within its project's
history window (the data it needs is kept that long).

A deletion keeps the objects, marked deleted; a recovery clears the mark on the
project (or branch) and on what was deleted with it at the same instant: its
branches and their computes. A recovered compute comes back idle, as after a
suspend: the next connection or API start wakes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sim.engine.lifecycle import IDLE
from sim.engine.model import Branch
from sim.rules.errors import conflict, locked, not_found

if TYPE_CHECKING:
    from sim.engine.control_plane import ControlPlane
    from sim.engine.model import Compute, Project

PROJECT_RECOVERY_S = 7 * 86_400  # as the real service: a deleted project, for 7 days


class Recovery:
    # -- what may be recovered ---------------------------------------------------
    def recoverable_until(self: ControlPlane, thing: Project | Branch) -> float | None:
        """Until when a deleted project or branch may be recovered (None: not deleted)."""
        if thing.deleted_at is None:
            return None
        if isinstance(thing, Branch):
            project = self.projects[thing.project_id]
            return thing.deleted_at + project.history_retention_seconds
        return thing.deleted_at + PROJECT_RECOVERY_S

    def recoverable_projects(self: ControlPlane) -> list[Project]:
        now = self.now
        return [p for p in self.projects.values() if p.deleted_at is not None
                and now <= (self.recoverable_until(p) or 0)]

    def recoverable_branches(self: ControlPlane, project: Project) -> list[Branch]:
        now = self.now
        return [b for b in self.branches.values() if b.project_id == project.id
                and b.deleted_at is not None and project.deleted_at is None
                and now <= (self.recoverable_until(b) or 0)]

    # -- recovering ----------------------------------------------------------------
    def recover_project(self: ControlPlane, project_id: str) -> Project:
        project = self.projects.get(project_id)
        if project is None:
            raise not_found("project", project_id, "project_id")
        if project.deleted_at is None:
            raise conflict("project_id", "the project is not deleted")
        if self.now > (self.recoverable_until(project) or 0):
            raise not_found("project", project_id, "project_id")  # its recovery window ended
        deleted_at = project.deleted_at
        branches = [self.branches[b] for b in project.branches
                    if self.branches[b].deleted_at == deleted_at]
        for branch in branches:
            self._check_stopped(branch, deleted_at)
        project.deleted_at = None
        project.updated_at = self.now
        for branch in branches:
            self._bring_back(branch, deleted_at)
        self.project_went_quiet(project)
        return project

    def recover_branch(self: ControlPlane, project_id: str, branch_id: str
                       ) -> tuple[Branch, list[Compute]]:
        project = self.get_project(project_id)
        branch = self.branches.get(branch_id)
        if branch is None or branch.project_id != project.id:
            raise not_found("branch", branch_id, "branch_id")
        if branch.deleted_at is None:
            raise conflict("branch_id", "the branch is not deleted")
        if self.now > (self.recoverable_until(branch) or 0):
            raise not_found("branch", branch_id, "branch_id")  # its recovery window ended
        parent = self.branches.get(branch.parent_id or "")
        if parent is not None and parent.deleted_at is not None:
            raise conflict("branch_id", f"its parent {parent.id} is deleted; recover it first")
        if any(self.branches[b].name == branch.name for b in project.branches):
            raise conflict("branch_id", f"project already has a branch named {branch.name!r}")
        self._check_stopped(branch, branch.deleted_at)
        project.branches.append(branch.id)
        computes = self._bring_back(branch, branch.deleted_at)
        return branch, computes

    def _deleted_with(self: ControlPlane, branch: Branch, deleted_at: float) -> list[Compute]:
        return [c for c in self.computes.values()
                if c.branch_id == branch.id and c.deleted_at == deleted_at]

    def _check_stopped(self: ControlPlane, branch: Branch, deleted_at: float) -> None:
        """423 while a compute deleted with the branch is still being stopped."""
        for c in self._deleted_with(branch, deleted_at):
            if self.executor.lane_busy(c.id):
                raise locked(f"endpoint {c.id} is still being stopped after the deletion; "
                             f"retry later")

    def _bring_back(self: ControlPlane, branch: Branch, deleted_at: float) -> list[Compute]:
        """Clear the deletion of a branch and of the computes deleted with it (stopped)."""
        now = self.now
        branch.deleted_at = None
        branch.deletion_method = None
        branch.updated_at = now
        back = self._deleted_with(branch, deleted_at)
        for c in back:
            c.deleted_at = None
            c.updated_at = now
            c.current_state, c.pending_state, c.cu = IDLE, None, 0.0
            c.suspended_at = now
            rt = c.runtime
            if rt is not None:
                rt.close_interval(now)
                rt.iv_state, rt.iv_cu = IDLE, 0.0
            branch.computes.append(c.id)
        every = self.config.check_availability_every_s
        if every is not None and branch.computes and now - deleted_at >= every:
            # its check loop ended at its first round after the deletion: a new one
            self.checked_branches.pop(branch.id, None)
            self.start_availability_checks(branch)
        self.branch_went_quiet(branch)
        return back

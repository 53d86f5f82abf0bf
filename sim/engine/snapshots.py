"""Snapshots of a branch and their schedule.

A snapshot names a branch's state at an instant (its head, a timestamp or an LSN in
the history window); restoring one makes a new branch from it (`restore_status`
"restored"), which a finalize puts in place of the target branch: it takes the
target's name (the target is renamed), default status and computes.

A schedule (per branch) is a list of items; each item is a timer on the simulated
clock (`sim.engine.timers`) that takes a snapshot when due and sets the next one.
A scheduled snapshot with `retention_seconds` gets an expiry, a timer that deletes
it: a schedule keeps about retention / period snapshots of each item.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from sim.engine.lifecycle import ACTIVE
from sim.engine.timers import call_at
from sim.rules.errors import conflict, invalid, not_found
from sim.rules.operations import Action
from sim.rules.snapshot_schedule import check_schedule, next_due

if TYPE_CHECKING:
    from sim.engine.control_plane import ControlPlane
    from sim.engine.model import Branch, Compute, Operation, Project

NAME_MAX = 256


@dataclass(eq=False)
class Snapshot:
    id: str
    project_id: str
    source_branch_id: str
    name: str
    at: float  # the instant of the branch it holds
    created_at: float
    lsn: str
    manual: bool
    expires_at: float | None = None


class SnapshotVerbs:
    # -- snapshots ---------------------------------------------------------------
    def get_snapshot(self: ControlPlane, project_id: str, snapshot_id: str) -> Snapshot:
        self.get_project(project_id)
        snap = self.snapshots.get(snapshot_id)
        if snap is None or snap.project_id != project_id:
            raise not_found("snapshot", snapshot_id, "snapshot_id")
        return snap

    def list_snapshots(self: ControlPlane, project_id: str) -> list[Snapshot]:
        self.get_project(project_id)
        return [s for s in self.snapshots.values() if s.project_id == project_id]

    def create_snapshot(self: ControlPlane, project_id: str, branch_id: str, *,
                        name: Any = None, timestamp: Any = None, lsn: Any = None,
                        expires_at: Any = None, manual: bool = True
                        ) -> tuple[Snapshot, list[Operation]]:
        project = self.get_project(project_id)
        branch = self.get_branch(project_id, branch_id)
        if timestamp is not None and lsn is not None:
            raise invalid("lsn", "give timestamp or lsn, not both")
        at = self.point_in_time(project, branch, timestamp, lsn, fields=("timestamp", "lsn"))
        at = self.now if at is None else at
        if name is not None and (not isinstance(name, str) or not 1 <= len(name) <= NAME_MAX):
            raise invalid("name", f"must be a string of 1 to {NAME_MAX} characters")
        until = None
        if expires_at is not None:
            until = self.instant_of("expires_at", expires_at)
            if until <= self.now:
                raise invalid("expires_at", "must be in the future")
        snap = Snapshot(self.ids.snapshot(self.id_stream(project)), project.id, branch.id,
                        name or f"{branch.name} snapshot {self.clock.iso(at)}", at, self.now,
                        self.lsn_of(project, at), manual)
        self.snapshots[snap.id] = snap
        if until is not None:
            self._snapshot_expires(snap, until)
        return snap, []  # no operation: a snapshot copies nothing (docs/model.md)

    def _snapshot_expires(self: ControlPlane, snap: Snapshot, at: float) -> None:
        snap.expires_at = at
        call_at(self, at, "expire_snapshot", snap.id, at)

    def expire_snapshot(self: ControlPlane, snapshot_id: str, at: float) -> None:
        snap = self.snapshots.get(snapshot_id)
        if snap is not None and snap.expires_at == at:
            del self.snapshots[snapshot_id]

    def rename_snapshot(self: ControlPlane, project_id: str, snapshot_id: str, name: Any
                        ) -> Snapshot:
        snap = self.get_snapshot(project_id, snapshot_id)
        if name is not None:
            if not isinstance(name, str) or not 1 <= len(name) <= NAME_MAX:
                raise invalid("snapshot.name", f"must be a string of 1 to {NAME_MAX} "
                                               f"characters")
            snap.name = name
        return snap

    def delete_snapshot(self: ControlPlane, project_id: str, snapshot_id: str
                        ) -> list[Operation]:
        snap = self.get_snapshot(project_id, snapshot_id)
        del self.snapshots[snap.id]
        return []

    # -- restoring a snapshot ------------------------------------------------------
    def restore_snapshot(self: ControlPlane, project_id: str, snapshot_id: str, *,
                         name: Any = None, target_branch_id: Any = None,
                         finalize: bool = False) -> tuple[Branch, list[Compute], list]:
        """A new branch from the snapshot, its target recorded; finalized at once or later
        (`finalize_restore`)."""
        project = self.get_project(project_id)
        snap = self.get_snapshot(project_id, snapshot_id)
        target_id = target_branch_id if target_branch_id is not None else snap.source_branch_id
        if not isinstance(target_id, str):
            raise invalid("target_branch_id", "must be a branch id")
        target = self.get_branch(project_id, target_id, field="target_branch_id")
        new_name = name if name is not None else f"{target.name}_restored_{snap.id}"
        self.check_branch_name(project_id, "name", new_name)
        if finalize:
            for compute_id in target.computes:
                self._check_unlocked(self.computes[compute_id])
        parent = self.branches.get(snap.source_branch_id)
        parent_id = parent.id if parent is not None and parent.deleted_at is None else None
        branch = self._add_branch(project, new_name, parent_id)
        self.copy_roles(target, branch)
        branch.documented.update({
            "parent_timestamp": self.clock.iso(snap.at), "parent_lsn": snap.lsn,
            "restored_from": snap.id, "restore_status": "restored",
            "restore_target": target.id})
        ops = [self.submit_project_op(project, Action.CREATE_BRANCH, branch.id)]
        moved: list[Compute] = []
        if finalize:
            moved, more = self._finalize(project, branch, target, None)
            ops += more
        else:
            self.branch_went_quiet(branch)
        return branch, moved, ops

    def finalize_restore(self: ControlPlane, project_id: str, branch_id: str,
                         name: Any = None) -> list[Operation]:
        """The restored branch takes its target's place: name, default status, computes;
        the target keeps its data under `name` (or a name made from its own)."""
        project = self.get_project(project_id)
        branch = self.get_branch(project_id, branch_id)
        if branch.documented.get("restore_status") != "restored":
            raise conflict("branch_id", "the branch is not a restored branch awaiting "
                                        "finalization")
        target = self.get_branch(project_id, branch.documented["restore_target"],
                                 field="branch_id")
        if name is not None:
            self.check_branch_name(project_id, "name", name)
        for compute_id in target.computes:
            self._check_unlocked(self.computes[compute_id])
        return self._finalize(project, branch, target, name)[1]

    def _finalize(self: ControlPlane, project: Project, branch: Branch, target: Branch,
                  name: str | None) -> tuple[list[Compute], list[Operation]]:
        now = self.now
        old_name = target.name
        target.name = name or f"{old_name}_old_{self.clock.iso(now)}"
        target.updated_at = now
        branch.name = old_name
        branch.documented["restore_status"] = "finalized"
        branch.documented["restored_as"] = target.id
        branch.documented.pop("restore_target", None)
        if target.default:
            self.set_default_branch(project.id, branch.id)
        moved = [self.computes[i] for i in list(target.computes)]
        ops: list[Operation] = []
        for c in moved:
            ops += self._move_onto(c, target, branch)
        return moved, ops

    def _move_onto(self: ControlPlane, c: Compute, left: Branch, branch: Branch
                   ) -> list[Operation]:
        """A compute moves to the restored branch: a running one restarts on it."""
        was_on = c.current_state == ACTIVE and c.pending_state is None
        left.computes.remove(c.id)
        branch.computes.append(c.id)
        c.branch_id = branch.id
        c.updated_at = self.now
        self.left_branch(left, was_on)
        self.start_availability_checks(branch)
        return self._restart_ops(c) if was_on else []

    # -- the schedule ------------------------------------------------------------------
    def snapshot_schedule(self: ControlPlane, project_id: str, branch_id: str
                          ) -> list[dict[str, Any]]:
        self.get_branch(project_id, branch_id)
        return [dict(item) for item in self.snapshot_schedules.get(branch_id, [])]

    def set_snapshot_schedule(self: ControlPlane, project_id: str, branch_id: str,
                              items: Any) -> None:
        branch = self.get_branch(project_id, branch_id)
        schedule = check_schedule(items)
        self.snapshot_schedules[branch.id] = schedule
        # timers of the former schedule see another generation and end
        generation = self.schedule_generations.get(branch.id, 0) + 1
        self.schedule_generations[branch.id] = generation
        for index, item in enumerate(schedule):
            self._next_scheduled(branch, index, item, generation)

    def _next_scheduled(self: ControlPlane, branch: Branch, index: int,
                        item: dict[str, Any], generation: int) -> None:
        due = next_due(item, self.clock.instant(self.now))
        at = (due - self.clock.start) / timedelta(seconds=1)
        call_at(self, at, "take_scheduled_snapshot", branch.id, index, generation)

    def take_scheduled_snapshot(self: ControlPlane, branch_id: str, index: int,
                                generation: int) -> None:
        branch = self.branches.get(branch_id)
        if (branch is None or branch.deleted_at is not None
                or self.schedule_generations.get(branch_id) != generation):
            return
        project = self.projects[branch.project_id]
        if project.deleted_at is not None:
            return
        item = self.snapshot_schedules[branch_id][index]
        snap, _ops = self.create_snapshot(project.id, branch.id, manual=False,
                                          name=f"{branch.name} {item['frequency']} "
                                               f"{self.clock.iso(self.now)}")
        retention = item.get("retention_seconds")
        if retention is not None:
            self._snapshot_expires(snap, self.now + retention)
        self._next_scheduled(branch, index, item, generation)

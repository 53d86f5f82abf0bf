"""Time-driven life of computes and storage: waking, suspending, detaching, archiving.

These are the behaviours behind the specification's operation actions start_compute,
suspend_compute, tenant_detach, tenant_reattach, timeline_archive,
timeline_unarchive and check_availability. Each action is produced here by
the behaviour its row of the specification describes, and nowhere else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sim.engine.clock import to_us
from sim.engine.model import Branch, Compute, Operation, Project
from sim.engine.records import WakeRecord
from sim.engine.scheduling import schedule_now, timeout_at
from sim.rules.operations import Action
from sim.rules.states import ComputeState

if TYPE_CHECKING:
    from sim.engine.control_plane import ControlPlane

ACTIVE = ComputeState.ACTIVE.value
IDLE = ComputeState.IDLE.value
INIT = ComputeState.INIT.value


def is_on(c: Compute) -> bool:
    """On, or on its way: what keeps a project attached and a branch unarchived."""
    return not c.deleted and (c.current_state != IDLE or c.pending_state == ACTIVE)


def checked_compute(computes: list[Compute]) -> Compute:
    """The compute a branch's availability check uses: its read_write one, else the first."""
    return next((x for x in computes if x.is_read_write), computes[0])


class Lifecycle:
    # -- waking --------------------------------------------------------------
    def wake(self: ControlPlane, c: Compute, cause: str) -> list[Operation]:
        """Start a compute: reattach its project and unarchive its branch first if needed."""
        if c.pending_state == ACTIVE or c.deleted:
            return []
        project = self.projects[c.project_id]
        branch = self.branches[c.branch_id]
        lane = self.project_lane(project)
        for queued in self.executor.pending(lane):  # not begun: this wake supersedes them
            if queued.action == Action.TENANT_DETACH.value or (
                    queued.action == Action.TIMELINE_ARCHIVE.value
                    and queued.branch_id == branch.id):
                self.executor.skip(queued)
        ops: list[Operation] = []
        if project.detached:
            ops.append(self.submit_project_op(project, Action.TENANT_REATTACH, branch.id,
                                              on_finish=lambda _op: self._reattached(project)))
        if branch.archived:
            ops.append(self.submit_project_op(project, Action.TIMELINE_UNARCHIVE, branch.id,
                                              on_finish=lambda _op: self._unarchived(branch)))
        c.pending_state = ACTIVE
        project.idle_since = None
        branch.idle_since = None
        rt = c.runtime
        assert rt is not None
        rt.wake_at = self.env.now
        rt.wake_cause = cause
        # a new compute's start is returned as running, whatever storage work it waits for
        ops.append(self.submit_compute_op(
            c, Action.START_COMPUTE, after=self.executor.pending(lane),
            on_start=lambda _op: self._starting(c), on_finish=lambda _op: self._started(c),
            running_while_waiting=cause == "create",
        ))
        return ops

    def _starting(self: ControlPlane, c: Compute) -> None:
        c.pending_state = ACTIVE

    def _started(self: ControlPlane, c: Compute) -> None:
        if c.deleted:
            return
        now = self.env.now
        rt = c.runtime
        assert rt is not None
        c.current_state = ACTIVE
        c.pending_state = None
        c.cu = c.autoscaling_limit_min_cu
        c.release = self.release  # a compute picks up the current release when it starts
        c.updated_at = now
        rt.note_state()
        cause = rt.wake_cause
        wake_at = rt.wake_at if rt.wake_at is not None else now
        if cause != "create" and wake_at >= self.config.count_from_s:
            c.stats.cold_starts += 1
        self.recorder.wakes.append(WakeRecord(c.id, c.project_id, wake_at, cause, now - wake_at))
        rt.wake_at = None
        rt.activated()

    def _reattached(self: ControlPlane, project: Project) -> None:
        project.detached = False

    def _unarchived(self: ControlPlane, branch: Branch) -> None:
        branch.archived = False

    # -- suspending ----------------------------------------------------------
    def scale_to_zero(self: ControlPlane, c: Compute) -> Operation:
        """Inactivity for the compute's timeout: suspend it."""
        return self.suspend(c)

    def suspend(self: ControlPlane, c: Compute) -> Operation:
        c.pending_state = IDLE
        return self.submit_compute_op(
            c, Action.SUSPEND_COMPUTE, on_start=lambda _op: self._suspending(c),
            on_finish=lambda op: self._suspended(c, op),
        )

    def _suspending(self: ControlPlane, c: Compute) -> None:
        if c.pending_state != ACTIVE:  # a restart's suspension: still heading for active
            c.pending_state = IDLE

    def _suspended(self: ControlPlane, c: Compute, op: Operation) -> None:
        now = self.env.now
        rt = c.runtime
        assert rt is not None
        c.current_state = IDLE
        if c.pending_state == IDLE:  # a restart's start_compute may already have begun
            c.pending_state = None
        c.suspended_at = now
        c.updated_at = now
        c.cu = 0.0
        if op.created_us >= to_us(self.config.count_from_s):  # not a suspend of the warm-up
            c.stats.suspends += 1
        rt.note_state()
        if c.deleted:
            rt.close_interval(now)
            self.went_quiet(c)
            return
        if rt.waiting and not self.executor.lane_busy(c.id):
            self.wake(c, "connection")  # clients arrived while it was suspending
        else:
            self.went_quiet(c)

    # -- storage lifecycle ---------------------------------------------------
    def went_quiet(self: ControlPlane, c: Compute) -> None:
        """A compute stopped (or an idle one was deleted): start the idle clocks of its
        project and branch, unless they already run (a clock runs from when nothing was on)."""
        project = self.projects[c.project_id]
        branch = self.branches[c.branch_id]
        computes = [self.computes[i] for b in project.branches for i in self.branches[b].computes]
        if project.idle_since is None and not any(is_on(x) for x in computes):
            self.project_went_quiet(project)
        if branch.idle_since is None and not any(is_on(self.computes[i]) for i in branch.computes):
            self.branch_went_quiet(branch)

    def left_branch(self: ControlPlane, branch: Branch, was_on: bool) -> None:
        """A compute moved off `branch`: if it kept the branch awake, the branch is quiet now."""
        if was_on and not any(is_on(self.computes[i]) for i in branch.computes):
            self.branch_went_quiet(branch)

    def project_went_quiet(self: ControlPlane, project: Project) -> None:
        now = self.env.now
        project.idle_since = now
        self._after(self.config.detach_after_s, lambda: self._maybe_detach(project, now))

    def branch_went_quiet(self: ControlPlane, branch: Branch) -> None:
        now = self.env.now
        branch.idle_since = now
        self._after(self.config.archive_after_s, lambda: self._maybe_archive(branch, now))

    def _after(self: ControlPlane, delay: float | None, fn) -> None:
        if delay is None:
            return
        ev = self.env.timeout(delay)
        ev.callbacks.append(lambda _ev: fn())

    def _maybe_detach(self: ControlPlane, project: Project, since: float) -> None:
        if project.id in self.kernel_storage:
            return  # replayed with its computes' kernel runs (sim.kernel.storage_replay)
        if project.deleted_at is not None or project.detached or project.idle_since != since:
            return

        def detaching(_op: Operation) -> None:
            project.detached = True

        self.submit_project_op(project, Action.TENANT_DETACH, project.default_branch_id,
                               on_start=detaching)

    def _maybe_archive(self: ControlPlane, branch: Branch, since: float) -> None:
        # the default branch is never archived (as in the real service)
        if branch.deleted_at is not None or branch.default or branch.archived:
            return
        if branch.idle_since != since:
            return
        project = self.projects[branch.project_id]
        if project.id in self.kernel_storage:
            return

        def archiving(_op: Operation) -> None:
            branch.archived = True

        self.submit_project_op(project, Action.TIMELINE_ARCHIVE, branch.id, on_start=archiving)

    # -- periodic availability checks ----------------------------------------
    def start_availability_checks(self: ControlPlane, branch: Branch) -> None:
        every = self.config.check_availability_every_s
        if every is None or branch.id in self.checked_branches:
            return  # one loop per branch, whatever computes come and go
        self.checked_branches[branch.id] = self.env.now
        self.check_ranks[branch.id] = len(self.check_ranks)
        # A chain of plain callbacks rather than a SimPy process: a generator cannot be
        # pickled, and a snapshot of the world (sim serve --state) pickles every pending
        # event. The chain schedules exactly the events a process would (an urgent start,
        # one timeout a round, a last event when the loop ends), so ids and order match.
        schedule_now(self.env, AvailabilityRound(self, branch, every).first, urgent=True)

    def resume_availability_checks(self: ControlPlane, branch: Branch, due: float) -> None:
        """The engine takes a branch's checks back from the kernel: the next one at `due`."""
        self.ended_checks.discard(branch.id)
        every = self.config.check_availability_every_s
        assert every is not None
        timeout_at(self.env, due).callbacks.append(AvailabilityRound(self, branch, every).due)

    def _check_availability(self: ControlPlane, branch: Branch) -> bool:
        """One round: check the branch's primary (or first) compute, if it has one.
        False: the checks of this branch end here."""
        computes = [self.computes[i] for i in branch.computes]
        if not computes or self.projects[branch.project_id].deleted_at is not None:
            return True  # branches without a compute are not checked
        c = checked_compute(computes)
        if c.runtime is not None and c.runtime.external:
            self.ended_checks.add(branch.id)
            return False  # the compute kernel runs this branch's checks (nothing else touches it)
        if c.disabled:
            return True
        if c.current_state == IDLE and c.pending_state is None:
            self.wake(c, "check_availability")
        rt = c.runtime
        assert rt is not None
        rt.quiet_since = self.env.now  # background activity resets the countdown
        self.submit_compute_op(c, Action.CHECK_AVAILABILITY)
        return True


class AvailabilityRound:
    """The periodic check of one branch: every `every` seconds while the branch lives."""

    def __init__(self, cp: ControlPlane, branch: Branch, every: float):
        self.cp = cp
        self.branch = branch
        self.every = every

    def first(self, _event: object) -> None:
        self._next()

    def due(self, _event: object) -> None:
        self._next(self.cp._check_availability(self.branch))

    def _next(self, go_on: bool = True) -> None:
        if not go_on or self.branch.deleted_at is not None:
            schedule_now(self.cp.env, None)  # where a process would schedule its own end
            return
        self.cp.env.timeout(self.every).callbacks.append(self.due)

"""Storage operations: timelines, branches, detach/reattach, archive/unarchive, restore window."""

from __future__ import annotations

import pytest

from sim.engine.records import Outcome
from sim.rules.operations import Action
from sim.workload import Distribution
from tests.engine.support import COLD, OP, actions, control_plane, ops_of, running_compute

DETACH = 1000.0
ARCHIVE = 2000.0
IDLE_AT = OP + COLD + 60 + OP  # running_compute with a 60 s timeout is idle from here


def storage_ops(project, action):
    return [o for o in project.operations if o.action == action]


def test_a_project_idle_past_detach_after_is_detached():
    cp = control_plane(detach_after_s=DETACH)
    project, c = running_compute(cp, suspend_timeout_seconds=60)
    cp.run_until(IDLE_AT + DETACH - 0.5)
    assert not storage_ops(project, "tenant_detach") and not project.detached
    cp.run_until(IDLE_AT + DETACH + OP + 0.5)
    (detach,) = storage_ops(project, "tenant_detach")
    assert detach.created_at == pytest.approx(IDLE_AT + DETACH) and detach.status == "finished"
    assert detach.endpoint_id is None and project.detached


def test_activity_restarts_the_detach_clock():
    cp = control_plane(detach_after_s=DETACH)
    project, c = running_compute(cp, suspend_timeout_seconds=60)
    cp.run_until(IDLE_AT + DETACH / 2)
    cp.connect(project.id, c.id, 1)
    cp.run_until(IDLE_AT + DETACH + 10)
    assert not storage_ops(project, "tenant_detach")


def test_the_next_connection_reattaches_then_starts_and_waits_for_both():
    cp = control_plane(detach_after_s=DETACH)
    project, c = running_compute(cp, suspend_timeout_seconds=60)
    cp.run_until(IDLE_AT + DETACH + 100)
    assert project.detached
    t = cp.now
    assert cp.connect(project.id, c.id, 10) == ["waiting"]
    new = [o for o in project.operations if o.created_at >= t]
    assert actions(new) == ["tenant_reattach", "start_compute"]
    reattach, start = new
    assert start.status == "scheduling"  # waits for the reattach
    cp.run_until(t + OP + COLD + 0.01)
    assert reattach.status == start.status == "finished" and not project.detached
    assert start.started_at == pytest.approx(t + OP)
    wake = cp.recorder.wakes[-1]
    assert wake.wait_s == pytest.approx(OP + COLD)
    rec = cp.recorder.connections[-1]
    assert rec.outcome == Outcome.OK and rec.wait_s == pytest.approx(OP + COLD)


def test_an_idle_non_default_branch_is_archived_and_unarchived_before_its_next_start():
    cp = control_plane(archive_after_s=ARCHIVE)
    project, main = running_compute(cp, suspend_timeout_seconds=-1)
    dev = cp.create_branch(project.id, "dev",
                           endpoints=[{"type": "read_write", "suspend_timeout_seconds": 60}])
    c = dev.computes[0]
    cp.advance(OP + COLD + 0.5)
    assert c.current_state == "active"
    cp.advance(60 + OP)
    assert c.current_state == "idle"
    quiet = c.suspended_at
    cp.run_until(quiet + ARCHIVE + OP + 0.5)
    (archive,) = storage_ops(project, "timeline_archive")
    assert archive.branch_id == dev.branch.id and archive.created_at == pytest.approx(quiet + ARCHIVE)
    assert dev.branch.archived and not cp.branches[project.default_branch_id].archived
    t = cp.now
    cp.connect(project.id, c.id, 10)
    new = [o for o in project.operations if o.created_at >= t]
    assert actions(new) == ["timeline_unarchive", "start_compute"]
    cp.run_until(t + OP + COLD + 0.01)
    assert not dev.branch.archived and c.current_state == "active"
    assert cp.recorder.wakes[-1].wait_s == pytest.approx(OP + COLD)


def test_the_default_branch_is_never_archived():
    cp = control_plane(archive_after_s=ARCHIVE)
    project, c = running_compute(cp, suspend_timeout_seconds=60)
    cp.advance(10 * ARCHIVE)
    assert not storage_ops(project, "timeline_archive")


def test_changing_the_restore_window_applies_a_storage_config():
    cp = control_plane()
    project, _ = running_compute(cp)
    _, ops = cp.update_project(project.id, history_retention_seconds=3600)
    assert actions(ops) == ["apply_storage_config"] and ops[0].endpoint_id is None
    _, same = cp.update_project(project.id, history_retention_seconds=3600)
    assert same == []
    _, renamed = cp.update_project(project.id, name="renamed")
    assert renamed == []


def test_create_and_delete_produce_their_storage_operations():
    cp = control_plane()
    created = cp.create_project("p")
    project = created.project
    assert actions(created.operations) == ["create_timeline", "start_compute"]
    assert created.operations[0].branch_id == created.branch.id
    branch = cp.create_branch(project.id, "dev")
    assert actions(branch.operations) == ["create_branch"]
    assert branch.operations[0].branch_id == branch.branch.id
    cp.advance(10)
    compute = created.computes[0]
    cp.connect(project.id, compute.id, 100, count=2)
    _, ops = cp.delete_project(project.id)
    assert actions(ops) == ["delete_tenant"]
    assert compute.deleted_at == cp.now and compute.stats.dropped == 2
    cp.advance(10)
    assert ops[0].status == "finished"
    assert ops_of(cp, compute, "suspend_compute")[-1].status == "finished"


def test_moving_an_active_compute_to_an_archived_branch_unarchives_it_first():
    cp = control_plane(archive_after_s=ARCHIVE)
    project, c = running_compute(cp, suspend_timeout_seconds=-1)
    dev = cp.create_branch(project.id, "dev").branch  # no compute: quiet from the start
    cp.run_until(ARCHIVE + 10)
    assert dev.archived
    t = cp.now
    _, ops = cp.update_compute(project.id, c.id, branch_id=dev.id)
    assert actions(ops) == ["apply_config", "suspend_compute", "timeline_unarchive",
                            "start_compute"]
    cp.run_until(t + 2 * OP + COLD + 0.01)
    assert c.current_state == "active" and not dev.archived
    cp.advance(10 * ARCHIVE)  # the compute stays on: its new branch is not archived again
    assert not dev.archived and len(storage_ops(project, "timeline_archive")) == 1


def test_a_resize_whose_start_waits_for_storage_does_not_start_the_idle_clocks():
    slow = {a: Distribution.fixed(OP) for a in Action}
    slow[Action.APPLY_STORAGE_CONFIG] = Distribution.fixed(10 * OP)
    cp = control_plane(detach_after_s=DETACH, operation_durations=slow)
    project, c = running_compute(cp, suspend_timeout_seconds=-1)
    cp.update_project(project.id, history_retention_seconds=3600)  # storage lane busy 10 OP
    _, ops = cp.update_compute(project.id, c.id, autoscaling_limit_max_cu=4)
    assert actions(ops) == ["apply_config", "suspend_compute", "start_compute"]
    cp.advance(2 * OP + 0.25)  # suspended; the start waits for the storage lane
    assert c.current_state == "idle" and ops[2].status == "scheduling"
    assert c.pending_state == "active"  # still on its way back
    cp.advance(2 * DETACH)
    assert c.current_state == "active"
    assert not project.detached and not storage_ops(project, "tenant_detach")


def test_a_wake_skips_the_archive_and_detach_still_queued_for_its_branch():
    # the dev compute stops last, so the project and its branch go quiet at the same
    # instant: tenant_detach runs, timeline_archive waits behind it on the storage lane
    cp = control_plane(detach_after_s=DETACH, archive_after_s=DETACH)
    project, main = running_compute(cp, suspend_timeout_seconds=60)
    dev = cp.create_branch(project.id, "dev",
                           endpoints=[{"type": "read_write", "suspend_timeout_seconds": 120}])
    c = dev.computes[0]
    cp.advance(200)
    quiet = c.suspended_at
    assert project.idle_since == dev.branch.idle_since == quiet
    cp.run_until(quiet + DETACH + 0.1)
    (detach,) = storage_ops(project, "tenant_detach")
    (archive,) = storage_ops(project, "timeline_archive")
    assert (detach.status, archive.status) == ("running", "scheduling")
    cp.connect(project.id, c.id, 30)
    assert archive.status == "skipped"  # superseded by the wake
    cp.advance(20)
    assert c.current_state == "active"
    assert not dev.branch.archived and not project.detached


def test_a_project_created_without_a_compute_is_detached_after_detach_after():
    cp = control_plane(detach_after_s=DETACH)
    project = cp.create_project("p", with_compute=False).project
    cp.run_until(DETACH - 0.5)
    assert not storage_ops(project, "tenant_detach") and project.idle_since == 0.0
    cp.run_until(DETACH + OP + 0.5)
    (detach,) = storage_ops(project, "tenant_detach")
    assert detach.created_at == pytest.approx(DETACH) and project.detached


def test_a_compute_moved_away_starts_its_old_branch_archive_clock():
    cp = control_plane(archive_after_s=ARCHIVE)
    project, _ = running_compute(cp, suspend_timeout_seconds=-1)
    dev = cp.create_branch(project.id, "dev",
                           endpoints=[{"type": "read_write", "suspend_timeout_seconds": -1}])
    other = cp.create_branch(project.id, "other").branch
    cp.advance(OP + COLD + 10)
    c = dev.computes[0]
    assert c.current_state == "active" and dev.branch.idle_since is None
    moved_at = cp.now
    cp.update_compute(project.id, c.id, branch_id=other.id)
    assert dev.branch.idle_since == moved_at
    cp.run_until(moved_at + ARCHIVE + OP + 0.5)
    (archive,) = storage_ops(project, "timeline_archive")
    assert archive.branch_id == dev.branch.id and dev.branch.archived
    assert archive.created_at == pytest.approx(moved_at + ARCHIVE)
    assert not other.archived and c.current_state == "active"  # the compute keeps it awake

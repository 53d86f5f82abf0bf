"""Restarts, edits of a compute, and compute releases (the specification: Behavior of compute changes)."""

from __future__ import annotations

import pytest

from sim.engine.records import Outcome
from tests.engine.support import COLD, OP, actions, control_plane, ops_of, refused, running_compute

WEEK = 7 * 86_400


def test_restart_of_an_idle_compute_is_refused_with_422():
    cp = control_plane()
    project, c = running_compute(cp, suspend_timeout_seconds=60)
    cp.advance(100)
    assert c.current_state == "idle"
    err = refused(cp, 422, cp.restart_compute, project.id, c.id)
    assert err.code == "UNSUPPORTED_STATE"


def test_restart_of_an_active_compute_drops_connections_then_suspends_and_starts():
    cp = control_plane()
    project, c = running_compute(cp)
    cp.connect(project.id, c.id, 600, count=5)
    t = cp.now
    _, ops = cp.restart_compute(project.id, c.id)
    assert actions(ops) == ["suspend_compute", "start_compute"]
    assert c.stats.dropped == 5 and c.stats.restarts == 1
    assert c.runtime.open_connections(t) == 0
    assert c.pending_state == "active"  # underway, back to active
    cp.advance(OP + 0.01)
    assert ops[0].status == "finished" and ops[1].status == "running"
    assert c.current_state == "idle" and c.pending_state == "active"
    cp.advance(COLD)
    assert ops[1].status == "finished" and ops[1].finished_at == pytest.approx(t + OP + COLD)
    assert c.current_state == "active" and c.pending_state is None
    assert cp.recorder.wakes[-1].cause == "restart"


def test_a_connection_during_a_restart_waits_for_the_restart_own_start():
    cp = control_plane()
    project, c = running_compute(cp)
    t = cp.now
    _, ops = cp.restart_compute(project.id, c.id)
    cp.run_until(t + OP + COLD / 2)  # suspended, the restart's start_compute running
    assert ops[1].status == "running"
    assert c.pending_state == "active"  # the specification: pending_state shows while a change is underway
    assert cp.connect(project.id, c.id, 30) == ["waiting"]
    assert len(ops_of(cp, c, "start_compute")) == 2  # creation's and the restart's, no third
    cp.run_until(t + OP + COLD + 0.01)
    assert c.current_state == "active" and cp.recorder.connections[-1].outcome == Outcome.OK
    cp.advance(3600)
    assert len(ops_of(cp, c, "start_compute")) == 2 and c.stats.cold_starts == 1


@pytest.mark.parametrize("change", [
    {"autoscaling_limit_max_cu": 4},
    {"autoscaling_limit_min_cu": 0.5},
    {"autoscaling_limit_min_cu": 1, "autoscaling_limit_max_cu": 1},  # fixed size
])
def test_editing_size_or_autoscaling_restarts_an_active_compute(change):
    cp = control_plane()
    project, c = running_compute(cp)
    cp.connect(project.id, c.id, 600, count=3)
    _, ops = cp.update_compute(project.id, c.id, **change)
    assert actions(ops) == ["apply_config", "suspend_compute", "start_compute"]
    assert c.stats.dropped == 3 and c.runtime.open_connections(cp.now) == 0
    for field, value in change.items():
        assert getattr(c, field) == value  # takes effect immediately
    cp.advance(2 * OP + COLD + 0.01)
    assert [o.status for o in ops] == ["finished"] * 3
    assert c.current_state == "active" and c.cu == c.autoscaling_limit_min_cu


def test_editing_the_suspend_timeout_does_not_restart():
    cp = control_plane()
    project, c = running_compute(cp)
    cp.connect(project.id, c.id, 600, count=3)
    _, ops = cp.update_compute(project.id, c.id, suspend_timeout_seconds=3600)
    assert actions(ops) == ["apply_config"]
    assert c.stats.dropped == 0 and c.runtime.open_connections(cp.now) == 3
    cp.advance(OP + 0.01)
    assert c.current_state == "active" and c.suspend_timeout_seconds == 3600


def test_a_shorter_timeout_takes_effect_on_the_running_countdown():
    cp = control_plane()
    project, c = running_compute(cp)  # default 300 s from OP + COLD
    cp.run_until(50)
    cp.update_compute(project.id, c.id, suspend_timeout_seconds=60)
    cp.run_until(OP + COLD + 60 + 0.5)
    assert ops_of(cp, c, "suspend_compute")


def test_a_timeout_shortened_below_the_quiet_time_suspends_once_the_edit_is_applied():
    cp = control_plane()
    project, c = running_compute(cp)  # active from OP + COLD, quiet since then
    cp.run_until(200)
    _, ops = cp.update_compute(project.id, c.id, suspend_timeout_seconds=60)
    cp.run_until(200 + OP + OP / 2)  # apply_config ended at 200 + OP: already quiet > 60 s
    (suspend,) = ops_of(cp, c, "suspend_compute")
    assert suspend.created_at == pytest.approx(200 + OP) and ops[0].status == "finished"
    cp.advance(OP)
    assert c.current_state == "idle"


def test_editing_an_idle_compute_does_not_start_it():
    cp = control_plane()
    project, c = running_compute(cp, suspend_timeout_seconds=60)
    cp.advance(100)
    assert c.current_state == "idle"
    _, ops = cp.update_compute(project.id, c.id, autoscaling_limit_max_cu=8)
    assert actions(ops) == ["apply_config"]
    cp.advance(3600)
    assert c.current_state == "idle" and len(ops_of(cp, c, "start_compute")) == 1
    assert c.stats.restarts == 0


def test_a_compute_picks_up_a_release_when_it_next_starts():
    cp = control_plane()
    project, suspending = running_compute(cp, suspend_timeout_seconds=60)
    never, _ = cp.create_compute(project.id, suspending.branch_id, "read_only",
                                 suspend_timeout_seconds=-1)
    cp.advance(COLD + 0.5)
    assert suspending.release == never.release == "release-0"
    cp.publish_release("v2")
    cp.advance(200)
    assert suspending.current_state == "idle" and suspending.release == "release-0"
    cp.connect(project.id, suspending.id, 10)
    cp.advance(COLD + 0.5)
    assert suspending.release == "v2"
    cp.advance(WEEK)
    assert never.current_state == "active" and never.release == "release-0"
    cp.restart_compute(project.id, never.id)
    cp.advance(OP + COLD + 0.5)
    assert never.release == "v2"


def test_disabling_an_active_compute_refuses_waiting_and_drops_open_connections():
    cp = control_plane()
    project, c = running_compute(cp)
    cp.connect(project.id, c.id, 600, count=2)
    _, ops = cp.update_compute(project.id, c.id, disabled=True)
    assert actions(ops) == ["apply_config", "suspend_compute"]
    assert c.stats.dropped == 2
    cp.advance(2 * OP + 0.5)
    assert c.current_state == "idle"
    assert cp.connect(project.id, c.id, 5) == [Outcome.REFUSED_DISABLED]
    refused(cp, 422, cp.start_compute, project.id, c.id)

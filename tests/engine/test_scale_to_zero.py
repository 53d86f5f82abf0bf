"""Scale to zero, waking, and background checks (compute states and timeouts).

Timeline of `running_compute`: create_timeline 0..OP, start_compute OP..OP+COLD;
the compute is active from ACTIVE_AT and its countdown runs from there.
"""

from __future__ import annotations

import pytest

from sim.engine.records import Outcome
from tests.engine.support import COLD, OP, control_plane, ops_of, running_compute

ACTIVE_AT = OP + COLD
WEEK = 7 * 86_400


def _suspends_at(cp, c, deadline):
    """The compute stays active until `deadline`, then suspend_compute runs for OP."""
    earlier = len(ops_of(cp, c, "suspend_compute"))
    cp.run_until(deadline - 0.01)
    assert c.current_state == "active" and len(ops_of(cp, c, "suspend_compute")) == earlier
    cp.run_until(deadline + OP / 2)
    (op,) = ops_of(cp, c, "suspend_compute")[earlier:]
    assert op.created_at == pytest.approx(deadline) and op.status == "running"
    assert c.pending_state == "idle" and (c.suspended_at is None or c.suspended_at < deadline)
    cp.run_until(deadline + OP + 0.01)
    assert c.current_state == "idle" and c.pending_state is None
    assert op.status == "finished" and c.suspended_at == pytest.approx(deadline + OP)


@pytest.mark.parametrize(("setting", "timeout"), [(0, 300), (300, 300), (60, 60), (3600, 3600)])
def test_suspends_after_the_timeout_from_the_end_of_the_last_session(setting, timeout):
    cp = control_plane()
    project, c = running_compute(cp, suspend_timeout_seconds=setting)
    cp.run_until(10)
    assert cp.connect(project.id, c.id, 20) == [Outcome.OK]  # open 10..30
    _suspends_at(cp, c, 30 + timeout)
    assert c.stats.suspends == 1 and c.cu == 0


def test_an_untouched_compute_suspends_the_timeout_after_it_became_active():
    cp = control_plane()
    _, c = running_compute(cp)
    _suspends_at(cp, c, ACTIVE_AT + 300)


def test_timeout_minus_one_never_suspends():
    cp = control_plane()
    project, c = running_compute(cp, suspend_timeout_seconds=-1)
    cp.connect(project.id, c.id, 5)
    cp.advance(WEEK)
    assert c.current_state == "active" and c.suspended_at is None
    assert not ops_of(cp, c, "suspend_compute")


def test_every_connection_resets_the_countdown():
    cp = control_plane()
    project, c = running_compute(cp)
    last = 0.0
    for k in range(1, 19):  # a one-second connection every 200 s for an hour
        cp.run_until(200.0 * k)
        assert c.current_state == "active"
        cp.connect(project.id, c.id, 1)
        last = cp.now
    assert not ops_of(cp, c, "suspend_compute")
    _suspends_at(cp, c, last + 1 + 300)


def test_a_long_session_keeps_the_compute_on_until_it_ends():
    cp = control_plane()
    project, c = running_compute(cp, suspend_timeout_seconds=60)
    cp.run_until(10)
    cp.connect(project.id, c.id, 1000)  # open 10..1010
    cp.run_until(20)
    cp.connect(project.id, c.id, 5)  # the later arrival ends sooner: the countdown waits for both
    _suspends_at(cp, c, 1010 + 60)


def test_a_connection_to_an_idle_compute_starts_it_and_waits_for_the_start():
    cp = control_plane()
    project, c = running_compute(cp, suspend_timeout_seconds=60)
    cp.run_until(500)
    assert c.current_state == "idle"
    assert cp.connect(project.id, c.id, 30) == ["waiting"]
    starts = ops_of(cp, c, "start_compute")
    assert len(starts) == 2 and starts[-1].created_at == 500 and starts[-1].status == "running"
    assert c.pending_state == "active"
    cp.run_until(500 + COLD + 0.01)
    assert c.current_state == "active" and starts[-1].status == "finished"
    wake = cp.recorder.wakes[-1]
    assert (wake.compute_id, wake.cause, wake.at_s) == (c.id, "connection", 500)
    assert wake.wait_s == pytest.approx(COLD)
    rec = cp.recorder.connections[-1]
    assert rec.outcome == Outcome.OK and rec.cold and rec.wait_s == pytest.approx(COLD)
    assert c.stats.cold_starts == 1
    # the session runs COLD..COLD+30 after the arrival, then the countdown
    _suspends_at(cp, c, 500 + COLD + 30 + 60)


def test_connections_arriving_while_it_starts_wait_for_the_same_start():
    cp = control_plane()
    project, c = running_compute(cp, suspend_timeout_seconds=60)
    cp.run_until(500)
    cp.connect(project.id, c.id, 30)
    cp.run_until(501)
    assert cp.connect(project.id, c.id, 30, count=3) == ["waiting"] * 3
    assert len(ops_of(cp, c, "start_compute")) == 2
    cp.run_until(503)
    waits = [r.wait_s for r in cp.recorder.connections[-4:]]
    assert waits == pytest.approx([COLD, COLD - 1, COLD - 1, COLD - 1])


def test_check_availability_wakes_an_idle_compute_and_costs_compute_time():
    every = 3600.0
    runs = {}
    for checks in (None, every):
        cp = control_plane(check_availability_every_s=checks)
        project, c = running_compute(cp, suspend_timeout_seconds=60)
        cp.run_until(3 * every + 500)
        runs[checks] = (cp, c)
    cp, c = runs[every]
    checks = ops_of(cp, c, "check_availability")
    assert [o.created_at for o in checks] == pytest.approx([every, 2 * every, 3 * every])
    assert all(o.status == "finished" for o in checks)
    woken = [w for w in cp.recorder.wakes if w.cause == "check_availability"]
    assert [w.at_s for w in woken] == [every, 2 * every, 3 * every]
    assert c.current_state == "idle"
    quiet_cp, quiet = runs[None]
    assert not ops_of(quiet_cp, quiet, "check_availability")
    quiet_cp.finish()
    cp.finish()
    # on (init, then active) from 0 to ACTIVE_AT + 60 + OP; each check adds the
    # countdown from its start's end plus the suspension (a starting compute is still idle)
    assert quiet.stats.active_s == pytest.approx(ACTIVE_AT + 60 + OP)
    assert c.stats.active_s == pytest.approx(ACTIVE_AT + 60 + OP + 3 * (60 + OP))


def test_check_availability_skips_branches_without_a_compute():
    cp = control_plane(check_availability_every_s=600.0)
    project = cp.create_project("p", with_compute=False).project
    cp.create_branch(project.id, "dev")
    cp.advance(5000)
    assert not [o for o in project.operations if o.action == "check_availability"]


def test_a_recreated_compute_gets_one_check_per_period_not_two():
    cp = control_plane(check_availability_every_s=600.0)
    project, c = running_compute(cp, suspend_timeout_seconds=-1)
    cp.delete_compute(project.id, c.id)
    cp.advance(5)
    again, _ = cp.create_compute(project.id, c.branch_id, "read_write", suspend_timeout_seconds=-1)
    cp.run_until(3000)
    checks = [o for o in project.operations if o.action == "check_availability"]
    assert [o.created_at for o in checks] == pytest.approx([600.0, 1200.0, 1800.0, 2400.0])
    assert all(o.endpoint_id == again.id for o in checks[1:])


def test_a_compute_moved_to_a_branch_without_one_is_checked_there():
    cp = control_plane(check_availability_every_s=600.0)
    project, c = running_compute(cp, suspend_timeout_seconds=-1)
    dev = cp.create_branch(project.id, "dev").branch
    cp.advance(5)
    cp.update_compute(project.id, c.id, branch_id=dev.id)
    cp.run_until(3000)
    checks = ops_of(cp, c, "check_availability")
    assert len(checks) == 4 and all(o.branch_id == dev.id for o in checks)

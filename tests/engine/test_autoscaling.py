"""The autoscaler: CU follows the load of open sessions, without restart or drop (the specification #3)."""

from __future__ import annotations

import pytest

from sim.engine import AutoscalerConfig
from tests.engine.support import control_plane, running_compute

DELAY = 10.0  # AutoscalerConfig.reaction_delay_s


@pytest.mark.parametrize(("sessions", "cpu", "goal"), [
    (10, 0.2, 3.0),   # 2 vCPU / 0.8 = 2.5 CU -> the next valid size, 3
    (2, 0.25, 1.0),   # 0.5 / 0.8 = 0.625 -> 1 (0.5 is too small)
    (1, 0.1, 0.25),   # 0.125 -> the minimum
    (30, 0.2, 4.0),   # 7.5 -> 8, clamped to the maximum 4
])
def test_cu_rises_to_the_goal_after_the_reaction_delay_and_falls_back(sessions, cpu, goal):
    cp = control_plane()
    project, c = running_compute(cp, autoscaling_limit_min_cu=0.25, autoscaling_limit_max_cu=4)
    ops_before = len(project.operations)
    t = cp.now
    cp.connect(project.id, c.id, 100, count=sessions, cpu=cpu)
    cp.run_until(t + DELAY - 0.01)
    assert c.cu == 0.25
    cp.run_until(t + DELAY + 0.01)
    assert c.cu == goal
    cp.run_until(t + 100 + DELAY - 0.01)
    assert c.cu == goal and c.runtime.open_connections(cp.now) == 0
    cp.run_until(t + 100 + DELAY + 0.01)
    assert c.cu == 0.25
    assert len(project.operations) == ops_before  # no restart, no operation at all
    assert c.stats.dropped == 0 and c.stats.restarts == 0
    assert c.current_state == "active"


def test_a_fixed_size_compute_does_not_autoscale():
    cp = control_plane()
    project, c = running_compute(cp, autoscaling_limit_min_cu=1, autoscaling_limit_max_cu=1)
    cp.connect(project.id, c.id, 100, count=20, cpu=0.5)
    cp.advance(50)
    assert c.cu == 1


def test_the_reaction_delay_is_configurable():
    cp = control_plane(autoscaler=AutoscalerConfig(reaction_delay_s=60.0))
    project, c = running_compute(cp, autoscaling_limit_min_cu=0.25, autoscaling_limit_max_cu=4)
    cp.connect(project.id, c.id, 300, count=4, cpu=0.5)
    cp.advance(59)
    assert c.cu == 0.25
    cp.advance(2)
    assert c.cu == 3.0


def test_the_size_shows_in_cu_seconds():
    cp = control_plane()
    project, c = running_compute(cp, autoscaling_limit_min_cu=0.25, autoscaling_limit_max_cu=4,
                                 suspend_timeout_seconds=-1)
    t = cp.now
    cp.connect(project.id, c.id, 100, count=10, cpu=0.2)
    cp.run_until(t + 200)
    cp.finish()
    # 0.25 CU all along except 3 CU from t + 10 to t + 110
    assert c.stats.cu_s == pytest.approx(0.25 * (t + 200 - 100) + 3.0 * 100)

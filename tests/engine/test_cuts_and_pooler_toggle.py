"""Sessions cut by a restart, a suspension or a deletion are recorded as cut; turning the
pooler on or off cuts nothing and keeps every open session counted against max_connections."""

from __future__ import annotations

import pytest

from sim.engine.records import Outcome
from tests.engine.support import actions, control_plane, running_compute


def rows_of(cp, c):
    return [r for r in cp.recorder.connections if r.compute_id == c.id]


@pytest.mark.parametrize("cut", ["restart", "suspend", "delete"])
def test_cut_sessions_are_recorded_as_dropped_with_the_time_they_had(cut: str) -> None:
    cp = control_plane()
    project, c = running_compute(cp)
    cp.advance(5 - cp.now)
    cp.connect(project.id, c.id, 1000, count=3)
    cp.connect(project.id, c.id, 2, count=1)  # ends before the cut: untouched
    cp.advance(5.0)
    getattr(cp, f"{cut}_compute")(project.id, c.id)
    cp.advance(400)
    rows = rows_of(cp, c)
    assert sorted(r.outcome for r in rows) == [Outcome.DROPPED] * 3 + [Outcome.OK]
    assert [r.duration_s for r in rows if r.outcome == Outcome.DROPPED] == [5.0] * 3
    assert c.stats.dropped == 3
    # no recorded session outlives the cut: the compute was not active after it
    assert max(r.arrival_s + r.wait_s + r.duration_s for r in rows) == pytest.approx(10.0)


@pytest.mark.parametrize("direct_s", [1000.0, 100.0])
def test_turning_the_pooler_on_keeps_the_direct_sessions_counted(direct_s: float) -> None:
    cp = control_plane()
    project, c = running_compute(cp, autoscaling_limit_min_cu=1, autoscaling_limit_max_cu=1)
    assert c.max_connections() == 450
    assert set(cp.connect(project.id, c.id, direct_s, count=450)) == {Outcome.OK}
    _, ops = cp.update_compute(project.id, c.id, pooler_enabled=True)
    assert actions(ops) == ["apply_config"]  # a configuration change: no restart, no cut
    rt = c.runtime
    assert rt.open_connections(cp.now) == 450 and c.stats.dropped == 0
    # every Postgres connection is held by a direct session: pooled clients wait for one
    toggled = cp.now
    outcomes = cp.connect(project.id, c.id, 60, count=405)
    if direct_s > cp.config.pool_queue_timeout_s:  # none frees in time: all give up
        assert set(outcomes) == {Outcome.QUEUE_TIMEOUT}
        assert len(rt.server_ends) == 0
    else:  # each takes the slot a direct session leaves
        assert set(outcomes) == {Outcome.OK} and c.stats.queued == 405
        began = [r.arrival_s + r.wait_s for r in rows_of(cp, c)[450:]]
        assert min(began) == toggled + direct_s  # when the direct sessions ended
    # at no instant do direct and pooled server sessions together pass max_connections
    rows = [r for r in rows_of(cp, c) if r.outcome == Outcome.OK]
    edges = sorted([(r.arrival_s + r.wait_s, 1) for r in rows]
                   + [(r.arrival_s + r.wait_s + r.duration_s, -1) for r in rows])
    level = peak = 0
    for _, step in edges:
        level += step
        peak = max(peak, level)
    assert peak == 450


def test_turning_the_pooler_off_counts_the_pooled_sessions() -> None:
    cp = control_plane()
    project, c = running_compute(cp, autoscaling_limit_min_cu=1, autoscaling_limit_max_cu=1,
                                 pooler_enabled=True)
    pool = c.runtime.pool_size
    assert set(cp.connect(project.id, c.id, 1000, count=pool)) == {Outcome.OK}
    cp.update_compute(project.id, c.id, pooler_enabled=False)
    assert c.runtime.open_connections(cp.now) == pool
    free = 450 - pool
    outcomes = cp.connect(project.id, c.id, 60, count=free + 5)
    assert outcomes.count(Outcome.OK) == free
    assert outcomes.count(Outcome.REFUSED_TOO_MANY) == 5

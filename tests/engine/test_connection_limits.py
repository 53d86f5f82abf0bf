"""max_connections, the pooler and the local disk (the specification, Limits; SQLSTATE 53300 / 53100)."""

from __future__ import annotations

import pytest

from sim.engine.records import Outcome
from sim.rules.connections import POOLER_MAX_CLIENTS
from tests.engine.support import GIB, control_plane, running_compute


@pytest.mark.parametrize(("cu", "limit"), [(0.25, 112), (0.5, 225), (1, 450), (9, 4000)])
def test_direct_connections_beyond_max_connections_are_refused_with_53300(cu, limit):
    cp = control_plane()
    project, c = running_compute(cp, autoscaling_limit_min_cu=cu, autoscaling_limit_max_cu=cu)
    outcomes = cp.connect(project.id, c.id, 100, count=limit + 20)
    assert outcomes == [Outcome.OK] * limit + [Outcome.REFUSED_TOO_MANY] * 20
    assert Outcome.REFUSED_TOO_MANY.endswith("53300")
    assert c.runtime.open_connections(cp.now) == limit
    assert c.stats.sessions == limit and c.stats.refused == 20
    assert c.stats.peak_connections == limit
    refused = [r for r in cp.recorder.connections if r.outcome == Outcome.REFUSED_TOO_MANY]
    assert len(refused) == 20
    cp.advance(100.5)  # the sessions end: room again
    assert cp.connect(project.id, c.id, 10, count=limit) == [Outcome.OK] * limit


def test_autoscaling_takes_max_connections_from_the_maximum_size():
    cp = control_plane()
    project, c = running_compute(cp, autoscaling_limit_min_cu=0.25, autoscaling_limit_max_cu=1)
    outcomes = cp.connect(project.id, c.id, 100, count=451)
    assert outcomes.count(Outcome.OK) == 450


def test_pooled_clients_beyond_the_pool_wait_in_the_queue():
    cp = control_plane()
    project, c = running_compute(cp, pooler_enabled=True, pool_size=2)
    t = cp.now
    assert cp.connect(project.id, c.id, 100, count=3) == [Outcome.OK] * 3
    assert c.stats.queued == 1 and c.stats.queue_wait_s == pytest.approx(100)
    waits = [r.wait_s for r in cp.recorder.connections[-3:]]
    assert waits == pytest.approx([0, 0, 100])
    assert c.runtime.open_connections(t) == 3
    cp.run_until(t + 150)
    assert c.runtime.open_connections(cp.now) == 1  # the queued client's session: 100..200


def test_a_client_that_would_wait_past_the_queue_timeout_gives_up():
    cp = control_plane(pool_queue_timeout_s=120.0)
    project, c = running_compute(cp, pooler_enabled=True, pool_size=2)
    outcomes = cp.connect(project.id, c.id, 200, count=3)
    assert outcomes == [Outcome.OK, Outcome.OK, Outcome.QUEUE_TIMEOUT]
    assert c.stats.queue_timeouts == 1 and c.stats.sessions == 2


def test_the_pooler_admits_10000_clients_and_refuses_the_next():
    cp = control_plane()
    project, c = running_compute(cp, pooler_enabled=True)  # 0.25..2 CU: pool of 90% of 901
    first = cp.connect(project.id, c.id, 1, count=POOLER_MAX_CLIENTS)
    assert first.count(Outcome.OK) == POOLER_MAX_CLIENTS == 10_000
    assert cp.connect(project.id, c.id, 1) == [Outcome.REFUSED_POOLER_FULL]
    assert c.stats.refused_pooler_full == 1 and c.stats.refused == 0  # not a 53300


def _temp(cp, c, gib):
    rt = c.runtime
    outcome = rt.connect(cp.now, 100.0, 0.0, 0.0, gib * GIB)
    rt.arm()
    return outcome


@pytest.mark.parametrize("max_cu", [0.25, 1])
def test_temporary_files_beyond_the_local_disk_fail_with_53100(max_cu):
    cp = control_plane()
    _, c = running_compute(cp, autoscaling_limit_min_cu=0.25, autoscaling_limit_max_cu=max_cu)
    assert [_temp(cp, c, 5) for _ in range(4)] == [Outcome.OK] * 4  # 20 GiB: exactly full
    assert _temp(cp, c, 0.001) == Outcome.DISK_FULL
    assert Outcome.DISK_FULL.endswith("53100") and c.stats.disk_full == 1
    cp.advance(100.5)  # the sessions end and free their files
    assert _temp(cp, c, 15) == Outcome.OK
    assert _temp(cp, c, 15) == Outcome.DISK_FULL


def test_the_local_disk_grows_with_the_maximum_size():
    cp = control_plane()
    _, c = running_compute(cp, autoscaling_limit_min_cu=0.25, autoscaling_limit_max_cu=2)
    assert [_temp(cp, c, 15), _temp(cp, c, 15)] == [Outcome.OK] * 2  # 30 GiB at 2 CU
    assert _temp(cp, c, 1) == Outcome.DISK_FULL

"""One seed, one history: the same seed gives identical rows, another seed different ones."""

from __future__ import annotations

from sim.engine import ControlPlane, EngineConfig
from sim.engine.feed import session_feed
from sim.rules.errors import ApiError
from sim.workload import Distribution, Poisson, SessionModel

DAY = 86_400.0


def run(seed: int):
    cp = ControlPlane(EngineConfig(operation_failure_rate=0.05, check_availability_every_s=3600.0,
                                   detach_after_s=6 * 3600.0, archive_after_s=8 * 3600.0),
                      seed=seed)
    created = cp.create_project("shop", key="shop[0]", default_endpoint={
        "autoscaling_limit_min_cu": 0.25, "autoscaling_limit_max_cu": 4, "pooler_enabled": True})
    project = created.project
    dev = cp.create_branch(project.id, "dev", endpoints=[
        {"type": "read_write", "suspend_timeout_seconds": 60}], key="shop[0].dev")
    replica, _ = cp.create_compute(project.id, created.branch.id, "read_only", key="shop[0].ro")
    workloads = [
        (created.computes[0], Poisson(120.0), SessionModel(Distribution.lognormal(20, 1.0), 0.05)),
        (dev.computes[0], Poisson(3.0), SessionModel(Distribution.exponential(60))),
        (replica, Poisson(20.0), SessionModel(Distribution.fixed(5))),
    ]
    for compute, arrivals, sessions in workloads:
        feed = session_feed(arrivals, sessions, cp.streams.fresh(f"arrivals/{compute.key}"),
                            cp.streams.fresh(f"sessions/{compute.key}"), 0.0, DAY)
        compute.runtime.attach_workload(feed)
    cp.run_until(DAY / 2)
    cp.publish_release("v2")
    try:
        cp.update_compute(project.id, dev.computes[0].id, autoscaling_limit_max_cu=2)
    except ApiError as err:  # an operation of the compute is running: refused, also seeded
        assert err.status == 423
    cp.run_until(DAY)
    return cp.result("determinism", DAY, 0.16)


def rows(result):
    return (result.computes, result.operations, result.intervals, result.connections, result.wakes)


def test_the_same_seed_gives_identical_rows():
    a, b = run(11), run(11)
    assert len(a.connections) > 1000 and len(a.operations) > 50
    assert any(o.failures_count for o in a.operations)
    assert rows(a) == rows(b)


def test_another_seed_gives_different_rows():
    a, b = run(11), run(12)
    assert a.connections != b.connections
    assert [o.id for o in a.operations] != [o.id for o in b.operations]
    assert [c.compute_id for c in a.computes] != [c.compute_id for c in b.computes]

"""What is billed: CU x time while a compute is active (docs/model.md, Billing).

A start from idle is not billed: the compute is billed from the instant it is
active. A suspension is billed until it ends (Postgres runs until it stops).
"""

from __future__ import annotations

import pytest

from tests.engine.support import COLD, OP, control_plane, running_compute


def test_a_wake_is_billed_from_the_instant_the_compute_is_active() -> None:
    cp = control_plane()
    project, c = running_compute(cp, suspend_timeout_seconds=60,
                                 autoscaling_limit_min_cu=1, autoscaling_limit_max_cu=1)
    cp.advance(200)
    assert c.current_state == "idle"
    before_s, before_cu_s = c.stats.active_s, c.stats.cu_s
    woke = cp.now
    cp.connect(project.id, c.id, 10)
    cp.advance(COLD + 10 + 60 + OP + 5)  # started, one session, countdown, suspended
    assert c.current_state == "idle"
    cp.finish()
    (started,) = [w for w in cp.recorder.wakes if w.cause == "connection"]
    assert started.wait_s == pytest.approx(COLD)
    billed = c.stats.active_s - before_s
    # on from the end of the cold start to the end of suspend_compute: COLD not included
    assert billed == pytest.approx(10 + 60 + OP)
    assert c.stats.cu_s - before_cu_s == pytest.approx(1.0 * billed)
    on = [iv for iv in cp.recorder.intervals if iv.state != "idle" and iv.start_s >= woke]
    assert on[0].start_s == pytest.approx(woke + COLD)

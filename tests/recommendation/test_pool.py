"""The pooler's queue: the measured wait p99 against Erlang-C's, and a queue-wait target."""

from __future__ import annotations

import math

import pytest

from sim.metrics.theory import erlang_c
from sim.recommendation import recommend
from tests.recommendation.helpers import poisson_fleet

pytestmark = pytest.mark.slow


def test_queue_wait_p99_matches_erlang_c_and_binds() -> None:
    # a pool of 2 servers, 1 Erlang offered (0.1 connections a second, 10 s sessions)
    doc = poisson_fleet(360, 10, count=4, duration="12h", timeout=-1, pooler=True)
    doc["projects"][0]["branches"][0]["computes"][0]["pool_size"] = 2
    theory = 10 / (2 - 1.0) * math.log(erlang_c(2, 1.0) / 0.01)  # 35 s
    rec = recommend(doc, ["queue_wait_p99=60s"], ["timeout=never", "cu=0.25", "pooler=true,false"],
                    replications=3, workers=0)
    steady = rec.templates["steady"]
    pooled = next(c for c in steady.candidates if c.choice.pooler_enabled)
    mean, low, high = pooled.interval("queue_wait_p99_s")
    assert pooled.prediction.figures["queue_wait_p99_s"] == pytest.approx(theory, rel=1e-6)
    assert abs(mean - theory) < 0.25 * theory, (mean, theory)
    # direct connections never queue (and 1 Erlang is far below 112 connections): cheaper
    # or equal, and the queue target holds trivially
    assert steady.recommended is not None
    assert steady.recommended.interval("queue_wait_p99_s") is None or \
        steady.recommended.upper("queue_wait_p99_s") <= 60

"""The pooler's queue against Erlang-C: M/M/k with k = pool_size.

Exponential sessions, Poisson arrivals, rho = lam E[D] / k < 1, a queue
timeout far beyond any wait and scale to zero off. Each client takes the
server connection that frees first, in arrival order: the mean wait of all
clients (those served at once count 0) is Erlang-C's. Wrong model beside
each row: a pool one larger (k + 1).
"""

from __future__ import annotations

import pytest

from sim.testing.theory import erlang_c_wait
from tests.validation.harness import GRID_ERLANG_C, judge, run_compute, session_of, zero_config

pytestmark = pytest.mark.slow

MEAN = 10.0
ARRIVALS = 300_000


@pytest.mark.parametrize(("k", "rho"), GRID_ERLANG_C,
                         ids=[f"k{g[0]}-rho{g[1]:g}" for g in GRID_ERLANG_C])
def test_queue_wait_matches_erlang_c(k, rho):
    lam = rho * k / MEAN
    horizon = ARRIVALS / lam
    run = run_compute(per_second=lam, session=session_of("exponential", MEAN), timeout=-1,
                      cu=1.0, pooler=True, pool_size=k, horizon=horizon, warmup=2000 * MEAN,
                      seed=300 + GRID_ERLANG_C.index((k, rho)),
                      config=zero_config(pool_queue_timeout_s=1e12))
    conns = run.connections()
    assert conns["ok"].all()
    arrivals = run.per_batch_count(conns["arrival"])
    waited = run.per_batch_count(conns["arrival"], conns["wait"])
    row = judge("pool wait (Erl-C)", f"k={k} rho={rho:g} E[D]={MEAN:g}",
                run.estimate(waited / arrivals), erlang_c_wait(k, lam, MEAN),
                ("k+1", erlang_c_wait(k + 1, lam, MEAN)))
    assert abs(row.deviation) <= 1, f"{row.observed:.5g} vs {row.theory:.5g}"

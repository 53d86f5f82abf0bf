"""Direct connections against Erlang-B, and Little's law, at three fixed sizes.

c = max_connections of the size (the specification's table), offered load a = lam E[D]
near c, scale to zero off (-1) so the compute never stops. The engine is an
M/G/c/c loss system: the refused share is B(c, a) whatever the law of D,
and mean open connections is a (1 - B(c, a)).
Wrong models beside each row: max_connections off by one (B(c - 1, a)), and
refused connections counted as open (a).
"""

from __future__ import annotations

import numpy as np
import pytest

from sim.rules.connections import max_connections_fixed
from sim.testing.theory import carried_load, erlang_b
from tests.validation.harness import GRID_ERLANG_B, judge, run_compute, session_of

pytestmark = pytest.mark.slow

MEAN = 60.0
#: in mean session lengths; longer at the smallest size, where an off-by-one in
#: max_connections (B(c - 1, a)) must lie outside the interval
HORIZON = {112: 6000 * MEAN, 225: 1200 * MEAN, 450: 1200 * MEAN}
WARMUP = 20 * MEAN
PROBES = 40_000


@pytest.mark.parametrize(("cu", "law", "rho"), GRID_ERLANG_B,
                         ids=[f"{g[0]:g}CU-{g[1]}-rho{g[2]:g}" for g in GRID_ERLANG_B])
def test_refusals_match_erlang_b(cu, law, rho):
    c = max_connections_fixed(cu)
    a = rho * c
    lam = a / MEAN
    run = run_compute(per_second=lam, session=session_of(law, MEAN), timeout=-1, cu=cu,
                      horizon=HORIZON[c], warmup=WARMUP, seed=200 + GRID_ERLANG_B.index((cu, law, rho)),
                      probe_every=(HORIZON[c] - WARMUP) / PROBES)
    assert run.compute.max_connections() == c
    point = f"{cu:g} CU c={c} {law} a={a:g}"
    conns = run.connections()
    assert (conns["ok"] | conns["refused"]).all()
    assert run.compute.stats.suspends == 0 and run.compute.stats.dropped == 0
    rows = []

    arrivals = run.per_batch_count(conns["arrival"])
    refused = run.per_batch_count(conns["arrival"], conns["refused"])
    rows.append(judge("refused share (Erl-B)", point, run.estimate(refused / arrivals),
                      erlang_b(c, a), ("B(c-1,a)", erlang_b(c - 1, a))))

    ok = conns["ok"]
    begin = conns["arrival"][ok] + conns["wait"][ok]
    held = run.per_batch_overlap(begin, begin + conns["duration"][ok]) / run.batch_length
    rows.append(judge("little (rows)", point, run.estimate(held), carried_load(lam, MEAN, c),
                      ("a", a)))

    at = np.array([p[0] for p in run.probes])
    count = np.array([p[1] for p in run.probes], float)
    rows.append(judge("little (engine count)", point,
                      run.estimate(run.per_batch_count(at, count) / run.per_batch_count(at)),
                      carried_load(lam, MEAN, c), ("a", a)))

    failed = [f"{r.check}: {r.observed:.5g} vs {r.theory:.5g} ({r.deviation:+.2f} CI)"
              for r in rows if abs(r.deviation) > 1]
    assert not failed, "; ".join(failed)

"""Scale to zero against its closed form (the design notes, checks that keep the model honest).

With cold start and operation durations 0, Poisson arrivals at lam, sessions
of mean E[D] and timeout T, the engine's compute is on exactly while an
M/G/inf queue of stays D + T is not empty (see sim.testing.theory), so

- the share of connections that find it suspended is exp(-lam (T + E[D])),
- the share of time it is on is 1 - exp(-lam (T + E[D])),
- mean open connections is lam E[D] (Little; nobody is refused here),

for any law of D: exponential, lognormal and fixed are all checked. The
wrong model printed beside each row is "the countdown runs from the last
arrival only" (exp(-lam T)), or "connections that find it suspended are lost".
"""

from __future__ import annotations

import numpy as np
import pytest

from sim.testing.theory import carried_load, p_suspended, share_on
from tests.validation.harness import GRID_SCALE_TO_ZERO, judge, run_compute, session_of

pytestmark = pytest.mark.slow

ARRIVALS = 24_000  # per grid point
PROBES = 100_000


@pytest.mark.parametrize(("law", "timeout", "mean", "x"), GRID_SCALE_TO_ZERO,
                         ids=[f"{g[0]}-T{g[1]}-ED{g[2]:g}-x{g[3]:g}" for g in GRID_SCALE_TO_ZERO])
def test_scale_to_zero_matches_closed_form(law, timeout, mean, x):
    lam = x / (timeout + mean)
    horizon = ARRIVALS / lam
    warmup = 30 * (timeout + mean)
    seed = GRID_SCALE_TO_ZERO.index((law, timeout, mean, x))
    run = run_compute(per_second=lam, session=session_of(law, mean), timeout=timeout,
                      horizon=horizon, warmup=warmup, seed=100 + seed,
                      probe_every=(horizon - warmup) / PROBES)
    point = f"{law} T={timeout} E[D]={mean:g} lam={lam * 3600:.4g}/h"
    conns = run.connections()
    assert conns["ok"].all(), "nobody may be refused or dropped at this load"
    rows = []

    arrivals = run.per_batch_count(conns["arrival"])
    cold = run.per_batch_count(conns["arrival"], conns["cold"])
    rows.append(judge("suspended share", point, run.estimate(cold / arrivals),
                      p_suspended(lam, timeout, mean),
                      ("exp(-lam T)", float(np.exp(-lam * timeout)))))

    starts, ends = run.on_intervals()
    on = run.per_batch_overlap(starts, ends) / run.batch_length
    rows.append(judge("time on", point, run.estimate(on), share_on(lam, timeout, mean),
                      ("1-exp(-lam T)", float(1 - np.exp(-lam * timeout)))))

    begin = conns["arrival"] + conns["wait"]
    held = run.per_batch_overlap(begin, begin + conns["duration"]) / run.batch_length
    lost_cold = carried_load(lam, mean) * (1 - p_suspended(lam, timeout, mean))
    rows.append(judge("little (rows)", point, run.estimate(held), carried_load(lam, mean),
                      ("cold ones lost", lost_cold)))

    at = np.array([p[0] for p in run.probes])
    count = np.array([p[1] for p in run.probes], float)
    rows.append(judge("little (engine count)", point,
                      run.estimate(run.per_batch_count(at, count) / run.per_batch_count(at)),
                      carried_load(lam, mean), ("cold ones lost", lost_cold)))

    failed = [f"{r.check}: {r.observed:.5g} vs {r.theory:.5g} ({r.deviation:+.2f} CI)"
              for r in rows if abs(r.deviation) > 1]
    assert not failed, "; ".join(failed)

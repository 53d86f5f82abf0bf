"""Scale to zero with a nonzero cold start and suspension, against its closed form.

Poisson arrivals at lam, sessions of fixed length D, idle timeout T (S = T + D),
suspend_compute lasting V (fixed), start_compute lasting W (exponential). One
cycle begins when a suspension begins: the arrivals during V wait (lam V), the
compute then idles until the next arrival if none came (e^-lam V), and the
arrivals during the start wait too (lam E[W]); once active, each arrival keeps
it up for S more, so the active stretch serves e^(lam S) - 1 warm arrivals on
average. Hence

    P(cold) = (lam V + e^-lam V + lam E[W]) / (e^(lam S) - 1 + lam V + e^-lam V + lam E[W]).

The runs go through `run_scenario`, so the compute kernel (the kernel) is
what is checked. Each of the fleet's computes is an independent replication.
The wrong model printed beside each point is the zero-duration formula e^-lam S.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from sim.scenario.loader import parse_scenario
from sim.scenario.runner import run_scenario
from sim.testing.theory import mean_estimate
from tests.validation.harness import Row, judge

pytestmark = pytest.mark.slow

COMPUTES = 40
DAYS = 20
#: (arrivals per hour, T, D, V, E[W])
GRID = [(20.0, 300, 30.0, 2.0, 5.0), (20.0, 300, 30.0, 60.0, 30.0), (6.0, 120, 60.0, 20.0, 45.0)]


def p_cold(lam: float, timeout: float, d: float, v: float, w: float) -> float:
    cold = lam * v + math.exp(-lam * v) + lam * w
    return cold / (math.exp(lam * (timeout + d)) - 1 + cold)


def scenario(per_hour: float, timeout: int, d: float, v: float, w: float, seed: int) -> dict:
    return {
        "name": "cold-start", "seed": seed, "duration": f"{DAYS}d",
        "engine": {"cold_start": {"dist": "exponential", "mean_s": w},
                   "operation_durations": {"suspend_compute": {"dist": "fixed", "mean_s": v}},
                   "detach_after": None, "archive_after": None},
        "projects": [{"name": "p", "count": COMPUTES, "branches": [{"name": "main", "computes": [{
            "type": "read_write", "size": {"cu": 1}, "suspend_timeout_seconds": timeout,
            "workload": {"arrivals": {"kind": "poisson", "per_hour": per_hour},
                         "session": {"dist": "fixed", "mean_s": d}}}]}]}],
    }


@pytest.mark.parametrize("point", GRID, ids=[f"lam{g[0]:g}-T{g[1]}-D{g[2]:g}-V{g[3]:g}-W{g[4]:g}"
                                             for g in GRID])
def test_cold_share_matches_closed_form_with_cold_start(point) -> None:
    per_hour, timeout, d, v, w = point
    result = run_scenario(parse_scenario(scenario(*point, seed=7 + GRID.index(point))))
    assert result.roads == {"kernel": COMPUTES}
    warmup = 3600.0  # leave out the first hour: every compute starts active and empty
    cold: dict[str, list[bool]] = {row.compute_id: [] for row in result.computes}
    for c in result.connections:
        if c.arrival_s >= warmup:
            cold[c.compute_id].append(c.cold)
    shares = [float(np.mean(flags)) for flags in cold.values()]
    lam = per_hour / 3600.0
    theory = p_cold(lam, timeout, d, v, w)
    row: Row = judge("cold share (V, W > 0)", f"lam={per_hour:g}/h T={timeout} D={d:g} V={v:g} "
                     f"E[W]={w:g}", mean_estimate(shares), theory,
                     ("e^-lam S", math.exp(-lam * (timeout + d))))
    assert abs(row.deviation) <= 1, f"{row.observed:.5g} vs {theory:.5g} ({row.deviation:+.2f} CI)"

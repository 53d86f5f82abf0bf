"""On dask or in this process, the same seeds give the same recommendation, figure for figure."""

from __future__ import annotations

import pytest

from sim.recommendation import recommend
from tests.recommendation.helpers import poisson_fleet

pytestmark = pytest.mark.slow


def test_dask_and_in_process_agree() -> None:
    doc = poisson_fleet(30, 20, count=3, duration="6h")
    doc["projects"].append(dict(doc["projects"][0], name="quiet", count=2,
                                branches=[{"name": "main", "computes": [
                                    dict(doc["projects"][0]["branches"][0]["computes"][0],
                                         workload={"arrivals": {"kind": "poisson", "per_hour": 4},
                                                   "session": {"dist": "exponential",
                                                               "mean_s": 20}})]}]))
    args = (doc, ["cold_starts_per_1000=300", "quiet.cold_starts_per_1000=900"],
            ["timeout=60,300,900", "cu=0.25", "pooler=false"])
    local = recommend(*args, replications=2, workers=0)
    remote = recommend(*args, replications=2, workers=1)
    for name in ("steady", "quiet"):
        a, b = local.templates[name], remote.templates[name]
        assert a.recommended is not None and b.recommended is not None
        assert a.recommended.choice == b.recommended.choice
        assert a.recommended.runs == b.recommended.runs
    assert (local.runs, local.rounds) == (remote.runs, remote.rounds)

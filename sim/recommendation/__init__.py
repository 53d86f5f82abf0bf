"""Recommendations: the cheapest settings per template that meet a service level.

    rec = recommend("scenarios/tenants.yaml", ["cold_starts_per_1000=20", "refused=0.1%"])
    write_recommendation(rec, "results/tenants-recommend")

`targets` parses the service level, `space` builds each template's choices,
`theory` prices and prunes them with closed forms, `search` confirms the
cheapest by simulation on dask, `output` writes the table, JSON, chart,
page and the recommended scenario file.
"""

from sim.recommendation.output import write_recommendation
from sim.recommendation.search import Recommendation, recommend
from sim.recommendation.targets import RecommendError, Target, parse_target

__all__ = ["Recommendation", "RecommendError", "Target", "parse_target", "recommend",
           "write_recommendation"]

"""`sim`: a discrete-event simulator of a serverless-Postgres control plane.

    import sim
    scenario = sim.load_scenario("scenarios/quickstart.yaml")
    result = sim.run_scenario(scenario)                 # or sim.run_fleet(path, workers=4)
    tables = sim.frames(result)
    totals = sim.summary(tables, result)
    print(sim.summary_table(totals))
    swept = sim.run_sweep(path, {"computes.suspend_timeout_seconds": [60, 300, -1]}, replications=5)
    rec = sim.recommend(path, ["cold_starts_per_1000=20", "refused=0.1%"])   # cheapest settings

What they return or raise: `Scenario`, `RunResult`, `SweepResult`,
`Recommendation`, and the errors `ScenarioError` (a bad file: one line per
problem), `ScenarioRunError`, `SweepError`, `RecommendError`; each importable
from `sim` and documented on its own (`help(sim.Recommendation)`).

Names are imported on first use, so `import sim` stays cheap for the command
line (`sim limits` never loads pandas, `sim validate` never loads dask).
"""

from __future__ import annotations

import importlib
from typing import Any

#: what a planner calls -> the module that defines it; `__all__`, and what help(sim) documents
_CALLS: dict[str, str] = {
    # scenarios
    "load_scenario": "sim.scenario.loader",
    "parse_scenario": "sim.scenario.loader",
    # runs
    "run_scenario": "sim.scenario.runner",
    "run_fleet": "sim.sweep.fleet",
    "open_client": "sim.processes.cluster",
    # results
    "frames": "sim.metrics",
    "summary": "sim.metrics",
    "summary_table": "sim.metrics",
    "write_results": "sim.metrics",
    "read_results": "sim.metrics",
    "draw_charts": "sim.metrics",
    "write_report": "sim.metrics.report",
    # sweeps
    "run_sweep": "sim.sweep",
    "write_sweep": "sim.sweep",
    "replication_seed": "sim.sweep",
    # recommendations
    "recommend": "sim.recommendation.search",
    "write_recommendation": "sim.recommendation.output",
    "recommendation_tables": "sim.recommendation.output",
    # closed forms to draw beside simulated points
    "erlang_b": "sim.metrics.theory",
    "erlang_c": "sim.metrics.theory",
    "p_suspended": "sim.metrics.theory",
    "max_connections_fixed": "sim.rules.connections",
    "default_pool_size": "sim.rules.connections",
}

#: what those calls return or raise: importable from here (`sim.Scenario`), documented on
#: their own (`help(sim.Scenario)`): a pydantic model or an exception would fill help(sim)
#: with hundreds of lines of inherited methods
_TYPES: dict[str, str] = {
    "Scenario": "sim.scenario.schema",
    "ScenarioError": "sim.scenario.loader",
    "RunResult": "sim.engine.records",
    "ScenarioRunError": "sim.scenario.runner",
    "SweepResult": "sim.sweep",
    "SweepError": "sim.sweep",
    "Recommendation": "sim.recommendation.search",
    "RecommendError": "sim.recommendation.targets",
}

_EXPORTS = {**_CALLS, **_TYPES}

__all__ = sorted(_CALLS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'sim' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))

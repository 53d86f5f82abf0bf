"""The warm-up: a scenario describes a fleet that already exists.

A run creates the fleet a warm-up before the scenario's `start` and lets its own
workload move it until then; nothing of the warm-up is in any figure, table or
chart (`sim.engine.first_instant`). Without it every compute would begin switched
on at the first instant, and that instant would be the run's peak.

By default (`warm_up: auto`) the warm-up is as long as a compute's state remembers
its past: the longest time a compute stays on after its last session began (its
scale-to-zero timeout plus a session of the 99.9th percentile, or three mean
lengths if that is shorter: see `_session_memory`), with the
autoscaler's reaction delay and the pooler's queue timeout on top, at least an
hour and rounded up to whole hours. After that, whether a compute is on, its size
and its open sessions depend on the workload alone. The storage lifecycle's
idle clocks (detach, archive: days) are not waited for: projects begin attached
and branches unarchived, their idle clocks running from the warm-up's start.
"""

from __future__ import annotations

import math

from sim.rules.timeouts import effective_suspend_timeout
from sim.scenario.schema import Scenario
from sim.workload import Delayed, Distribution

HOUR_S = 3600.0
SESSION_QUANTILE = 0.999
SESSION_MEANS = 3.0


def default_warm_up_s(scenario: Scenario) -> float:
    """`warm_up: auto` of `scenario`, in seconds (see the module's docstring)."""
    engine = scenario.engine
    memory = 0.0
    for template in scenario.projects:
        for branch in template.branches:
            for compute in branch.computes:
                timeout = effective_suspend_timeout(compute.suspend_timeout_seconds)
                session = (_session_memory(compute.workload.session.to_distribution())
                           if compute.workload is not None else 0.0)
                memory = max(memory, (timeout or 0.0) + session)
    memory += engine.autoscaler.reaction_delay + engine.pool_queue_timeout
    return HOUR_S * max(1, math.ceil(memory / HOUR_S))


def _session_memory(lengths: Distribution) -> float:
    """How long a compute's open sessions remember the past: a session of the 99.9th
    percentile, but at most three mean lengths (after three, a busy compute's open
    sessions are within 5 % of their steady number, however long the tail)."""
    return min(lengths.quantile(SESSION_QUANTILE), SESSION_MEANS * lengths.mean_s)


def led_by_warm_up(scenario: Scenario, warm_up_s: float) -> Scenario:
    """`scenario` on the engine's clock, which starts `warm_up_s` before it: its scripted
    calls and releases as late, and as much longer."""
    if warm_up_s == 0:
        return scenario
    return scenario.model_copy(update={
        "duration": scenario.duration + warm_up_s,
        "actions": [a.model_copy(update={"at": a.at + warm_up_s}) for a in scenario.actions],
        "releases": [r.model_copy(update={"at": r.at + warm_up_s}) for r in scenario.releases],
    })


def arrivals_on_engine_clock(process, warm_up_s: float):
    """A compute's arrival process read on the engine's clock (None stays None)."""
    if process is None or warm_up_s == 0:
        return process
    return Delayed(process, warm_up_s)

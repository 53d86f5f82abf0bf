"""What the closed forms predict for one template under one choice, before anything runs.

Each compute's arrivals are cut into hours; each hour is treated as a
Poisson stream at that hour's mean rate r (quasi-stationary: exact for
Poisson arrivals, an approximation for daily cycles, best when the timeout
is short against an hour). With sessions of mean E[D], timeout T and a
mean cold start w:

- a connection finds the compute suspended with probability
  exp(-r (T + E[D] + w)) (scale to zero; the cold-start form adds the
  start's own length to the stay that keeps the compute on), and the
  compute is on (and billed) for the share 1 - exp(-r (T + E[D] + w));
- cold starts per 1,000 sessions weigh each hour by its arrivals;
- direct connections are refused with Erlang-B B(c, r E[D]), c the
  compute's max_connections; pooled ones queue for a pool of k servers and
  wait longer than t with probability C(k, a) exp(-(k - a) t / E[D])
  (Erlang-C), both summed over hours by arrivals, so the busiest hours
  weigh most. An hour whose load reaches the pool never drains: the queue
  wait is then the pooler's queue timeout;
- the cold-start wait p99 is the p99 of the engine's cold-start law, and no
  wait at all when the template is expected to meet less than one cold start
  in the whole run (pruned at 5 % over its limit
  once hundreds of cold starts are expected: a sample p99 of that many draws
  of a known law lies close to the law's);
- an autoscaling compute runs at its mean CU goal, clipped to its range.

Periodic arrivals (a job every N seconds) meet a cold start each time when
N > T + E[D] + w, and never otherwise. Bursty arrivals take their mean rate
(their on-rate for the connection forms). Predictions only order and prune
the space: simulation decides.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from sim.engine.config import EngineConfig
from sim.metrics.theory import erlang_b, erlang_c
from sim.recommendation.space import Choice
from sim.recommendation.targets import Target
from sim.rules.connections import (
    POOLER_MAX_CLIENTS,
    AutoscalingConnections,
    default_pool_size,
    max_connections,
)
from sim.rules.sizes import RAM_GB_PER_CU, step_up
from sim.scenario.schema import ComputeSpec, ProjectSpec, Scenario
from sim.workload import Distribution
from sim.workload.arrivals import Bursty, Periodic

HOUR_S = 3600.0
QUANTILE = 0.99
#: pruning: a choice is dropped before simulation when theory puts a figure this far above
#: its limit (x limit, plus a small absolute slack); wider where the theory approximates
PRUNE_FACTOR = {True: 1.25, False: 2.0}
#: the cold-start wait p99 is the p99 of a known law: once a run holds this many cold
#: starts, its sample p99 lies within a few per cent of it, and a tighter margin prunes
MANY_WAKES = 500
WAKE_FACTOR = 1.05


@dataclass(frozen=True)
class Load:
    """One compute's workload, as the closed forms see it."""

    rates: np.ndarray  # mean arrivals per second of each hour of the run
    weights: np.ndarray  # seconds of the run in each hour (the last may be partial)
    mean_session_s: float
    cpu: float
    memory_gb: float
    peak_rate: float  # arrivals per second in the busiest stretch
    every_s: float | None  # periodic arrivals: the period
    exact: bool  # Poisson arrivals: the scale-to-zero forms are exact


@dataclass(frozen=True)
class Prediction:
    cost: float
    cu_hours: float
    sessions: float
    figures: dict[str, float | None]  # metric -> predicted value (None: never happens)
    exact: bool

    def meets(self, target: Target) -> bool:
        return target.met_by(self.figures.get(target.metric))

    def pruned_by(self, targets: list[Target]) -> list[Target]:
        """Targets this choice misses by more than the pruning margin."""
        out = []
        cold = self.figures.get("cold_starts_per_1000") or 0.0
        wakes = self.sessions * cold / 1000.0
        for t in targets:
            value = self.figures.get(t.metric)
            factor = PRUNE_FACTOR[self.exact]
            if t.metric == "wake_p99_s" and wakes >= MANY_WAKES:
                factor = WAKE_FACTOR
            if value is not None and value > t.limit * factor + _slack(t):
                out.append(t)
        return out


def _slack(target: Target) -> float:
    return {"cold_starts_per_1000": 0.5, "refused_share": 1e-4}.get(target.metric, 0.05)


def load_of(compute: ComputeSpec, scenario: Scenario) -> Load | None:
    process = compute.arrival_process(scenario.start)
    model = compute.session_model()
    if process is None or model is None:
        return None
    edges = np.arange(0.0, scenario.duration, HOUR_S)
    ends = np.minimum(edges + HOUR_S, scenario.duration)
    rates = np.array([process.mean_rate_per_s(a, b) for a, b in zip(edges, ends, strict=True)])
    peak = float(rates.max()) if len(rates) else 0.0
    every = None
    if isinstance(process, Bursty):
        peak = max(process.on_per_hour, process.off_per_hour) / HOUR_S
    if isinstance(process, Periodic):
        every = process.every_s
    w = compute.workload
    assert w is not None
    exact = type(process).__name__ == "Poisson"
    return Load(rates, ends - edges, model.duration.mean_s, w.cpu_per_session,
                w.memory_gb_per_session, peak, every, exact)


def quantile(dist: Distribution, q: float) -> float:
    if dist.mean_s == 0.0 or dist.dist.value == "fixed":
        return dist.mean_s
    if dist.dist.value == "exponential":
        return -dist.mean_s * math.log1p(-q)
    mu = math.log(dist.mean_s) - dist.sigma**2 / 2.0
    return math.exp(mu + dist.sigma * NormalDist().inv_cdf(q))


class TemplateModel:
    """The closed forms of one template: its computes' loads, priced under any choice."""

    def __init__(self, template: ProjectSpec, scenario: Scenario):
        self.template = template
        self.count = template.count
        # its plan's price; an allowance is left out of the estimate (the simulation bills it)
        self.price = scenario.pricing_of(template).per_cu_hour
        self.config: EngineConfig = scenario.engine_config()
        self.computes = [c for b in template.branches for c in b.computes]
        self.loads = [load_of(c, scenario) for c in self.computes]
        self.duration_h = scenario.duration / HOUR_S
        self.exact = all(ld is None or ld.exact for ld in self.loads)

    def predict(self, choice: Choice) -> Prediction:
        cold_start = self.config.cold_start
        w = cold_start.mean_s
        cu_hours = 0.0
        sessions = 0.0
        cold = 0.0
        refused = 0.0
        queue_tail: list[tuple[np.ndarray, np.ndarray, float, np.ndarray]] = []
        queue_capped = False
        for spec, load in zip(self.computes, self.loads, strict=True):
            if load is None:
                on = 0.0 if choice.timeout_s is not None else 1.0
                cu_hours += on * choice.min_cu * self.duration_h
                continue
            arrivals = load.rates * load.weights  # expected arrivals per hour
            sessions += float(arrivals.sum())
            p_cold = self._p_cold(choice, load, w)
            on = 1.0 - p_cold if choice.timeout_s is not None else np.ones_like(load.rates)
            cu_hours += float((on * self._cu(choice, load) * load.weights).sum()) / HOUR_S
            cold += float((arrivals * p_cold).sum())
            offered = load.rates * load.mean_session_s
            conns = max_connections(choice.min_cu, choice.max_cu,
                                    AutoscalingConnections(self.config.autoscaling_connections))
            if choice.pooler_enabled:
                k = spec.pool_size if spec.pool_size is not None and spec.pooler_enabled else \
                    default_pool_size(conns, self.config.pool_share)
                refused += float((arrivals * _blocking(POOLER_MAX_CLIENTS, offered)).sum())
                if (offered >= k).any():
                    queue_capped = True
                else:
                    waits = np.array([erlang_c(k, a) for a in offered])
                    decay = (k - offered) / max(load.mean_session_s, 1e-12)
                    queue_tail.append((arrivals, waits, 0.0, decay))
            else:
                refused += float((arrivals * _blocking(conns, offered)).sum())
        total = max(sessions, 1e-300)
        figures: dict[str, float | None] = {
            "cold_starts_per_1000": 1000.0 * cold / total if sessions else None,
            # fewer than one cold start expected in the whole run: no wait to speak of
            "wake_p99_s": quantile(cold_start, QUANTILE) if self.count * cold >= 0.5 else None,
            "refused_share": refused / total if sessions else None,
            "queue_wait_p99_s": (self.config.pool_queue_timeout_s if queue_capped else
                                 _queue_p99(queue_tail, total) if choice.pooler_enabled
                                 else None),
        }
        n = self.count
        return Prediction(n * cu_hours * self.price, n * cu_hours, n * sessions, figures,
                          self.exact)

    @staticmethod
    def _p_cold(choice: Choice, load: Load, w: float) -> np.ndarray:
        timeout = choice.timeout_s
        if timeout is None:
            return np.zeros_like(load.rates)
        stay = timeout + load.mean_session_s + w
        if load.every_s is not None:
            return np.full_like(load.rates, 1.0 if load.every_s > stay else 0.0)
        return np.exp(-load.rates * stay)

    def _cu(self, choice: Choice, load: Load) -> np.ndarray:
        if choice.fixed:
            return np.full_like(load.rates, choice.min_cu)
        a = load.rates * load.mean_session_s
        auto = self.config.autoscaler
        goal = np.maximum(a * load.cpu / auto.target_cpu_utilisation,
                          a * load.memory_gb / (RAM_GB_PER_CU * auto.target_memory_utilisation))
        stepped = np.array([step_up(float(g)) for g in goal])
        return np.clip(stepped, choice.min_cu, choice.max_cu)


def _blocking(c: int, offered: np.ndarray) -> np.ndarray:
    # far below the limit Erlang-B is 0 to machine precision: skip the recurrence
    return np.array([erlang_b(c, float(a)) if a > 0.5 * c else 0.0 for a in offered])


def _queue_p99(tail: list[tuple[np.ndarray, np.ndarray, float, np.ndarray]], total: float
               ) -> float:
    """The wait t with P(W > t) = 1 %, over every pooled compute's hours weighted by arrivals."""

    def beyond(t: float) -> float:
        return sum(float((n * c * np.exp(-d * t)).sum()) for n, c, _, d in tail) / total

    if beyond(0.0) <= 1.0 - QUANTILE:
        return 0.0
    lo, hi = 0.0, 1.0
    while beyond(hi) > 1.0 - QUANTILE:
        hi *= 2.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if beyond(mid) > 1.0 - QUANTILE else (lo, mid)
    return hi

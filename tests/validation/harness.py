"""Drive one compute under a Poisson workload and cut the run into batches.

Every closed-form check runs one long seeded run per grid point with cold
start and operation durations set to 0 (the formulas' assumptions), throws
away a warm-up, and splits the rest into BATCHES equal windows of simulated
time. Batch means give the standard error; the confidence level is chosen so
that the whole slow set, every grid point of every check together, raises a
false alarm less than once in a thousand runs of a correct engine (union
bound over REGISTRY_SIZE points, two-sided Student t with BATCHES - 1 df).

SIM_VALIDATION_SEED changes the base seed, to re-draw every run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sim.engine import ControlPlane, EngineConfig
from sim.engine.feed import session_feed
from sim.engine.model import Compute
from sim.engine.records import Outcome, RunResult
from sim.rules.operations import Action
from sim.testing.theory import Estimate, controlled_estimate
from sim.workload import Distribution, Poisson, SessionModel

BATCHES = 40

#: scale to zero: (session law, T, E[D], lam (T + E[D]))
GRID_SCALE_TO_ZERO = [
    (law, t, ed, x)
    for law in ("exponential", "lognormal1.5", "fixed")
    for t, ed, x in ((60, 30.0, 0.7), (300, 20.0, 1.2), (120, 120.0, 0.4))
]
#: direct connections: (CU, session law, offered load / max_connections)
GRID_ERLANG_B = [
    (cu, "exponential", rho) for cu in (0.25, 0.5, 1.0) for rho in (0.9, 1.1)
] + [(0.25, "lognormal1", 1.0), (0.25, "fixed", 1.0)]
#: pooler: (pool size k, utilisation rho = lam E[D] / k)
GRID_ERLANG_C = [(k, rho) for k in (1, 4, 16) for rho in (0.5, 0.8)]

#: grid points judged over all checks: scale-to-zero runs give 4 (suspended share,
#: time on, Little from rows, Little from the engine's count), Erlang-B runs 3, Erlang-C 1
REGISTRY_SIZE = 4 * len(GRID_SCALE_TO_ZERO) + 3 * len(GRID_ERLANG_B) + len(GRID_ERLANG_C)
FAMILY_ALPHA = 1e-3
ALPHA = FAMILY_ALPHA / REGISTRY_SIZE
BASE_SEED = int(os.environ.get("SIM_VALIDATION_SEED", "20260105"))


def zero_config(**overrides: Any) -> EngineConfig:
    values: dict[str, Any] = dict(
        cold_start=Distribution.fixed(0.0),
        operation_durations={a: Distribution.fixed(0.0) for a in Action},
        detach_after_s=None,
        archive_after_s=None,
    )
    values.update(overrides)
    return EngineConfig(**values)


@dataclass
class Row:
    check: str
    point: str
    observed: float
    theory: float
    half_width: float
    deviation: float  # (observed - theory) / half_width
    wrong: str = ""  # a plausible wrong model, and how far it lies in CI units

    def line(self) -> str:
        return (f"{self.check:<22} {self.point:<44} {self.observed:>10.5g} {self.theory:>10.5g} "
                f"{self.half_width:>9.3g} {self.deviation:>+7.2f}  {self.wrong}")


HEADER = (f"{'check':<22} {'grid point':<44} {'observed':>10} {'theory':>10} "
          f"{'CI half':>9} {'dev/CI':>7}  wrong model (dev/CI)")
ROWS: list[Row] = []


def judge(check: str, point: str, est: Estimate, theory: float,
          wrong: tuple[str, float] | None = None) -> Row:
    hw = est.half_width(ALPHA)
    row = Row(check, point, est.value, theory, hw, est.deviation(theory, ALPHA))
    if wrong is not None:
        name, value = wrong
        row.wrong = f"{name} {est.deviation(value, ALPHA):+.1f}"
    ROWS.append(row)
    print(row.line())
    return row


@dataclass
class Run:
    cp: ControlPlane
    compute: Compute
    result: RunResult
    lam: float  # arrivals per second
    mean_session: float
    warmup: float
    horizon: float
    probes: list[tuple[float, int]] = field(default_factory=list)

    @property
    def edges(self) -> np.ndarray:
        return np.linspace(self.warmup, self.horizon, BATCHES + 1)

    def connections(self) -> dict[str, np.ndarray]:
        rows = self.result.connections
        return {
            "arrival": np.fromiter((r.arrival_s for r in rows), float, len(rows)),
            "wait": np.fromiter((r.wait_s for r in rows), float, len(rows)),
            "duration": np.fromiter((r.duration_s for r in rows), float, len(rows)),
            "ok": np.fromiter((r.outcome == Outcome.OK for r in rows), bool, len(rows)),
            "refused": np.fromiter((r.outcome == Outcome.REFUSED_TOO_MANY for r in rows), bool,
                                   len(rows)),
            "cold": np.fromiter((r.cold for r in rows), bool, len(rows)),
        }

    def per_batch_count(self, times: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        """Sum of weights (or count) of the instants falling in each batch window."""
        idx = np.searchsorted(self.edges, times, side="right") - 1
        keep = (idx >= 0) & (idx < BATCHES)
        w = np.ones(len(times)) if weights is None else np.asarray(weights, float)
        return np.bincount(idx[keep], weights=w[keep], minlength=BATCHES)

    def per_batch_overlap(self, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """Total length of the intervals [start, end) inside each batch window."""
        e = self.edges
        out = np.empty(BATCHES)
        for i in range(BATCHES):
            out[i] = np.clip(np.minimum(ends, e[i + 1]) - np.maximum(starts, e[i]), 0, None).sum()
        return out

    def on_intervals(self) -> tuple[np.ndarray, np.ndarray]:
        ivs = [iv for iv in self.result.intervals
               if iv.compute_id == self.compute.id and iv.state != "idle"]
        return (np.array([iv.start_s for iv in ivs]), np.array([iv.end_s for iv in ivs]))

    @property
    def batch_length(self) -> float:
        return (self.horizon - self.warmup) / BATCHES

    def controls(self) -> list[np.ndarray]:
        """Per batch, how far the workload fell from its known means: arrivals, session length.

        Both have expectation 0 exactly, and most of a batch's luck comes from
        them, so regressing them out narrows every interval (control variates).
        """
        conns = self.connections()
        arrivals = self.per_batch_count(conns["arrival"])
        work = self.per_batch_count(conns["arrival"], conns["duration"])
        return [arrivals / (self.lam * self.batch_length) - 1.0,
                work / np.maximum(arrivals, 1) / self.mean_session - 1.0]

    def estimate(self, per_batch: np.ndarray) -> Estimate:
        return controlled_estimate(per_batch, self.controls())


def run_compute(
    *, per_second: float, session: Distribution, timeout: int, cu: float = 0.25,
    pooler: bool = False, pool_size: int | None = None, horizon: float, warmup: float,
    seed: int, probe_every: float | None = None, config: EngineConfig | None = None,
) -> Run:
    """One compute of one project, a Poisson workload from t=0, run to `horizon`."""
    cp = ControlPlane(config or zero_config(), seed=BASE_SEED + seed)
    endpoint: dict[str, Any] = dict(autoscaling_limit_min_cu=cu, autoscaling_limit_max_cu=cu,
                                    suspend_timeout_seconds=timeout)
    if pooler:
        endpoint.update(pooler_enabled=True, pool_size=pool_size)
    compute = cp.create_project("validation", default_endpoint=endpoint).computes[0]
    feed = session_feed(Poisson(per_second * 3600.0), SessionModel(session),
                        cp.streams.fresh("arrivals"), cp.streams.fresh("sessions"), 0.0, horizon)
    rt = compute.runtime
    assert rt is not None
    rt.attach_workload(feed)
    probes: list[tuple[float, int]] = []
    if probe_every is not None:
        def probe():
            yield cp.env.timeout(warmup)
            while True:
                probes.append((cp.env.now, rt.open_connections(cp.env.now)))
                yield cp.env.timeout(probe_every)
        cp.env.process(probe())
    cp.run_until(horizon)
    result = cp.result("validation", horizon, 0.0)
    return Run(cp, compute, result, per_second, session.mean_s, warmup, horizon, probes)


def session_of(kind: str, mean: float) -> Distribution:
    if kind == "exponential":
        return Distribution.exponential(mean)
    if kind == "fixed":
        return Distribution.fixed(mean)
    if kind.startswith("lognormal"):
        return Distribution.lognormal(mean, float(kind.removeprefix("lognormal")))
    raise ValueError(kind)

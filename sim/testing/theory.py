"""Closed-form results the engine must reproduce, and the statistics to compare with them.

The closed forms themselves live in `sim.metrics.theory` (the library prunes with
them too); this module re-exports them beside the estimators the
validation tests use: batch means, ratios and control variates.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sim.metrics.theory import (  # noqa: F401  (re-exported for the tests)
    betainc,
    carried_load,
    erlang_b,
    erlang_c,
    erlang_c_wait,
    erlang_c_wait_quantile,
    p_suspended,
    share_on,
    t_quantile_two_sided,
    t_sf,
    z_quantile_two_sided,
)

# -- estimates with confidence intervals ------------------------------------------


@dataclass(frozen=True)
class Estimate:
    """A point estimate from B batches (or replications) and its standard error."""

    value: float
    se: float
    batches: int
    controls: int = 0  # control variates regressed out (each costs a degree of freedom)

    @property
    def df(self) -> int:
        return self.batches - 1 - self.controls

    def half_width(self, alpha: float) -> float:
        return t_quantile_two_sided(alpha, self.df) * self.se

    def deviation(self, theory: float, alpha: float) -> float:
        """(observed - theory) in units of the (1 - alpha) half-width: |.| <= 1 passes."""
        hw = self.half_width(alpha)
        if hw == 0.0:
            return 0.0 if self.value == theory else math.copysign(math.inf, self.value - theory)
        return (self.value - theory) / hw


def mean_estimate(values: Sequence[float]) -> Estimate:
    """Mean of per-batch values (equal-length batches, or replications)."""
    n = len(values)
    if n < 2:
        raise ValueError("need at least two batches")
    m = math.fsum(values) / n
    var = math.fsum((v - m) ** 2 for v in values) / (n - 1)
    return Estimate(m, math.sqrt(var / n), n)


def ratio_estimate(numerators: Sequence[float], denominators: Sequence[float]) -> Estimate:
    """sum(y) / sum(x) over batches, with the batch-means (delta method) standard error."""
    n = len(numerators)
    if n < 2 or n != len(denominators):
        raise ValueError("need at least two batches, as many numerators as denominators")
    sy, sx = math.fsum(numerators), math.fsum(denominators)
    if sx <= 0:
        raise ValueError("denominators sum to zero")
    r = sy / sx
    xbar = sx / n
    var = math.fsum((y - r * x) ** 2 for y, x in zip(numerators, denominators, strict=True)) / (n - 1)
    return Estimate(r, math.sqrt(var / n) / xbar, n)


def controlled_estimate(values: Sequence[float], controls: Sequence[Sequence[float]]) -> Estimate:
    """Mean of per-batch values, corrected by control variates of known mean 0.

    Regress the batch values on the controls (say, how far each batch's
    arrivals and session lengths fell from their known means); the intercept
    is the estimate and its standard error comes from the residuals, with
    one degree of freedom less per control (Lavenberg and Welch). Controls
    that do not vary (fixed session lengths) are dropped.
    """
    y = np.asarray(values, dtype=float)
    n = len(y)
    cols = [np.asarray(c, dtype=float) for c in controls]
    cols = [c for c in cols if np.ptp(c) > 0]
    if not cols:
        return mean_estimate(y.tolist())
    x = np.column_stack([np.ones(n), *cols])
    q = x.shape[1] - 1
    if n - q - 1 < 2:
        raise ValueError("too few batches for the controls")
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    resid = y - x @ beta
    s2 = float(resid @ resid) / (n - q - 1)
    cov = s2 * np.linalg.inv(x.T @ x)
    return Estimate(float(beta[0]), math.sqrt(float(cov[0, 0])), n, q)

"""Duration distributions (session lengths, cold starts, operation durations).

One small frozen type, sampled in bulk with a numpy Generator. Parameters are
given by their mean, which is what planners know; lognormal also takes the
sigma of the underlying normal (its tail).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from statistics import NormalDist

import numpy as np


class DistKind(StrEnum):
    FIXED = "fixed"
    EXPONENTIAL = "exponential"
    LOGNORMAL = "lognormal"


@dataclass(frozen=True, slots=True)
class Distribution:
    dist: DistKind = DistKind.FIXED
    mean_s: float = 0.0
    sigma: float = 1.0  # lognormal only

    def __post_init__(self) -> None:
        object.__setattr__(self, "dist", DistKind(self.dist))
        if not (self.mean_s >= 0 and math.isfinite(self.mean_s)):
            raise ValueError(f"mean_s must be a finite number >= 0, got {self.mean_s!r}")
        if not (self.sigma >= 0 and math.isfinite(self.sigma)):
            raise ValueError(f"sigma must be a finite number >= 0, got {self.sigma!r}")

    @classmethod
    def fixed(cls, seconds: float) -> Distribution:
        return cls(DistKind.FIXED, float(seconds))

    @classmethod
    def exponential(cls, mean_s: float) -> Distribution:
        return cls(DistKind.EXPONENTIAL, float(mean_s))

    @classmethod
    def lognormal(cls, mean_s: float, sigma: float) -> Distribution:
        return cls(DistKind.LOGNORMAL, float(mean_s), float(sigma))

    @property
    def is_zero(self) -> bool:
        return self.mean_s == 0.0

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """n draws, in seconds, as float64."""
        if self.mean_s == 0.0 or self.dist is DistKind.FIXED:
            return filled(n, self.mean_s)
        if self.dist is DistKind.EXPONENTIAL:
            return rng.exponential(self.mean_s, n)
        # lognormal with E[X] = mean_s: mu = ln(mean) - sigma^2 / 2
        mu = math.log(self.mean_s) - self.sigma**2 / 2.0
        return rng.lognormal(mu, self.sigma, n)

    def quantile(self, q: float) -> float:
        """The value that a share `q` (0 < q < 1) of the draws stays under."""
        if self.mean_s == 0.0 or self.dist is DistKind.FIXED:
            return self.mean_s
        if self.dist is DistKind.EXPONENTIAL:
            return -self.mean_s * math.log1p(-q)
        mu = math.log(self.mean_s) - self.sigma**2 / 2.0
        return math.exp(mu + self.sigma * NormalDist().inv_cdf(q))

    def sample_one(self, rng: np.random.Generator) -> float:
        return float(self.sample(rng, 1)[0])

    def describe(self) -> str:
        if self.dist is DistKind.LOGNORMAL:
            return f"lognormal(mean {self.mean_s:g} s, sigma {self.sigma:g})"
        return f"{self.dist.value}(mean {self.mean_s:g} s)"


def filled(n: int, value: float) -> np.ndarray:
    """n copies of `value` as float64: np.full's work without its Python wrapper, a third
    of its cost for the small batches a compute's workload is drawn in."""
    x = np.empty(n)
    x.fill(value)
    return x

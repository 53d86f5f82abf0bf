"""What each arriving connection does: how long it stays and what it uses while open.

Sampled in bulk for a chunk of arrivals (one numpy call per quantity), never
one session at a time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from sim.workload.distributions import Distribution, filled


class SessionBatch(NamedTuple):
    """n sessions as parallel float64 arrays."""

    duration_s: np.ndarray
    cpu: np.ndarray  # vCPU the session keeps busy while open
    memory_gb: np.ndarray
    temp_bytes: np.ndarray  # temporary-file bytes the session writes to the local disk


@dataclass(frozen=True)
class SessionModel:
    """Session length, per-session load, and temporary-file bytes.

    `temp_bytes` reuses `Distribution` with its "seconds" read as bytes
    (mean_s is the mean number of bytes): the three shapes are the ones that
    matter for temporary files too, and a second type would only repeat them.
    None means sessions write no temporary files.
    """

    duration: Distribution
    cpu_per_session: float = 0.0
    memory_gb_per_session: float = 0.0
    temp_bytes: Distribution | None = None

    def __post_init__(self) -> None:
        for name in ("cpu_per_session", "memory_gb_per_session"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{name} must be a number, got {value!r}")
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
            object.__setattr__(self, name, float(value))

    @property
    def mean_duration_s(self) -> float:
        return self.duration.mean_s

    def sample(self, rng: np.random.Generator, n: int) -> SessionBatch:
        """n sessions; durations are drawn before temp bytes, always, so a seed is stable."""
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        duration = self.duration.sample(rng, n)
        if self.temp_bytes is None:
            temp = np.zeros(n, dtype=np.float64)
        else:
            temp = self.temp_bytes.sample(rng, n)
        return SessionBatch(
            duration_s=duration,
            cpu=filled(n, self.cpu_per_session),
            memory_gb=filled(n, self.memory_gb_per_session),
            temp_bytes=temp,
        )


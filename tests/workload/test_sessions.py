"""Session models: vectorised draws whose means match the configured ones."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sim.workload import Distribution, SessionBatch, SessionModel

N = 200_000


def sd_of(d: Distribution) -> float:
    if d.dist.value == "fixed":
        return 0.0
    if d.dist.value == "exponential":
        return d.mean_s
    return d.mean_s * math.sqrt(math.exp(d.sigma**2) - 1.0)


@pytest.mark.parametrize(
    "dist",
    [
        Distribution.fixed(42.0),
        Distribution.exponential(30.0),
        Distribution.lognormal(20.0, 0.5),
        Distribution.lognormal(20.0, 1.0),
    ],
    ids=lambda d: d.describe(),
)
def test_sample_mean_is_within_a_four_sigma_band_of_the_configured_mean(dist: Distribution) -> None:
    batch = SessionModel(duration=dist).sample(np.random.default_rng(1), N)
    half_width = 4 * sd_of(dist) / math.sqrt(N)
    assert abs(batch.duration_s.mean() - dist.mean_s) <= max(half_width, 1e-9)


def test_temp_bytes_use_the_distribution_mean_as_bytes() -> None:
    gib = 1024**3
    model = SessionModel(Distribution.fixed(1.0), temp_bytes=Distribution.lognormal(2 * gib, 0.8))
    batch = model.sample(np.random.default_rng(2), N)
    sd = 2 * gib * math.sqrt(math.exp(0.64) - 1.0)
    assert abs(batch.temp_bytes.mean() - 2 * gib) <= 4 * sd / math.sqrt(N)


def test_batch_shape_and_constant_loads() -> None:
    model = SessionModel(
        Distribution.exponential(10), cpu_per_session=0.25, memory_gb_per_session=1
    )
    batch = model.sample(np.random.default_rng(3), 1000)
    assert isinstance(batch, SessionBatch)
    assert all(a.shape == (1000,) and a.dtype == np.float64 for a in batch)
    assert np.all(batch.cpu == 0.25) and np.all(batch.memory_gb == 1.0)
    assert np.all(batch.temp_bytes == 0.0)  # no temp_bytes: sessions write no temp files
    assert model.sample(np.random.default_rng(3), 0).duration_s.size == 0


def test_same_seed_same_batch_and_durations_are_drawn_first() -> None:
    plain = SessionModel(Distribution.lognormal(5, 1))
    with_temp = SessionModel(Distribution.lognormal(5, 1), temp_bytes=Distribution.exponential(1e6))
    a = plain.sample(np.random.default_rng(4), 500)
    b = with_temp.sample(np.random.default_rng(4), 500)
    assert np.array_equal(a.duration_s, b.duration_s)  # temp bytes never shift the durations
    assert np.array_equal(b.temp_bytes, with_temp.sample(np.random.default_rng(4), 500).temp_bytes)


@pytest.mark.parametrize(
    "kwargs",
    [{"cpu_per_session": -0.1}, {"memory_gb_per_session": float("inf")}, {"cpu_per_session": True}],
)
def test_bad_loads_are_refused(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        SessionModel(Distribution.fixed(1.0), **kwargs)

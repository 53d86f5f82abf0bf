"""A workload drawn at once is the workload drawn window by window, number for number."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.engine.feed import all_sessions, drawn_sessions
from sim.workload import Distribution, SessionModel
from tests.workload.test_arrivals import DAY, KINDS

MODELS = {
    "exponential": SessionModel(Distribution.exponential(45)),
    "lognormal": SessionModel(Distribution.lognormal(30, 1.2), 0.2, 1.0),
    "fixed": SessionModel(Distribution.fixed(5)),
    "temp files": SessionModel(Distribution.exponential(60),
                               temp_bytes=Distribution.lognormal(2e9, 0.8)),
}


@pytest.mark.parametrize("model", sorted(MODELS))
@pytest.mark.parametrize("kind", sorted(KINDS))
@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), days=st.sampled_from([0.3, 1.0, 2.5, 7.0]))
def test_at_once_equals_window_by_window(kind: str, model: str, seed: int, days: float) -> None:
    process, sessions = KINDS[kind], MODELS[model]
    windows = list(drawn_sessions(process, sessions, np.random.default_rng(seed),
                                  np.random.default_rng(seed + 1), 0.0, days * DAY))
    times, batch = all_sessions(process, sessions, np.random.default_rng(seed),
                                np.random.default_rng(seed + 1), 0.0, days * DAY)
    expected_times = np.concatenate([t for t, _ in windows]) if windows else np.empty(0)
    assert np.array_equal(times, expected_times)
    for name in batch._fields:
        column = [getattr(b, name) for _, b in windows]
        assert np.array_equal(getattr(batch, name),
                              np.concatenate(column) if column else np.empty(0)), name

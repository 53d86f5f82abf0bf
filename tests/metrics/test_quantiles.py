"""Quantiles partitioned one rank at a time equal numpy's, to the bit."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.metrics.quantiles import SMALL, quantiles_in_place

QS = [0.5, 0.99, 1.0]


def _values(seed: int, n: int, kind: str) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "lognormal":
        return rng.lognormal(0.0, 1.5, n)
    if kind == "ties":  # few distinct values: the ranks fall inside runs of equal ones
        return rng.integers(0, 4, n).astype(float)
    if kind == "sorted":
        return np.sort(rng.exponential(2.0, n))
    return np.sort(rng.random(n))[::-1].copy()  # descending


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1),
       n=st.one_of(st.integers(1, 50), st.integers(SMALL, SMALL + 5_000)),
       kind=st.sampled_from(["lognormal", "ties", "sorted", "descending"]),
       qs=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=4))
def test_a_vector_gives_numpys_quantiles(seed, n, kind, qs) -> None:
    x = _values(seed, n, kind)
    expected = np.quantile(x, qs)
    work = x.copy()
    assert np.array_equal(quantiles_in_place(work, qs), expected)
    assert np.array_equal(np.sort(work), np.sort(x))  # reordered, nothing else


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(1, 40),
       kind=st.sampled_from(["lognormal", "ties"]))
def test_rows_give_numpys_quantiles_row_by_row(seed, rows, kind) -> None:
    cols = SMALL // rows + 7  # above the size where numpy's own call is used
    x = _values(seed, rows * cols, kind).reshape(rows, cols)
    assert np.array_equal(quantiles_in_place(x.copy(), QS), np.quantile(x, QS, axis=-1))


def test_a_nan_gives_nan_as_numpy_does() -> None:
    x = np.random.default_rng(3).random((3, SMALL))
    x[1, 17] = np.nan
    got = quantiles_in_place(x.copy(), QS)
    assert np.array_equal(got, np.quantile(x, QS, axis=-1), equal_nan=True)
    assert np.isnan(got[:, 1]).all() and not np.isnan(got[:, [0, 2]]).any()

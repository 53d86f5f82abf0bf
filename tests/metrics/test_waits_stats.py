"""Per-compute wake figures from one partition of each compute's waits equal numpy's own."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.metrics.frames import waits_stats

waits = st.lists(st.floats(0.0, 1e4, allow_subnormal=False), max_size=30).map(np.array)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.sampled_from([f"ep-{i}" for i in range(12)]), waits, max_size=12))
def test_wake_figures_of_each_compute_are_numpys_to_the_bit(found: dict) -> None:
    stats = waits_stats(found)
    assert list(stats.index) == sorted(k for k, v in found.items() if len(v))
    for compute_id, row in stats.iterrows():
        v = found[compute_id]
        assert row["wake_p50_s"] == float(np.quantile(v, 0.5))
        assert row["wake_p99_s"] == float(np.quantile(v, 0.99))
        assert row["wake_max_s"] == float(np.max(v))


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 40).flatmap(lambda n: st.lists(
    st.lists(st.floats(0.0, 1e4, allow_subnormal=False), min_size=n, max_size=n),
    min_size=1, max_size=8)))
def test_computes_with_as_many_waits_get_each_its_own_figures(rows: list) -> None:
    """Computes with equal counts are partitioned together: each keeps its own figures."""
    found = {f"ep-{i}": np.array(row) for i, row in enumerate(rows)}
    stats = waits_stats(found)
    for compute_id, v in found.items():
        alone = np.quantile(v, [0.5, 0.99, 1.0])
        assert stats.loc[compute_id].to_numpy().tolist() == alone.tolist()

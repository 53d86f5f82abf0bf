"""The look after the computes' runs: a storage lane their on-spans keep busy is not replayed."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from sim.kernel.storage_replay import _no_long_quiet


def _computes(*spans: list[tuple[float, float]]) -> list[SimpleNamespace]:
    return [SimpleNamespace(on_starts=np.array([s for s, _ in one], dtype=float),
                            on_ends=np.array([e for _, e in one], dtype=float))
            for one in spans]


@pytest.mark.parametrize("spans, until, quiet_enough", [
    ([[(0, 10), (15, 30)]], 35, True),  # gaps of 5: shorter than the period of 6
    ([[(0, 10), (16, 30)]], 35, False),  # a gap of exactly the period: its clock rings
    ([[(0, 10), (15, 20)]], 26, False),  # quiet from 20 to the end, 6 s
    ([[(0, 10)], [(8, 20)], [(24, 40)]], 45, True),  # overlapping computes cover each other
    ([[(0, 10)], [(24, 40)], [(8, 17)]], 45, False),  # 17 to 24: a gap of 7, out of order
    ([[(3, 10)]], 12, True),  # begins 3 s after the clock: shorter than 6
    ([[]], 5, True),  # never on, but the run ends before the clock could ring
    ([[]], 6, False),
    ([], 1, False),  # no compute: the lane is replayed
])
def test_a_gap_as_long_as_the_period_means_a_replay(spans, until, quiet_enough):
    assert _no_long_quiet(_computes(*spans), 0.0, until, 6.0) is quiet_enough

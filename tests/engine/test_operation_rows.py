"""The kernel's operations as rows: stamped exactly as the engine stamps objects."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.engine.clock import to_us
from sim.engine.control_plane import ControlPlane
from sim.engine.operation_rows import OperationColumns, file_rows

instants = st.lists(st.floats(0, 1e5, allow_nan=False), min_size=1, max_size=40)


def columns(created: list[float], sched: list[float]) -> OperationColumns:
    n = len(created)
    return OperationColumns(
        [f"op-{k}" for k in range(n)], ["br"] * n, ["ep"] * n, ["suspend_compute"] * n,
        ["finished"] * n, np.zeros(n, dtype=np.int64), np.array(created), np.array(created),
        np.array(created) + 1.5, np.array(sched), np.zeros(n), np.arange(n, dtype=np.float64))


@settings(max_examples=200, deadline=None)
@given(instants, instants, st.integers(-1, 10**11))
def test_stamps_are_the_engines_one_by_one_bump(a: list[float], b: list[float], last: int) -> None:
    """Each operation gets max(its instant in microseconds, the one before + 1), taken in
    creation order (instant, then when its event was scheduled), across the parts given."""
    cp = ControlPlane(seed=1)
    project = cp.create_project("p", with_compute=False).project
    project.last_op_us = last
    first, second = columns(a, [0.0] * len(a)), columns(b, [1.0] * len(b))
    for part, prefix in ((first, "a"), (second, "b")):
        part.ids = [f"{prefix}{k}" for k in range(len(part))]
    file_rows(cp, project, [first, second])
    rows = [row for block in cp.recorder.operation_rows.get(project.id, [])
            for row in block.records()]
    order = sorted([(t, 0.0, k, f"a{k}") for k, t in enumerate(a)]
                   + [(t, 1.0, k, f"b{k}") for k, t in enumerate(b)])
    expected, stamp = [], last
    for t, _, _, ident in order:
        stamp = max(to_us(t), stamp + 1)
        expected.append((ident, stamp / 1_000_000))
    assert [(r.id, r.created_s) for r in rows] == expected
    assert project.last_op_us == stamp
    assert all(r.total_duration_ms == max(0, int(round((r.updated_s + 1.5 - r.created_s) * 1000)))
               for r in rows)

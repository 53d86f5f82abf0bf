"""Operation ids drawn in bulk are the ids drawn one at a time."""

from __future__ import annotations

import uuid

import numpy as np

from sim.engine.ids import IdFactory


def test_bulk_operation_ids_equal_one_at_a_time_and_leave_the_stream_in_step() -> None:
    one, bulk = np.random.default_rng(5), np.random.default_rng(5)
    singles = [IdFactory(set()).operation(one) for _ in range(300)]
    assert IdFactory(set()).operations(bulk, 300) == singles
    assert one.random() == bulk.random()
    assert all(uuid.UUID(i).version == 4 and str(uuid.UUID(i)) == i for i in singles)


def test_no_ids_draw_nothing() -> None:
    one, bulk = np.random.default_rng(5), np.random.default_rng(5)
    assert IdFactory(set()).operations(bulk, 0) == []
    assert IdFactory(set()).operation(one) == IdFactory(set()).operation(bulk)


def test_a_collision_redraws_as_one_at_a_time_would() -> None:
    taken = IdFactory(set()).operation(np.random.default_rng(9))  # the first id of the stream
    one, bulk = IdFactory({taken}), IdFactory({taken})
    r1, r2 = np.random.default_rng(9), np.random.default_rng(9)
    expected = [one.operation(r1) for _ in range(4)]
    assert taken not in expected
    assert bulk.operations(r2, 4) == expected
    assert r1.random() == r2.random()

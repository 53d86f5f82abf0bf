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


def test_bulk_ids_are_not_kept_among_the_issued_ones() -> None:
    """A fleet makes millions of operation ids: they are random UUIDs, and none is kept
    to check the next against (the ids of things a user names again are)."""
    issued: set[str] = set()
    factory = IdFactory(issued)
    ids = factory.operations(np.random.default_rng(9), 500)
    assert issued == set() and len(set(ids)) == 500
    factory.compute(np.random.default_rng(9))
    assert len(issued) == 1

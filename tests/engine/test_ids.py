"""Operation ids drawn in bulk are the ids drawn one at a time."""

from __future__ import annotations

import uuid

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.engine.ids import IdFactory, random_bytes


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


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32), st.lists(st.sampled_from(["u32", "u64", "word", "double"]),
                                       max_size=6), st.integers(0, 6))
def test_bytes_drawn_as_words_are_the_generators_bytes(seed: int, before: list[str],
                                                       words: int) -> None:
    """Whatever was drawn before (a pending 32-bit half or none), `random_bytes` gives
    `Generator.bytes`' very bytes and leaves the stream where it leaves it (what is
    drawn after is the same; the state may differ only in the stale half-word slot that
    no draw reads while no half is pending)."""
    ours, numpys = np.random.default_rng(seed), np.random.default_rng(seed)
    for rng in (ours, numpys):
        for kind in before:  # 32-bit draws may leave half a word pending
            if kind == "u32":
                rng.integers(0, 2**32, dtype=np.uint32)
            elif kind == "u64":
                rng.integers(0, 2**64, dtype=np.uint64)
            elif kind == "word":
                rng.integers(0, 97)
            else:
                rng.random()
    assert random_bytes(ours, 8 * words) == numpys.bytes(8 * words)
    assert np.array_equal(ours.integers(0, 2**32, size=5, dtype=np.uint32),
                          numpys.integers(0, 2**32, size=5, dtype=np.uint32))
    assert np.array_equal(ours.random(3), numpys.random(3))

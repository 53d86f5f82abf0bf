"""Streams whose seeds are derived in bulk are numpy's seed sequence, number for number."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.engine.streams import Streams, _name_key, seed_words

seeds = st.one_of(st.integers(0, 2**32 + 5), st.integers(0, 2**130))
names = st.lists(st.text(max_size=40), min_size=1, max_size=20)


@settings(max_examples=150, deadline=None)
@given(seeds, names)
def test_seed_words_are_the_seed_sequences(seed: int, chosen: list[str]) -> None:
    words = seed_words(seed, chosen)
    for name, row in zip(chosen, words, strict=True):
        expected = np.random.SeedSequence(seed, spawn_key=_name_key(name)).generate_state(
            4, np.uint64)
        assert row.tolist() == expected.tolist()


@settings(max_examples=50, deadline=None)
@given(seeds, names)
def test_a_prepared_stream_draws_what_a_plain_one_draws(seed: int, chosen: list[str]) -> None:
    prepared, plain = Streams(seed), Streams(seed)
    prepared.prepare(chosen[::2])  # some prepared, some not
    for name in chosen:
        assert prepared.fresh(name).random(4).tolist() == plain.fresh(name).random(4).tolist()
        assert prepared.get(name).integers(0, 10**9, 3).tolist() == (
            plain.get(name).integers(0, 10**9, 3).tolist())

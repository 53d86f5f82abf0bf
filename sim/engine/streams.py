"""Seeded, named random streams.

One scenario seed gives a `numpy.random.SeedSequence`; every consumer asks for
a stream by a stable name ("ops/shop[3]", "arrivals/shop[3].main.read_write#0").
A stream depends only on (seed, name), never on the order in which streams are
created, so a fleet split across processes draws exactly the same numbers.
"""

from __future__ import annotations

import hashlib

import numpy as np


def _name_key(name: str) -> tuple[int, ...]:
    digest = hashlib.blake2b(name.encode(), digest_size=16).digest()
    return tuple(int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4))


class Streams:
    def __init__(self, seed: int):
        self.seed = int(seed)
        self._cache: dict[str, np.random.Generator] = {}

    def get(self, name: str) -> np.random.Generator:
        rng = self._cache.get(name)
        if rng is None:
            seq = np.random.SeedSequence(self.seed, spawn_key=_name_key(name))
            rng = self._cache[name] = np.random.Generator(np.random.PCG64(seq))
        return rng

    def fresh(self, name: str) -> np.random.Generator:
        """A new generator for `name` that is not cached (bulk workload sampling)."""
        seq = np.random.SeedSequence(self.seed, spawn_key=_name_key(name))
        return np.random.Generator(np.random.PCG64(seq))

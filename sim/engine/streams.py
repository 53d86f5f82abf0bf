"""Seeded, named random streams.

One scenario seed gives a `numpy.random.SeedSequence`; every consumer asks for
a stream by a stable name ("ops/shop[3]", "arrivals/shop[3].main.read_write#0").
A stream depends only on (seed, name), never on the order in which streams are
created, so a fleet split across processes draws exactly the same numbers.

Making a stream costs more than most of what a quiet compute then draws from it
(numpy's seed sequence is built word by word), and a fleet makes four streams per
compute. A run that knows the names it will ask for hands them to `prepare`,
which derives all their seeds in one pass of array arithmetic: the very
algorithm of `numpy.random.SeedSequence`, checked against it number for number.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np
from numpy.random.bit_generator import ISeedSequence


def _name_key(name: str) -> tuple[int, ...]:
    digest = hashlib.blake2b(name.encode(), digest_size=16).digest()
    return tuple(int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4))


class Streams:
    def __init__(self, seed: int):
        self.seed = int(seed)
        self._cache: dict[str, np.random.Generator] = {}
        self._prepared: dict[str, np.ndarray] = {}  # name -> the PCG64 seed words

    def prepare(self, names: Iterable[str]) -> None:
        """Derive the seeds of streams that will be asked for, all at once."""
        names = [n for n in dict.fromkeys(names) if n not in self._prepared]
        if names:
            self._prepared.update(zip(names, seed_words(self.seed, names), strict=True))

    def get(self, name: str) -> np.random.Generator:
        rng = self._cache.get(name)
        if rng is None:
            rng = self._cache[name] = self.fresh(name)
        return rng

    def fresh(self, name: str) -> np.random.Generator:
        """A new generator for `name` that is not cached (bulk workload sampling)."""
        words = self._prepared.get(name)
        if words is not None:
            return np.random.Generator(np.random.PCG64(_Derived(words)))
        seq = np.random.SeedSequence(self.seed, spawn_key=_name_key(name))
        return np.random.Generator(np.random.PCG64(seq))


class _Derived(ISeedSequence):
    """Seed words derived already: what PCG64 asks of its seed sequence, given."""

    def __init__(self, words: np.ndarray):
        self.words = words

    def generate_state(self, n_words: int, dtype: type = np.uint32) -> np.ndarray:
        if n_words != len(self.words) or np.dtype(dtype) != np.uint64:
            raise ValueError("these seed words are a PCG64's (4 of 64 bits)")
        return self.words


_MASK = 0xFFFFFFFF
_INIT_A, _MULT_A, _INIT_B, _MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R = np.uint32(0xCA01F9DD), np.uint32(0x4973F715)
_POOL = 4


def seed_words(seed: int, names: list[str]) -> np.ndarray:
    """For each name, the 4 words of 64 bits `SeedSequence(seed, spawn_key=_name_key(name))`
    gives a PCG64: its entropy mixed into a pool of 4 words, the pool hashed into 8 words
    of 32 bits, read little-endian as 4 of 64. Each step runs on every name at once; the
    hash constants advance alike for all names (they count calls, not values)."""
    if seed < 0:
        raise ValueError("a seed is a non-negative integer")
    run = [(seed >> (32 * i)) & _MASK for i in range(max(1, (seed.bit_length() + 31) // 32))]
    run += [0] * (_POOL - len(run))  # padded to the pool, as before a spawn key
    keys = np.array([_name_key(name) for name in names], dtype=np.uint32).reshape(-1, 4)
    entropy = [np.full(len(names), word, np.uint32) for word in run] + list(keys.T)
    hash_const = _INIT_A

    def hashmix(value: np.ndarray) -> np.ndarray:
        nonlocal hash_const
        value = value ^ np.uint32(hash_const)
        hash_const = (hash_const * _MULT_A) & _MASK
        value = value * np.uint32(hash_const)
        return value ^ (value >> np.uint32(16))

    def mix(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        result = _MIX_L * x - _MIX_R * y
        return result ^ (result >> np.uint32(16))

    with np.errstate(over="ignore"):  # arithmetic modulo 2**32, as in C
        pool = [hashmix(entropy[i]) for i in range(_POOL)]
        for src in range(_POOL):
            for dst in range(_POOL):
                if src != dst:
                    pool[dst] = mix(pool[dst], hashmix(pool[src]))
        for src in range(_POOL, len(entropy)):
            for dst in range(_POOL):
                pool[dst] = mix(pool[dst], hashmix(entropy[src]))
        hash_const = _INIT_B
        out = []
        for i in range(8):
            value = pool[i % _POOL] ^ np.uint32(hash_const)
            hash_const = (hash_const * _MULT_B) & _MASK
            value = value * np.uint32(hash_const)
            out.append(value ^ (value >> np.uint32(16)))
    words = np.stack(out, axis=1).astype("<u4")
    return words.view("<u8").astype(np.uint64)

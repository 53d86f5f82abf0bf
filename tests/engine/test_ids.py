"""Ids: operation ids drawn in bulk are the ids drawn one at a time, and every id is the
one numpy's own `Generator` methods draw (the fast paths change nothing but the cost)."""

from __future__ import annotations

import uuid

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.engine.ids import (
    _LAYOUT_HOLDS,
    ADJECTIVES,
    NOUNS,
    IdFactory,
    _bounded,
    _pcg64_state,
    random_bytes,
)


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


def test_operation_ids_are_not_kept_among_the_issued_ones() -> None:
    """A fleet makes millions of operation ids (and a served world drops them after a
    week): they are random UUIDs, and none is kept to check the next against, made in bulk
    or one by one (the ids of things a user names again are)."""
    issued: set[str] = set()
    factory = IdFactory(issued)
    ids = factory.operations(np.random.default_rng(9), 500)
    one = factory.operation(np.random.default_rng(10))
    assert issued == set() and len(set(ids) | {one}) == 501
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


# --- the fast paths against the numpy calls they replace -------------------------------
#
# `_Oracle` is `IdFactory` as it was written before the fast paths: every draw a numpy
# `Generator` method call. Each test runs the same method on two generators in one
# state, the factory's on one and the oracle's on the other, and asks for the same
# result and the same `bit_generator.state` after (the pending half-word included).

_MASK64, _MASK128 = 2**64 - 1, 2**128 - 1
#: PCG64's multiplier (PCG_DEFAULT_MULTIPLIER_128, numpy/random/src/pcg64/pcg64.h)
_PCG_MULT = (2549297995355413924 << 64) | 4865540595714422341


def _oracle_bytes(rng: np.random.Generator, n: int) -> bytes:
    bits = rng.bit_generator
    if n % 8 == 0 and n and bits.state.get("has_uint32", 1) == 0:
        return bits.random_raw(n // 8).astype("<u8", copy=False).tobytes()
    return rng.bytes(n)


class _Oracle:
    """IdFactory before the fast paths (its UUIDs formatted by the `uuid` module)."""

    def __init__(self, issued: set[str]):
        self._issued = issued

    def _words(self, rng):
        return f"{ADJECTIVES[rng.integers(len(ADJECTIVES))]}-{NOUNS[rng.integers(len(NOUNS))]}"

    def _suffix(self, rng, n=8):
        return "".join(ALNUM[i] for i in rng.integers(0, len(ALNUM), n))

    def _unique(self, make):
        while True:
            ident = make()
            if ident not in self._issued:
                self._issued.add(ident)
                return ident

    def project(self, rng):
        return self._unique(lambda: f"{self._words(rng)}-{rng.integers(10**7, 10**8)}")

    def branch(self, rng):
        return self._unique(lambda: f"br-{self._words(rng)}-{self._suffix(rng)}")

    def compute(self, rng):
        return self._unique(lambda: f"ep-{self._words(rng)}-{self._suffix(rng)}")

    def operation(self, rng):
        return str(uuid.UUID(bytes=_oracle_bytes(rng, 16), version=4))

    def operation_bytes(self, rng, n):
        if n == 0:
            return np.empty(0, "S36")
        raw = _oracle_bytes(rng, 16 * n)
        return np.array([str(uuid.UUID(bytes=raw[i:i + 16], version=4)).encode()
                         for i in range(0, 16 * n, 16)], "S36")

    def operations(self, rng, n):
        return [i.decode() for i in self.operation_bytes(rng, n).tolist()]

    def opaque(self, rng, prefix, n=24):
        return self._unique(lambda: f"{prefix}{self._suffix(rng, n)}")


ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"
CALLS = {  # name -> (factory or oracle, generator) -> result
    "project": lambda f, rng: f.project(rng),
    "branch": lambda f, rng: f.branch(rng),
    "compute": lambda f, rng: f.compute(rng),
    "operation": lambda f, rng: f.operation(rng),
    "operations(1)": lambda f, rng: f.operations(rng, 1),
    "operations(8)": lambda f, rng: f.operations(rng, 8),
    "operations(9)": lambda f, rng: f.operations(rng, 9),
    "operation_bytes(1)": lambda f, rng: f.operation_bytes(rng, 1),
    "operation_bytes(5)": lambda f, rng: f.operation_bytes(rng, 5),
    "operation_bytes(8)": lambda f, rng: f.operation_bytes(rng, 8),
    "operation_bytes(9)": lambda f, rng: f.operation_bytes(rng, 9),
    "operation_bytes(40)": lambda f, rng: f.operation_bytes(rng, 40),
    "opaque": lambda f, rng: f.opaque(rng, "pck_"),
    "opaque(1)": lambda f, rng: f.opaque(rng, "", 1),
    "opaque(32)": lambda f, rng: f.opaque(rng, "", 32),
}

#: what is unique among the issued ids (an operation id is not: random UUIDs, never kept)
UNIQUE = {"project", "branch", "compute", "opaque", "opaque(1)", "opaque(32)"}


def _pcg64(state: int, inc: int, has_uint32: int, uinteger: int) -> np.random.Generator:
    rng = np.random.Generator(np.random.PCG64(0))
    rng.bit_generator.state = {"bit_generator": "PCG64", "state": {"state": state, "inc": inc},
                               "has_uint32": has_uint32, "uinteger": uinteger}
    return rng


def _twin(rng: np.random.Generator) -> np.random.Generator:
    twin = np.random.Generator(type(rng.bit_generator)(0))
    twin.bit_generator.state = rng.bit_generator.state
    return twin


def _same(result, expected) -> None:
    if isinstance(expected, np.ndarray):
        assert isinstance(result, np.ndarray)
        assert (result.dtype, result.shape) == (expected.dtype, expected.shape)
        assert result.tolist() == expected.tolist()
    else:
        assert type(result) is type(expected) and result == expected


def _plain(state):
    """A bit generator's state with its arrays (MT19937's key, Philox's counter) as lists."""
    if isinstance(state, dict):
        return {key: _plain(value) for key, value in state.items()}
    return state.tolist() if isinstance(state, np.ndarray) else state


def _check(call: str, rng: np.random.Generator, taken: int = 0) -> None:
    """`call` on `rng` (and on a twin by the oracle) gives the same, with the same state
    after; with `taken`, that many of the oracle's first results are issued already."""
    twin, issued = _twin(rng), set()
    scout = _twin(rng)
    for _ in range(taken if call in UNIQUE else 0):  # ids the factory must skip, drawing again
        issued.add(CALLS[call](_Oracle(set()), scout))
    expected = CALLS[call](_Oracle(set(issued)), twin)
    _same(CALLS[call](IdFactory(set(issued)), rng), expected)
    assert _plain(rng.bit_generator.state) == _plain(twin.bit_generator.state)


def _craft(word: int, high: int, inc: int) -> int:
    """A PCG64 state whose next 64-bit output is `word`: the state after the step is
    chosen with the high 64 bits `high` (which fix the rotation, XSL-RR), its low ones
    made to give `word`, and the step is undone."""
    rot = high >> 58
    low = (((word << rot) | (word >> (64 - rot))) & _MASK64 if rot else word) ^ high
    after = (high << 64) | low
    return ((after - inc) * pow(_PCG_MULT, -1, 2**128)) & _MASK128


def test_the_fast_paths_are_taken() -> None:
    """Else every other test here would only check numpy against itself."""
    assert _LAYOUT_HOLDS and _pcg64_state(np.random.default_rng(1).bit_generator) is not None
    assert _pcg64_state(np.random.Generator(np.random.MT19937(1)).bit_generator) is None


def test_an_empty_opaque_id_draws_nothing() -> None:
    rng = np.random.default_rng(4)
    rng.bytes(4)
    before = rng.bit_generator.state
    assert IdFactory(set()).opaque(rng, "x", 0) == "x" and rng.bit_generator.state == before


def test_a_crafted_state_gives_the_crafted_word() -> None:
    for word, high in ((0, 0), (2**64 - 1, 2**64 - 1), (0x0123456789ABCDEF, 0xFEDCBA9876543210)):
        rng = _pcg64(_craft(word, high, 7), 7, 0, 0)
        assert rng.bit_generator.random_raw() == word


_STATES = st.tuples(st.integers(0, _MASK128), st.integers(0, _MASK128).map(lambda i: i | 1),
                    st.sampled_from([0, 1, 2]), st.integers(0, 2**32 - 1))


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.sampled_from(sorted(CALLS)), _STATES, st.integers(0, 2))
def test_every_method_is_the_oracles_from_any_state(call, state, taken) -> None:
    """Any PCG64 state, with a half-word pending or not (and any stale one; numpy takes
    any nonzero `has_uint32` for true)."""
    _check(call, _pcg64(*state), taken)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.sampled_from(sorted(CALLS)), st.integers(0, 2**64),
       st.lists(st.sampled_from(["u32", "bytes4", "word", "double", "raw"]), max_size=8),
       st.booleans(), st.integers(1, 4))
def test_every_method_is_the_oracles_after_other_draws(call, seed, before, pending,
                                                       repeat) -> None:
    """Seeded streams after other draws, with the half-word pending as asked (both
    `rng.bytes(4)` and a full-range uint32 draw take a half through `next_uint32`), and
    several calls in a row."""
    rng = np.random.default_rng(seed)
    for kind in before:
        if kind == "u32":
            rng.integers(2**32, dtype=np.uint32)
        elif kind == "bytes4":
            rng.bytes(4)
        elif kind == "word":
            rng.integers(97)
        elif kind == "double":
            rng.random()
        else:
            rng.bit_generator.random_raw()
    if rng.bit_generator.state["has_uint32"] != pending:
        rng.bytes(4)
    assert rng.bit_generator.state["has_uint32"] == pending
    for _ in range(repeat):
        _check(call, rng)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(_STATES, st.integers(0, 80))
def test_random_bytes_is_the_oracles(state, n) -> None:
    rng = _pcg64(*state)
    twin = _twin(rng)
    assert random_bytes(rng, n) == _oracle_bytes(twin, n)
    assert rng.bit_generator.state == twin.bit_generator.state


@settings(max_examples=200, deadline=None, derandomize=True)
@given(_STATES, st.lists(st.integers(2, 2**32 - 1), min_size=1, max_size=12))
def test_bounded_draws_are_generator_integers(state, bounds) -> None:
    """Any bounds below 2**32: big ones reject often (`rng.integers(3 * 2**30)` a
    quarter of the time), so rejections in every position are met."""
    rng = _pcg64(*state)
    twin = _twin(rng)
    assert _bounded(rng, tuple(bounds)) == [int(twin.integers(b)) for b in bounds]
    assert rng.bit_generator.state == twin.bit_generator.state


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.sampled_from(["project", "branch", "compute", "opaque", "opaque(1)", "opaque(32)",
                        "operation", "operation_bytes(1)", "operation_bytes(9)"]),
       st.integers(0, _MASK64), st.integers(0, _MASK128).map(lambda i: i | 1),
       st.sampled_from(["low", "high", "pending"]), st.sampled_from(["zero", "edge"]))
def test_crafted_rejections(call, high, inc, where, kind) -> None:
    """The next 32-bit half Lemire's method reads (the low half of the next word, its
    high half, or the pending half) is made one it rejects (0, for every bound here
    but a power of two), or one it tests but keeps ("edge": x * 87 leaves 86 in the
    low 32 bits, below 87 but not below the threshold 2**32 % 87 = 16)."""
    half = 0 if kind == "zero" else 86 * pow(87, -1, 2**32) % 2**32
    word, pending = {"low": ((high << 32 | half) & _MASK64, (0, 0)),
                     "high": ((half << 32 | 0x9E3779B9), (0, 0)),
                     "pending": (high, (1, half))}[where]
    _check(call, _pcg64(_craft(word, high, inc), inc, *pending))


def test_the_crafted_halves_meet_lemires_test() -> None:
    """0 is rejected for every bound the ids use; the "edge" half is tested, and kept."""
    for bound in (len(ADJECTIVES), len(NOUNS), len(ALNUM), 9 * 10**7):
        assert 0 < (2**32 - bound) % bound
    edge = 86 * pow(87, -1, 2**32) % 2**32
    assert (edge * 87) & 0xFFFFFFFF == 86 and (2**32 - 87) % 87 == 16 and len(ADJECTIVES) == 87


def test_a_rejected_adjective_draws_one_more_word() -> None:
    """A branch id takes 10 halves (5 words); one rejection makes it 11, so a sixth word
    is drawn and its high half left pending."""
    word = 0x9E3779B9 << 32  # its low half, 0, is rejected; its high half is kept
    rng = _pcg64(_craft(word, 12345, 7), 7, 0, 0)
    twin = _twin(rng)
    assert IdFactory(set()).branch(rng) == _Oracle(set()).branch(twin)
    state = rng.bit_generator.state
    assert state == twin.bit_generator.state and state["has_uint32"] == 1
    plain = _pcg64(_craft(word, 12345, 7), 7, 0, 0).bit_generator
    plain.random_raw(6)
    assert plain.state["state"] == state["state"]


@pytest.mark.parametrize("bits", [np.random.MT19937, np.random.Philox, np.random.SFC64,
                                  np.random.PCG64DXSM])
@pytest.mark.parametrize("pending", [False, True])
def test_other_bit_generators_go_through_numpy(bits, pending) -> None:
    rng = np.random.Generator(bits(11))
    if pending:
        rng.bytes(4)
    for call in sorted(CALLS):
        for _ in range(3):
            _check(call, rng)

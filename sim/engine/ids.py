"""Identifiers shaped like the real service's, drawn from seeded streams.

Projects look like `shy-river-12345678`, branches `br-...`, computes `ep-...`
(the specification: a compute id always starts with `ep-`), operations are UUIDs. Every
id ever issued is remembered, so a compute created after a deletion always
gets different connection details (the specification, compute changes #6).
"""

from __future__ import annotations

import ctypes
import sys

import numpy as np

ADJECTIVES = (
    "autumn", "billowing", "bitter", "black", "blue", "bold", "broad", "calm", "cold", "cool",
    "crimson", "curly", "damp", "dark", "dawn", "delicate", "divine", "dry", "empty", "falling",
    "fancy", "flat", "floral", "fragrant", "frosty", "gentle", "green", "hidden", "holy", "icy",
    "jolly", "late", "lingering", "little", "lively", "long", "lucky", "misty", "morning", "muddy",
    "nameless", "noisy", "odd", "old", "orange", "patient", "plain", "polished", "proud", "purple",
    "quiet", "rapid", "raspy", "red", "restless", "rough", "round", "royal", "shiny", "shrill",
    "shy", "silent", "small", "snowy", "soft", "solitary", "sparkling", "spring", "square",
    "steep", "still", "summer", "super", "sweet", "throbbing", "tight", "tiny", "twilight",
    "wandering", "weathered", "white", "wild", "winter", "wispy", "withered", "yellow", "young",
)
NOUNS = (
    "art", "band", "bar", "base", "bird", "block", "boat", "bonus", "bread", "breeze", "brook",
    "bush", "butterfly", "cake", "cell", "cherry", "cloud", "credit", "darkness", "dawn", "dew",
    "disk", "dream", "dust", "feather", "field", "fire", "firefly", "flower", "fog", "forest",
    "frog", "frost", "glade", "glitter", "grass", "hall", "hat", "haze", "heart", "hill", "king",
    "lab", "lake", "leaf", "limit", "math", "meadow", "mode", "moon", "morning", "mountain",
    "mouse", "mud", "night", "paper", "pine", "poetry", "pond", "queen", "rain", "recipe",
    "resonance", "rice", "river", "salad", "scene", "sea", "shadow", "shape", "silence", "sky",
    "smoke", "snow", "snowflake", "sound", "star", "sun", "sunset", "surf", "term", "thunder",
    "tooth", "tree", "truth", "union", "unit", "violet", "voice", "water", "waterfall", "wave",
    "wildflower", "wind", "wood",
)
_ALNUM = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz0123456789", dtype=np.uint8)
_ALNUM_TEXT = _ALNUM.tobytes().decode()
#: a UUID's 36 characters among the 40 of `bytes.hex("-", 2)` of its 16 bytes (eight
#: groups of four digits, each followed by a dash): all but the dashes after the
#: first, sixth, seventh and eighth groups
_UUID_FROM_HEX = np.array([at for at in range(40) if at not in (4, 29, 34, 39)])
#: the variant digit of a UUID (its 20th character) for each hex digit drawn there
_VARIANT_DIGIT = np.zeros(256, np.uint8)
_VARIANT_DIGIT[np.frombuffer(b"0123456789abcdef", np.uint8)] = np.frombuffer(b"89ab" * 4, np.uint8)
#: up to this many operation ids, `operations` formats them one by one (numpy's fixed
#: cost, and `ascii_strings`', are more than that)
_FEW_OPERATIONS = 8
_LOW = 0xFFFFFFFF


class _Pcg64State(ctypes.Structure):
    """numpy's `pcg64_state` (numpy/random/src/pcg64/pcg64.h), where a PCG64's bitgen_t
    `state` points: `has_uint32` says whether `uinteger`, the high half of the last
    64-bit word, is still to be handed out by the next `next_uint32`."""

    _fields_ = [("pcg_state", ctypes.c_void_p), ("has_uint32", ctypes.c_int),
                ("uinteger", ctypes.c_uint32)]


#: PyCapsule_GetPointer, for the `bitgen_t *` in a BitGenerator's `capsule`
_CAPSULE_POINTER = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))


def _state_address(bits: np.random.BitGenerator) -> int:
    """What `bits.ctypes.state_address` gives: `bitgen_t`'s first member, `void *state`
    (numpy/_core/include/numpy/random/bitgen.h), read through the capsule every bit
    generator has; `bits.ctypes` costs 30 µs and 1 kB per generator on first use."""
    return ctypes.c_void_p.from_address(_CAPSULE_POINTER(bits.capsule, b"BitGenerator")).value


def _layout_holds() -> bool:
    """Whether `_Pcg64State` reads and writes what `PCG64.state` shows (else every draw
    goes through numpy's own methods): a check against a numpy whose struct changed."""
    if sys.byteorder != "little":
        return False
    try:
        bits = np.random.PCG64(0)
        state = bits.state
        if _state_address(bits) != bits.ctypes.state_address:
            return False
        view = _Pcg64State.from_address(_state_address(bits))
        for has, half in ((1, 0x89ABCDEF), (0, 0x12345678)):
            bits.state = {**state, "has_uint32": has, "uinteger": half}
            if (view.has_uint32, view.uinteger) != (has, half):
                return False
        view.has_uint32, view.uinteger = 1, 0x2468ACE0
        return bits.state == {**state, "has_uint32": 1, "uinteger": 0x2468ACE0}
    except Exception:  # noqa: BLE001 - any surprise means: do not touch the struct
        return False


_LAYOUT_HOLDS = _layout_holds()


def _pcg64_state(bits: np.random.BitGenerator) -> _Pcg64State | None:
    """A view of a PCG64's pending half-word (1 µs; `bits.state` builds a dict, 2.5 µs).
    Not under the generator's lock, as numpy's own draws are: like every stream of the
    simulator, one is drawn from by one thread at a time."""
    if _LAYOUT_HOLDS and type(bits) is np.random.PCG64:
        return _Pcg64State.from_address(_state_address(bits))
    return None


def _bounded(rng: np.random.Generator, bounds: tuple[int, ...]) -> list[int]:
    """`[int(rng.integers(b)) for b in bounds]` (each b in [2, 2**32)), the same numbers
    and the same generator state after, without numpy's per-call cost (3 µs each).

    For such a range `Generator.integers` (int64, Lemire, not masked) goes through
    `random_bounded_uint64_fill` to `buffered_bounded_lemire_uint32`
    (numpy/random/src/distributions/distributions.c): one `next_uint32` x per value,
    m = x * b, the value m >> 32; only if the low 32 bits of m are below b, and below
    (2**32 - b) % b, is x rejected and another drawn. PCG64's `next_uint32` (pcg64.h)
    hands out the pending high half if it has one, else draws a 64-bit word, returns
    its low half and keeps the high one pending. So: the pending half, then the halves
    of words drawn at once with `random_raw` (PCG64's `next_raw` is its `next_uint64`),
    one more word at a time for rejections, and finally the pending half as numpy
    would leave it."""
    state = _pcg64_state(rng.bit_generator)
    if state is None or not bounds:
        return [int(rng.integers(b)) for b in bounds]
    bits = rng.bit_generator
    pending = 1 if state.has_uint32 else 0  # (any nonzero int counts, as in C)
    halves = [state.uinteger] if pending else []
    for word in bits.random_raw((len(bounds) - pending + 1) // 2).tolist():
        halves += (word & _LOW, word >> 32)
    out, taken = [], 0
    for b in bounds:
        while True:  # buffered_bounded_lemire_uint32, one x after another till one is kept
            if taken == len(halves):  # rejections used up the words drawn: one more
                word = int(bits.random_raw())
                halves += (word & _LOW, word >> 32)
            m = halves[taken] * b
            taken += 1
            if m & _LOW >= b or m & _LOW >= (0x100000000 - b) % b:  # (% only if rare)
                break
        out.append(m >> 32)
    fresh = taken - pending  # halves of words drawn here that were handed out
    if fresh % 2:  # ended on a low half: its high half is pending
        state.has_uint32, state.uinteger = 1, halves[taken]
    else:  # the last word's high half was handed out (or no word was drawn)
        state.has_uint32 = 0
        if fresh:
            state.uinteger = halves[taken - 1]
    return out


def random_bytes(rng: np.random.Generator, n: int) -> bytes:
    """`rng.bytes(n)`, for n a multiple of 8, drawn as whole 64-bit words: the same bytes
    (`bytes` draws 32-bit halves with `next_uint32`, the low then the high one of each
    word, little-endian) at a fifteenth of the cost (`Generator.bytes` checks its size
    with `np.prod` on every call). With no half pending, the words are drawn and the
    stale `uinteger` is left as it is; with a PCG64's half pending, that half comes
    first, then every half but the last word's high one, which is left pending."""
    bits = rng.bit_generator
    state = _pcg64_state(bits)
    if n % 8 or not n or (state is None and bits.state.get("has_uint32", 1) != 0):
        return rng.bytes(n)
    if state is None or not state.has_uint32:
        return bits.random_raw(n // 8).astype("<u8", copy=False).tobytes()
    words = bits.random_raw(n // 8)
    first = state.uinteger.to_bytes(4, "little")
    state.has_uint32, state.uinteger = 1, int(words[-1]) >> 32
    return first + words.astype("<u8", copy=False).tobytes()[:-4]


def _uuid4(raw: bytes) -> str:
    """str(uuid.UUID(bytes=raw, version=4)), without building the UUID object."""
    b = bytearray(raw)
    b[6] = (b[6] & 0x0F) | 0x40
    b[8] = (b[8] & 0x3F) | 0x80
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _uuids(drawn: bytes) -> list[str]:
    """`_uuid4` of each 16 bytes."""
    return [_uuid4(drawn[at:at + 16]) for at in range(0, len(drawn), 16)]


def _named(rng: np.random.Generator, suffix: int) -> str:
    """`adjective-noun-suffix`, the suffix `suffix` letters or digits: what
    `rng.integers(87)`, `rng.integers(95)`, `rng.integers(0, 36, suffix)` give (an
    array's values are drawn one after the other, like scalars, by the same
    `random_bounded_uint64_fill`)."""
    a, n, *letters = _bounded(rng, (len(ADJECTIVES), len(NOUNS)) + (len(_ALNUM),) * suffix)
    return f"{ADJECTIVES[a]}-{NOUNS[n]}-{''.join(map(_ALNUM_TEXT.__getitem__, letters))}"


class IdFactory:
    """Draws ids from a seeded stream; refuses to ever hand out the same id twice."""

    def __init__(self, issued: set[str]):
        self._issued = issued  # shared by every factory of one control plane

    def _unique(self, make) -> str:
        while True:
            ident = make()
            if ident not in self._issued:
                self._issued.add(ident)
                return ident

    def project(self, rng: np.random.Generator) -> str:
        def make() -> str:  # words, then rng.integers(10**7, 10**8): offset 10**7
            a, n, number = _bounded(rng, (len(ADJECTIVES), len(NOUNS), 9 * 10**7))
            return f"{ADJECTIVES[a]}-{NOUNS[n]}-{10**7 + number}"
        return self._unique(make)

    def branch(self, rng: np.random.Generator) -> str:
        return self._unique(lambda: f"br-{_named(rng, 8)}")

    def compute(self, rng: np.random.Generator) -> str:
        return self._unique(lambda: f"ep-{_named(rng, 8)}")

    def snapshot(self, rng: np.random.Generator) -> str:
        return self._unique(lambda: f"snap-{_named(rng, 8)}")

    def operation(self, rng: np.random.Generator) -> str:
        """Not entered among the issued ids (see `operation_bytes`): a served world drops
        its operations after a week, and the set of issued ids would keep them all."""
        return _uuid4(random_bytes(rng, 16))

    def operations(self, rng: np.random.Generator, n: int) -> list[str]:
        """n operation ids at once: the very ids n calls of `operation` would give."""
        if 0 < n <= _FEW_OPERATIONS:
            return _uuids(random_bytes(rng, 16 * n))
        return ascii_strings(self.operation_bytes(rng, n)).tolist()

    def operation_bytes(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """`operations` as 36-byte ASCII strings (numpy `S36`): the ids of operations
        nobody looks at one by one become Python strings only when a table is read
        (`ascii_strings`), not for every operation a fleet makes. rng.bytes(16 n) is the
        concatenation of n draws of rng.bytes(16), whole 64-bit words each.

        Unlike the ids of things a user names again (a deleted compute's id must never
        come back), these are not entered among the issued ids: 122 random bits make two
        equal operation ids as likely as a collision of the real service's UUIDs, and a
        fleet makes millions of them."""
        if n == 0:
            return np.empty(0, "S36")  # rng.bytes(0) still draws a word
        # the hex digits with dashes, in C; then the version digit and the variant
        # digit set as _uuid4 sets their bits
        digits = f"{random_bytes(rng, 16 * n).hex('-', 2)}-".encode()
        chars = np.frombuffer(digits, np.uint8).reshape(n, 40).take(_UUID_FROM_HEX, axis=1)
        chars[:, 14] = ord("4")
        chars[:, 19] = _VARIANT_DIGIT[chars[:, 19]]
        return chars.view("S36").reshape(n)

    def opaque(self, rng: np.random.Generator, prefix: str, n: int = 24) -> str:
        """Keys and secrets (auth integrations); unique like every other id."""
        # numpy's one call beats `_bounded` for this many letters (24 or 32)
        return self._unique(
            lambda: f"{prefix}{_ALNUM[rng.integers(0, len(_ALNUM), n)].tobytes().decode()}")


def ascii_strings(fixed: np.ndarray) -> np.ndarray:
    """Fixed-width ASCII strings (numpy `S<w>`, none with a NUL) as an object array of
    `str`: one line each, split in C (four times faster than slicing them one by one)."""
    n, width = len(fixed), fixed.dtype.itemsize
    lines = np.empty((n, width + 1), np.uint8)
    lines[:, :width] = np.ascontiguousarray(fixed).view(np.uint8).reshape(n, width)
    lines[:, width] = ord("\n")
    out = np.empty(n, object)
    out[:] = lines.tobytes().decode("ascii").split("\n")[:n]
    return out

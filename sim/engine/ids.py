"""Identifiers shaped like the real service's, drawn from seeded streams.

Projects look like `shy-river-12345678`, branches `br-...`, computes `ep-...`
(the specification: a compute id always starts with `ep-`), operations are UUIDs. Every
id ever issued is remembered, so a compute created after a deletion always
gets different connection details (the specification, compute changes #6).
"""

from __future__ import annotations

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
#: each byte's two hex digits, as the two bytes of one uint16 (in memory order)
_HEX_PAIRS = np.frombuffer(b"".join(f"{b:02x}".encode() for b in range(256)), dtype=np.uint16)
#: where a UUID's 32 hex digits go among its 36 characters (the rest are dashes)
_DIGIT_AT = np.array([at for at in range(36) if at not in (8, 13, 18, 23)])


def random_bytes(rng: np.random.Generator, n: int) -> bytes:
    """`rng.bytes(n)`, for n a multiple of 8, drawn as whole 64-bit words when the bit
    generator holds no pending 32-bit half: the same bytes (`bytes` draws 32-bit
    halves, the low then the high one of each word, little-endian) at a fifteenth of
    the cost (`Generator.bytes` checks its size with `np.prod` on every call)."""
    bits = rng.bit_generator
    if n % 8 == 0 and n and bits.state.get("has_uint32", 1) == 0:
        return bits.random_raw(n // 8).astype("<u8", copy=False).tobytes()
    return rng.bytes(n)


def _uuid4(raw: bytes) -> str:
    """str(uuid.UUID(bytes=raw, version=4)), without building the UUID object."""
    b = bytearray(raw)
    b[6] = (b[6] & 0x0F) | 0x40
    b[8] = (b[8] & 0x3F) | 0x80
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class IdFactory:
    """Draws ids from a seeded stream; refuses to ever hand out the same id twice."""

    def __init__(self, issued: set[str]):
        self._issued = issued  # shared by every factory of one control plane

    def _words(self, rng: np.random.Generator) -> str:
        return f"{ADJECTIVES[rng.integers(len(ADJECTIVES))]}-{NOUNS[rng.integers(len(NOUNS))]}"

    def _suffix(self, rng: np.random.Generator, n: int = 8) -> str:
        return _ALNUM[rng.integers(0, len(_ALNUM), n)].tobytes().decode()

    def _unique(self, make) -> str:
        while True:
            ident = make()
            if ident not in self._issued:
                self._issued.add(ident)
                return ident

    def project(self, rng: np.random.Generator) -> str:
        return self._unique(lambda: f"{self._words(rng)}-{rng.integers(10**7, 10**8)}")

    def branch(self, rng: np.random.Generator) -> str:
        return self._unique(lambda: f"br-{self._words(rng)}-{self._suffix(rng)}")

    def compute(self, rng: np.random.Generator) -> str:
        return self._unique(lambda: f"ep-{self._words(rng)}-{self._suffix(rng)}")

    def operation(self, rng: np.random.Generator) -> str:
        return self._unique(lambda: _uuid4(random_bytes(rng, 16)))

    def operations(self, rng: np.random.Generator, n: int) -> list[str]:
        """n operation ids at once: the very ids n calls of `operation` would give."""
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
        raw = np.frombuffer(random_bytes(rng, 16 * n), dtype=np.uint8).reshape(n, 16).copy()
        raw[:, 6] = (raw[:, 6] & 0x0F) | 0x40  # version 4 and the variant, as _uuid4 sets
        raw[:, 8] = (raw[:, 8] & 0x3F) | 0x80
        chars = np.full((n, 36), ord("-"), np.uint8)
        chars[:, _DIGIT_AT] = _HEX_PAIRS[raw].view(np.uint8).reshape(n, 32)
        return chars.view("S36").reshape(n)

    def opaque(self, rng: np.random.Generator, prefix: str, n: int = 24) -> str:
        """Keys and secrets (auth integrations); unique like every other id."""
        return self._unique(lambda: f"{prefix}{self._suffix(rng, n)}")


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

"""Quantities planners write in scenario files: durations ("1h30m") and byte sizes ("2GiB").

Both parsers take a number too (seconds, bytes) and raise ValueError with a
message that can follow a field path on one line.
"""

from __future__ import annotations

import math
import re

#: Largest unit first: the order a duration must be written in.
DURATION_UNITS: dict[str, float] = {
    "w": 604_800.0,
    "d": 86_400.0,
    "h": 3_600.0,
    "m": 60.0,
    "s": 1.0,
    "ms": 0.001,
}
# "ms" before "m" so that "500ms" is not read as 500 minutes and a stray "s".
_PART = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*(ms|w|d|h|m|s)")
_NUMBER = re.compile(r"\s*[+-]?(\d+(?:\.\d*)?|\.\d+)(e[+-]?\d+)?\s*", re.IGNORECASE)

BYTE_UNITS: dict[str, int] = {
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "tb": 1000**4,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
}
_BYTES = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]+)?\s*", re.IGNORECASE)

_DURATION_HELP = 'write a number of seconds or e.g. "90s", "500ms", "1h30m", "7d", "2w"'


#: Ten years: anything longer is a slip of the keyboard, not a scenario.
MAX_DURATION_S = 3650 * 86_400.0


def _number(value: int | float, what: str) -> float:
    """A YAML integer past float's range is an OverflowError, not a ValueError: make it one
    (it escaped validation as a traceback; found by the bad-scenario tests)."""
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"{what} must be finite, got an integer too large for a float") from None


def _non_negative(value: float, what: str) -> float:
    if not math.isfinite(value):
        raise ValueError(f"{what} must be finite, got {value!r}")
    if value < 0:
        raise ValueError(f"{what} must be >= 0, got {value:g}")
    return float(value)


def _seconds(value: float) -> float:
    seconds = _non_negative(value, "a duration")
    if seconds > MAX_DURATION_S:
        raise ValueError(f"a duration must be at most {format_duration(MAX_DURATION_S)}, "
                         f"got {seconds:g} s")
    return seconds


def parse_duration(value: object) -> float:
    """Seconds in a duration: a number (seconds) or a string such as "1h30m" or "500ms"."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"expected a duration, got {value!r}; {_DURATION_HELP}")
    if isinstance(value, (int, float)):
        return _seconds(_number(value, "a duration"))
    text = value.strip().lower()
    if not text:
        raise ValueError(f"empty duration; {_DURATION_HELP}")
    if _NUMBER.fullmatch(text):
        return _seconds(float(text))
    total, pos = 0.0, 0
    seen: list[str] = []
    for match in _PART.finditer(text):
        if match.start() != pos:
            break
        unit = match.group(2)
        if seen and list(DURATION_UNITS).index(unit) <= list(DURATION_UNITS).index(seen[-1]):
            raise ValueError(
                f"bad duration {value!r}: units go from largest to smallest, each at most once"
            )
        seen.append(unit)
        total += float(match.group(1)) * DURATION_UNITS[unit]
        pos = match.end()
    if not seen or text[pos:].strip():
        raise ValueError(f"bad duration {value!r}; {_DURATION_HELP}")
    return _seconds(total)


def parse_run_length(value: object) -> float:
    """The length of a run: a duration written with its unit ("30d", "6h"), never a bare
    number. A planner who writes `duration: 30` may mean 30 days, hours or minutes; read as
    30 seconds it ran without a word. Refused, naming the units to write."""
    bare = isinstance(value, (int, float)) and not isinstance(value, bool)
    if bare or (isinstance(value, str) and _NUMBER.fullmatch(value.strip())):
        n = value.strip() if isinstance(value, str) else (
            str(value) if isinstance(value, int) else f"{value:g}")
        if len(n) > 20 or not math.isfinite(float(n)):  # its digits do not help: its unit
            raise ValueError("a bare number has no unit: write the run's length with one, "
                             "e.g. \"30d\", \"6h\", \"90m\" (units: w, d, h, m, s, ms)")
        raise ValueError(f"{n} has no unit: write the run's length with one, e.g. "
                         f"\"{n}d\", \"{n}h\", \"{n}m\" or \"{n}s\" (units: w, d, h, m, s, ms)")
    return parse_duration(value)


def format_duration(seconds: float) -> str:
    """The shortest "1d2h3m4s" spelling of whole seconds (fractions kept in the seconds part)."""
    if seconds == 0:
        return "0s"
    parts, rest = [], float(seconds)
    for unit in ("d", "h", "m"):
        n = int(rest // DURATION_UNITS[unit])
        if n:
            parts.append(f"{n}{unit}")
            rest -= n * DURATION_UNITS[unit]
    if rest > 1e-9 or not parts:
        parts.append(f"{rest:g}s")
    return "".join(parts)


def readable_duration(seconds: float) -> str:
    """A span as a person reads it: "30 d", "1 h 30 min", "0.381 s"."""
    days, rest = divmod(float(seconds), 86_400.0)
    hours, rest = divmod(rest, 3600.0)
    minutes, secs = divmod(rest, 60.0)
    parts = [f"{int(days)} d"] if days else []
    parts += [f"{int(hours)} h"] if hours else []
    parts += [f"{int(minutes)} min"] if minutes else []
    parts += [f"{secs:.3g} s"] if secs or not parts else []
    return " ".join(parts)


def parse_bytes(value: object) -> float:
    """Bytes in a size: a number (bytes) or a string such as "512MiB", "2GB", "1.5 GiB"."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"expected a size in bytes, got {value!r}")
    if isinstance(value, (int, float)):
        return _non_negative(_number(value, "a size"), "a size")
    match = _BYTES.fullmatch(value)
    unit = (match.group(2) or "b").lower() if match else ""
    if not match or unit not in BYTE_UNITS:
        raise ValueError(
            f"bad size {value!r}; write a number of bytes or e.g. \"512MiB\", \"2GB\", \"1TiB\""
        )
    return _non_negative(float(match.group(1)) * BYTE_UNITS[unit], "a size")

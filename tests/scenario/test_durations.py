"""Durations and byte sizes as planners write them."""

from __future__ import annotations

import pytest

from sim.scenario.durations import format_duration, parse_bytes, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("7d", 604_800),
        ("90m", 5_400),
        ("3600s", 3_600),
        ("1h30m", 5_400),
        ("1h 30m", 5_400),
        ("1d12h", 129_600),
        ("2w", 1_209_600),
        ("500ms", 0.5),
        ("1m500ms", 60.5),
        ("1.5h", 5_400),
        (" 45s ", 45),
        ("0s", 0),
        ("3600", 3_600),
        ("2.5", 2.5),
        ("1e3", 1_000),
        ("1W2D", 777_600),  # case does not matter
        (3600, 3_600),
        (0.25, 0.25),
        (0, 0),
    ],
)
def test_good_durations(text: object, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("", "empty duration"),
        ("   ", "empty duration"),
        ("7 days", "bad duration"),
        ("1x", "bad duration"),
        ("h", "bad duration"),
        ("1h30", "bad duration"),
        ("30m1h", "largest to smallest"),
        ("1h1h", "largest to smallest"),
        ("-5s", "bad duration"),
        (-5, ">= 0"),
        ("-5", ">= 0"),
        (float("nan"), "finite"),
        (float("inf"), "finite"),
        ("1e999", "finite"),
        ("9" * 400 + "s", "finite"),
        ("3651d", "at most 3650d"),
        (1e308, "at most 3650d"),
        (True, "expected a duration"),
        (None, "expected a duration"),
        ([1], "expected a duration"),
    ],
)
def test_bad_durations(value: object, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment) as err:
        parse_duration(value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (45, "45s"), (5_400, "1h30m"), (604_800, "7d"), (129_600.5, "1d12h0.5s")],
)
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("value", "size"),
    [("512MiB", 512 * 1024**2), ("2GB", 2e9), ("1.5 GiB", 1.5 * 1024**3), ("100", 100), (7, 7)],
)
def test_good_sizes(value: object, size: float) -> None:
    assert parse_bytes(value) == size


@pytest.mark.parametrize("value", ["2 gigs", "GiB", "-1GiB", True, float("inf"), None])
def test_bad_sizes(value: object) -> None:
    with pytest.raises(ValueError):
        parse_bytes(value)

"""Simulated time: SimPy's `env.now` (seconds since the scenario start) as UTC instants.

Nothing in the engine reads the wall clock; every timestamp the API shows is
derived here. Operations need a total order, so they carry integer
microseconds (`to_us`), and the ISO form keeps them.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

DEFAULT_START = datetime(2026, 1, 5, tzinfo=UTC)


def to_us(t: float) -> int:
    return int(round(t * 1_000_000))


class Clock:
    def __init__(self, start: datetime = DEFAULT_START):
        if start.tzinfo is None:
            start = start.replace(tzinfo=UTC)
        self.start = start.astimezone(UTC)

    def instant(self, t: float) -> datetime:
        return self.start + timedelta(microseconds=to_us(t))

    def iso(self, t: float | None) -> str | None:
        """Seconds precision, as the real API shows resource timestamps."""
        if t is None:
            return None
        return self.instant(t).strftime("%Y-%m-%dT%H:%M:%SZ")

    def iso_us(self, us: int) -> str:
        """Microsecond precision, for operations and pagination cursors."""
        return (self.start + timedelta(microseconds=us)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    def parse_us(self, text: str) -> int:
        """Inverse of iso_us; accepts any ISO 8601 instant. Raises ValueError."""
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        delta = value - self.start
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds

"""Scale to zero: what suspend_timeout_seconds means (the design notes fills the specification's gap)."""

from __future__ import annotations

from sim.rules.errors import invalid

DEFAULT_SUSPEND_TIMEOUT_S = 300  # the specification: suspends after 5 minutes of inactivity
NEVER = -1
MIN_SUSPEND_TIMEOUT_S = 60
MAX_SUSPEND_TIMEOUT_S = 604_800  # one week


def validate_suspend_timeout(value: int, field: str = "suspend_timeout_seconds") -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise invalid(field, f"must be an integer, got {value!r}")
    if value in (0, NEVER):
        return
    if not MIN_SUSPEND_TIMEOUT_S <= value <= MAX_SUSPEND_TIMEOUT_S:
        raise invalid(
            field,
            f"must be 0 (default, {DEFAULT_SUSPEND_TIMEOUT_S} s), -1 (never) or "
            f"{MIN_SUSPEND_TIMEOUT_S}..{MAX_SUSPEND_TIMEOUT_S}, got {value}",
        )


def effective_suspend_timeout(value: int) -> float | None:
    """Seconds of inactivity before suspension; None means the compute never suspends."""
    if value == NEVER:
        return None
    if value == 0:
        return float(DEFAULT_SUSPEND_TIMEOUT_S)
    return float(value)

"""A branch's snapshot schedule: when each item of it is next due.

Items are the document's `BackupScheduleItem`: a frequency (hourly, daily, weekly,
monthly, yearly) with the hour, day and month it applies at where it has them
(weekly: `day` 1-7 is Monday-Sunday; monthly: a day past the month's end is its last
day), and `retention_seconds` (>= 3600; none: kept until deleted).
"""

from __future__ import annotations

import calendar
from datetime import datetime, timedelta
from typing import Any

from sim.rules.errors import invalid

FREQUENCIES = ("hourly", "daily", "weekly", "monthly", "yearly")
MIN_RETENTION_S = 3600
MAX_ITEMS = 10  # a schedule's items (the simulator's bound: each item is a timer)


def check_schedule(items: Any) -> list[dict[str, Any]]:
    """The schedule as plain dicts, or 400 naming the field."""
    if not isinstance(items, list):
        raise invalid("schedule", "must be a list")
    if len(items) > MAX_ITEMS:
        raise invalid("schedule", f"at most {MAX_ITEMS} items")
    out = []
    for i, item in enumerate(items):
        where = f"schedule[{i}]"
        if not isinstance(item, dict):
            raise invalid(where, "must be an object")
        if item.get("frequency") not in FREQUENCIES:
            raise invalid(f"{where}.frequency", f"must be one of {list(FREQUENCIES)}")
        bounds = {"hour": (0, 23), "day": (1, 31), "month": (1, 12),
                  "retention_seconds": (MIN_RETENTION_S, 100 * 365 * 86_400)}
        for name, (low, high) in bounds.items():
            value = item.get(name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                                      or not low <= value <= high):
                raise invalid(f"{where}.{name}", f"must be an integer {low}..{high}")
        if item["frequency"] == "weekly" and (item.get("day") or 1) > 7:
            raise invalid(f"{where}.day", "a weekly snapshot's day is 1..7 (Monday..Sunday)")
        out.append({k: v for k, v in item.items() if v is not None})
    return out


def next_due(item: dict[str, Any], after: datetime) -> datetime:
    """The first instant strictly after `after` (UTC) at which `item` takes a snapshot."""
    hour = item.get("hour", 0)
    day = item.get("day", 1)
    frequency = item["frequency"]
    base = after.replace(minute=0, second=0, microsecond=0)
    if frequency == "hourly":
        return base + timedelta(hours=1)
    if frequency == "daily":
        t = base.replace(hour=hour)
        return t if t > after else t + timedelta(days=1)
    if frequency == "weekly":
        t = base.replace(hour=hour) + timedelta(days=(day - 1 - after.weekday()) % 7)
        return t if t > after else t + timedelta(days=7)
    if frequency == "monthly":
        year, month = after.year, after.month
        for _ in range(2):
            t = _on_day(year, month, day, hour, after)
            if t > after:
                return t
            year, month = year + month // 12, month % 12 + 1
        return t
    month = item.get("month", 1)
    for year in (after.year, after.year + 1):
        t = _on_day(year, month, day, hour, after)
        if t > after:
            return t
    return t


def _on_day(year: int, month: int, day: int, hour: int, like: datetime) -> datetime:
    last = calendar.monthrange(year, month)[1]
    return like.replace(year=year, month=month, day=min(day, last), hour=hour, minute=0,
                        second=0, microsecond=0)

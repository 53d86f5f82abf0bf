"""Arrival traces from CSV files, turned into anchors for `Replay`.

Two layouts, told apart by the header (or by `format`):

- timestamps: one arrival per row, in the column named time, timestamp, at or
  arrival (else the first column); each value is an ISO 8601 instant (naive
  means UTC) or a number of seconds since the scenario start;
- per_minute: columns `minute,count`; minute is the ISO 8601 start of the
  minute or a number of minutes since the scenario start; count arrivals are
  spread uniformly over that minute when the stream is drawn.

Lines starting with `#` and blank lines are skipped. The csv module is enough
here and keeps pandas out of the workload package.
"""

from __future__ import annotations

import csv
import math
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

FORMATS = ("timestamps", "per_minute")
TIME_COLUMNS = ("time", "timestamp", "at", "arrival")
MINUTE_S = 60.0


def _as_utc(dt: datetime) -> datetime:
    return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)


def _number(cell: str) -> float | None:
    try:
        value = float(cell)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _instant(cell: str, start: datetime, unit_s: float) -> float:
    """Seconds after start of a cell: a number of `unit_s` units, or an ISO 8601 instant."""
    value = _number(cell)
    if value is not None:
        return value * unit_s
    try:
        return (_as_utc(datetime.fromisoformat(cell.strip())) - start).total_seconds()
    except ValueError:
        raise ValueError(f"{cell!r} is neither a number nor an ISO 8601 instant") from None


def _looks_like_header(row: list[str]) -> bool:
    cell = row[0].strip()
    if _number(cell) is not None:
        return False
    try:
        datetime.fromisoformat(cell)
    except ValueError:
        return True
    return False


def read_arrivals_csv(
    path: str | Path, start: datetime, format: str | None = None
) -> tuple[np.ndarray, float]:
    """Anchors (seconds since `start`, sorted, repeated per arrival) and their spread in seconds."""
    if format is not None and format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
    start = _as_utc(start)
    with open(path, newline="", encoding="utf-8") as f:
        rows = [
            (n, row)
            for n, row in enumerate(csv.reader(f), start=1)
            if row and any(c.strip() for c in row) and not row[0].lstrip().startswith("#")
        ]
    header: list[str] | None = None
    if rows and _looks_like_header(rows[0][1]):
        header = [c.strip().lower() for c in rows[0][1]]
        rows = rows[1:]
    if format is None:
        format = "per_minute" if header and {"minute", "count"} <= set(header) else "timestamps"
    cols: tuple[int, ...]
    if format == "per_minute":
        if header and not {"minute", "count"} <= set(header):
            raise ValueError(f"{path}: per_minute needs the columns minute and count")
        cols = (header.index("minute"), header.index("count")) if header else (0, 1)
    else:
        names = [c for c in TIME_COLUMNS if header and c in header]
        cols = (header.index(names[0]) if names and header else 0,)
    anchors: list[float] = []
    for n, row in rows:
        try:
            cells = [row[c] for c in cols]
            t = _instant(cells[0], start, MINUTE_S if format == "per_minute" else 1.0)
            if format == "timestamps":
                anchors.append(t)
                continue
            count = _number(cells[1])
            if count is None or count < 0 or count != int(count):
                raise ValueError(f"count must be a whole number >= 0, got {cells[1]!r}")
            anchors.extend([t] * int(count))
        except (ValueError, IndexError) as err:
            reason = "too few columns" if isinstance(err, IndexError) else str(err)
            raise ValueError(f"{path}, line {n}: {reason}") from None
    spread = MINUTE_S if format == "per_minute" else 0.0
    return np.sort(np.asarray(anchors, dtype=np.float64)), spread

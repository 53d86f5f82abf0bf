"""A run's rows from its first instant on: the warm-up before it left out, times from it.

A scenario describes a fleet that already exists. The engine creates it a warm-up
before the scenario's start (engine time 0) and lets it run, so that at the start
(engine time `t0`) every compute is in a state its own workload put it in, not the
state its creation did. Counters count from `t0` only (`EngineConfig.count_from_s`);
this module does the same to the rows: what began before `t0` is left out, a state
interval that spans it is cut at it, and every time becomes seconds since `t0`, so a
result reads exactly as a run that began at the scenario's start.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from sim.engine.connection_table import ConnectionTable
from sim.engine.records import RunResult
from sim.engine.row_table import RowBlock, RowTable


def counted_span(start: np.ndarray, end: np.ndarray, t0: float
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The parts of the spans [start, end) after `t0`, in seconds since it, and which
    spans have such a part."""
    keep = end > t0
    return np.maximum(start[keep], t0) - t0, end[keep] - t0, keep


def from_first_instant(result: RunResult, t0: float) -> None:
    """Leave out of `result` the rows of the warm-up before `t0`, and shift the rest."""
    if t0 == 0:
        return
    result.computes = [row._replace(created_s=row.created_s - t0,
                                    deleted_s=None if row.deleted_s is None
                                    else row.deleted_s - t0)
                       for row in result.computes]
    result.projects = {pid: (key, created - t0) for pid, (key, created)
                       in result.projects.items()}
    result.operations = _rows_after(result.operations, "created_s", t0, ("created_s", "updated_s"))
    result.wakes = _rows_after(result.wakes, "at_s", t0, ("at_s",))
    intervals = result.intervals.columns()
    start, end, keep = counted_span(intervals["start_s"], intervals["end_s"], t0)
    result.intervals = _table(result.intervals, {**{k: v[keep] for k, v in intervals.items()},
                                                 "start_s": start, "end_s": end})
    result.connections = _connections_after(result.connections, t0)


def _rows_after(table: RowTable[Any], at: str, t0: float, times: tuple[str, ...]
                ) -> RowTable[Any]:
    columns = table.columns()
    keep = columns[at] >= t0
    return _table(table, {name: column[keep] - t0 if name in times else column[keep]
                          for name, column in columns.items()})


def _table(like: RowTable[Any], columns: dict[str, np.ndarray]) -> RowTable[Any]:
    n = len(next(iter(columns.values())))
    return RowTable(like.row_type, [RowBlock(like.row_type, n, columns)] if n else [])


def _connections_after(table: ConnectionTable, t0: float) -> ConnectionTable:
    kept = table.take(np.flatnonzero(table.column("arrival_s") >= t0))
    return ConnectionTable(replace(block, arrival_s=block.arrival_s - t0)
                           for block in kept.parts)


__all__ = ["counted_span", "from_first_instant"]

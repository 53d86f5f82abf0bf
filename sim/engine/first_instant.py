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
    result.operations = _rows_after(result.operations, "created_s", t0,
                                    ("created_s", "updated_s"))
    result.wakes = _rows_after(result.wakes, "at_s", t0, ("at_s",))
    result.intervals = result.intervals.with_parts(
        _intervals_after(part, t0) for part in result.intervals.parts)
    result.connections = result.connections.with_parts(
        _connections_after(part, t0) for part in result.connections.parts)


# Part by part, as the rows are held (a block of columns per compute from the kernel, lists
# of rows from the engine): a fleet's millions of rows are never turned into objects here.

def _rows_after(table: RowTable[Any], at: str, t0: float, times: tuple[str, ...]
                ) -> RowTable[Any]:
    fields = table.row_type._fields
    index = [fields.index(name) for name in times]
    kept: list[Any] = []
    for part in table.parts:
        if isinstance(part, list):
            where = fields.index(at)
            kept.append([_shifted(row, index, t0) for row in part if row[where] >= t0])
            continue
        values = dict(part.values)
        keep = values[at] >= t0
        values = {name: value[keep] if isinstance(value, np.ndarray) else value
                  for name, value in values.items()}
        for name in times:
            values[name] = values[name] - t0
        kept.append(RowBlock(part.row_type, int(keep.sum()), values))
    return table.with_parts(kept)


def _shifted(row: Any, index: list[int], t0: float) -> Any:
    values = list(row)
    for i in index:
        values[i] -= t0
    return type(row)._make(values)


def _intervals_after(part: Any, t0: float) -> Any:
    if isinstance(part, list):
        return [row._replace(start_s=max(row.start_s, t0) - t0, end_s=row.end_s - t0)
                for row in part if row.end_s > t0]
    values = dict(part.values)
    start, end, keep = counted_span(values["start_s"], values["end_s"], t0)
    values = {name: value[keep] if isinstance(value, np.ndarray) else value
              for name, value in values.items()}
    values["start_s"], values["end_s"] = start, end
    return RowBlock(part.row_type, int(keep.sum()), values)


def _connections_after(part: Any, t0: float) -> Any:
    if isinstance(part, list):
        return [row._replace(arrival_s=row.arrival_s - t0) for row in part
                if row.arrival_s >= t0]
    kept = part.where(part.arrival_s >= t0)
    return replace(kept, arrival_s=kept.arrival_s - t0)


__all__ = ["counted_span", "from_first_instant"]

"""One canonical row order for every run, however it was computed.

Projects never interact inside a run (each has its own random streams, its
own operation lanes and its own timers), so a run of some of the project
instances replays exactly what those projects do in a run of the whole
fleet, and the rows of one project do not depend on which road computed
them (the kernel in bulk, or the SimPy engine). What differs is only how
rows interleave in the record lists. Every result is therefore put in one
canonical order:

- rows grouped by project, projects in instance order (template order, then
  index; projects created later by API calls after them, by creation time);
- within a project, computes in creation order, and each compute's rows by
  time: connections by arrival, state intervals by start, wakes by instant;
  operations by creation instant (unique within a project).

A single-process run, a run split across processes, and a run whose projects
took different roads then hold the same rows in the same order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sim.engine.cu_steps import Steps, joined
from sim.engine.records import ConnectionTable, QueueWaits, RunResult
from sim.engine.row_table import RowTable
from sim.engine.tallies import OperationCount, summed_counts
from sim.scenario.schema import Scenario


def instance_order(scenario: Scenario) -> dict[str, int]:
    return {inst.key: i for i, inst in enumerate(scenario.instances())}


def project_ranks(result: RunResult, instance_keys: Sequence[str],
                  order: Mapping[str, int]) -> dict[str, tuple]:
    """A sort key for every project of `result`.

    `result` ran the instances `instance_keys`; its `projects` names each
    project's instance key. Projects of no instance were created by scripted
    API calls; they sort after all instances, by creation time.
    """
    mine = set(instance_keys)
    ranks: dict[str, tuple] = {}
    for pid, (key, created) in result.projects.items():
        ranks[pid] = (0, order[key], 0.0, "") if key in mine else (1, 0, created, pid)
    if sum(rank[0] == 0 for rank in ranks.values()) < len(mine):
        raise RuntimeError(f"a run of {len(mine)} project instances created only "
                           f"{len(ranks)} projects")
    return ranks


def _computes_by_project(rows: list, ranks: Mapping[str, tuple]) -> list:
    """Compute rows grouped by project in rank order (a stable sort)."""
    unknown = {row.project_id for row in rows} - set(ranks)
    if unknown:
        raise RuntimeError(f"rows of projects the run never created: {sorted(unknown)[:3]}")
    return sorted(rows, key=lambda row: ranks[row.project_id])


def _by_project(table: Any, ranks: Mapping[str, tuple],
                position: Mapping[str, int] | None = None, when: str = "") -> Any:
    """Rows of a table (a `RowTable` or the connections) grouped by project in rank order;
    within a project, ordered by compute `position` and then by the column `when`, if given
    (a stable sort: rows with equal keys keep the order the run recorded them in)."""
    try:
        project = table.codes("project_id", _project_order(ranks))
        if position is None:
            compute = when_s = np.zeros(len(project))
        else:
            compute, when_s = table.codes("compute_id", position), table.column(when)
    except KeyError as err:
        raise RuntimeError(f"rows of projects the run never created: {err}") from None
    moved = in_runs(table, project, compute, when_s)
    return moved if moved is not None else table.take(np.lexsort((when_s, compute, project)))


def _project_order(ranks: Mapping[str, tuple]) -> dict[str, int]:
    return {pid: i for i, pid in enumerate(sorted(ranks, key=ranks.__getitem__))}


def in_runs(table: Any, project: np.ndarray, compute: np.ndarray, when: np.ndarray) -> Any:
    """`table`'s rows stably sorted by (project, compute, when), moved as whole runs: a run is
    rows of one part of the table, of one compute, in order of `when` (a compute's rows from
    the kernel are one run). None when two runs of one compute overlap in time: only a sort
    of the rows can then interleave them.

    The runs are sorted by (project, compute, first instant, place in the table); that
    is the rows' order when each run ends before the next of its compute begins, or at its
    very instant and was recorded before it."""
    parts = table.parts
    n = len(project)
    if n == 0:
        return table
    offsets = np.cumsum([0] + [len(part) for part in parts])
    cut = np.zeros(n, np.bool_)
    cut[offsets[:-1]] = True
    cut[1:] |= (project[1:] != project[:-1]) | (compute[1:] != compute[:-1]) | (when[1:] < when[:-1])
    starts = np.flatnonzero(cut)
    ends = np.r_[starts[1:], n]
    order = np.lexsort((starts, when[starts], compute[starts], project[starts]))
    start, end = starts[order], ends[order]
    same = (project[start[1:]] == project[start[:-1]]) & (compute[start[1:]] == compute[start[:-1]])
    before, after = when[end[:-1] - 1], when[start[1:]]
    if not np.all(~same | (before < after) | ((before == after) & (start[:-1] < start[1:]))):
        return None
    of_part = np.searchsorted(offsets, start, side="right") - 1
    moved = []
    for k, a, b in zip(of_part.tolist(), (start - offsets[of_part]).tolist(),
                       (end - offsets[of_part]).tolist(), strict=True):
        part = parts[k]
        if a == 0 and b == len(part):
            moved.append(part)
        else:
            moved.append(part[a:b] if isinstance(part, list) else part.between(a, b))
    return table.with_parts(moved)


def canonical_result(parts: Sequence[tuple[RunResult, Sequence[str]]],
                     order: Mapping[str, int]) -> RunResult:
    """One result in canonical row order from the results of parts of a fleet (or one run).

    `parts` pairs each result with the instance keys it ran, in the order it
    ran them; `order` gives every instance key's position in the fleet.
    """
    if not parts:
        raise ValueError("no results to merge")
    head = parts[0][0]
    for other, _ in parts[1:]:
        same = (other.name, other.seed, other.start_iso, other.duration_s,
                other.price_per_cu_hour, other.assumptions, other.pricing)
        if same != (head.name, head.seed, head.start_iso, head.duration_s,
                    head.price_per_cu_hour, head.assumptions, head.pricing):
            raise ValueError("results of different runs cannot be merged")
    ranks: dict[str, tuple] = {}
    for result, keys in parts:
        ranks.update(project_ranks(result, keys, order))
    computes = _computes_by_project([row for result, _ in parts for row in result.computes],
                                    ranks)
    position = {row.compute_id: i for i, row in enumerate(computes)}

    def merged(table: str, when: str = "") -> RowTable:
        joined = RowTable.joined(getattr(result, table) for result, _ in parts)
        return _by_project(joined, ranks, position if when else None, when)

    actions = sorted((a for result, _ in parts for a in result.actions),
                     key=lambda a: (a.at_s, a.call, a.status, a.code))
    return RunResult(
        name=head.name, seed=head.seed, start_iso=head.start_iso, duration_s=head.duration_s,
        price_per_cu_hour=head.price_per_cu_hour,
        computes=computes, operations=merged("operations"),
        intervals=merged("intervals", "start_s"),
        connections=_by_project(ConnectionTable.joined(r.connections for r, _ in parts),
                                ranks, position, "arrival_s"),
        wakes=merged("wakes", "at_s"), actions=actions, assumptions=dict(head.assumptions),
        fleet_ns=_summed_minutes(parts), wake_waits=_joined_waits(parts),
        operation_counts=_summed_operations(parts), on_spans=_joined_spans(parts),
        template_on_ns=_summed_template_minutes(parts), queue_waits=_joined_queue_waits(parts),
        cu_steps=_joined_steps(parts),
        projects={pid: info for pid in sorted(ranks, key=ranks.__getitem__)
                  for r, _ in parts if (info := r.projects.get(pid)) is not None},
        roads=_summed_roads(parts), warm_up_s=head.warm_up_s, pricing=dict(head.pricing),
    )


def _joined_steps(parts: Sequence[tuple[RunResult, Sequence[str]]]
                  ) -> dict[str, Steps] | None:
    """Per template, the CU steps of every part (a template's projects may be in several)."""
    kept = [r.cu_steps for r, _ in parts if r.cu_steps is not None]
    if not kept:
        return None
    names = dict.fromkeys(name for steps in kept for name in steps)
    return {name: joined(steps[name] for steps in kept if name in steps) for name in names}


def _summed_roads(parts: Sequence[tuple[RunResult, Sequence[str]]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for result, _ in parts:
        for road, n in result.roads.items():
            total[road] = total.get(road, 0) + n
    return dict(sorted(total.items()))


def _summed_minutes(parts: Sequence[tuple[RunResult, Sequence[str]]]
                    ) -> tuple[np.ndarray, np.ndarray] | None:
    """Per-minute sums of a run that kept no event rows: integers, exact in any order."""
    sums = [r.fleet_ns for r, _ in parts if r.fleet_ns is not None]
    if not sums:
        return None
    return (np.sum([on for on, _ in sums], axis=0), np.sum([cu for _, cu in sums], axis=0))


def _summed_operations(parts: Sequence[tuple[RunResult, Sequence[str]]]
                       ) -> list[OperationCount] | None:
    """Operation counts of a run that kept no event rows: integers, exact in any order."""
    if all(r.operation_counts is None for r, _ in parts):
        return None
    return summed_counts(r.operation_counts or [] for r, _ in parts)


def _joined_spans(parts: Sequence[tuple[RunResult, Sequence[str]]]
                  ) -> dict[str, tuple[np.ndarray, np.ndarray]] | None:
    """On-spans of a run that kept no event rows, per project (each in one part only)."""
    if all(r.on_spans is None for r, _ in parts):
        return None
    joined: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for r, _ in parts:
        joined.update(r.on_spans or {})
    return {k: joined[k] for k in sorted(joined)}


def _summed_template_minutes(parts: Sequence[tuple[RunResult, Sequence[str]]]
                             ) -> dict[str, np.ndarray] | None:
    """Per template, the per-minute sums of a run that kept no event rows (integers)."""
    sums = [r.template_on_ns for r, _ in parts if r.template_on_ns is not None]
    if not sums:
        return None
    total: dict[str, np.ndarray] = {}
    for part in sums:
        for name, on in part.items():
            total[name] = total[name] + on if name in total else on.copy()
    return total


def _joined_queue_waits(parts: Sequence[tuple[RunResult, Sequence[str]]]
                        ) -> dict[str, QueueWaits]:
    """Per compute, its queue waits (a compute ran in one part; its waits, in order)."""
    joined: dict[str, QueueWaits] = {}
    for r, _ in parts:
        for compute_id, waits in r.queue_waits.items():
            joined[compute_id] = joined[compute_id].joined(waits) if compute_id in joined \
                else waits
    return {k: joined[k] for k in sorted(joined)}


def _joined_waits(parts: Sequence[tuple[RunResult, Sequence[str]]]
                  ) -> dict[str, np.ndarray] | None:
    if all(r.wake_waits is None for r, _ in parts):
        return None
    joined: dict[str, np.ndarray] = {}
    for r, _ in parts:
        joined.update(r.wake_waits or {})
    return {k: joined[k] for k in sorted(joined)}


__all__ = ["canonical_result", "instance_order", "project_ranks"]

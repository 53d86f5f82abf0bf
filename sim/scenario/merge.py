"""One canonical row order for every run, however it was computed.

Projects never interact inside a run (each has its own random streams, its
own operation lanes and its own timers), so a run of some of the project
instances replays exactly what those projects do in a run of the whole
fleet, and the rows of one project do not depend on which road computed
them (the fleet path in bulk, or the SimPy engine). What differs is only how
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

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from sim.engine.records import ConnectionTable, RunResult
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


#: within a project: (column of the compute id, column of the instant) per table
_WITHIN = {"intervals": (0, 4), "wakes": (0, 2)}


def _by_project(rows: list, ranks: Mapping[str, tuple],
                within: Callable[[Any], Any] | None = None) -> list:
    """Rows grouped by project in rank order; within a project, ordered by `within`
    (a stable sort: rows with equal keys keep the order the run recorded them in)."""
    buckets: dict[str, list] = {}
    for row in rows:
        buckets.setdefault(row[1], []).append(row)
    unknown = set(buckets) - set(ranks)
    if unknown:
        raise RuntimeError(f"rows of projects the run never created: {sorted(unknown)[:3]}")
    out: list = []
    for pid in sorted(buckets, key=ranks.__getitem__):
        bucket = buckets[pid]
        if within is not None:
            keys = [within(row) for row in bucket]
            if any(b < a for a, b in zip(keys, keys[1:], strict=False)):
                order = sorted(range(len(bucket)), key=keys.__getitem__)
                bucket = [bucket[i] for i in order]
        out += bucket
    return out


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
                other.price_per_cu_hour, other.assumptions)
        if same != (head.name, head.seed, head.start_iso, head.duration_s,
                    head.price_per_cu_hour, head.assumptions):
            raise ValueError("results of different runs cannot be merged")
    ranks: dict[str, tuple] = {}
    for result, keys in parts:
        ranks.update(project_ranks(result, keys, order))
    computes = _by_project([row for result, _ in parts for row in result.computes], ranks)
    position = {row.compute_id: i for i, row in enumerate(computes)}

    def merged(table: str) -> list:
        rows = [row for result, _ in parts for row in getattr(result, table)]
        if table not in _WITHIN:
            return _by_project(rows, ranks)
        who, when = _WITHIN[table]
        return _by_project(rows, ranks, lambda row: (position[row[who]], row[when]))

    actions = sorted((a for result, _ in parts for a in result.actions),
                     key=lambda a: (a.at_s, a.call, a.status, a.code))
    return RunResult(
        name=head.name, seed=head.seed, start_iso=head.start_iso, duration_s=head.duration_s,
        price_per_cu_hour=head.price_per_cu_hour,
        computes=computes, operations=merged("operations"),
        intervals=merged("intervals"),
        connections=_ordered_connections([result.connections for result, _ in parts], ranks,
                                         position, {row.compute_id: row.project_id
                                                    for row in computes}),
        wakes=merged("wakes"), actions=actions, assumptions=dict(head.assumptions),
        fleet_ns=_summed_minutes(parts), wake_waits=_joined_waits(parts),
        projects={pid: info for pid in sorted(ranks, key=ranks.__getitem__)
                  for r, _ in parts if (info := r.projects.get(pid)) is not None},
        roads=_summed_roads(parts),
    )


def _ordered_connections(tables: Sequence[ConnectionTable], ranks: Mapping[str, tuple],
                         position: Mapping[str, int], project_of: Mapping[str, str]
                         ) -> ConnectionTable:
    """Connections in canonical order, sorted as columns (a stable sort, as `_by_project`)."""
    joined = ConnectionTable.joined(tables)
    project_order = {pid: i for i, pid in enumerate(sorted(ranks, key=ranks.__getitem__))}
    try:
        project, compute = joined.per_row(project_order, dict(position))
    except KeyError as err:
        raise RuntimeError(f"rows of projects the run never created: {err}") from None
    columns = joined.columns(ids=False)
    order = np.lexsort((columns["arrival_s"], compute, project))
    ids = [(cid, project_of[cid]) for cid in sorted(position, key=position.__getitem__)]
    return joined.reordered(order, compute, ids, columns)


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


def _joined_waits(parts: Sequence[tuple[RunResult, Sequence[str]]]
                  ) -> dict[str, np.ndarray] | None:
    if all(r.wake_waits is None for r, _ in parts):
        return None
    joined: dict[str, np.ndarray] = {}
    for r, _ in parts:
        joined.update(r.wake_waits or {})
    return {k: joined[k] for k in sorted(joined)}


__all__ = ["canonical_result", "instance_order", "project_ranks"]

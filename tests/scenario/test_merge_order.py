"""The canonical row order moves whole runs of rows when it can, and equals a stable sort of
the rows either way."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.engine.connection_table import ColumnBlock, ConnectionRecord, ConnectionTable
from sim.engine.records import StateInterval
from sim.engine.row_table import RowTable
from sim.scenario.merge import _by_project, in_runs

PROJECTS = ("p-a", "p-b", "p-c")
COMPUTES = {"ep-1": "p-a", "ep-2": "p-a", "ep-3": "p-b", "ep-4": "p-c"}
RANKS = {pid: (0, i, 0.0, "") for i, pid in enumerate(reversed(PROJECTS))}  # c, b, a
POSITION = {cid: i for i, cid in enumerate(sorted(COMPUTES, reverse=True))}

# instants on a coarse grid, so that runs often meet at one instant
instants = st.lists(st.integers(0, 12).map(float), min_size=1, max_size=8)
block = st.tuples(st.sampled_from(sorted(COMPUTES)), instants, st.booleans())
row = st.tuples(st.sampled_from(sorted(COMPUTES)), st.integers(0, 12).map(float))
part = st.one_of(block, st.lists(row, min_size=1, max_size=6))
tables = st.lists(part, max_size=8)


def interval_table(parts: list) -> RowTable[StateInterval]:
    """Blocks of one compute (sorted in time, or as drawn) and lists of rows of any."""
    table = RowTable(StateInterval)
    serial = iter(range(10**6))
    for p in parts:
        if isinstance(p, tuple):
            cid, times, sort = p
            times = sorted(times) if sort else times
            table.add_block(table.block(
                compute_id=cid, project_id=COMPUTES[cid], state="active",
                cu=np.array([float(next(serial)) for _ in times]),  # tells rows apart
                start_s=np.array(times), end_s=np.array(times) + 1.0))
        else:
            table.extend(StateInterval(cid, COMPUTES[cid], "idle", float(next(serial)), t, t + 1)
                         for cid, t in p)
    return table


def stable_sorted(rows: list) -> list:
    return sorted(rows, key=lambda r: (RANKS[r[1]], POSITION[r[0]], r[4]))


@settings(max_examples=300, deadline=None)
@given(tables)
def test_the_order_is_a_stable_sort_of_the_rows(parts: list) -> None:
    table = interval_table(parts)
    assert list(_by_project(table, RANKS, POSITION, "start_s")) == stable_sorted(list(table))


@settings(max_examples=300, deadline=None)
@given(tables)
def test_runs_are_moved_whole_or_not_at_all(parts: list) -> None:
    """Where `in_runs` answers, it moves parts (or slices of them) without copying rows,
    and its answer is the sorted one; where it does not, two runs of a compute overlap."""
    table = interval_table(parts)
    project = table.codes("project_id", {p: RANKS[p][1] for p in PROJECTS})
    compute = table.codes("compute_id", POSITION)
    when = table.column("start_s")
    moved = in_runs(table, project, compute, when)
    expected = stable_sorted(list(table))
    if moved is None:
        # then some compute's rows cannot be cut into runs that follow one another
        assert list(table.take(np.lexsort((when, compute, project)))) == expected
        return
    assert list(moved) == expected
    assert len(moved.parts) <= len(table) and all(len(p) for p in moved.parts)


def test_a_kernel_run_after_the_engines_rows_moves_as_one_part() -> None:
    """The common case: a compute's first rows recorded by the engine, the rest by the
    kernel later on: nothing is copied, the parts only change places."""
    table = RowTable(StateInterval)
    table.extend([StateInterval("ep-1", "p-a", "init", 1.0, 0.0, 1.0),
                  StateInterval("ep-3", "p-b", "init", 1.0, 0.0, 1.0)])
    late_a = table.block(compute_id="ep-1", project_id="p-a", state="active", cu=np.ones(3),
                         start_s=np.array([1.0, 2.0, 3.0]), end_s=np.array([2.0, 3.0, 4.0]))
    late_b = table.block(compute_id="ep-3", project_id="p-b", state="active", cu=np.ones(2),
                         start_s=np.array([1.0, 5.0]), end_s=np.array([5.0, 6.0]))
    table.add_block(late_a)
    table.add_block(late_b)
    moved = _by_project(table, RANKS, POSITION, "start_s")
    assert moved.parts[1] is late_b and moved.parts[3] is late_a  # p-b ranks before p-a
    assert list(moved) == stable_sorted(list(table))


@settings(max_examples=200, deadline=None)
@given(tables)
def test_connections_take_the_same_order(parts: list) -> None:
    blocks, serial = [], iter(range(10**6))
    for p in parts:
        if isinstance(p, tuple):
            cid, times, sort = p
            times = np.array(sorted(times) if sort else times)
            n = len(times)
            blocks.append(ColumnBlock(cid, COMPUTES[cid], times,
                                      np.array([float(next(serial)) for _ in range(n)]),
                                      np.ones(n), np.zeros(n, np.int8), np.zeros(n, np.bool_)))
        else:
            blocks.append([ConnectionRecord(cid, COMPUTES[cid], t, float(next(serial)), 1.0,
                                            "ok", False) for cid, t in p])
    table = ConnectionTable(blocks)
    ordered = _by_project(table, RANKS, POSITION, "arrival_s")
    assert list(ordered) == sorted(table, key=lambda r: (RANKS[r.project_id],
                                                         POSITION[r.compute_id], r.arrival_s))

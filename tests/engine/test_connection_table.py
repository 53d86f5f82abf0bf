"""The connections table reads as the list of records it stands for, whatever its blocks."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.engine.connection_table import (
    OUTCOMES,
    ColumnBlock,
    ConnectionRecord,
    ConnectionTable,
    Outcome,
)
from sim.engine.records import Recorder
from sim.kernel import physics

COMPUTES = [("ep-a", "p-1"), ("ep-b", "p-1"), ("ep-c", "p-2")]

row = st.builds(
    lambda who, arrival, wait, duration, outcome, cold: ConnectionRecord(
        *COMPUTES[who], arrival, wait, duration, OUTCOMES[outcome], cold),
    st.integers(0, len(COMPUTES) - 1), st.floats(0, 1e6), st.floats(0, 60), st.floats(0, 3600),
    st.integers(0, len(OUTCOMES) - 1), st.booleans())


def block(rows: list[ConnectionRecord]) -> ColumnBlock:
    """Rows of one compute as the kernel gives them."""
    return ColumnBlock(rows[0].compute_id, rows[0].project_id,
                       np.array([r.arrival_s for r in rows]), np.array([r.wait_s for r in rows]),
                       np.array([r.duration_s for r in rows]),
                       np.array([OUTCOMES.index(r.outcome) for r in rows], dtype=np.int8),
                       np.array([r.cold for r in rows]))


def table_of(rows: list[ConnectionRecord], as_blocks: list[bool]) -> ConnectionTable:
    """The rows cut into runs of one compute, each a column block or a list of records."""
    table, run = ConnectionTable(), []
    for r in rows + [None]:
        if run and (r is None or r.compute_id != run[0].compute_id):
            if as_blocks[len(table._parts) % len(as_blocks)]:
                table.add_block(block(run))
            else:
                table.extend(run)
            run = []
        if r is not None:
            run.append(r)
    return table


@settings(max_examples=60, deadline=None)
@given(st.lists(row, max_size=40), st.lists(st.booleans(), min_size=1, max_size=4))
def test_a_table_reads_as_its_records(rows: list[ConnectionRecord], as_blocks: list[bool]) -> None:
    table = table_of(rows, as_blocks)
    assert len(table) == len(rows)
    assert list(table) == rows and table == rows
    assert [table[i] for i in range(len(rows))] == rows
    if rows:
        assert table[-1] == rows[-1] and table[1:3] == rows[1:3]
    columns = table.columns()
    assert columns["compute_id"].tolist() == [r.compute_id for r in rows]
    assert [OUTCOMES[c] for c in columns["outcome"]] == [r.outcome for r in rows]
    assert columns["cold"].tolist() == [r.cold for r in rows]
    assert table.without_projects({"p-1"}) == [r for r in rows if r.project_id != "p-1"]


@settings(max_examples=60, deadline=None)
@given(st.lists(row, max_size=40), st.lists(st.booleans(), min_size=1, max_size=4))
def test_taken_rows_are_those_rows_in_that_order(rows: list[ConnectionRecord],
                                                 as_blocks: list[bool]) -> None:
    table = table_of(rows, as_blocks)
    code = {cid: i for i, (cid, _) in enumerate(COMPUTES)}
    compute = table.codes("compute_id", code)
    assert compute.tolist() == [code[r.compute_id] for r in rows]
    order = np.lexsort((np.array([r.arrival_s for r in rows]), compute))
    taken = table.take(order)
    assert list(taken) == [rows[i] for i in order]
    # a stable sort: rows of one compute at one instant keep their order
    assert list(taken) == sorted(rows, key=lambda r: (code[r.compute_id], r.arrival_s))
    # a block for each run of one compute's rows
    assert all(len({r.compute_id for r in block.records()}) == 1 for block in taken.parts)


def test_the_kernels_outcome_codes_name_the_tables_outcomes() -> None:
    codes = {physics.OK: Outcome.OK, physics.REFUSED_TOO_MANY: Outcome.REFUSED_TOO_MANY,
             physics.REFUSED_POOLER_FULL: Outcome.REFUSED_POOLER_FULL,
             physics.QUEUE_TIMEOUT: Outcome.QUEUE_TIMEOUT, physics.DISK_FULL: Outcome.DISK_FULL}
    assert {code: OUTCOMES[code] for code in codes} == codes


def test_a_recorders_table_keeps_the_order_rows_were_recorded_in() -> None:
    """The kernel's blocks sit between the engine's records as they came, and a record the
    engine replaces later (a cut session) is read as replaced."""
    a = [ConnectionRecord("ep-a", "p-1", float(t), 0.0, 60.0, Outcome.OK, False) for t in range(4)]
    b = [ConnectionRecord("ep-b", "p-1", float(t), 0.0, 60.0, Outcome.OK, True) for t in range(3)]
    recorder = Recorder()
    recorder.connections.append(a[0])
    recorder.add_connection_block(block(b[:2]))
    recorder.connections += a[1:3]
    recorder.add_connection_block(block(b[2:]))
    recorder.add_connection_block(block(b[:1]).where(np.zeros(1, bool)))  # no rows: no part
    recorder.connections.append(a[3])
    recorder.connections[1] = cut = a[1]._replace(outcome=Outcome.DROPPED, duration_s=5.0)
    assert recorder.connection_table() == [a[0], *b[:2], cut, a[2], b[2], a[3]]

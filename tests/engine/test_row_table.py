"""A run's table of rows held as blocks of columns reads like the list of rows it replaces."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.engine.records import OperationRow, StateInterval
from sim.engine.row_table import RowTable, dtypes_of

ROW = st.builds(StateInterval, st.sampled_from(["ep-1", "ep-2"]), st.sampled_from(["p-1", "p-2"]),
                st.sampled_from(["init", "active", "idle"]), st.sampled_from([0.0, 0.25, 2.0]),
                st.floats(0, 1e6), st.floats(0, 1e6))
# a part: rows appended one by one, or a block of one compute's rows as columns
PART = st.tuples(st.booleans(), st.lists(ROW, min_size=0, max_size=6))


def build(parts: list) -> tuple[RowTable[StateInterval], list[StateInterval]]:
    table, rows = RowTable(StateInterval), []
    for as_block, part in parts:
        if as_block and part:
            part = [r._replace(compute_id=part[0].compute_id, project_id=part[0].project_id)
                    for r in part]
            table.add_block(table.block(
                compute_id=part[0].compute_id, project_id=part[0].project_id,
                state=np.array([r.state for r in part], dtype=object),
                cu=np.array([r.cu for r in part]), start_s=np.array([r.start_s for r in part]),
                end_s=np.array([r.end_s for r in part])))
        else:
            for r in part:
                table.append(r)
        rows += part
    return table, rows


@settings(max_examples=200, deadline=None)
@given(st.lists(PART, max_size=6), st.data())
def test_reads_as_its_rows(parts: list, data: st.DataObject) -> None:
    table, rows = build(parts)
    assert len(table) == len(rows) and list(table) == rows and table == rows
    if rows:
        at = data.draw(st.integers(-len(rows), len(rows) - 1))
        assert table[at] == rows[at]
        assert table[1:3] == rows[1:3]
    with pytest.raises(IndexError):
        table[len(rows)]
    columns = table.columns()
    assert columns["start_s"].tolist() == [r.start_s for r in rows]
    assert columns["state"].tolist() == [r.state for r in rows]
    order = np.array(data.draw(st.permutations(range(len(rows)))), dtype=np.int64)
    assert list(table.take(order)) == [rows[k] for k in order]
    gone = data.draw(st.sets(st.sampled_from(["p-1", "p-2"])))
    assert list(table.without("project_id", gone)) == [r for r in rows if r.project_id not in gone]
    codes = table.codes("compute_id", {"ep-1": 7, "ep-2": 9})
    assert codes.tolist() == [7 if r.compute_id == "ep-1" else 9 for r in rows]
    assert list(pickle.loads(pickle.dumps(table))) == rows


def test_a_copy_keeps_out_what_is_appended_after() -> None:
    table = RowTable(StateInterval)
    table.append(StateInterval("ep-1", "p-1", "idle", 0.0, 0.0, 1.0))
    kept = table.copy()
    table.append(StateInterval("ep-1", "p-1", "active", 1.0, 1.0, 2.0))
    assert len(kept) == 1 and len(table) == 2


def test_columns_have_the_row_types_dtypes() -> None:
    assert {name: str(d) for name, d in dtypes_of(OperationRow).items()} == {
        "id": "object", "project_id": "object", "branch_id": "object", "endpoint_id": "object",
        "action": "object", "status": "object", "failures_count": "int64",
        "created_s": "float64", "updated_s": "float64", "total_duration_ms": "int64",
        "error": "object"}
    empty = RowTable(OperationRow).columns()
    assert empty["created_s"].dtype == np.float64 and len(empty["id"]) == 0


def test_ids_held_as_ascii_bytes_read_as_text() -> None:
    """Operation ids kept as a numpy `S36` column read as `str`, by column and by row, in
    a table beside rows that hold them as objects."""
    from sim.engine.ids import IdFactory

    ids = IdFactory(set()).operation_bytes(np.random.default_rng(3), 4)
    table = RowTable(OperationRow)
    table.append(OperationRow("op-0", "p", "b", None, "create_branch", "finished", 0, 0.0,
                              0.0, 0, None))
    table.add_block(table.block(
        id=ids, project_id="p", branch_id="b", endpoint_id=None, action="start_compute",
        status="finished", failures_count=np.zeros(4, np.int64), created_s=np.arange(4.0),
        updated_s=np.arange(4.0), total_duration_ms=np.zeros(4, np.int64), error=None))
    expected = ["op-0", *(raw.decode("ascii") for raw in ids.tolist())]
    assert table.column("id").tolist() == expected
    assert [row.id for row in table] == expected
    assert all(type(i) is str for i in table.column("id"))
    kept = table.without("id", {expected[2]})
    assert [row.id for row in kept] == [expected[0], expected[1], *expected[3:]]

"""The compute kernel's operations as rows of the run's table, without an object each.

Once the kernel has run a project to the end of the run, nothing asks the API
for its operations any more: only the run's operations table does. So its
operations (those of its computes, and its storage lane's) stay columns until
they are rows, stamped as the engine stamps what it creates: in creation order,
never two in one microsecond within a project (a later one moves by 1 us).
A project the engine holds when an API call may come keeps its operations as
objects (`sim.scenario.kernel_run.file_operations`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from sim.engine.records import OperationRow
from sim.engine.row_table import RowBlock, filled

if TYPE_CHECKING:
    from sim.engine.control_plane import ControlPlane
    from sim.engine.model import Operation, Project


@dataclass
class OperationColumns:
    """Operations in creation order, with where each goes among the project's operations
    made at one instant (when the event that made it was scheduled, the check rank of its
    branch, its position among its compute's operations)."""

    # names: a list, an array, or one value for every operation of the part
    ids: np.ndarray  # ASCII bytes (`IdFactory.operation_bytes`), read as text when asked
    branch_id: Any
    endpoint_id: Any
    action: Any
    status: Any
    failures: np.ndarray
    created: np.ndarray  # instants, seconds
    updated: np.ndarray
    finished: np.ndarray  # NaN: not finished
    sched: np.ndarray
    rank: np.ndarray
    j: np.ndarray

    def __len__(self) -> int:
        return len(self.ids)


def stamps(instants: np.ndarray, last_us: int) -> np.ndarray:
    """Creation stamps (us) of operations made at `instants`, in creation order, after one
    stamped `last_us`: the engine's `ControlPlane.new_operation` rule, max(round(t * 1e6),
    last + 1) one after another; with c = stamp - position that is a running maximum."""
    us = np.round(np.asarray(instants, dtype=np.float64) * 1_000_000).astype(np.int64)
    at = np.arange(len(us), dtype=np.int64)
    return np.maximum.accumulate(np.maximum(us - at, last_us + 1)) + at


def file_rows(cp: ControlPlane, project: Project, parts: list[OperationColumns]) -> None:
    """Stamp a project's operations in creation order after those it has, and keep them as
    a block of the run's operations table (`ControlPlane.result`)."""
    parts = [part for part in parts if len(part)]
    if not parts:
        return
    cat = {name: np.concatenate([getattr(part, name) for part in parts])
           for name in ("failures", "created", "updated", "finished", "sched", "rank", "j")}
    order = np.lexsort((cat["j"], cat["rank"], cat["sched"], cat["created"]))
    stamped = stamps(cat["created"][order], project.last_op_us)
    project.last_op_us = int(stamped[-1])
    created_s = stamped / 1_000_000
    updated = cat["updated"][order]
    finished = cat["finished"][order]
    total_ms = _duration_ms(created_s, np.where(np.isnan(finished), updated, finished))
    failures = cat["failures"][order]

    def column(name: str) -> np.ndarray:
        return np.concatenate([_objects(getattr(part, name), len(part)) for part in parts])[order]

    action = column("action")
    errors = filled(len(order), None)
    for at in np.flatnonzero(failures).tolist():  # few: faults are rare
        errors[at] = f"{action[at]} attempt {failures[at]} failed (injected fault)"
    cp.recorder.operation_rows.setdefault(project.id, []).append(RowBlock(
        OperationRow, len(order), {
            "id": column("ids"), "project_id": project.id, "branch_id": column("branch_id"),
            "endpoint_id": column("endpoint_id"), "action": action, "status": column("status"),
            "failures_count": failures.astype(np.int64), "created_s": created_s,
            "updated_s": updated, "total_duration_ms": total_ms, "error": errors}))


def object_rows(project_id: str, ops: Sequence[Operation]) -> RowBlock[OperationRow]:
    """A project's operations held as objects (the engine's), as a block of rows: each
    field read once per operation, the derived ones (created_s, total_duration_ms) computed
    over the columns as `Operation` computes them one by one."""
    n = len(ops)

    def strings(name: str) -> np.ndarray:
        out = np.empty(n, object)
        out[:] = [getattr(op, name) for op in ops]
        return out

    created_s = np.fromiter((op.created_us for op in ops), np.int64, n) / 1_000_000
    updated = np.fromiter((op.updated_at for op in ops), np.float64, n)
    end = np.fromiter((updated_at if finished is None else finished
                       for updated_at, finished in ((op.updated_at, op.finished_at)
                                                    for op in ops)), np.float64, n)
    return RowBlock(OperationRow, n, {
        "id": strings("id"), "project_id": project_id, "branch_id": strings("branch_id"),
        "endpoint_id": strings("endpoint_id"), "action": strings("action"),
        "status": strings("status"),
        "failures_count": np.fromiter((op.failures_count for op in ops), np.int64, n),
        "created_s": created_s, "updated_s": updated,
        "total_duration_ms": _duration_ms(created_s, end), "error": strings("error")})


def _duration_ms(created_s: np.ndarray, end: np.ndarray) -> np.ndarray:
    """`Operation.total_duration_ms` over columns: max(0, round((end - created) * 1000))."""
    return np.maximum(0, np.round((end - created_s) * 1000)).astype(np.int64)


def _objects(values: Any, n: int) -> np.ndarray:
    if isinstance(values, np.ndarray):
        return values
    if isinstance(values, list):
        out = np.empty(n, object)
        out[:] = values
        return out
    return filled(n, values)


__all__ = ["OperationColumns", "file_rows", "object_rows", "stamps"]

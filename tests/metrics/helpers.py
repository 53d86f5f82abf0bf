"""Hand-made rows with round numbers, for tests whose answers are worked out by hand."""

from __future__ import annotations

from sim.engine.records import ComputeRow, OperationRow, RunResult

START = "2026-01-05T00:00:00Z"


def compute_row(compute_id: str = "ep-a", project_id: str = "p-1", **fields) -> ComputeRow:
    values = dict(
        compute_id=compute_id,
        project_id=project_id,
        project_name=f"name-{project_id}",
        branch_id="br-1",
        branch_name="main",
        type="read_write",
        min_cu=0.25,
        max_cu=2.0,
        suspend_timeout_seconds=300,
        pooler_enabled=False,
        max_connections=901,
        sessions=0,
        refused=0,
        queued=0,
        queue_timeouts=0,
        queue_wait_s=0.0,
        disk_full=0,
        dropped=0,
        cold_starts=0,
        restarts=0,
        suspends=0,
        peak_connections=0,
        active_s=0.0,
        cu_s=0.0,
        created_s=0.0,
        deleted_s=None,
    )
    values.update(fields)
    return ComputeRow(**values)


def operation(
    action: str, status: str = "finished", at: float = 0.0, failures: int = 0, **fields
) -> OperationRow:
    values = dict(
        id=f"op-{action}-{at}",
        project_id="p-1",
        branch_id="br-1",
        endpoint_id="ep-a",
        action=action,
        status=status,
        failures_count=failures,
        created_s=at,
        updated_s=at + 1.0,
        total_duration_ms=1000,
        error=None,
    )
    values.update(fields)
    return OperationRow(**values)


def run(duration_s: float = 3600.0, price: float = 0.16, **rows) -> RunResult:
    return RunResult("hand", 3, START, duration_s, price, **rows)

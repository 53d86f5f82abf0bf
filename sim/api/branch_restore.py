"""Routes of branch restore (reset, restore from a point in time or another branch) and
of snapshots with their schedule."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Query

from sim.api import serialize as ser
from sim.api.computes import OUT
from sim.api.deps import Key, Server
from sim.api.errors import ERRORS, STATE_ERRORS
from sim.api.routing import sim_router
from sim.api.schemas import BranchOperations
from sim.api.schemas_restore import (
    BackupSchedule,
    BackupScheduleOut,
    BranchRestoreRequest,
    EmptyOut,
    FinalizeRestoreRequest,
    OperationsOut,
    SnapshotCreated,
    SnapshotResponse,
    SnapshotRestored,
    SnapshotRestoreRequest,
    SnapshotsResponse,
    SnapshotUpdateRequest,
)
from sim.engine.control_plane import ControlPlane
from sim.engine.snapshots import Snapshot

router = sim_router(prefix="/api/v2", responses=ERRORS)
BRANCH = "/projects/{project_id}/branches/{branch_id}"
SNAPSHOT = "/projects/{project_id}/snapshots/{snapshot_id}"


def snapshot_out(cp: ControlPlane, snap: Snapshot) -> dict[str, Any]:
    return {"id": snap.id, "name": snap.name, "created_at": cp.clock.iso(snap.created_at),
            "source_branch_id": snap.source_branch_id, "timestamp": cp.clock.iso(snap.at),
            "lsn": snap.lsn, "expires_at": cp.clock.iso(snap.expires_at), "manual": snap.manual}


# ---- restore ---------------------------------------------------------------------------------


@router.post(BRANCH + "/restore", tags=["branches"], response_model=BranchOperations,
             responses=STATE_ERRORS, **OUT)
def restore_branch(project_id: str, branch_id: str, body: BranchRestoreRequest,
                   server: Server, key: Key):
    """Restore the branch from `source_branch_id`'s head, `source_timestamp` or `source_lsn`
    (its own history needs `preserve_under_name`); running computes restart on it."""
    with server.world() as cp:
        key.project(cp, project_id)
        branch, ops = cp.restore_branch(
            project_id, branch_id, source_branch_id=body.source_branch_id,
            source_timestamp=body.source_timestamp, source_lsn=body.source_lsn,
            preserve_under_name=body.preserve_under_name)
        return {"branch": ser.branches(cp, [branch], project_id)[0],
                "operations": ser.operations(cp, ops)}


@router.post(BRANCH + "/finalize_restore", tags=["branches"], response_model=OperationsOut,
             responses=STATE_ERRORS, **OUT)
def finalize_restore(project_id: str, branch_id: str, server: Server, key: Key,
                     body: FinalizeRestoreRequest | None = None):
    """Put a branch restored from a snapshot in its target's place: the target is renamed
    (`name`), the restored branch takes its name, default status and computes."""
    with server.world() as cp:
        key.project(cp, project_id)
        ops = cp.finalize_restore(project_id, branch_id, (body or FinalizeRestoreRequest()).name)
        return {"operations": ser.operations(cp, ops)}


# ---- snapshots -------------------------------------------------------------------------------


@router.post(BRANCH + "/snapshot", tags=["snapshots"], response_model=SnapshotCreated, **OUT)
def create_snapshot(
    project_id: str, branch_id: str, server: Server, key: Key,
    lsn: Annotated[str | None, Query(description="an LSN in the history window")] = None,
    timestamp: Annotated[str | None, Query(description="an instant in the history window")
                         ] = None,
    name: Annotated[str | None, Query()] = None,
    expires_at: Annotated[str | None, Query(description="when it is deleted")] = None,
):
    """A snapshot of the branch at its head, a timestamp or an LSN."""
    with server.world() as cp:
        key.project(cp, project_id)
        snap, ops = cp.create_snapshot(project_id, branch_id, name=name, timestamp=timestamp,
                                       lsn=lsn, expires_at=expires_at)
        return {"snapshot": snapshot_out(cp, snap), "operations": ser.operations(cp, ops)}


@router.get("/projects/{project_id}/snapshots", tags=["snapshots"],
            response_model=SnapshotsResponse, **OUT)
def list_snapshots(project_id: str, server: Server, key: Key):
    with server.world() as cp:
        key.project(cp, project_id)
        return {"snapshots": [snapshot_out(cp, s) for s in cp.list_snapshots(project_id)]}


@router.patch(SNAPSHOT, tags=["snapshots"], response_model=SnapshotResponse, **OUT)
def update_snapshot(project_id: str, snapshot_id: str, body: SnapshotUpdateRequest,
                    server: Server, key: Key):
    with server.world() as cp:
        key.project(cp, project_id)
        snap = cp.rename_snapshot(project_id, snapshot_id, body.snapshot.name)
        return {"snapshot": snapshot_out(cp, snap)}


@router.delete(SNAPSHOT, status_code=202, tags=["snapshots"], response_model=OperationsOut,
               **OUT)
def delete_snapshot(project_id: str, snapshot_id: str, server: Server, key: Key):
    with server.world() as cp:
        key.project(cp, project_id)
        return {"operations": ser.operations(cp, cp.delete_snapshot(project_id, snapshot_id))}


@router.post(SNAPSHOT + "/restore", tags=["snapshots"], response_model=SnapshotRestored,
             responses=STATE_ERRORS, **OUT)
def restore_snapshot(
    project_id: str, snapshot_id: str, server: Server, key: Key,
    body: SnapshotRestoreRequest | None = None,
    name: Annotated[str | None, Query(description="deprecated: the body's name")] = None,
):
    """A new branch from the snapshot; with `finalize_restore` it takes the target
    branch's place at once (else: `finalize_restore` later)."""
    body = body or SnapshotRestoreRequest()
    with server.world() as cp:
        key.project(cp, project_id)
        branch, moved, ops = cp.restore_snapshot(
            project_id, snapshot_id, name=body.name if body.name is not None else name,
            target_branch_id=body.target_branch_id, finalize=bool(body.finalize_restore))
        return {"branch": ser.branches(cp, [branch], project_id)[0],
                "endpoints": ser.endpoints(cp, moved), "operations": ser.operations(cp, ops)}


@router.get(BRANCH + "/backup_schedule", tags=["snapshots"], response_model=BackupScheduleOut,
            **OUT)
def get_snapshot_schedule(project_id: str, branch_id: str, server: Server, key: Key):
    with server.world() as cp:
        key.project(cp, project_id)
        return {"schedule": cp.snapshot_schedule(project_id, branch_id)}


@router.put(BRANCH + "/backup_schedule", tags=["snapshots"], response_model=EmptyOut, **OUT)
def set_snapshot_schedule(project_id: str, branch_id: str, body: BackupSchedule,
                          server: Server, key: Key):
    """Replace the branch's schedule; snapshots are taken when due on the simulated clock."""
    with server.world() as cp:
        key.project(cp, project_id)
        cp.set_snapshot_schedule(project_id, branch_id,
                                 [item.model_dump(exclude_none=True) for item in body.schedule])
        return {}

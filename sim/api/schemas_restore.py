"""Request and response shapes of restore, recovery and snapshots (the official
document's: `BranchRestoreRequest`, `SnapshotUpdateRequest`, `BackupSchedule`)."""

from __future__ import annotations

from pydantic import StrictBool, StrictInt, StrictStr

from sim.api.schemas import Body, BranchOut, EndpointOut, OperationOut, Out, ProjectOut


class BranchRestoreRequest(Body):
    source_branch_id: StrictStr
    source_lsn: StrictStr | None = None
    source_timestamp: StrictStr | None = None
    preserve_under_name: StrictStr | None = None


class FinalizeRestoreRequest(Body):
    name: StrictStr | None = None


class SnapshotRestoreRequest(Body):
    name: StrictStr | None = None
    target_branch_id: StrictStr | None = None
    finalize_restore: StrictBool | None = None


class SnapshotUpdate(Body):
    name: StrictStr | None = None


class SnapshotUpdateRequest(Body):
    snapshot: SnapshotUpdate


class BackupScheduleItem(Body):
    frequency: StrictStr
    hour: StrictInt | None = None
    day: StrictInt | None = None
    month: StrictInt | None = None
    retention_seconds: StrictInt | None = None


class BackupSchedule(Body):
    schedule: list[BackupScheduleItem]


# ---- responses -------------------------------------------------------------------------------


class ProjectRecovered(Out):
    project: ProjectOut
    branches: list[BranchOut]


class BranchRecovered(Out):
    branch: BranchOut
    endpoints: list[EndpointOut]


class OperationsOut(Out):
    operations: list[OperationOut]


class SnapshotOut(Out):
    id: str
    name: str
    created_at: str
    source_branch_id: str | None = None
    timestamp: str | None = None
    lsn: str | None = None
    expires_at: str | None = None
    manual: bool


class SnapshotCreated(Out):
    snapshot: SnapshotOut
    operations: list[OperationOut]


class SnapshotResponse(Out):
    snapshot: SnapshotOut


class SnapshotsResponse(Out):
    snapshots: list[SnapshotOut]


class SnapshotRestored(Out):
    branch: BranchOut
    endpoints: list[EndpointOut]
    operations: list[OperationOut]


class BackupScheduleOut(Out):
    schedule: list[dict[str, int | str]]


class EmptyOut(Out):
    pass

"""A branch over time: its expiry (`expires_at`) and the points in time of its history
one may branch or restore from (`parent_timestamp`, `parent_lsn`).

An expiry is a timer on the simulated clock (`sim.engine.timers`): at that instant
the branch is deleted as `DELETE /branches/{id}` deletes it, unless it may not be
deleted then (the default or a protected branch, one with children, a compute
busy): it stays, as the real service's background job leaves it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sim.engine.timers import call_at
from sim.rules.errors import ApiError, invalid
from sim.rules.history import MAX_EXPIRY_S, lsn_at, time_of_lsn

if TYPE_CHECKING:
    from sim.engine.control_plane import ControlPlane
    from sim.engine.model import Branch, Project


class BranchTime:
    def instant_of(self: ControlPlane, field: str, value: Any) -> float:
        """An RFC 3339 date-time as simulated seconds (whole seconds: the precision the
        document gives timestamps)."""
        if not isinstance(value, str):
            raise invalid(field, "must be an RFC 3339 date-time such as 2026-01-05T12:00:00Z")
        try:
            t = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            raise invalid(field, "must be an RFC 3339 date-time such as "
                                 "2026-01-05T12:00:00Z") from None
        if t.tzinfo is None:
            t = t.replace(tzinfo=UTC)
        return (t.replace(microsecond=0) - self.clock.start).total_seconds()

    # -- expiry ------------------------------------------------------------------
    def check_expiry(self: ControlPlane, field: str, value: Any) -> float | None:
        """The instant of an `expires_at` (None: the expiry removed): after now, and at
        most 30 days ahead."""
        if value is None:
            return None
        at = self.instant_of(field, value)
        if at <= self.now:
            raise invalid(field, "must be in the future")
        if at > self.now + MAX_EXPIRY_S:
            raise invalid(field, "must be at most 30 days ahead")
        return at

    def set_expiry(self: ControlPlane, branch: Branch, at: float | None) -> None:
        """Set (or, with None, remove) the branch's expiry, normalised to whole seconds
        in UTC; `ttl_interval_seconds` keeps how far ahead it was set."""
        if at is None:
            branch.documented.pop("expires_at", None)
            branch.documented.pop("ttl_interval_seconds", None)
            return
        branch.documented["expires_at"] = self.clock.iso(at)
        branch.documented["ttl_interval_seconds"] = int(round(at - self.now))
        call_at(self, at, "expire_branch", branch.id, self.clock.iso(at))

    def expire_branch(self: ControlPlane, branch_id: str, expires_at: str) -> None:
        """The timer of an expiry: delete the branch if it still expires now."""
        branch = self.branches.get(branch_id)
        if branch is None or branch.deleted_at is not None:
            return
        if branch.documented.get("expires_at") != expires_at:
            return  # changed or removed since
        try:
            self.delete_branch(branch.project_id, branch.id, method="ttl")
        except ApiError:
            return  # may not be deleted now: it stays (docs/model.md)

    # -- points in time ----------------------------------------------------------
    def history_start(self: ControlPlane, project: Project, branch: Branch) -> float:
        """The earliest instant of the branch one may branch or restore from."""
        return max(branch.created_at, self.now - project.history_retention_seconds)

    def point_in_time(self: ControlPlane, project: Project, branch: Branch,
                      timestamp: Any = None, lsn: Any = None, *,
                      fields: tuple[str, str] = ("parent_timestamp", "parent_lsn"),
                      ) -> float | None:
        """The instant a `parent_timestamp` or `parent_lsn` names on `branch` (None:
        neither given, the head; both given: each is checked, the LSN names it), refused
        outside the project's history window."""
        at = None
        if timestamp is not None:
            at = self._within_history(project, branch, fields[0],
                                      self.instant_of(fields[0], timestamp))
        if lsn is not None:
            field = fields[1]
            found = time_of_lsn(project.created_at, lsn) if isinstance(lsn, str) else None
            if found is None:
                raise invalid(field, "must be an LSN such as 0/16B3748")
            if found > self.now:
                raise invalid(field, f"is beyond the branch's last LSN "
                                     f"{lsn_at(project.created_at, self.now)}")
            at = self._within_history(project, branch, field, found)
        return at

    def _within_history(self: ControlPlane, project: Project, branch: Branch, field: str,
                        at: float) -> float:
        if at > self.now:
            raise invalid(field, "is in the future")
        start = self.history_start(project, branch)
        if at < start:
            raise invalid(field, f"lies outside the history retention window (from "
                                 f"{self.clock.iso(start)}, history_retention_seconds "
                                 f"{project.history_retention_seconds})")
        return at

    def lsn_of(self: ControlPlane, project: Project, t: float) -> str:
        return lsn_at(project.created_at, t)

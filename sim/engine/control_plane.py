"""The control plane: projects, branches, computes and operations on one SimPy clock.

The scenario runner, the HTTP layer and the property tests all drive this one
object; its verbs are named after the API actions. Compute verbs live in
`computes.py`, time-driven behaviour in `lifecycle.py`; this module holds the
state, projects, branches and operations.
"""

from __future__ import annotations

import bisect
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
import simpy

from sim.engine.auth import ManagedAuth
from sim.engine.branch_time import BranchTime
from sim.engine.branches import NAME_MAX as NAME_MAX
from sim.engine.branches import BranchVerbs, check_name
from sim.engine.clock import DEFAULT_START, Clock, to_us
from sim.engine.computes import ComputeVerbs, validate_spec
from sim.engine.config import EngineConfig
from sim.engine.executor import Executor, Hook
from sim.engine.first_instant import from_first_instant
from sim.engine.ids import IdFactory
from sim.engine.lifecycle import Lifecycle, is_on
from sim.engine.model import USER_ID, Branch, Compute, Operation, Project
from sim.engine.operation_rows import object_rows
from sim.engine.records import ComputeRow, OperationRow, Recorder, RunResult, summarise_events
from sim.engine.recovery import Recovery
from sim.engine.restore import Restore
from sim.engine.roles import RoleVerbs
from sim.engine.row_table import RowTable
from sim.engine.snapshots import Snapshot, SnapshotVerbs
from sim.engine.streams import Streams
from sim.engine.usage import UsageLedger
from sim.rules import roles as role_rules
from sim.rules.errors import conflict, invalid, not_found
from sim.rules.operations import Action
from sim.rules.sizes import Plan
from sim.rules.states import OperationStatus

if TYPE_CHECKING:
    from sim.engine.history_fold import HistoryFold

MAX_LIST_LIMIT = 1000
MAX_SIMULATED_S = 100 * 365 * 86_400.0  # far beyond any scenario; keeps the clock finite
PG_VERSIONS = (14, 15, 16, 17, 18)  # Postgres major versions a project may run


@dataclass
class Created:
    """What a create verb made: the response of the real API lists all of it."""

    project: Project
    branch: Branch
    computes: list[Compute] = field(default_factory=list)
    operations: list[Operation] = field(default_factory=list)


class ControlPlane(ComputeVerbs, Lifecycle, RoleVerbs, BranchVerbs, BranchTime, Recovery,
                   Restore, SnapshotVerbs):
    #: a served world's daily fold of its history, set when the fold starts (none otherwise)
    history_fold: HistoryFold
    def __init__(
        self,
        config: EngineConfig | None = None,
        *,
        seed: int = 0,
        start: datetime = DEFAULT_START,
        region_id: str = "aws-us-east-2",
        plan: Plan = Plan.LAUNCH,
    ):
        self.config = config or EngineConfig()
        self.seed = seed
        self.env = simpy.Environment()
        self.clock = Clock(start)
        self.streams = Streams(seed)
        self.ids = IdFactory(set())
        self.executor = Executor(self.env, self.config, self.streams)
        self.recorder = Recorder()
        self.region_id = region_id
        self.plan = Plan(plan)
        self.release = "release-0"
        self.projects: dict[str, Project] = {}
        self.branches: dict[str, Branch] = {}
        self.computes: dict[str, Compute] = {}
        self.operations: dict[str, Operation] = {}
        self._unnamed_projects = 0
        #: branches with a check_availability loop -> when it began
        self.checked_branches: dict[str, float] = {}
        #: branch -> the rank of its check loop: loops due at one instant run in this order
        self.check_ranks: dict[str, int] = {}
        #: branches whose check loop ended because the compute kernel took their checks
        self.ended_checks: set[str] = set()
        #: projects whose storage lifecycle is replayed from their computes' kernel runs
        #: (sim.kernel.storage_replay): their idle clocks ring here without effect
        self.kernel_storage: set[str] = set()
        #: what the kernels derive from `config` once per control plane (their tables of
        #: operation durations), by what it is
        self.derived: dict[Any, Any] = {}
        self.auth = ManagedAuth(self)
        #: per compute and hour, what it consumed (the consumption history of a served
        #: world, `keep_usage`); None: not kept (a run's figures need no hourly ledger)
        self.usage: UsageLedger | None = None
        #: snapshots by id; each branch's snapshot schedule (items as plain dicts) and the
        #: generation of its timers (a new schedule ends the former's)
        self.snapshots: dict[str, Snapshot] = {}
        self.snapshot_schedules: dict[str, list[dict[str, Any]]] = {}
        self.schedule_generations: dict[str, int] = {}
        #: the account's organization as the API keeps it (invitations, spending limit):
        #: plain data, set by sim.api.org_admin
        self.organization: dict[str, Any] = {}

    # -- time ----------------------------------------------------------------
    @property
    def now(self) -> float:
        return self.env.now

    def run_until(self, t: float) -> None:
        if t > self.env.now:
            self.env.run(until=t)

    def advance(self, seconds: float) -> None:
        if not (isinstance(seconds, (int, float)) and seconds >= 0):
            raise invalid("seconds", "must be a number >= 0")
        if self.env.now + seconds > MAX_SIMULATED_S:
            raise invalid("seconds", f"the clock stops at {MAX_SIMULATED_S / (365 * 86_400):g} "
                                     f"years after the start")
        self.run_until(self.env.now + seconds)

    def keep_usage(self) -> None:
        """Keep the hourly usage ledger from now on (before any compute is on)."""
        if self.usage is None:
            start = self.clock.start
            offset = (start.minute * 60 + start.second + start.microsecond / 1e6) % 3600
            self.usage = UsageLedger(offset, self.config.count_from_s,
                                     first_hour_of_day=start.hour)

    def publish_release(self, version: str) -> None:
        """A compute release: computes pick it up at their next start."""
        self.release = version

    # -- streams and operations ---------------------------------------------
    def id_stream(self, project: Project) -> np.random.Generator:
        return self.streams.get(f"ids/{project.key}")

    @staticmethod
    def project_lane(project: Project) -> str:
        return f"storage/{project.id}"

    def new_operation(self, project: Project, action: Action, branch_id: str | None,
                      endpoint_id: str | None, id_rng: np.random.Generator | None = None
                      ) -> Operation:
        # created_at is unique within a project (bumped by a microsecond on ties),
        # so the pagination cursor never skips or repeats an operation
        us = max(to_us(self.env.now), project.last_op_us + 1)
        project.last_op_us = us
        op = Operation(
            id=self.ids.operation(id_rng or self.id_stream(project)), project_id=project.id,
            branch_id=branch_id, endpoint_id=endpoint_id, action=action.value,
            status=OperationStatus.SCHEDULING.value, created_us=us, updated_at=self.env.now,
        )
        project.operations.append(op)
        self.operations[op.id] = op
        return op

    def submit_project_op(self, project: Project, action: Action, branch_id: str | None, *,
                          on_start: Hook | None = None, on_finish: Hook | None = None,
                          ) -> Operation:
        op = self.new_operation(project, action, branch_id, None)
        return self.executor.submit(op, self.project_lane(project), f"ops/{project.key}",
                                    on_start=on_start, on_finish=on_finish)

    def submit_compute_op(self, c: Compute, action: Action, *, after=(),
                          on_start: Hook | None = None, on_finish: Hook | None = None,
                          running_while_waiting: bool = False) -> Operation:
        project = self.projects[c.project_id]
        # a compute's operations draw from streams of its own, so its timeline depends
        # only on its own inputs (what lets the kernel reproduce it exactly)
        op = self.new_operation(project, action, c.branch_id, c.id,
                                self.streams.get(f"ids/{c.key}"))

        def finished(done: Operation) -> None:
            if on_finish is not None:
                on_finish(done)
            if c.runtime is not None:
                c.runtime.arm()  # the lane is free again: the countdown may resume

        return self.executor.submit(op, c.id, f"ops/{c.key}", after=after,
                                    on_start=on_start, on_finish=finished,
                                    running_while_waiting=running_while_waiting)

    # -- projects ------------------------------------------------------------
    def get_project(self, project_id: str) -> Project:
        project = self.projects.get(project_id)
        if project is None or project.deleted_at is not None:
            raise not_found("project", project_id, "project_id")
        return project

    def list_projects(self) -> list[Project]:
        return [p for p in self.projects.values() if p.deleted_at is None]

    def create_project(
        self, name: str | None = None, *, key: str | None = None, region_id: str | None = None,
        plan: Plan | str | None = None, owner_id: str = USER_ID, org_id: str | None = None,
        history_retention_seconds: int = 86_400, branch_name: str = "main",
        default_endpoint: dict[str, Any] | None = None, with_compute: bool = True,
        compute_key: str | None = None, pg_version: int = 17,
        role_name: str | None = None, database_name: str | None = None,
    ) -> Created:
        """A project with its default branch and read_write compute (create_timeline, start).

        The default branch has an owner role and a database it owns: `neondb_owner` and
        `neondb`, or the names given; a database named alone is owned by `<database>_owner`
        (as the real API)."""
        if name is not None:
            check_name("project.name", name)
        if database_name is None:
            database_name = role_rules.DEFAULT_DATABASE
        role_rules.check_database_name("project.branch.database_name", database_name)
        if role_name is None:  # the role the database's name implies is checked as that name
            role_name = (role_rules.DEFAULT_ROLE if database_name == role_rules.DEFAULT_DATABASE
                         else f"{database_name}_owner")
            role_rules.check_role_name("project.branch.database_name", role_name)
        role_rules.check_role_name("project.branch.role_name", role_name)
        try:
            plan = Plan(plan or self.plan)
        except ValueError:
            raise invalid("project.plan", f"must be one of {[p.value for p in Plan]}") from None
        _check_retention(history_retention_seconds)
        if pg_version not in PG_VERSIONS or isinstance(pg_version, bool):
            raise invalid("project.pg_version", f"must be one of {list(PG_VERSIONS)}")
        spec = validate_spec(plan, dict(default_endpoint or {}), "project.default_endpoint_settings.")
        now = self.env.now
        if key is None:
            self._unnamed_projects += 1
            key = f"api-{self._unnamed_projects}"
        project = Project(
            id="", name=name or "", key=key, region_id=region_id or self.region_id, plan=plan,
            created_at=now, updated_at=now, owner_id=owner_id, org_id=org_id,
            history_retention_seconds=history_retention_seconds, pg_version=pg_version,
        )
        project.id = self.ids.project(self.id_stream(project))
        project.name = project.name or project.id
        self.projects[project.id] = project
        timeline = self.submit_project_op(project, Action.CREATE_TIMELINE, None)
        branch = self._add_branch(project, branch_name, None, default=True)
        self.seed_roles(branch, role_name, database_name)
        timeline.branch_id = branch.id
        created = Created(project, branch, operations=[timeline])
        if not with_compute:  # nothing keeps it busy: both idle clocks start now
            self.project_went_quiet(project)
            self.branch_went_quiet(branch)
            return created
        compute, ops = self.build_compute(project, branch, spec,
                                          key=compute_key or f"{key}.{branch_name}.0")
        created.computes.append(compute)
        created.operations += ops
        return created

    def update_project(self, project_id: str, *, name: str | None = None,
                       history_retention_seconds: int | None = None) -> tuple[Project, list]:
        project = self.get_project(project_id)
        if name is not None:
            check_name("project.name", name)
        if history_retention_seconds is not None:
            _check_retention(history_retention_seconds)
        ops = []
        if name is not None:
            project.name = name
        if (history_retention_seconds is not None
                and history_retention_seconds != project.history_retention_seconds):
            project.history_retention_seconds = history_retention_seconds
            ops.append(self.submit_project_op(project, Action.APPLY_STORAGE_CONFIG,
                                              project.default_branch_id))
        project.updated_at = self.env.now
        return project, ops

    def delete_project(self, project_id: str) -> tuple[Project, list[Operation]]:
        project = self.get_project(project_id)
        for branch_id in list(project.branches):
            for compute_id in list(self.branches[branch_id].computes):
                self.remove_compute(self.computes[compute_id])
            self.branches[branch_id].deleted_at = self.env.now
        op = self.submit_project_op(project, Action.DELETE_TENANT, project.default_branch_id)
        project.deleted_at = self.env.now
        self.auth.project_deleted(project.id)
        return project, [op]

    def attach_storage(self, project_id: str) -> Operation:
        """A project's storage moved to another node (docs/model.md, assumptions)."""
        return self.submit_project_op(self.get_project(project_id), Action.TENANT_ATTACH,
                                      self.get_project(project_id).default_branch_id)

    # -- branches --------------------------------------------------------------
    def get_branch(self, project_id: str, branch_id: str, field: str = "branch_id") -> Branch:
        project = self.get_project(project_id)
        branch = self.branches.get(branch_id)
        if branch is None or branch.deleted_at is not None or branch.project_id != project.id:
            raise not_found("branch", branch_id, field)
        return branch

    def list_branches(self, project_id: str) -> list[Branch]:
        return [self.branches[b] for b in self.get_project(project_id).branches]

    def _add_branch(self, project: Project, name: str, parent_id: str | None,
                    default: bool = False) -> Branch:
        now = self.env.now
        branch = Branch(id=self.ids.branch(self.id_stream(project)), project_id=project.id,
                        name=name, parent_id=parent_id, created_at=now, updated_at=now,
                        default=default)
        self.branches[branch.id] = branch
        project.branches.append(branch.id)
        if default:
            project.default_branch_id = branch.id
        return branch

    def create_branch(
        self, project_id: str, name: str | None = None, parent_id: str | None = None,
        endpoints: list[dict[str, Any]] | None = None, *, key: str | None = None,
        protected: bool = False, annotation: dict[str, str] | None = None,
    ) -> Created:
        """A branch of `parent_id` (default: the default branch), with copies of its
        roles and databases, and the computes listed in `endpoints`."""
        project = self.get_project(project_id)
        if name is not None:
            self.check_branch_name(project_id, "branch.name", name)
        if not isinstance(protected, bool):
            raise invalid("branch.protected", "must be true or false")
        if annotation is not None:
            annotation = role_rules.check_annotation("annotation_value", annotation)
        parent = self.get_branch(project_id, parent_id or project.default_branch_id,
                                 field="branch.parent_id")
        specs = [validate_spec(project.plan, dict(e), f"endpoints[{i}].")
                 for i, e in enumerate(endpoints or [])]
        if sum(s.type == "read_write" for s in specs) > 1:
            raise conflict("endpoints", "a branch has at most one read_write compute")
        op_name = name or f"br-{len(project.branches)}"
        branch = self._add_branch(project, op_name, parent.id)
        if name is None:
            branch.name = branch.id
        branch.protected = protected
        branch.annotation = annotation
        self.copy_roles(parent, branch)
        op = self.submit_project_op(project, Action.CREATE_BRANCH, branch.id)
        created = Created(project, branch, operations=[op])
        for i, spec in enumerate(specs):
            compute, ops = self.build_compute(
                project, branch, spec, key=f"{key or project.key + '.' + branch.id}.{i}")
            created.computes.append(compute)
            created.operations += ops
        if not specs:
            self.branch_went_quiet(branch)
        return created

    def delete_branch(self, project_id: str, branch_id: str, method: str = "user"
                      ) -> tuple[Branch, list[Operation]]:
        branch = self.get_branch(project_id, branch_id)
        project = self.projects[project_id]
        if branch.default:
            raise conflict("branch_id", "the default branch cannot be deleted")
        if branch.protected:
            raise conflict("branch_id", "a protected branch cannot be deleted; unprotect it first")
        children = [b for b in project.branches if self.branches[b].parent_id == branch.id
                    and self.branches[b].deleted_at is None]
        if children:
            raise conflict("branch_id", f"branch has child branches ({children[0]})")
        for compute_id in branch.computes:
            self._check_unlocked(self.computes[compute_id])
        ops: list[Operation] = []
        for compute_id in list(branch.computes):
            ops += self.remove_compute(self.computes[compute_id])
        branch.deleted_at = self.env.now
        branch.deletion_method = method
        project.branches.remove(branch.id)
        self.auth.branch_deleted(project.id, branch.id)
        return branch, ops

    # -- operations --------------------------------------------------------------
    def get_operation(self, project_id: str, operation_id: str) -> Operation:
        project = self.get_project(project_id)
        op = self.operations.get(operation_id)
        if op is not None and op.project_id == project_id:
            return op
        past = project.past_operations
        k = past.find(operation_id) if past is not None else None
        if k is None:
            raise not_found("operation", operation_id, "operation_id")
        return past.operation(k, project_id)

    def list_operations(
        self, project_id: str, limit: int = 10, cursor: str | None = None
    ) -> tuple[list[Operation], str | None]:
        """Newest first. The cursor is the created_at of the last item returned;
        the next page holds the operations created before it. A bisect, not a scan."""
        project = self.get_project(project_id)
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIST_LIMIT:
            raise invalid("limit", f"must be an integer 1..{MAX_LIST_LIMIT}")
        ops, past = project.operations, project.past_operations
        older = len(past) if past is not None else 0  # all older than any of `ops`
        end = older + len(ops)
        if cursor:
            try:
                before = self.clock.parse_us(cursor)
            except ValueError:
                raise invalid("cursor", "must be a timestamp returned by a previous page") from None
            end = bisect.bisect_left(ops, before, key=lambda o: o.created_us)
            end = older + end if end or past is None else past.count_before(before)
        start = max(0, end - limit)
        page = ops[max(0, start - older):max(0, end - older)]
        if start < older:
            assert past is not None
            page = past.operations(project.id, start, min(end, older)) + page
        page.reverse()
        next_cursor = self.clock.iso_us(page[-1].created_us) if page else cursor
        return page, next_cursor

    def operation_count(self, project: Project) -> int:
        """How many operations of the project the API can list."""
        past = project.past_operations
        return len(project.operations) + (len(past) if past is not None else 0)

    # -- results -------------------------------------------------------------------
    def finish(self) -> None:
        """Close every open state interval at the current time (end of a run)."""
        for c in self.computes.values():
            if not c.deleted and c.runtime is not None and not c.runtime.external:
                c.runtime.close_interval(self.env.now)

    def result(self, name: str, duration_s: float, price_per_cu_hour: float,
               assumptions: dict[str, str] | None = None,
               exclude: Collection[str] = ()) -> RunResult:
        """The run's rows; projects in `exclude` (handed to another run) leave none."""
        self.finish()
        projects = {pid: p for pid, p in self.projects.items() if pid not in exclude}
        rows = []
        for c in self.computes.values():
            if c.project_id in exclude:
                continue
            s = c.stats
            branch = self.branches[c.branch_id]
            rows.append(ComputeRow(
                c.id, c.project_id, projects[c.project_id].name, c.branch_id, branch.name,
                c.type, c.autoscaling_limit_min_cu, c.autoscaling_limit_max_cu,
                c.suspend_timeout_seconds, c.pooler_enabled,
                c.max_connections(self.config.autoscaling_connections), s.sessions, s.refused,
                s.queued, s.queue_timeouts, s.queue_wait_s, s.disk_full, s.dropped,
                s.cold_starts, s.restarts, s.suspends, s.peak_connections, s.active_s, s.cu_s,
                c.created_at, c.deleted_at, s.refused_pooler_full, s.refused_disabled,
            ))
        rec = self.recorder
        ops: list[RowTable[OperationRow]] = []
        for p in projects.values():
            listed = p.operations
            if p.past_operations is not None and len(p.past_operations):
                listed = p.past_operations.operations(p.id) + listed
            mine = [object_rows(p.id, listed)] if listed else []
            project_ops = RowTable(OperationRow, [*mine, *rec.operation_rows.get(p.id, ())])
            if mine and len(project_ops) > len(mine[0]):
                # the kernel's are stamped after those the project had, but merged by stamp
                # all the same (a stable sort, as the engine's are in order already)
                project_ops = project_ops.take(
                    np.argsort(project_ops.column("created_s"), kind="stable"))
            ops.append(project_ops)
        result = RunResult(
            name=name, seed=self.seed, start_iso=self.clock.iso(self.config.count_from_s) or "",
            duration_s=duration_s, price_per_cu_hour=price_per_cu_hour, computes=rows,
            operations=RowTable.joined(ops, OperationRow),
            intervals=rec.intervals.without("project_id", set(exclude)),
            connections=rec.connection_table().without_projects(set(exclude)),
            wakes=rec.wakes.without("project_id", set(exclude)),
            assumptions=dict(assumptions or {}),
        )
        result.projects = {p.id: (p.key, p.created_at) for p in projects.values()}
        engine_ops = result.operations
        mine = {row.compute_id for row in rows}
        rec.fold_queue_waits(self.config.pool_queue_timeout_s)
        result.queue_waits = {cid: w for cid, w in rec.queue_waits.items() if cid in mine}
        if not self.config.record_events:  # no operation row is kept: none to crop
            result.operations = RowTable(OperationRow)
        from_first_instant(result, self.config.count_from_s)
        if not self.config.record_events:  # the engine's operations counted instead
            summarise_events(result, rec, engine_ops, self.config.count_from_s)
        return result

    def any_on(self, project: Project) -> bool:
        return any(is_on(self.computes[i]) for b in project.branches
                   for i in self.branches[b].computes)


def _check_retention(value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 30 * 86_400:
        raise invalid("project.history_retention_seconds", "must be an integer 0..2592000")

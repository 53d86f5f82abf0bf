"""Compute verbs of the control plane, named after the API actions (the specification #17-#21).

Every verb validates the whole request before it changes anything, so a
refusal (an ApiError) leaves the state as it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sim.engine.lifecycle import ACTIVE, IDLE, is_on
from sim.engine.model import Branch, Compute, Operation, Project
from sim.engine.records import Outcome
from sim.engine.runtime import ComputeRuntime
from sim.rules.errors import conflict, invalid, locked, not_found, unsupported_state
from sim.rules.operations import Action
from sim.rules.sizes import Plan, validate_size
from sim.rules.states import ComputeType
from sim.rules.timeouts import validate_suspend_timeout

if TYPE_CHECKING:
    from sim.engine.control_plane import ControlPlane

DEFAULT_MIN_CU = 0.25
DEFAULT_MAX_CU = 2.0
POOLER_MODES = ("transaction",)  # the only value the specification shows

#: settings a create or update body may carry (beyond branch_id and type)
EDITABLE = frozenset({
    "autoscaling_limit_min_cu", "autoscaling_limit_max_cu", "suspend_timeout_seconds",
    "pooler_enabled", "pooler_mode", "settings", "disabled", "passwordless_access",
    "provisioner", "name", "pool_size", "region_id",
})
#: changes that restart an active compute and drop its connections (the specification, compute changes)
RESTARTING = frozenset({"autoscaling_limit_min_cu", "autoscaling_limit_max_cu", "branch_id"})


@dataclass(frozen=True)
class ComputeSpec:
    """A validated compute request: sizes resolved, every value checked."""

    type: str
    min_cu: float
    max_cu: float
    suspend_timeout_seconds: int
    pooler_enabled: bool
    pooler_mode: str
    settings: dict[str, Any]
    disabled: bool
    passwordless_access: bool
    provisioner: str
    name: str | None
    pool_size: int | None


def resolve_size(min_cu: float | None, max_cu: float | None) -> tuple[float, float]:
    """Fill a missing end of the range (docs/model.md, assumptions)."""
    if min_cu is None:
        min_cu = DEFAULT_MIN_CU if max_cu is None else min(DEFAULT_MIN_CU, max_cu)
    if max_cu is None:
        max_cu = min_cu if min_cu >= DEFAULT_MAX_CU else DEFAULT_MAX_CU
    return min_cu, max_cu


def _check_bool(field: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise invalid(field, f"must be true or false, got {value!r}")


def validate_spec(plan: Plan, values: dict[str, Any], prefix: str = "endpoint.") -> ComputeSpec:
    unknown = set(values) - EDITABLE - {"type", "branch_id"}
    if unknown:
        raise invalid(prefix + sorted(unknown)[0], "unknown field")
    ctype = values.get("type", ComputeType.READ_WRITE.value)
    if ctype not in {t.value for t in ComputeType}:
        raise invalid(prefix + "type", f"must be read_write or read_only, got {ctype!r}")
    min_cu, max_cu = resolve_size(values.get("autoscaling_limit_min_cu"),
                                  values.get("autoscaling_limit_max_cu"))
    validate_size(min_cu, max_cu, plan, min_field=prefix + "autoscaling_limit_min_cu",
                  max_field=prefix + "autoscaling_limit_max_cu")
    timeout = values.get("suspend_timeout_seconds", 0)
    validate_suspend_timeout(timeout, prefix + "suspend_timeout_seconds")
    for flag in ("pooler_enabled", "disabled", "passwordless_access"):
        if flag in values:
            _check_bool(prefix + flag, values[flag])
    mode = values.get("pooler_mode", "transaction")
    if mode not in POOLER_MODES:
        raise invalid(prefix + "pooler_mode", f"must be one of {', '.join(POOLER_MODES)}")
    settings = values.get("settings") or {}
    if not isinstance(settings, dict):
        raise invalid(prefix + "settings", "must be an object")
    pool_size = values.get("pool_size")
    if pool_size is not None and (not isinstance(pool_size, int) or isinstance(pool_size, bool)
                                  or pool_size < 1):
        raise invalid(prefix + "pool_size", "must be a positive integer")
    return ComputeSpec(
        type=ctype, min_cu=float(min_cu), max_cu=float(max_cu),
        suspend_timeout_seconds=timeout, pooler_enabled=values.get("pooler_enabled", False),
        pooler_mode=mode, settings=dict(settings), disabled=values.get("disabled", False),
        passwordless_access=values.get("passwordless_access", True),
        provisioner=values.get("provisioner", "k8s-neonvm"), name=values.get("name"),
        pool_size=pool_size,
    )


class ComputeVerbs:
    # -- lookups -------------------------------------------------------------
    def get_compute(self: ControlPlane, project_id: str, endpoint_id: str) -> Compute:
        self.get_project(project_id)
        c = self.computes.get(endpoint_id)
        if c is None or c.deleted or c.project_id != project_id:
            raise not_found("endpoint", endpoint_id, "endpoint_id")
        return c

    def list_computes(
        self: ControlPlane, project_id: str, branch_id: str | None = None
    ) -> list[Compute]:
        project = self.get_project(project_id)
        if branch_id is not None:
            branch_ids = [self.get_branch(project_id, branch_id).id]
        else:
            branch_ids = project.branches
        return [self.computes[i] for b in branch_ids for i in self.branches[b].computes]

    def _check_primary_free(self: ControlPlane, branch: Branch, field: str) -> None:
        for i in branch.computes:
            other = self.computes[i]
            if other.is_read_write:
                raise conflict(field, f"branch {branch.id} already has a read_write compute "
                                      f"({other.id}); a branch has at most one")

    def _check_no_compute(self: ControlPlane, branch: Branch, field: str) -> None:
        """A read_write compute moves only onto a branch with no compute at all."""
        if branch.computes:
            raise conflict(field, f"branch {branch.id} already has a compute "
                                  f"({branch.computes[0]}); a read_write compute moves only "
                                  f"to a branch without one")

    def _check_unlocked(self: ControlPlane, c: Compute) -> None:
        if self.executor.lane_busy(c.id):
            pending = self.executor.pending(c.id)[0]
            raise locked(f"endpoint {c.id} has an operation that has not ended "
                         f"({pending.action} {pending.id}, {pending.status}); retry later")

    # -- create ----------------------------------------------------------------
    def create_compute(
        self: ControlPlane, project_id: str, branch_id: str, type: str = "read_write",
        *, key: str | None = None, creation_source: str = "console", **values: Any,
    ) -> tuple[Compute, list[Operation]]:
        project = self.get_project(project_id)
        region = values.pop("region_id", None)
        if region is not None and region != project.region_id:
            raise invalid("endpoint.region_id", f"must be the project's region {project.region_id}")
        if not isinstance(branch_id, str):
            raise invalid("endpoint.branch_id", "must be a string")
        branch = self.get_branch(project_id, branch_id, field="endpoint.branch_id")
        spec = validate_spec(project.plan, {"type": type, **values})
        if spec.type == ComputeType.READ_WRITE.value:
            self._check_primary_free(branch, "endpoint.branch_id")
        return self.build_compute(project, branch, spec, key=key, creation_source=creation_source)

    def build_compute(
        self: ControlPlane, project: Project, branch: Branch, spec: ComputeSpec,
        *, key: str | None = None, creation_source: str = "console",
    ) -> tuple[Compute, list[Operation]]:
        """Create an already-validated compute and start it (it begins in `init`)."""
        now = self.env.now
        rng = self.id_stream(project)
        ident = self.ids.compute(rng)
        region = project.region_id.removeprefix("aws-")
        c = Compute(
            id=ident, project_id=project.id, branch_id=branch.id, region_id=project.region_id,
            type=spec.type, host=f"{ident}.{region}.aws.sim.internal",
            proxy_host=f"{region}.aws.sim.internal",
            autoscaling_limit_min_cu=spec.min_cu, autoscaling_limit_max_cu=spec.max_cu,
            suspend_timeout_seconds=spec.suspend_timeout_seconds,
            pooler_enabled=spec.pooler_enabled, pooler_mode=spec.pooler_mode,
            settings=spec.settings, disabled=spec.disabled,
            passwordless_access=spec.passwordless_access, provisioner=spec.provisioner,
            name=spec.name, pool_size=spec.pool_size, created_at=now, updated_at=now,
            key=key or f"{project.key}/{ident}", creation_source=creation_source,
        )
        if spec.disabled:
            c.current_state, c.pending_state = IDLE, None
        else:
            c.cu = spec.min_cu
        c.runtime = ComputeRuntime(self, c)
        self.computes[c.id] = c
        branch.computes.append(c.id)
        if spec.disabled:
            return c, []
        c.pending_state = None  # let wake() set it, with the reattach/unarchive chain
        ops = self.wake(c, "create")
        if len(branch.computes) == 1:
            self.start_availability_checks(branch)
        return c, ops

    # -- update ----------------------------------------------------------------
    def update_compute(
        self: ControlPlane, project_id: str, endpoint_id: str, **changes: Any
    ) -> tuple[Compute, list[Operation]]:
        c = self.get_compute(project_id, endpoint_id)
        project = self.projects[project_id]
        unknown = set(changes) - EDITABLE - {"branch_id"}
        if unknown:
            raise invalid("endpoint." + sorted(unknown)[0], "unknown or read-only field")
        if "region_id" in changes and changes["region_id"] != c.region_id:
            raise invalid("endpoint.region_id", "a compute cannot change region")
        current = {
            "type": c.type, "autoscaling_limit_min_cu": c.autoscaling_limit_min_cu,
            "autoscaling_limit_max_cu": c.autoscaling_limit_max_cu,
            "suspend_timeout_seconds": c.suspend_timeout_seconds,
            "pooler_enabled": c.pooler_enabled, "pooler_mode": c.pooler_mode,
            "settings": c.settings, "disabled": c.disabled,
            "passwordless_access": c.passwordless_access, "provisioner": c.provisioner,
            "name": c.name, "pool_size": c.pool_size,
        }
        merged = {**current, **{k: v for k, v in changes.items() if k not in ("branch_id",
                                                                          "region_id")}}
        spec = validate_spec(project.plan, merged)
        target = None
        if "branch_id" in changes and changes["branch_id"] != c.branch_id:
            if not isinstance(changes["branch_id"], str):
                raise invalid("endpoint.branch_id", "must be a string")
            target = self.get_branch(project_id, changes["branch_id"], field="endpoint.branch_id")
            if c.is_read_write:
                self._check_no_compute(target, "endpoint.branch_id")
        changed = {k for k, v in merged.items() if current[k] != v}
        if target is not None:
            changed.add("branch_id")
        self._check_unlocked(c)
        if not changed:
            return c, []
        return c, self._apply(c, spec, target, changed)

    def _apply(self: ControlPlane, c: Compute, spec: ComputeSpec, target: Branch | None,
               changed: set[str]) -> list[Operation]:
        """Console edits take effect immediately (the specification, compute changes #4)."""
        now = self.env.now
        was_on = c.current_state == ACTIVE
        c.autoscaling_limit_min_cu, c.autoscaling_limit_max_cu = spec.min_cu, spec.max_cu
        c.suspend_timeout_seconds = spec.suspend_timeout_seconds
        c.pooler_enabled, c.pooler_mode = spec.pooler_enabled, spec.pooler_mode
        c.settings, c.disabled = spec.settings, spec.disabled
        c.passwordless_access, c.provisioner = spec.passwordless_access, spec.provisioner
        c.name, c.pool_size = spec.name, spec.pool_size
        c.updated_at = now
        if target is not None:
            left = self.branches[c.branch_id]
            left.computes.remove(c.id)
            target.computes.append(c.id)
            c.branch_id = target.id
            self.left_branch(left, is_on(c))
            self.start_availability_checks(target)
        rt = c.runtime
        assert rt is not None
        rt.refresh_settings()
        ops = [self.submit_compute_op(c, Action.APPLY_CONFIG)]
        if was_on and c.disabled:
            rt.drop_all(now, Outcome.REFUSED_DISABLED)
            ops.append(self.suspend(c))
        elif was_on and changed & RESTARTING:
            ops += self._restart_ops(c)
        rt.arm()  # a shorter timeout may end the countdown sooner
        return ops

    # -- start, suspend, restart, delete ---------------------------------------
    def start_compute(self: ControlPlane, project_id: str, endpoint_id: str
                      ) -> tuple[Compute, list[Operation]]:
        c = self.get_compute(project_id, endpoint_id)
        self._check_unlocked(c)
        if c.disabled:
            raise unsupported_state(f"endpoint {c.id} is disabled; enable it first")
        if c.current_state == ACTIVE:
            return c, []
        return c, self.wake(c, "api")

    def suspend_compute(self: ControlPlane, project_id: str, endpoint_id: str
                        ) -> tuple[Compute, list[Operation]]:
        c = self.get_compute(project_id, endpoint_id)
        self._check_unlocked(c)
        if c.current_state != ACTIVE:
            return c, []
        c.runtime.drop_all(self.env.now)  # type: ignore[union-attr]
        return c, [self.suspend(c)]

    def restart_compute(self: ControlPlane, project_id: str, endpoint_id: str
                        ) -> tuple[Compute, list[Operation]]:
        c = self.get_compute(project_id, endpoint_id)
        self._check_unlocked(c)
        if c.current_state != ACTIVE or c.pending_state is not None:
            raise unsupported_state(
                f"endpoint {c.id} is {c.current_state}; restart needs an active compute "
                f"(start it first)", "endpoint_id")
        return c, self._restart_ops(c)

    def _restart_ops(self: ControlPlane, c: Compute) -> list[Operation]:
        """Drop connections, suspend, start again (and pick up the current release)."""
        c.stats.restarts += 1
        c.runtime.drop_all(self.env.now)  # type: ignore[union-attr]
        suspend = self.suspend(c)
        # the start goes through wake(): a moved compute may land on an archived branch
        return [suspend, *self.wake(c, "restart")]

    def delete_compute(self: ControlPlane, project_id: str, endpoint_id: str
                       ) -> tuple[Compute, list[Operation]]:
        c = self.get_compute(project_id, endpoint_id)
        self._check_unlocked(c)
        return c, self.remove_compute(c)

    def remove_compute(self: ControlPlane, c: Compute) -> list[Operation]:
        """Delete a compute: its connections drop, a running compute is stopped."""
        now = self.env.now
        rt = c.runtime
        assert rt is not None
        rt.drop_all(now, Outcome.REFUSED_DISABLED)
        self.executor.cancel_lane(c.id)  # only a project deletion finds work in progress
        was_on = c.current_state != IDLE
        c.deleted_at = now
        c.updated_at = now
        self.branches[c.branch_id].computes.remove(c.id)
        if was_on:
            return [self.suspend(c)]
        rt.close_interval(now)
        self.went_quiet(c)
        return []

    # -- connections -------------------------------------------------------------
    def connect(self: ControlPlane, project_id: str, endpoint_id: str, duration_s: float,
                count: int = 1, cpu: float = 0.0) -> list[str]:
        """Open `count` client connections now, each for `duration_s` (the /_sim call)."""
        c = self.get_compute(project_id, endpoint_id)
        if not (isinstance(duration_s, (int, float)) and duration_s > 0):
            raise invalid("duration_seconds", "must be a number > 0")
        if not isinstance(count, int) or not 1 <= count <= 10_000:
            raise invalid("count", "must be an integer 1..10000")
        rt = c.runtime
        assert rt is not None
        now = self.env.now
        outcomes = [rt.connect(now, float(duration_s), cpu) for _ in range(count)]
        rt.arm()
        return outcomes

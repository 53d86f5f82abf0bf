"""A project's storage lifecycle, replayed from its computes' kernel runs.

The SimPy engine detaches a project whose computes have all been off for
`detach_after`, archives a branch whose computes have been off for
`archive_after` (a branch without a compute: since its creation), and a
compute that wakes in a detached project or on an archived branch first
submits tenant_reattach or timeline_unarchive. These run one after another on
the project's storage lane, and a waking compute's start_compute waits for
everything on that lane when it wakes (`Lifecycle.wake`).

The compute kernel advances each compute alone. For a project whose storage
the kernel's side runs, `replay_storage` walks the project's lane (a compiled
walk: `sim.kernel.storage_kernel`) through the computes' spans (when each was
on) and wakes, in the engine's order, making the
same decisions and drawing the same numbers from the project's streams, and
says which wakes waited for the lane and until when (`Gates`). The kernel, run
again with those gates, moves the computes' later spans a little, so the
replay is repeated until it gives the gates the kernel ran with
(`sim.scenario.kernel_run`): every gate depends only on what happened
before it, so that fixed point is the engine's timeline. Where the order of two
things at one instant would decide the outcome and is not known, it raises
`StorageTie` and the project is left to the SimPy engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from sim.engine.model import Compute, Operation, Project
from sim.engine.operation_rows import OperationColumns
from sim.kernel import physics as k
from sim.kernel import storage_kernel as lane
from sim.kernel.physics_run import Advanced, Gates, durations_of
from sim.rules.operations import Action
from sim.rules.states import OperationStatus as S

if TYPE_CHECKING:
    from sim.engine.control_plane import ControlPlane

#: the lane's actions and statuses by the replay's codes
_ACTIONS = (Action.TENANT_DETACH, Action.TENANT_REATTACH, Action.TIMELINE_ARCHIVE,
            Action.TIMELINE_UNARCHIVE)
_NAMES = [a.value for a in _ACTIONS]
_STATUS = [S.SCHEDULING.value, S.RUNNING.value, S.FAILED.value, S.FINISHED.value,
           S.SKIPPED.value]
_TIES = {
    lane.TIE_RING_AT_WAKE: "an idle clock rings at the instant of a compute's wake",
    lane.TIE_RING_AT_HANDOVER: "an idle clock rings at the instant of the hand-over",
    lane.TIE_QUIET_AT_WAKE: "a compute went quiet at the instant of another's wake",
    lane.TIE_LANE_AT_EVENT: "storage work at the instant of a compute's event",
}


class StorageTie(Exception):
    """Two things at one instant whose order the replay does not know: the engine's case."""


class LaneOps(NamedTuple):
    """The lane's operations in creation order, as columns."""

    action: np.ndarray  # codes of `sim.kernel.storage_kernel`
    branch_id: list[str]
    created: np.ndarray
    #: where each goes among the project's operations made at one instant: (instant, when
    #: the event that made it was scheduled, check rank (-1: an idle clock's), position)
    order: np.ndarray
    status: np.ndarray  # codes
    updated: np.ndarray
    started: np.ndarray  # NaN: not started
    finished: np.ndarray  # NaN: not finished
    failures: np.ndarray
    retry_at: np.ndarray  # NaN: no retry pending
    done_at: np.ndarray  # finished or skipped (inf: neither)

    @classmethod
    def none(cls) -> LaneOps:
        empty = np.empty(0)
        return cls(np.empty(0, np.int64), [], empty, np.empty((0, 4)), np.empty(0, np.int64),
                   empty, empty, empty, np.empty(0, np.int64), empty, empty)

    def __len__(self) -> int:
        return len(self.created)


@dataclass
class Replayed:
    """What the replay found: each compute's gates, the lane's operations in creation
    order, and the storage flags and idle clocks at the end."""

    gates: dict[str, Gates]
    ops: LaneOps
    detached: bool
    archived: dict[str, bool]
    idle_since: dict[str | None, float | None]  # None: the project; else a branch id


@dataclass
class StorageStart:
    """Where the replay begins: at `at` (None: the computes' creation), with these idle
    clocks running (None: the project; else a branch id -> since when)."""

    idle_since: dict[str | None, float | None]
    at: float | None = None

    @classmethod
    def at_creation(cls, cp: ControlPlane, project: Project) -> StorageStart:
        return cls({None: project.idle_since,
                    **{b: cp.branches[b].idle_since for b in project.branches}})


class _Clocks(NamedTuple):
    """A lane's idle clocks as a look before any replay sees them: the shortest period,
    and the earliest instant one of them may have begun."""

    period: float
    begin: float


def _clocks(cp: ControlPlane, project: Project, start: StorageStart) -> _Clocks | bool:
    """The lane's clocks; or, when no look is needed, whether it is at rest: False when
    something is detached or archived (a replay's work), True when no clock runs."""
    if project.detached or any(cp.branches[b].archived for b in project.branches):
        return False
    cfg = cp.config
    periods = [p for p in (cfg.detach_after_s, cfg.archive_after_s) if p is not None]
    if not periods:
        return True
    begin = min([project.created_at if start.at is None else start.at,
                 *(since for since in start.idle_since.values() if since is not None)])
    return _Clocks(min(periods), begin)


def storage_at_rest(cp: ControlPlane, project: Project, until: float,
                    start: StorageStart) -> bool:
    """Whether the project's storage lane has nothing to do before `until`: nothing
    detached or archived, and no idle clock can ring (none runs for a whole period before
    `until`, whatever its computes do). A cheap look, before any replay."""
    clocks = _clocks(cp, project, start)
    if isinstance(clocks, bool):
        return clocks
    return clocks.begin + clocks.period >= until


def kept_busy(cp: ControlPlane, project: Project, advanced: Sequence[Advanced], until: float,
              start: StorageStart) -> bool:
    """Whether the computes, as the kernel ran them, leave the project's storage lane
    nothing to do before `until`: nothing detached or archived, and neither the project
    nor any branch without a compute on for as long as an idle clock's period. The look
    after the computes' runs, before a replay (a busy fleet's projects replay nothing)."""
    clocks = _clocks(cp, project, start)
    if isinstance(clocks, bool):
        return clocks
    period, begin = clocks
    if not _no_long_quiet(advanced, begin, until, period):
        return False
    branches = [[a for a in advanced if a.compute.branch_id == b] for b in project.branches]
    return all(len(mine) == len(advanced) or _no_long_quiet(mine, begin, until, period)
               for mine in branches)


def _no_long_quiet(advanced: Sequence[Advanced], begin: float, until: float, period: float
                   ) -> bool:
    """Whether the union of these computes' on-spans leaves no gap of `period` or more in
    [begin, until) (a gap of exactly `period` counts as long: its clock would ring)."""
    if not advanced:
        return False
    if len(advanced) == 1:  # one compute's spans: in order, one after the other
        starts, reach = advanced[0].on_starts, advanced[0].on_ends
    else:
        starts = np.concatenate([a.on_starts for a in advanced])
        order = np.argsort(starts, kind="stable")
        starts = starts[order]
        reach = np.maximum.accumulate(np.concatenate([a.on_ends for a in advanced])[order])
    if not len(starts):
        return until - begin < period
    return bool(starts[0] - begin < period and (starts[1:] - reach[:-1] < period).all()
                and until - reach[-1] < period)


def unchanged(cp: ControlPlane, project: Project) -> Replayed:
    """What a replay of a lane at rest finds: nothing to do, the storage as it stands."""
    return Replayed({}, LaneOps.none(), project.detached,
                    {b: cp.branches[b].archived for b in project.branches},
                    {None: project.idle_since,
                     **{b: cp.branches[b].idle_since for b in project.branches}})


class LaneSetup:
    """A project's lane as every round of its replay starts it: its holders of idle clocks
    (the project, then its branches), how they stand at the start, and its computes'
    holders and check ranks, in the order of the kernel runs each round hands over."""

    def __init__(self, cp: ControlPlane, project: Project, computes: list[Compute],
                 ranks: dict[str, int], start: StorageStart):
        cfg = cp.config
        self.project = project
        self.holders: list[str | None] = [None, *project.branches]
        branches = [cp.branches[b] for b in project.branches]
        nan = np.nan
        detach, archive = cfg.detach_after_s, cfg.archive_after_s
        holder_of = {b: h for h, b in enumerate(self.holders)}
        self.head = (  # the kernel's first arguments, after `until`
            nan if start.at is None else start.at,
            np.array([nan if (t := start.idle_since.get(h)) is None else t
                      for h in self.holders]),
            np.array([nan if detach is None else detach,
                      *(nan if archive is None or b.default else archive for b in branches)]),
            np.array([project.detached, *(b.archived for b in branches)]),
            holder_of[project.default_branch_id],
            np.array([holder_of[c.branch_id] for c in computes], dtype=np.int64),
            np.array([ranks.get(c.id, 0) for c in computes], dtype=np.float64))
        self.tail = (k.START, *durations_of(cp, _ACTIONS), cp.executor.failure_rate,
                     cfg.retry_backoff_s)
        self.rng = cp.streams.get(f"ops/{project.key}")  # the caller puts it back each round


def replay_storage(setup: LaneSetup, advanced: list[Advanced], until: float) -> Replayed:
    """Replay the project's storage lane to `until` (`sim.kernel.storage_kernel`) from the
    computes' kernel runs (in the setup's order). Raises StorageTie."""
    n_ops = [int(adv.out["i"][k.N_OPS]) for adv in advanced]
    out = lane.replay(
        until, *setup.head,
        np.array([len(adv.on_starts) for adv in advanced], dtype=np.int64),
        np.array([len(adv.on_ends) for adv in advanced], dtype=np.int64),
        _joined([adv.on_starts for adv in advanced]), _joined([adv.on_ends for adv in advanced]),
        np.array(n_ops, dtype=np.int64),
        *(_joined([adv.out[name][:n] for adv, n in zip(advanced, n_ops, strict=True)])
          for name in ("op_action", "op_created", "op_sched")),
        *setup.tail, setup.rng)
    tie, idle, flags, of, oi, g_comp, g_at, g_until = out
    if tie:
        raise StorageTie(_TIES[int(tie)])
    project, holders = setup.project, setup.holders
    ops = LaneOps(oi[:, lane.I_ACTION],
                  [holders[h] or project.default_branch_id for h in oi[:, lane.I_HOLDER].tolist()],
                  of[:, lane.O_T], of[:, lane.O_T:lane.O_POS + 1], oi[:, lane.I_STATUS],
                  of[:, lane.O_UPDATED], of[:, lane.O_STARTED], of[:, lane.O_FINISHED],
                  oi[:, lane.I_FAILURES], of[:, lane.O_RETRY], of[:, lane.O_DONE])
    gates: dict[str, Gates] = {}
    if len(g_comp):
        for c in np.unique(g_comp).tolist():
            mine = g_comp == c
            gates[advanced[c].compute.id] = Gates(g_at[mine], g_until[mine])
    return Replayed(gates, ops, bool(flags[0]),
                    dict(zip(project.branches, flags[1:].tolist(), strict=True)),
                    dict(zip(holders, [None if t != t else t for t in idle.tolist()],
                             strict=True)))


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.empty(0)


def storage_operations(cp: ControlPlane, project: Project, replayed: Replayed
                       ) -> list[tuple[tuple, Operation]]:
    """The lane's operations as the engine's, ids drawn from the project's id stream in
    creation order, each with where it goes among the project's operations."""
    ops = replayed.ops
    ids = cp.ids.operations(cp.id_stream(project), len(ops))
    made = []
    for x, ident in enumerate(ids):
        name = _NAMES[ops.action[x]]
        failures = int(ops.failures[x])
        made.append((tuple(ops.order[x].tolist()), Operation(
            id=ident, project_id=project.id, branch_id=ops.branch_id[x], endpoint_id=None,
            action=name, status=_STATUS[ops.status[x]], created_us=0,
            updated_at=float(ops.updated[x]), failures_count=failures,
            error=f"{name} attempt {failures} failed (injected fault)" if failures else None,
            retry_at=_maybe(ops.retry_at[x]), started_at=_maybe(ops.started[x]),
            finished_at=_maybe(ops.finished[x]))))
    return made


def _maybe(t: float) -> float | None:
    return None if t != t else float(t)  # NaN: none


def storage_columns(cp: ControlPlane, project: Project, replayed: Replayed) -> OperationColumns:
    """The lane's operations as columns (`sim.engine.operation_rows`), ids drawn from the
    project's id stream in creation order."""
    ops = replayed.ops
    n = len(ops)
    return OperationColumns(
        cp.ids.operation_bytes(cp.id_stream(project), n), ops.branch_id, [None] * n,
        [_NAMES[a] for a in ops.action.tolist()], [_STATUS[s] for s in ops.status.tolist()],
        ops.failures, ops.created, ops.updated, ops.finished,
        *(ops.order[:, m].copy() for m in (1, 2, 3)))




def tally_storage(cp: ControlPlane, project: Project, replayed: Replayed) -> None:
    """Count the lane's operations when none is built as a row (`sim.engine.tallies`)."""
    ops = replayed.ops
    if len(ops):
        cp.recorder.tally(project.id).add_codes(ops.action, _NAMES, ops.status, _STATUS,
                                                ops.failures, ops.created,
                                                cp.config.count_from_s)


def settle_storage(cp: ControlPlane, project: Project, replayed: Replayed) -> None:
    """Leave the project's storage flags and idle clocks as the engine would."""
    project.detached = replayed.detached
    project.idle_since = replayed.idle_since[None]
    for b, archived in replayed.archived.items():
        branch = cp.branches[b]
        branch.archived = archived
        branch.idle_since = replayed.idle_since[b]


__all__ = ["LaneSetup", "Replayed", "StorageStart", "StorageTie", "replay_storage", "settle_storage",
           "storage_at_rest", "storage_columns", "storage_operations", "tally_storage",
           "unchanged"]

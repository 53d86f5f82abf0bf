"""A project's storage lifecycle, replayed from its computes' kernel runs.

The SimPy engine detaches a project whose computes have all been off for
`detach_after`, archives a branch whose computes have been off for
`archive_after` (a branch without a compute: since its creation), and a
compute that wakes in a detached project or on an archived branch first
submits tenant_reattach or timeline_unarchive. These run one after another on
the project's storage lane, and a waking compute's start_compute waits for
everything on that lane when it wakes (`Lifecycle.wake`).

The compute kernel advances each compute alone. For a project whose storage
the kernel's side runs, `replay_storage` walks the project's lane through the
computes' spans (when each was on) and wakes, in the engine's order, making the
same decisions and drawing the same numbers from the project's streams, and
says which wakes waited for the lane and until when (`Gates`). The kernel, run
again with those gates, moves the computes' later spans a little, so the
replay is repeated until it gives the gates the kernel ran with
(`sim.scenario.fleetpath_run`): every gate depends only on what happened
before it, so that fixed point is the engine's timeline. Where the order of two
things at one instant would decide the outcome and is not known, it raises
`StorageTie` and the project is left to the SimPy engine.
"""

from __future__ import annotations

import copy
import heapq
import math
from collections import deque
from dataclasses import dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING

import numpy as np

from sim.engine import physics as k
from sim.engine.model import Operation, Project
from sim.engine.physics_run import Advanced, Gates
from sim.rules.operations import Action
from sim.rules.states import OperationStatus as S

if TYPE_CHECKING:
    from sim.engine.control_plane import ControlPlane

INF = math.inf
DETACH, REATTACH = Action.TENANT_DETACH, Action.TENANT_REATTACH
ARCHIVE, UNARCHIVE = Action.TIMELINE_ARCHIVE, Action.TIMELINE_UNARCHIVE


class StorageTie(Exception):
    """Two things at one instant whose order the replay does not know: the engine's case."""


@dataclass(eq=False)
class LaneOp:
    """One storage operation of the project's lane, as the engine's executor moves it."""

    action: Action
    branch_id: str
    created: float
    order: tuple  # where it goes among the project's operations created at one instant
    status: str = S.SCHEDULING.value
    updated: float = 0.0
    started: float | None = None
    finished: float | None = None
    failures: int = 0
    retry_at: float | None = None
    done_at: float = INF  # finished or skipped

    def __post_init__(self) -> None:
        self.updated = self.created


@dataclass
class Replayed:
    """What the replay found: each compute's gates, the lane's operations in creation
    order, and the storage flags and idle clocks at the end."""

    gates: dict[str, Gates]
    ops: list[LaneOp]
    detached: bool
    archived: dict[str, bool]
    idle_since: dict[str | None, float | None]  # None: the project; else a branch id
    ops_rng: np.random.Generator


@dataclass
class _Wake:
    compute: str
    branch: str
    after: list[LaneOp] = field(default_factory=list)


@dataclass
class StorageStart:
    """Where the replay begins: at `at` (None: the computes' creation), with these computes
    on and these idle clocks running (None: the project; else a branch id -> since when)."""

    on: set[str]
    idle_since: dict[str | None, float | None]
    at: float | None = None

    @classmethod
    def at_creation(cls, cp: ControlPlane, project: Project, computes: list[str]) -> StorageStart:
        return cls(set(computes), {None: project.idle_since,
                                   **{b: cp.branches[b].idle_since for b in project.branches}})


def _ringing(cp: ControlPlane, advanced: list[Advanced], until: float,
             start: StorageStart) -> bool:
    """Whether an idle clock of the project or of one of its branches could ring in the run
    (else the lane stays empty and there is nothing to replay)."""
    from sim.engine.physics_run import longest_quiet

    cfg = cp.config
    spans: dict[str | None, list[tuple[np.ndarray, np.ndarray]]] = {}
    for key, since in start.idle_since.items():
        if since is not None:  # a stretch already quiet when the replay begins
            spans.setdefault(key, []).append((np.array([since]), np.array([since])))
    for adv in advanced:
        pair = (adv.on_starts, adv.on_ends)
        spans.setdefault(None, []).append(pair)
        spans.setdefault(adv.compute.branch_id, []).append(pair)
    for key, group in spans.items():
        after = cfg.detach_after_s if key is None else cfg.archive_after_s
        if after is None or (key is not None and cp.branches[key].default):
            continue
        starts = np.concatenate([a for a, _ in group])
        ends = np.concatenate([b for _, b in group])
        if longest_quiet(starts, ends, until) >= after:
            return True
    return False


def replay_storage(cp: ControlPlane, project: Project, advanced: list[Advanced], until: float,
                   ranks: dict[str, int], start: StorageStart) -> Replayed | None:
    """Replay the project's storage lane to `until` (None: no idle clock rings in the run).
    `ranks`: compute id -> the rank of its branch's availability checks. Raises StorageTie."""
    if not _ringing(cp, advanced, until, start):
        return None
    return _Replay(cp, project, advanced, until, ranks, start).run()


class _Replay:
    def __init__(self, cp: ControlPlane, project: Project, advanced: list[Advanced],
                 until: float, ranks: dict[str, int], start: StorageStart):
        self.cp, self.project, self.until = cp, project, until
        self.cfg = cp.config
        self.rng = copy.deepcopy(cp.streams.get(f"ops/{project.key}"))
        self.branch_of = {adv.compute.id: adv.compute.branch_id for adv in advanced}
        self.on = set(start.on)
        self.on_in_branch = dict.fromkeys(project.branches, 0)
        for cid in self.on:
            self.on_in_branch[self.branch_of[cid]] += 1
        self.detached = project.detached
        self.archived = {b: cp.branches[b].archived for b in project.branches}
        self.idle: dict[str | None, float | None] = {
            None: None, **dict.fromkeys(project.branches)} | start.idle_since
        self.lane: deque[LaneOp] = deque()
        self.ops: list[LaneOp] = []
        self.wakes: list[tuple[float, _Wake]] = []
        self.timers: list[tuple] = []  # heap of (t, scheduled at, seq, holder, since)
        self.lane_events: list[tuple] = []  # heap of (t, scheduled at, seq, kind)
        self.seq = 0
        self.fixed = self._compute_events(advanced, ranks)
        for holder, since in self.idle.items():  # clocks already running
            if since is None:
                continue
            after = self.cfg.detach_after_s if holder is None else self.cfg.archive_after_s
            if start.at is not None and after is not None and since + after <= start.at:
                if since + after == start.at:  # rung at the hand-over, or not yet?
                    raise StorageTie("an idle clock rings at the instant of the hand-over")
                continue  # it rang before: the engine did what it had to
            self._timer(holder, since, since)

    # -- the events that come from the computes ------------------------------
    def _compute_events(self, advanced: list[Advanced], ranks: dict[str, int]) -> list[tuple]:
        """(t, sched, rank, j, kind, compute) of every wake and every span's end, in the
        engine's order; kind 0: a wake (the j-th operation of the compute), 1: went quiet."""
        events = []
        for adv in advanced:
            c, out = adv.compute, adv.out
            n = int(out["i"][k.N_OPS])
            starts = np.flatnonzero(out["op_action"][:n] == k.START)
            rank = ranks.get(c.id, 0)
            for j, t, sched in zip(starts.tolist(), out["op_created"][starts].tolist(),
                                   out["op_sched"][starts].tolist(), strict=True):
                events.append((t, sched, rank, j, 0, c.id))
            ends = adv.on_ends
            if out["i"][k.ON]:  # on at the end: its last span was closed by the run's end
                ends = ends[:-1]
            events += [(t, -INF, rank, 0, 1, c.id) for t in ends.tolist()]
        events.sort()
        for a, b in pairwise(events):
            if a[0] == b[0] and (a[4] or b[4]):
                raise StorageTie("a compute went quiet at the instant of another's wake")
        return events

    # -- the replay ----------------------------------------------------------
    def run(self) -> Replayed:
        fixed, timers, lane_events = self.fixed, self.timers, self.lane_events
        n, x = len(fixed), 0
        while True:
            t_storage = min(timers[0][0] if timers else INF,
                            lane_events[0][0] if lane_events else INF)
            if x < n and fixed[x][0] < t_storage:  # most events: a compute's, alone
                t, sched, source = fixed[x][0], fixed[x][1], 0
            else:
                # SimPy takes events at one instant in the order they were scheduled: each
                # source's next event with (instant, when it was scheduled)
                heads = []
                if x < n:
                    heads.append((fixed[x][0], fixed[x][1], 0))
                if timers:
                    heads.append((timers[0][0], timers[0][1], 1))
                if lane_events:
                    heads.append((lane_events[0][0], lane_events[0][1], 2))
                if not heads:
                    break
                t, sched, source = min(heads)
                if sum(h[0] == t for h in heads) > 1 and (
                        sum(h[:2] == (t, sched) for h in heads) > 1
                        or (x < n and fixed[x][0] == t and fixed[x][4])):
                    raise StorageTie("storage work at the instant of a compute's event")
            if not t < self.until:
                break
            if source == 0:
                _, sched, rank, j, kind, cid = fixed[x]
                x += 1
                if kind == 0:
                    self._wake(t, cid, (t, sched, rank, j - 0.5))
                else:
                    self._went_quiet(t, cid)
            elif source == 1:
                _, _, _, holder, since = heapq.heappop(self.timers)
                self._ring(t, holder, since)
            else:
                _, _, _, kind = heapq.heappop(self.lane_events)
                self._lane_event(t, kind)
        gates: dict[str, tuple[list[float], list[float]]] = {}
        for t, wake in self.wakes:
            at, until = gates.setdefault(wake.compute, ([], []))
            at.append(t)
            until.append(max(op.done_at for op in wake.after))
        return Replayed({cid: Gates(np.array(a), np.array(u)) for cid, (a, u) in gates.items()},
                        self.ops, self.detached, self.archived, self.idle, self.rng)

    def _timer(self, holder: str | None, since: float, now: float) -> None:
        if holder is not None and self.cp.branches[holder].default:
            return  # the default branch is never archived: its clock rings for nothing
        after = self.cfg.detach_after_s if holder is None else self.cfg.archive_after_s
        if after is not None:
            heapq.heappush(self.timers, (since + after, now, self.seq, holder, since))
            self.seq += 1

    def _wake(self, t: float, cid: str, order: tuple) -> None:
        """Lifecycle.wake: queued detach / archive superseded, storage brought back first."""
        branch = self.branch_of[cid]
        for op in list(self.lane):
            if op.status == S.SCHEDULING.value and (
                    op.action is DETACH or (op.action is ARCHIVE and op.branch_id == branch)):
                self._skip(op, t)
        if self.detached:
            self._submit(REATTACH, branch, t, order)
        if self.archived[branch]:
            self._submit(UNARCHIVE, branch, t, order[:3] + (order[3] + 0.25,))
        self.idle[None] = self.idle[branch] = None
        if cid not in self.on:
            self.on.add(cid)
            self.on_in_branch[branch] += 1
        if self.lane:
            self.wakes.append((t, _Wake(cid, branch, list(self.lane))))

    def _went_quiet(self, t: float, cid: str) -> None:
        """Lifecycle.went_quiet: the project's and the branch's idle clocks start."""
        branch = self.branch_of[cid]
        if cid in self.on:
            self.on.remove(cid)
            self.on_in_branch[branch] -= 1
        if not self.on:
            self.idle[None] = t
            self._timer(None, t, t)
        if not self.on_in_branch[branch]:
            self.idle[branch] = t
            self._timer(branch, t, t)

    def _ring(self, t: float, holder: str | None, since: float) -> None:
        """_maybe_detach / _maybe_archive: still quiet since then, the storage goes."""
        if self.idle[holder] != since:
            return
        if holder is None:
            if not self.detached:
                self._submit(DETACH, self.project.default_branch_id, t, (t, since, -1, 0))
        elif not self.cp.branches[holder].default and not self.archived[holder]:
            self._submit(ARCHIVE, holder, t, (t, since, -1, 0))

    # -- the lane, as Executor runs it ---------------------------------------
    def _submit(self, action: Action, branch: str, t: float, order: tuple) -> None:
        op = LaneOp(action, branch, t, order)
        self.ops.append(op)
        self.lane.append(op)
        if len(self.lane) == 1:
            self._start(op, t)

    def _start(self, op: LaneOp, t: float) -> None:
        op.status, op.updated, op.started = S.RUNNING.value, t, t
        if op.action is DETACH:
            self.detached = True
        elif op.action is ARCHIVE:
            self.archived[op.branch_id] = True
        self._attempt(op, t)

    def _attempt(self, op: LaneOp, t: float) -> None:
        dist = self.cfg.duration_of(op.action)
        d = 0.0 if dist.is_zero else dist.sample_one(self.rng)
        self._lane_at(t + d, t, "done")

    def _lane_at(self, when: float, now: float, kind: str) -> None:
        heapq.heappush(self.lane_events, (when, now, self.seq, kind))
        self.seq += 1

    def _lane_event(self, t: float, kind: str) -> None:
        op = self.lane[0]
        if kind == "retry":
            op.status, op.updated, op.retry_at = S.RUNNING.value, t, None
            self._attempt(op, t)
            return
        rate = self.cfg.operation_failure_rate
        if rate > 0 and self.rng.random() < rate:
            op.status, op.updated = S.FAILED.value, t
            op.failures += 1
            op.retry_at = t + self.cfg.retry_backoff_s
            self._lane_at(op.retry_at, t, "retry")
            return
        op.status, op.updated, op.finished, op.retry_at, op.done_at = (
            S.FINISHED.value, t, t, None, t)
        self.lane.popleft()
        if self.lane:  # the next one starts before this one's own effect (Executor._finish)
            self._start(self.lane[0], t)
        if op.action is REATTACH:
            self.detached = False
        elif op.action is UNARCHIVE:
            self.archived[op.branch_id] = False

    def _skip(self, op: LaneOp, t: float) -> None:
        op.status, op.updated, op.finished, op.done_at = S.SKIPPED.value, t, t, t
        self.lane.remove(op)


def storage_operations(cp: ControlPlane, project: Project, replayed: Replayed
                       ) -> list[tuple[tuple, Operation]]:
    """The lane's operations as the engine's, ids drawn from the project's id stream in
    creation order, each with where it goes among the project's operations."""
    ids = cp.ids.operations(cp.id_stream(project), len(replayed.ops))
    made = []
    for ident, op in zip(ids, replayed.ops, strict=True):
        name = op.action.value
        made.append((op.order, Operation(
            id=ident, project_id=project.id, branch_id=op.branch_id, endpoint_id=None,
            action=name, status=op.status, created_us=0, updated_at=op.updated,
            failures_count=op.failures,
            error=f"{name} attempt {op.failures} failed (injected fault)" if op.failures else None,
            retry_at=op.retry_at, started_at=op.started, finished_at=op.finished)))
    return made


def settle_storage(cp: ControlPlane, project: Project, replayed: Replayed) -> None:
    """Leave the project's storage flags, idle clocks and stream as the engine would."""
    project.detached = replayed.detached
    project.idle_since = replayed.idle_since[None]
    for b, archived in replayed.archived.items():
        branch = cp.branches[b]
        branch.archived = archived
        branch.idle_since = replayed.idle_since[b]
    cp.streams.get(f"ops/{project.key}").bit_generator.state = replayed.ops_rng.bit_generator.state


__all__ = ["Replayed", "StorageStart", "StorageTie", "replay_storage", "settle_storage", "storage_operations"]

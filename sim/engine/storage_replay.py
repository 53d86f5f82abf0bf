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

import heapq
import math
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from sim.engine import physics as k
from sim.engine.model import Operation, Project
from sim.engine.operation_rows import OperationColumns
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


@dataclass
class _Wake:
    compute: str
    branch: str
    after: list[LaneOp] = field(default_factory=list)


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


def _stretches(starts: np.ndarray, ends: np.ndarray, since: float | None, until: float,
               one: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The quiet stretches [q, r) of a holder whose computes were on over [starts, ends)
    (`since`: quiet already when those begin), up to `until`. `one`: the spans are one
    compute's, in order and apart already."""
    if one:
        s, reach = starts, ends
    else:
        order = np.argsort(starts, kind="stable")
        s, reach = starts[order], np.maximum.accumulate(ends[order])
    q = np.concatenate(([since] if since is not None else [], reach))
    r = np.concatenate((s, [until]))
    if since is None:  # nothing quiet before the first span
        r = r[1:]
    quiet = r > q
    return q[quiet], r[quiet]


class _Clocks:
    """The idle clocks of a project and its non-default branches, from its computes' spans:
    the instants they ring (a stretch quiet longer than the period) and how they stand at
    the end. A clock rings only if no compute of its holder is on for the whole period,
    which the spans alone decide (the spans of this round's kernel runs, which already
    wait where the gates say)."""

    def __init__(self, cp: ControlPlane, project: Project, advanced: list[Advanced],
                 until: float, start: StorageStart):
        cfg = cp.config
        spans: dict[str | None, list[tuple[np.ndarray, np.ndarray]]] = {None: []}
        for adv in advanced:
            extra = len(adv.on_starts) - len(adv.on_ends)  # a span still open (run to a
            ends = np.append(adv.on_ends, [until] * extra) if extra else adv.on_ends  # call)
            spans[None].append((adv.on_starts, ends))  # ends where the replay stops
            spans.setdefault(adv.compute.branch_id, []).append((adv.on_starts, ends))

        #: (instant, scheduled at, holder order, holder, since) of every ring, in order
        self.rings: list[tuple] = []
        self.idle_since: dict[str | None, float | None] = {}
        holders: list[str | None] = [None, *project.branches]
        for rank, holder in enumerate(holders):
            group = spans.get(holder, [])
            if len(group) == 1:
                starts, ends = group[0]
            else:
                starts = np.concatenate([g[0] for g in group]) if group else np.empty(0)
                ends = np.concatenate([g[1] for g in group]) if group else np.empty(0)
            q, r = _stretches(starts, ends, start.idle_since.get(holder), until,
                              one=len(group) == 1)
            self.idle_since[holder] = float(q[-1]) if len(q) and r[-1] == until else None
            after = cfg.detach_after_s if holder is None else cfg.archive_after_s
            if after is None or (holder is not None and cp.branches[holder].default):
                continue  # off, or the default branch: never archived
            ring = q + after
            if np.any((ring == r) & (r < until)):  # (at the run's end: neither happens)
                raise StorageTie("an idle clock rings at the instant of a compute's wake")
            if start.at is not None and np.any(ring == start.at):
                raise StorageTie("an idle clock rings at the instant of the hand-over")
            rings = (ring < r) & (ring < until)
            if start.at is not None:
                rings &= ring > start.at  # those before the hand-over rang in the engine
            self.rings += [(t, since, rank, holder, since)
                           for t, since in zip(ring[rings].tolist(), q[rings].tolist(),
                                               strict=True)]
        self.rings.sort(key=lambda ring: ring[:3])


def storage_at_rest(cp: ControlPlane, project: Project, until: float,
                    start: StorageStart) -> bool:
    """Whether the project's storage lane has nothing to do before `until`: nothing
    detached or archived, and no idle clock can ring (none runs for a whole period before
    `until`, whatever its computes do). A cheap look, before any replay."""
    if project.detached or any(cp.branches[b].archived for b in project.branches):
        return False
    cfg = cp.config
    periods = [p for p in (cfg.detach_after_s, cfg.archive_after_s) if p is not None]
    if not periods:
        return True
    begin = min([project.created_at if start.at is None else start.at,
                 *(since for since in start.idle_since.values() if since is not None)])
    return begin + min(periods) >= until


def unchanged(cp: ControlPlane, project: Project) -> Replayed:
    """What a replay of a lane at rest finds: nothing to do, the storage as it stands."""
    return Replayed({}, [], project.detached,
                    {b: cp.branches[b].archived for b in project.branches},
                    {None: project.idle_since,
                     **{b: cp.branches[b].idle_since for b in project.branches}})


def replay_storage(cp: ControlPlane, project: Project, advanced: list[Advanced], until: float,
                   ranks: dict[str, int], start: StorageStart) -> Replayed:
    """Replay the project's storage lane to `until`. `ranks`: compute id -> the rank of its
    branch's availability checks. Raises StorageTie."""
    clocks = _Clocks(cp, project, advanced, until, start)
    if not clocks.rings and not project.detached and not any(
            cp.branches[b].archived for b in project.branches):  # the lane stays empty
        return Replayed({}, [], project.detached,
                        {b: cp.branches[b].archived for b in project.branches},
                        clocks.idle_since)
    return _Replay(cp, project, advanced, until, ranks, clocks).run()


class _Replay:
    """The lane through the rings, the lane's own events and the wakes that meet storage
    work (the lane busy, the project detached, the branch archived); other wakes change
    nothing the clocks have not already taken into account, and are stepped over."""

    def __init__(self, cp: ControlPlane, project: Project, advanced: list[Advanced],
                 until: float, ranks: dict[str, int], clocks: _Clocks):
        self.cp, self.project, self.until = cp, project, until
        self.cfg = cp.config
        # the project's own stream: the caller puts it back before each round
        self.rng = cp.streams.get(f"ops/{project.key}")
        self.clocks = clocks
        self.detached = project.detached
        self.archived = {b: cp.branches[b].archived for b in project.branches}
        self.lane: deque[LaneOp] = deque()
        self.ops: list[LaneOp] = []
        self.wakes: list[tuple[float, _Wake]] = []
        self.lane_events: list[tuple] = []  # heap of (t, scheduled at, seq, kind)
        self.seq = 0
        self._wake_table(advanced, ranks)

    def _wake_table(self, advanced: list[Advanced], ranks: dict[str, int]) -> None:
        """Every wake (start_compute) of the project's computes, as columns in the engine's
        order (instant, when scheduled, check rank, position among the compute's
        operations), and where each branch's wakes are in it."""
        counts = [int(adv.out["i"][k.N_OPS]) for adv in advanced]
        first = np.cumsum([0, *counts[:-1]])

        def joined(name: str) -> np.ndarray:
            return np.concatenate([adv.out[name][:n] for adv, n in zip(advanced, counts,
                                                                      strict=True)])

        starts = joined("op_action") == k.START
        who_all = np.repeat(np.arange(len(advanced)), counts)
        t, sched = joined("op_created")[starts], joined("op_sched")[starts]
        rank = np.repeat([ranks.get(adv.compute.id, 0) for adv in advanced], counts)[starts]
        j = (np.arange(sum(counts)) - np.repeat(first, counts))[starts]
        who = who_all[starts]
        order = np.lexsort((j, rank, sched, t))
        self.t, self.sched, self.rank, self.j, self.who = (
            t[order], sched[order], rank[order], j[order], who[order])
        quiet = np.sort(np.concatenate([adv.on_ends for adv in advanced]))
        at = np.minimum(np.searchsorted(quiet, self.t), len(quiet) - 1)
        if len(quiet) and np.any(quiet[at] == self.t):
            raise StorageTie("a compute went quiet at the instant of another's wake")
        self.computes = [adv.compute for adv in advanced]
        self._branch_code = {b: i for i, b in enumerate(
            dict.fromkeys(c.branch_id for c in self.computes))}
        self._wake_branch = np.array([self._branch_code[c.branch_id] for c in self.computes],
                                     dtype=np.int64)[self.who]
        self._by_branch: dict[str, np.ndarray] = {}

    def _wakes_of(self, branch: str) -> np.ndarray:
        """The positions of the wakes of a branch's computes (asked for once archived)."""
        at = self._by_branch.get(branch)
        if at is None:
            code = self._branch_code.get(branch)
            at = self._by_branch[branch] = (np.empty(0, np.int64) if code is None else
                                            np.flatnonzero(self._wake_branch == code))
        return at

    def _first_from(self, t: float, sched: float) -> int:
        """The position of the first wake at or after (t, sched) in the engine's order."""
        x = int(np.searchsorted(self.t, t, side="left"))
        while x < len(self.t) and self.t[x] == t and self.sched[x] < sched:
            x += 1
        return x

    def _next_wake(self, x: int) -> int:
        """The first wake from position x that meets storage work (len: none)."""
        if self.lane or self.detached:
            return x
        best = len(self.t)
        for branch, archived in self.archived.items():
            if archived:
                at = self._wakes_of(branch)
                y = int(np.searchsorted(at, x, side="left"))
                if y < len(at) and at[y] < best:
                    best = int(at[y])
        return best

    # -- the replay ----------------------------------------------------------
    def run(self) -> Replayed:
        times, scheds, rings, lane_events = self.t, self.sched, self.clocks.rings, self.lane_events
        n, x, r = len(times), 0, 0
        while True:
            # the wakes before the next one that meets storage work come before any storage
            # event too (else it would be that event's turn): stepped over once it is taken
            y = self._next_wake(x)
            # SimPy takes events at one instant in the order they were scheduled: each
            # source's next event as (instant, when it was scheduled)
            heads = []
            if y < n:
                heads.append((float(times[y]), float(scheds[y]), 0))
            if r < len(rings):
                heads.append((rings[r][0], rings[r][1], 1))
            if lane_events:
                heads.append((lane_events[0][0], lane_events[0][1], 2))
            if not heads:
                break
            t, sched, source = min(heads)
            if not t < self.until:
                break
            if sum(h[:2] == (t, sched) for h in heads) > 1:
                raise StorageTie("storage work at the instant of a compute's event")
            if source == 0:
                c = self.computes[self.who[y]]
                self._wake(t, c.id, c.branch_id, (t, sched, int(self.rank[y]), int(self.j[y]) - 0.5))
                x = y + 1
                continue
            x = max(x, self._first_from(t, sched))  # the wakes before it are past
            if source == 1:
                _, _, _, holder, since = rings[r]
                r += 1
                self._ring(t, holder, since)
            else:
                _, _, _, kind = heapq.heappop(lane_events)
                self._lane_event(t, kind)
        gates: dict[str, tuple[list[float], list[float]]] = {}
        for t, wake in self.wakes:
            at, until = gates.setdefault(wake.compute, ([], []))
            at.append(t)
            until.append(max(op.done_at for op in wake.after))
        return Replayed({cid: Gates(np.array(a), np.array(u)) for cid, (a, u) in gates.items()},
                        self.ops, self.detached, self.archived, self.clocks.idle_since)

    def _wake(self, t: float, cid: str, branch: str, order: tuple) -> None:
        """Lifecycle.wake: queued detach / archive superseded, storage brought back first."""
        for op in list(self.lane):
            if op.status == S.SCHEDULING.value and (
                    op.action is DETACH or (op.action is ARCHIVE and op.branch_id == branch)):
                self._skip(op, t)
        if self.detached:
            self._submit(REATTACH, branch, t, order)
        if self.archived[branch]:
            self._submit(UNARCHIVE, branch, t, order[:3] + (order[3] + 0.25,))
        if self.lane:
            self.wakes.append((t, _Wake(cid, branch, list(self.lane))))

    def _ring(self, t: float, holder: str | None, since: float) -> None:
        """_maybe_detach / _maybe_archive: quiet since then (the clocks made sure of it),
        the storage goes, unless it has gone already."""
        if holder is None:
            if not self.detached:
                self._submit(DETACH, self.project.default_branch_id, t, (t, since, -1, 0))
        elif not self.archived[holder]:
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


def storage_columns(cp: ControlPlane, project: Project, replayed: Replayed) -> OperationColumns:
    """The lane's operations as columns (`sim.engine.operation_rows`), ids drawn from the
    project's id stream in creation order."""
    ops = replayed.ops
    n = len(ops)
    return OperationColumns(
        cp.ids.operations(cp.id_stream(project), n), [op.branch_id for op in ops], [None] * n,
        [op.action.value for op in ops], [op.status for op in ops],
        np.array([op.failures for op in ops], dtype=np.int64),
        np.array([op.created for op in ops]), np.array([op.updated for op in ops]),
        np.array([np.nan if op.finished is None else op.finished for op in ops]),
        *(np.array([op.order[m] for op in ops], dtype=np.float64) for m in (1, 2, 3)))


def settle_storage(cp: ControlPlane, project: Project, replayed: Replayed) -> None:
    """Leave the project's storage flags and idle clocks as the engine would."""
    project.detached = replayed.detached
    project.idle_since = replayed.idle_since[None]
    for b, archived in replayed.archived.items():
        branch = cp.branches[b]
        branch.archived = archived
        branch.idle_since = replayed.idle_since[b]


__all__ = ["Replayed", "StorageStart", "StorageTie", "replay_storage", "settle_storage",
           "storage_at_rest", "storage_columns", "storage_operations", "unchanged"]

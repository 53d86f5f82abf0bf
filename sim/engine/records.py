"""What a run leaves behind: plain tuples appended during the run.

The engine only appends; `sim.metrics` turns the lists into pandas frames in
bulk at the end (the SimPy monitoring idiom). Times are seconds of simulated
time since the scenario's start.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import NamedTuple

import numpy as np

from sim.engine.connection_table import ColumnBlock
from sim.engine.connection_table import ConnectionRecord as ConnectionRecord  # re-exported
from sim.engine.connection_table import ConnectionTable as ConnectionTable  # re-exported
from sim.engine.connection_table import Outcome as Outcome  # re-exported
from sim.engine.minutes import MINUTE_S, MinutePositions, MinuteSums, quarters_of
from sim.engine.row_table import RowBlock, RowTable, row_table
from sim.engine.tallies import HourlyTally, OperationCount, OperationTally, joined_spans
from sim.engine.cu_steps import NO_STEPS, Steps, joined, steps_of
from sim.rules.pricing import Pricing


class StateInterval(NamedTuple):
    """A compute held `state` at size `cu` over [start_s, end_s)."""

    compute_id: str
    project_id: str
    state: str  # init | active | idle
    cu: float  # 0 while idle
    start_s: float
    end_s: float


class WakeRecord(NamedTuple):
    """One start of a compute from idle (or init), and what it cost the caller."""

    compute_id: str
    project_id: str
    at_s: float
    cause: str  # connection | api | check_availability | create
    wait_s: float  # start_compute plus any tenant_reattach / timeline_unarchive


class SampleRecord(NamedTuple):
    """Open connections of a compute, sampled when the count changes by a session arrival."""

    compute_id: str
    at_s: float
    open_connections: int
    max_connections: int


@dataclass
class Recorder:
    intervals: RowTable[StateInterval] = field(
        default_factory=partial(RowTable, StateInterval))
    #: rows the SimPy engine records, one by one (a cut session's row is replaced)
    connections: list[ConnectionRecord] = field(default_factory=list)
    #: rows the compute kernel gives, as blocks of columns, each with how many of
    #: `connections` were recorded before it (see `connection_table`)
    connection_blocks: list[tuple[int, ColumnBlock]] = field(default_factory=list)
    wakes: RowTable[WakeRecord] = field(default_factory=partial(RowTable, WakeRecord))
    #: what the kernel adds when events are not recorded as rows: per minute, nanoseconds
    #: on and quarter-CU nanoseconds (`MinuteSums`)
    minutes: MinuteSums | None = None
    wake_waits: dict[str, np.ndarray] = field(default_factory=dict)
    #: when events are not recorded, per project id: the kernel's operations counted, and
    #: when its computes were on (`sim.engine.tallies`)
    operation_tallies: dict[str, OperationTally] = field(default_factory=dict)
    #: the operations counted of the projects `settle` was told nothing leaves out (None
    #: until one is: a served world never settles a project, and its snapshots hold none)
    settled_tally: HourlyTally | None = None
    settled: set[str] = field(default_factory=set)
    on_spans: dict[str, list[tuple[np.ndarray, np.ndarray]]] = field(default_factory=dict)
    #: per template (`template_of`), per minute: nanoseconds on, as `minutes` for the fleet
    template_minutes: dict[str, MinuteSums] = field(default_factory=dict)
    #: per compute: its connections' waits in the pooler's queue (`QueueWaits`), kept
    #: whatever the connection rows keep
    queue_waits: dict[str, QueueWaits] = field(default_factory=dict)
    #: per compute: (wait, outcome) of the engine's records of warm connections to a pooled
    #: compute, folded into `queue_waits` at the end (`fold_queue_waits`)
    engine_queue: dict[str, list[tuple[float, str]]] = field(default_factory=dict)
    #: project id -> the kernel's operations as blocks of rows, in creation order
    #: (operation_rows)
    operation_rows: dict[str, list[RowBlock[OperationRow]]] = field(default_factory=dict)

    #: per template: its computes' CU as steps (`sim.engine.cu_steps`), for the peak at one
    #: instant; and the spans waiting to be folded into them (a fold joins every step so far:
    #: done a batch of spans at a time, and at the end)
    cu_steps: dict[str, Steps] = field(default_factory=dict)
    steps_pending: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = field(
        default_factory=dict)
    steps_rows: int = 0

    def add_connection_block(self, block: ColumnBlock) -> None:
        if len(block):
            self.connection_blocks.append((len(self.connections), block))

    def connection_table(self) -> ConnectionTable:
        """Every connection row in the order it was recorded, the engine's records and the
        kernel's blocks interleaved: a stable sort keeps that order among rows of one compute
        at one instant (a burst), so the kernel's rows sort as the engine's do."""
        parts: list[ColumnBlock | list[ConnectionRecord]] = []
        done = 0
        for before, block in self.connection_blocks:
            parts += [self.connections[done:before], block]
            done = before
        parts.append(self.connections[done:])
        return ConnectionTable(parts)

    def tally(self, project_id: str) -> OperationTally:
        """Where the project's operations are counted when none is built as a row."""
        tally = self.operation_tallies.get(project_id)
        if tally is None:
            tally = self.operation_tallies[project_id] = OperationTally()
        return tally

    def settle(self, project_id: str) -> None:
        """The project's operations are counted to the end and no result leaves it out:
        its counts join the fleet's (a project's own tally would hold a key per hour of
        the run, and a fleet has many projects)."""
        tally = self.operation_tallies.pop(project_id, None)
        if tally is not None:
            if self.settled_tally is None:
                self.settled_tally = HourlyTally()
            self.settled_tally.absorb(tally)
        self.settled.add(project_id)

    def add_on_spans(self, project_id: str, start: np.ndarray, end: np.ndarray) -> None:
        """One compute's on-intervals (in time order), kept for the peak of computes on."""
        if len(start):
            self.on_spans.setdefault(project_id, []).append(joined_spans(start, end))

    def add_minutes(self, start: np.ndarray, end: np.ndarray, cu: np.ndarray,
                    duration_s: float, template: str | np.ndarray | None = None) -> None:
        """On-spans of computes; `template`: the template they belong to (`template_of`),
        one for all or one per span, so that each template has its own minutes too."""
        if self.minutes is None:
            self.minutes = MinuteSums(duration_s)
        at = MinutePositions(start, end)  # placed once for the fleet's sums and the template's
        self.minutes.add_at(at, quarters_of(cu))
        if template is None:
            return
        self._add_steps(start, end, cu, template, duration_s)
        if isinstance(template, str):
            self._template_minutes(template).add_at(at)
            return
        for name in dict.fromkeys(template.tolist()):
            mine = template == name
            self._template_minutes(name).add_at(at.take(mine))

    def _template_minutes(self, name: str) -> MinuteSums:
        sums = self.template_minutes.get(name)
        if sums is None:
            assert self.minutes is not None
            sums = self.template_minutes[name] = MinuteSums(
                (len(self.minutes.whole) - 1) * MINUTE_S, with_cu=False)
        return sums

    def _add_steps(self, start: np.ndarray, end: np.ndarray, cu: np.ndarray,
                   template: str | np.ndarray, duration_s: float, batch: int = 500_000) -> None:
        if isinstance(template, str):
            self.steps_pending.setdefault(template, []).append((start, end, cu))
        else:
            for name in dict.fromkeys(template.tolist()):
                mine = template == name
                self.steps_pending.setdefault(name, []).append(
                    (start[mine], end[mine], cu[mine]))
        self.steps_rows += len(start)
        if self.steps_rows >= batch:
            self.fold_steps(duration_s)

    def fold_steps(self, duration_s: float) -> None:
        """Join the spans waiting into each template's CU steps."""
        for name, spans in self.steps_pending.items():
            start, end, cu = (np.concatenate([p[i] for p in spans]) for i in range(3))
            end = np.minimum(end, duration_s)
            self.cu_steps[name] = joined((self.cu_steps.get(name, NO_STEPS),
                                          steps_of(start, end, cu)))
        self.steps_pending, self.steps_rows = {}, 0

    def fold_queue_waits(self, timeout_s: float) -> None:
        """Fold the engine's records of queue waits into `queue_waits`."""
        for compute_id, records in self.engine_queue.items():
            wait, outcome = zip(*records, strict=True)
            self.add_queue_waits(compute_id, np.array(wait, dtype=np.float64),
                                 np.array(outcome, dtype=object), np.zeros(len(wait), bool),
                                 Outcome.OK, Outcome.QUEUE_TIMEOUT, timeout_s)
        self.engine_queue = {}

    def add_queue_waits(self, compute_id: str, wait: np.ndarray, outcome: np.ndarray,
                        cold: np.ndarray, ok: object, timed_out: object,
                        timeout_s: float) -> None:
        """Note the queue waits of a pooled compute's connections, from their records'
        columns (`ok` and `timed_out`: the outcome values of a session and of a queue
        timeout). See `queue_waits_of` for which connections count."""
        waits = queue_waits_of(wait, outcome, cold, ok, timed_out, timeout_s)
        if len(waits):
            self.queue_waits.setdefault(compute_id, QueueWaits()).add(waits)


def template_of(key: str) -> str:
    """The template a project was made from, by its key: `shop[3]` -> `shop`. Projects
    that scripted API calls created (keys `api-1`, ...) come from no template."""
    name, bracket, _ = key.partition("[")
    return name if bracket else NO_TEMPLATE


#: the group of projects made from no template (not a template name: those have no spaces)
NO_TEMPLATE = "(no template)"


def queue_waits_of(wait: np.ndarray, outcome: np.ndarray, cold: np.ndarray, ok: object,
                   timed_out: object, timeout_s: float) -> np.ndarray:
    """The waits in the pooler's queue of connections to a pooled compute, from their
    records: every connection that found the compute on (a cold one waits for the start as
    well) and got a session (its wait: 0 when a server connection was free) or timed out
    in the queue (it waited the whole timeout)."""
    warm = ~np.asarray(cold, dtype=bool)
    served = warm & (outcome == ok)
    gave_up = warm & (outcome == timed_out)
    return np.concatenate((np.asarray(wait, dtype=np.float64)[served],
                           np.full(int(gave_up.sum()), float(timeout_s))))


@dataclass
class QueueWaits:
    """One compute's queue waits: how many were 0, and the others (most are 0: kept apart,
    a busy month has tens of millions)."""

    zeros: int = 0
    parts: list[np.ndarray] = field(default_factory=list)

    def add(self, waits: np.ndarray) -> None:
        positive = waits[waits > 0]
        self.zeros += len(waits) - len(positive)
        if len(positive):
            self.parts.append(positive)

    def positive(self) -> np.ndarray:
        return np.concatenate(self.parts) if self.parts else np.empty(0)

    def joined(self, other: QueueWaits) -> QueueWaits:
        return QueueWaits(self.zeros + other.zeros, [*self.parts, *other.parts])


class ComputeRow(NamedTuple):
    """Per-compute totals at the end of a run (complete even when connections are not recorded)."""

    compute_id: str
    project_id: str
    project_name: str
    branch_id: str
    branch_name: str
    type: str
    min_cu: float
    max_cu: float
    suspend_timeout_seconds: int
    pooler_enabled: bool
    max_connections: int
    sessions: int  # connections that began a session
    refused: int  # refused at the door with 53300 (too many connections)
    queued: int  # waited in the pool queue
    queue_timeouts: int
    queue_wait_s: float  # total queue wait
    disk_full: int  # sessions failed with 53100
    dropped: int  # sessions cut by a restart, suspend or delete (never a client that got none)
    cold_starts: int
    restarts: int
    suspends: int
    peak_connections: int
    active_s: float  # seconds in init or active
    cu_s: float  # CU-seconds (multiply by price per CU-hour / 3600)
    created_s: float
    deleted_s: float | None
    refused_pooler_full: int = 0  # refused past the pooler's 10,000 clients
    refused_disabled: int = 0  # refused by a disabled compute, or waiting when it went away


class OperationRow(NamedTuple):
    id: str
    project_id: str
    branch_id: str | None
    endpoint_id: str | None
    action: str
    status: str
    failures_count: int
    created_s: float
    updated_s: float
    total_duration_ms: int
    error: str | None


class ActionRecord(NamedTuple):
    """A scripted API call of the scenario and how the control plane answered it."""

    at_s: float
    call: str  # "PATCH /projects/.../endpoints/..." with ids filled in
    status: int
    code: str  # "" on success, else the error code


@dataclass
class RunResult:
    """Everything a run produced, as plain rows: what `sim.metrics` reads.

    Sharded runs give one RunResult per shard; `merge` concatenates them in a
    fixed order, so a merged result equals a single-process run row for row.
    """

    name: str
    seed: int
    start_iso: str  # the scenario's start instant, ISO 8601 UTC
    duration_s: float
    price_per_cu_hour: float
    computes: list[ComputeRow] = field(default_factory=list)
    #: the event tables read as lists of rows (a list given is taken as one)
    operations: RowTable[OperationRow] = field(default_factory=partial(RowTable, OperationRow))
    intervals: RowTable[StateInterval] = field(
        default_factory=partial(RowTable, StateInterval))
    connections: ConnectionTable = field(default_factory=ConnectionTable)
    wakes: RowTable[WakeRecord] = field(default_factory=partial(RowTable, WakeRecord))
    actions: list[ActionRecord] = field(default_factory=list)
    #: every project of the run, in creation order: id -> (scenario key, created at)
    projects: dict[str, tuple[str, float]] = field(default_factory=dict)
    #: with events not recorded: per minute, nanoseconds on and quarter-CU nanoseconds
    #: (exact integers, see `sim.engine.minutes.per_minute_ns`)
    fleet_ns: tuple[np.ndarray, np.ndarray] | None = None
    #: with events not recorded: each compute's cold-start waits (s)
    wake_waits: dict[str, np.ndarray] | None = None
    #: with events not recorded: operations by hour created, action and status, with their
    #: failed attempts (`sim.engine.tallies`)
    operation_counts: list[OperationCount] | None = None
    #: with events not recorded, per project id: start and end of every span in which one
    #: of its computes was on
    on_spans: dict[str, tuple[np.ndarray, np.ndarray]] | None = None
    #: with events not recorded: per template, per minute, nanoseconds on
    template_on_ns: dict[str, np.ndarray] | None = None
    #: with events not recorded: per template, its computes' CU as steps (for the peak at
    #: one instant, `sim.engine.cu_steps`)
    cu_steps: dict[str, Steps] | None = None
    #: per pooled compute, its connections' queue waits (`Recorder.queue_waits`)
    queue_waits: dict[str, QueueWaits] = field(default_factory=dict)
    #: human-readable assumptions in force (cold-start distribution, pool size, prices...)
    assumptions: dict[str, str] = field(default_factory=dict)
    #: computes by the road that computed them: "kernel", or "per-session: <why>"
    #: (the names: sim.scenario.roads)
    roads: dict[str, int] = field(default_factory=dict)
    #: seconds simulated before the start, in no row and no counter (`sim.scenario.warm_up`)
    warm_up_s: float = 0.0
    #: each template's compute terms (`sim.rules.pricing`); a template not here, and a
    #: project of no template, pays `price_per_cu_hour` for every CU-hour
    pricing: dict[str, Pricing] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.operations = row_table(OperationRow, self.operations)
        self.intervals = row_table(StateInterval, self.intervals)
        self.wakes = row_table(WakeRecord, self.wakes)
        if not isinstance(self.connections, ConnectionTable):
            self.connections = ConnectionTable([list(self.connections)])


def summarise_events(result: RunResult, rec: Recorder,
                     engine_ops: RowTable[OperationRow] | None = None,
                     count_from_s: float = 0.0) -> None:
    """Fold state intervals and wakes into the per-minute series and per-compute waits,
    count the operations and keep the on-spans (of the projects in `result.projects`),
    and drop the event rows (operations, intervals, wakes) from the result.
    `engine_ops`: the engine's operations, on its clock (from `count_from_s` counted);
    by default those of the result."""
    intervals = result.intervals.columns()
    on = (intervals["state"] != "idle") & (intervals["end_s"] > intervals["start_s"])
    result.on_spans = _spans_by_project(result, rec, intervals, on)
    left_out = rec.settled.difference(result.projects)
    if left_out:
        raise RuntimeError(f"{len(left_out)} projects settled in the operation counts are left "
                           f"out of the result, e.g. {sorted(left_out)[0]}")
    total = OperationTally()  # the engine's, built as rows, and the kernel's
    if engine_ops is None:
        engine_ops, count_from_s = result.operations, 0.0
    ops = engine_ops.columns()
    total.add(ops["action"], ops["status"], ops["failures_count"], ops["created_s"],
              count_from_s)
    if rec.settled_tally is not None:
        total.absorb(rec.settled_tally)
    for p in result.projects:
        if p in rec.operation_tallies:
            total.absorb(rec.operation_tallies[p])
    result.operation_counts = total.rows()
    templates = {pid: template_of(key) for pid, (key, _) in result.projects.items()}
    rec.add_minutes(intervals["start_s"][on],
                    np.minimum(intervals["end_s"][on], result.duration_s),
                    intervals["cu"][on], result.duration_s,
                    template=np.array([templates.get(p, NO_TEMPLATE)
                                       for p in intervals["project_id"][on].tolist()],
                                      dtype=object))
    assert rec.minutes is not None
    duration_s = result.duration_s
    result.fleet_ns = (rec.minutes.on_ns(duration_s), rec.minutes.quarter_ns(duration_s))
    result.template_on_ns = {name: sums.on_ns(duration_s)
                             for name, sums in rec.template_minutes.items()}
    rec.fold_steps(duration_s)
    result.cu_steps = dict(rec.cu_steps)
    waits: dict[str, list[float]] = {}
    wakes = result.wakes.columns()
    for compute_id, cause, wait_s in zip(wakes["compute_id"].tolist(), wakes["cause"].tolist(),
                                         wakes["wait_s"].tolist(), strict=True):
        if cause != "create":
            waits.setdefault(compute_id, []).append(wait_s)
    merged = {k: np.asarray(v, dtype=np.float64) for k, v in waits.items()}
    for key, extra in rec.wake_waits.items():
        merged[key] = np.concatenate((merged[key], extra)) if key in merged else extra
    result.wake_waits = merged
    result.operations = RowTable(OperationRow)
    result.intervals = RowTable(StateInterval)
    result.wakes = RowTable(WakeRecord)


def _spans_by_project(result: RunResult, rec: Recorder, intervals: dict[str, np.ndarray],
                      on: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per project of the result: when its computes were on, from the engine's interval
    rows and the kernel's spans."""
    parts: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    projects = intervals["project_id"][on]
    if len(projects):
        order = np.argsort(projects, kind="stable")
        names, firsts = np.unique(projects[order], return_index=True)
        starts = np.split(intervals["start_s"][on][order], firsts[1:])
        ends = np.split(intervals["end_s"][on][order], firsts[1:])
        for name, start, end in zip(names.tolist(), starts, ends, strict=True):
            parts[name] = [(start, end)]
    for project_id in result.projects:
        parts.setdefault(project_id, []).extend(rec.on_spans.get(project_id, ()))
    return {project_id: (np.concatenate([s for s, _ in spans]),
                         np.concatenate([e for _, e in spans]))
            for project_id, spans in parts.items() if spans}

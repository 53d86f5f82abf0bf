"""The kernel's part of a scenario run: which projects the kernel advances, and running it.

A project's computes are built and started by the SimPy engine like any
other, then left alone there, and after the run each compute's whole life is
computed by the kernel (`sim.kernel.physics`), project by project, with the
project's storage lifecycle (detach, archive, and the reattach or unarchive a
wake then waits for) replayed between its computes (`sim.kernel.storage_replay`).
A project that scripted calls name is the engine's around its calls
(`sim.scenario.handover`) and the kernel's before and after them. What can
only be known afterwards (two events at one instant whose order decides the
outcome) hands that project alone back to the SimPy engine: the runner runs the
projects handed back in a run of their own and merges the two results.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import attrgetter, itemgetter
from typing import Any

import numpy as np

from sim.engine.control_plane import ControlPlane
from sim.engine.feed import all_sessions
from sim.engine.lifecycle import checked_compute
from sim.engine.model import Compute, Operation
from sim.engine.operation_rows import file_rows, stamps
from sim.kernel.handover import Taken, resume_compute
from sim.kernel.physics_run import (
    Advanced,
    Gates,
    Sessions,
    Tie,
    advance_compute,
    advance_to_call,
    apply_advanced_to_end,
    op_order,
)
from sim.kernel.storage_replay import (
    LaneSetup,
    Replayed,
    StorageStart,
    StorageTie,
    kept_busy,
    replay_storage,
    settle_storage,
    storage_at_rest,
    storage_columns,
    tally_storage,
    unchanged,
)
from sim.scenario.references import body_references, parse_reference
from sim.scenario.schema import ComputeSpec, Scenario
from sim.scenario.warm_up import arrivals_on_engine_clock

#: rounds of kernel and storage replay before a project is left to the engine; two or three
#: settle it (a round moves only what followed a gate that changed)
STORAGE_ROUNDS = 8


class HandBack(Exception):
    """This project needs the SimPy engine (the message says why)."""


def engine_reasons(scenario: Scenario) -> dict[str, str]:
    """Instance key -> why the SimPy engine runs it, for the projects the kernel cannot."""
    named: set[str] = set()
    for action in scenario.actions:
        named |= {ref.instance_key for ref in action.references()}
        named |= {parse_reference(text).instance_key for _, text in body_references(action.body)}
    return {inst.key: "named by a scripted call" for inst in scenario.instances()
            if inst.key in named}


class Workloads:
    """The computes' workloads, drawn exactly as the engine's session feed draws them; each
    compute template's arrival process and session model built once per run (the
    computes of a template's instances share them). The computes of named projects
    (`specs`, by compute id) are drawn once: the kernel advances such a compute before
    its project's first call and again after its last, from one draw."""

    def __init__(self, scenario: Scenario, specs: dict[str, ComputeSpec]):
        self.scenario, self.specs = scenario, specs
        self._models: dict[int, tuple[Any, Any]] = {}
        self._drawn: dict[str, Sessions] = {}

    def draw(self, cp: ControlPlane, c: Compute, spec: ComputeSpec) -> Sessions:
        """The compute's whole workload."""
        models = self._models.get(id(spec))
        if models is None:  # the specs outlive the run: their ids stay theirs
            models = self._models[id(spec)] = (
                arrivals_on_engine_clock(spec.arrival_process(self.scenario.start),
                                         cp.config.count_from_s),
                spec.session_model())
        process, model = models
        if process is None or model is None:
            return Sessions.none()
        times, batch = all_sessions(process, model, cp.streams.fresh(f"arrivals/{c.key}"),
                                    cp.streams.fresh(f"sessions/{c.key}"), 0.0,
                                    self.scenario.duration)
        return Sessions(times, *batch) if len(times) else Sessions.none()

    def of(self, cp: ControlPlane, c: Compute) -> Sessions:
        """A named project's compute's workload, drawn at its first use."""
        if c.id not in self._drawn:
            spec = self.specs.get(c.id)  # none: created by a call, with no workload
            self._drawn[c.id] = Sessions.none() if spec is None else self.draw(cp, c, spec)
        return self._drawn[c.id]


def checks_of(cp: ControlPlane, c: Compute) -> tuple[float, float] | None:
    every = cp.config.check_availability_every_s
    branch = cp.branches[c.branch_id]
    if every is None or branch.id not in cp.checked_branches:
        return None
    if checked_compute([cp.computes[i] for i in branch.computes]) is not c:
        return None
    return cp.checked_branches[branch.id], every


RunOne = Callable[[Compute, "Gates | None"], Advanced]


def _advance_project(cp: ControlPlane, workloads: Workloads,
                     group: Sequence[tuple[Compute, ComputeSpec]], until: float
                     ) -> tuple[list[Advanced], Replayed]:
    """Run a project's computes from their creation's start to `until`."""
    sessions = {}
    for c, spec in group:
        rt = c.runtime
        assert rt is not None and rt.external
        if rt.activated_at is None:
            raise HandBack("not active within the run")
        sessions[c.id] = workloads.draw(cp, c, spec)
    project = cp.projects[group[0][0].project_id]
    computes = [c for c, _ in group]

    def run_one(c: Compute, gates: Gates | None) -> Advanced:
        return advance_compute(cp, c, sessions[c.id], until, checks_of(cp, c), gates)

    start = StorageStart.at_creation(cp, project)
    return _with_storage(cp, project, computes, run_one, until, start)


def _resume_project(cp: ControlPlane, taken: Taken, workloads: Workloads, until: float
                    ) -> tuple[list[Advanced], Replayed]:
    """Run the computes of a project the engine handed over after its last call to `until`."""
    by_id = {h.compute.id: h for h in taken.handovers}

    def run_one(c: Compute, gates: Gates | None) -> Advanced:
        return resume_compute(cp, by_id[c.id], workloads.of(cp, c), until, checks_of(cp, c),
                              gates)

    return _with_storage(cp, cp.projects[taken.project_id], [h.compute for h in taken.handovers],
                         run_one, until, _start_of(taken))


def segment_to_call(cp: ControlPlane, project: Any, workloads: Workloads,
                    pending: Taken | None, until: float | None = None
                    ) -> tuple[list[Advanced], Replayed]:
    """Run a named project's computes up to (not including) now, the instant of a scripted
    call (or `until`), with its storage replayed: from their creation's start (`pending`
    None) or from the hand-over after an earlier call."""
    now = cp.now if until is None else until
    if pending is None:
        computes = [cp.computes[i] for b in project.branches for i in cp.branches[b].computes]

        def run_one(c: Compute, gates: Gates | None) -> Advanced:
            return advance_to_call(cp, c, workloads.of(cp, c), now, checks_of(cp, c), gates)

        start = StorageStart.at_creation(cp, project)
        return _with_storage(cp, project, computes, run_one, now, start, to_end=False)
    by_id = {h.compute.id: h for h in pending.handovers}

    def resume_one(c: Compute, gates: Gates | None) -> Advanced:
        return resume_compute(cp, by_id[c.id], workloads.of(cp, c), now, checks_of(cp, c),
                              gates, to_call=True)

    return _with_storage(cp, project, [h.compute for h in pending.handovers], resume_one, now,
                         _start_of(pending), to_end=False)


def _start_of(taken: Taken) -> StorageStart:
    quiet = {None if key == "project" else key.removeprefix("branch:"): since
             for key, since in taken.quiet_since.items()}
    return StorageStart(quiet, at=taken.at)


def _with_storage(cp: ControlPlane, project: Any, computes: list[Compute], run_one: RunOne,
                  until: float, start: StorageStart, to_end: bool = True
                  ) -> tuple[list[Advanced], Replayed]:
    """Run the computes, replay the project's storage lane between them, and go round until
    the replay gives back the gates (the wakes that wait for the lane) the kernel ran with.
    `to_end`: run to the end of the run, where nobody asks for the idle clocks after: a
    lane at rest is then not replayed at all (most of a fleet's projects)."""
    if to_end and storage_at_rest(cp, project, until, start):  # a look before any run
        try:
            return [run_one(c, None) for c in computes], unchanged(cp, project)
        except Tie as err:
            raise HandBack(str(err)) from None
    streams = [(c, cp.streams.get(f"ops/{c.key}")) for c in computes]
    states = {c.id: rng.bit_generator.state for c, rng in streams}  # each round draws again
    advanced: dict[str, Advanced] = {}
    if to_end:  # the first round's runs, before the lane: when they keep it busy, it is done
        try:
            advanced = {c.id: run_one(c, None) for c in computes}
        except Tie as err:
            raise HandBack(str(err)) from None
        done = [advanced[c.id] for c in computes]
        if kept_busy(cp, project, done, until, start):
            return done, unchanged(cp, project)
    ranks = {c.id: _check_rank(cp, c) for c in computes}
    setup = LaneSetup(cp, project, computes, ranks, start)
    lane_state = setup.rng.bit_generator.state  # and so does the storage lane
    gates: dict[str, Gates] = {}
    stale = set(states) - set(advanced)
    for _ in range(STORAGE_ROUNDS):
        for c, rng in streams:
            if c.id not in stale:
                continue
            rng.bit_generator.state = states[c.id]
            try:
                advanced[c.id] = run_one(c, gates.get(c.id))
            except Tie as err:
                raise HandBack(str(err)) from None
        setup.rng.bit_generator.state = lane_state
        try:
            replayed = replay_storage(setup, [advanced[c.id] for c in computes], until)
        except StorageTie as err:
            raise HandBack(str(err)) from None
        found = replayed.gates
        stale = {cid for cid in found.keys() | gates.keys()
                 if not _same_gates(found.get(cid), gates.get(cid))}
        if not stale:
            done = [advanced[c.id] for c in computes]
            _check_storage_instants(done, replayed)
            return done, replayed
        gates = found
    raise HandBack("the storage lane and the computes' wakes did not settle")


def _same_gates(a: Gates | None, b: Gates | None) -> bool:
    a, b = a or Gates.none(), b or Gates.none()
    return np.array_equal(a.at, b.at) and np.array_equal(a.until, b.until)


def _check_storage_instants(advanced: list[Advanced], replayed: Replayed) -> None:
    """A detach or archive made at the very instant a compute made an operation, by events
    scheduled at one instant too: which came first is not known here."""
    order = replayed.ops.order
    rung = order[order[:, 2] < 0]
    if not len(rung):
        return
    by_clocks = list(zip(rung[:, 0].tolist(), rung[:, 1].tolist(), strict=True))
    instants = np.unique(rung[:, 0])
    made = set(op_order(*advanced, at=instants))  # every compute's at once
    if any(key in made for key in by_clocks):
        raise HandBack("storage work made at the instant of a compute's operation")


def run_kernel(cp: ControlPlane, workloads: Workloads,
                   placed: Sequence[tuple[Compute, ComputeSpec]], until: float,
                   taken: Sequence[Taken] = ()) -> dict[str, str]:
    """Advance every external compute to `until` and write it into `cp`, project by project:
    the `placed` ones from their creation's start, the `taken` ones from their hand-over,
    with the workloads `workloads` draws.

    Returns the projects handed back to the engine (project id -> why); nothing of
    theirs is written by the kernel."""
    jobs: dict[str, Any] = {}
    for c, spec in placed:
        jobs.setdefault(c.project_id, []).append((c, spec))
    for t in taken:
        jobs[t.project_id] = t
    handed_back: dict[str, str] = {}
    for project_id, job in jobs.items():
        try:
            if isinstance(job, Taken):
                advanced, replayed = _resume_project(cp, job, workloads, until)
            else:
                advanced, replayed = _advance_project(cp, workloads, job, until)
        except HandBack as err:
            handed_back[project_id] = str(err)
            continue
        project = cp.projects[project_id]
        parts = [storage_columns(cp, project, replayed)] if cp.config.record_events else []
        if not cp.config.record_events:
            tally_storage(cp, project, replayed)
        settle_storage(cp, project, replayed)
        for adv in advanced:
            ops = apply_advanced_to_end(cp, adv, _check_rank(cp, adv.compute))
            if ops is not None:  # None: events not recorded, no operation made
                parts.append(ops)
        file_rows(cp, project, parts)
        if not isinstance(job, Taken):  # named by no scripted call: no result leaves it out
            cp.recorder.settle(project_id)
    return handed_back


def _check_rank(cp: ControlPlane, c: Compute) -> int:
    """Branches' availability checks at one instant run in the order their loops began."""
    return cp.check_ranks.get(c.branch_id, 0)


def file_operations(cp: ControlPlane, project_id: str,
                    created: list[tuple[float, float, int, int, Operation]]) -> None:
    """Give a project's operations from the kernel their creation stamps, as the engine does
    (in the order it creates them; never two in one microsecond: a later one moves by 1 us),
    and merge them into its list."""
    project = cp.projects[project_id]
    created.sort(key=itemgetter(0, 1, 2, 3))
    filed = [entry[4] for entry in created]
    for op, us in zip(filed, stamps([entry[0] for entry in created], project.last_op_us).tolist(),
                      strict=True):
        op.created_us = us
    cp.operations.update((op.id, op) for op in filed)
    # both already in order: the sort merges two runs
    project.operations = sorted(project.operations + filed, key=attrgetter("created_us"))
    project.last_op_us = filed[-1].created_us

"""A served world's computes advanced by the compute kernel between API calls.

`sim run` hands a project named by scripted calls to the SimPy engine around
each call and to the kernel between them (`sim.scenario.handover`). A served
world does the same at every instant the clock stops, since any request may
touch any project then: a move of the clock from t0 to t1 is one *step* (cut at a
release, and at a scripted call that names no project of the scenario):

1. at t0, once the engine has done everything due then (the calls at t0
   came before), each project that has settled (nothing underway, nobody
   waiting) is handed to the kernel; one that has not is looked at again a
   little later (1 s, doubling up to a minute), as `sim run` does;
2. the kernel runs each project it holds up to (not including) t1. Settled
   there, the engine takes it back at t1, before anything due at t1. Busy
   there (a start underway, clients waiting), it is run again up to an
   earlier instant where it has settled, and the engine takes it back then
   (in the worst case at the hand-over's own instant; where even that cannot
   be done exactly, the hand-over is undone and the engine keeps the project
   for a while, as for one that has not settled). A scripted call inside
   the step that names the project is an end of its own for that project (the
   engine holds it at the call, as in `sim run`). A project given back before
   t1 is handed to the kernel again once it has settled;
3. at t1 the engine holds every project again, exactly as the engine alone
   would: a request, a snapshot of the world or the journal sees a plain
   engine world.

The kernel's runs draw the engine's random numbers in the engine's order, so
where the clock stops changes nothing: a run in one advance and in hourly
advances give the same world (tests/api/test_served_kernel.py).

Nothing of this module is left in the engine's event queue at the end of a step
(its looks are the step's own pauses, not SimPy events), so a snapshot never
holds it; after a restore it is built again from the scenario.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim.engine.control_plane import ControlPlane
from sim.engine.lifecycle import AvailabilityRound
from sim.kernel import physics as k
from sim.kernel.handover import settled
from sim.kernel.physics_run import Tie
from sim.scenario.handover import (
    POLL_MAX_S,
    POLL_S,
    Taken,
    action_keys,
    give_segment,
    idle_timers,
    next_tick,
    take,
    untake,
)
from sim.scenario.kernel_run import HandBack, Workloads, checks_of, segment_to_call
from sim.scenario.schema import ComputeSpec, Scenario

#: how far before the end of a step a project busy at the end is handed back, tried in
#: this order (seconds); the last resort is the instant it was handed over
EARLIER_S = (1.0, 10.0, 60.0, 600.0, 3_600.0, 21_600.0, 86_400.0)


@dataclass
class _Held:
    """A project the kernel holds in a step, and its run up to the instant it goes back."""

    taken: Taken
    back_at: float
    advanced: list[Any]
    replayed: Any


class KernelAdvance:
    """Moves a served control plane's clock with its computes run by the kernel."""

    def __init__(self, cp: ControlPlane, scenario: Scenario | None):
        """`scenario`: the world's scenario on the engine's clock (`led_by_warm_up`), whose
        computes' workloads the kernel draws; None: a world made by API calls alone."""
        self.cp = cp
        self.workloads = Workloads(scenario, _specs(cp, scenario)) if scenario is not None \
            else _NoWorkloads()
        # a release changes what every start picks up, and a scripted call that names no
        # project of the scenario may touch any: the engine holds every project then; a
        # call that names some needs those alone (`_calls`)
        self.instants = sorted({r.at for r in scenario.releases}
                               | {a.at for a in scenario.actions if not action_keys(a)}) \
            if scenario is not None else []
        self._calls: dict[str, list[float]] = {}  # instance key -> its calls' instants
        for action in scenario.actions if scenario is not None else ():
            for key in action_keys(action):
                self._calls.setdefault(key, []).append(action.at)
        for instants in self._calls.values():
            instants.sort()
        self._rounds: dict[str, tuple[float, int, int]] = {}  # see _queued_rounds
        self._rounds_at = -math.inf
        #: what the steps did: projects handed over, taken back early, looks at busy ones
        self.counts = {"steps": 0, "handed": 0, "early": 0, "at_hand_over": 0, "looks": 0,
                       "kept": 0}

    # -- the clock ----------------------------------------------------------------------------
    def run_until(self, t: float) -> None:
        """Move the clock to `t`, one step per scripted call or release on the way (the engine
        must hold the projects a call touches at its instant)."""
        cp = self.cp
        while t > cp.now:
            self.step(min(t, self._next_instant(cp.now)))

    def _next_instant(self, now: float) -> float:
        for at in self.instants:
            if at > now:
                return at
        return math.inf

    def step(self, t1: float) -> None:
        """One step from now to `t1` (see the module's docstring)."""
        cp = self.cp
        if t1 <= cp.now:
            return
        self.counts["steps"] += 1
        _finish_instant(cp)
        held: dict[str, _Held] = {}
        looks: dict[str, tuple[float, float]] = {}  # project id -> (next look, wait after)
        for project_id in _candidates(cp):
            if not self._hand_over(project_id, t1, held):
                looks[project_id] = (cp.now + POLL_S, 2 * POLL_S)
        while True:
            due = [h.back_at for h in held.values() if h.back_at < t1]
            nxt = min([t1, *due, *(at for at, _ in looks.values())])
            cp.run_until(nxt)
            if nxt >= t1:
                break
            for project_id, h in list(held.items()):
                if h.back_at <= cp.now:
                    self._give(held.pop(project_id))
                    # given back early (busy at the end, or a scripted call names it): the
                    # kernel takes it again once it has settled, after what is due now
                    looks[project_id] = (cp.now + POLL_S, 2 * POLL_S)
            looking = [pid for pid, (at, _) in looks.items() if at <= cp.now]
            if looking:
                _finish_instant(cp)  # as at t0: the engine's business at this instant first
            for project_id in looking:
                _, wait = looks.pop(project_id)
                self.counts["looks"] += 1
                project = cp.projects[project_id]
                if project.deleted_at is not None or not self._hand_over(project_id, t1, held):
                    if project.deleted_at is None:
                        looks[project_id] = (cp.now + wait, min(2 * wait, POLL_MAX_S))
        for h in held.values():
            self._give(h)

    # -- a project ------------------------------------------------------------------------------
    def _hand_over(self, project_id: str, t1: float, held: dict[str, _Held]) -> bool:
        """Hand the project to the kernel now and run it to where the engine takes it back;
        False when it has not settled (the engine keeps it for now)."""
        cp = self.cp
        if _timer_meets_check(cp, project_id):
            return False
        self._rank_checks_as_queued(project_id)
        taken = take(cp, project_id)
        if taken is None:
            return False
        self.counts["handed"] += 1
        at = taken.at
        t1 = min(t1, self._next_call(cp.projects[project_id].key, at))
        for back_at in [t1, *(t1 - d for d in EARLIER_S if t1 - d > at), at]:
            run = self._run_to(taken, back_at)
            if run is not None:
                if back_at < t1:
                    self.counts["early" if back_at > at else "at_hand_over"] += 1
                held[project_id] = _Held(taken, back_at, *run)
                return True
        # not even there (an idle clock of its storage rings at this very instant, say):
        # the engine keeps it as it was, and it is looked at again a little later
        untake(cp, taken)
        self.counts["kept"] += 1
        return False

    def _next_call(self, key: str, after: float) -> float:
        """The instant of the next scripted call naming the project (inf: none)."""
        for at in self._calls.get(key, ()):
            if at > after:
                return at
        return math.inf

    def _rank_checks_as_queued(self, project_id: str) -> None:
        """The kernel orders the availability checks of a project's branches due at one
        instant by the ranks their loops began in; the engine by when each round was
        scheduled, which differs once a loop began (a branch made by a call) at an instant
        where others were due too, or was resumed after a hand-over. Before a hand-over,
        the ranks of the branches whose checks fall together are put in the engine's order
        (a permutation of their own ranks: nothing else reads them)."""
        cp = self.cp
        project = cp.projects[project_id]
        ticks: dict[float, list[str]] = {}
        for b in project.branches:
            for cid in cp.branches[b].computes:
                tick = next_tick(cp, cp.computes[cid])  # the checked compute's only
                if tick is not None:
                    ticks.setdefault(tick[0], []).append(b)
                    break
        together = [bs for bs in ticks.values() if len(bs) > 1]
        if not together:
            return
        queued = self._queued_rounds()
        ranks = cp.check_ranks
        for branches in together:
            known = [b for b in branches if b in queued and b in ranks]
            in_queue = sorted(known, key=queued.__getitem__)
            by_rank = sorted(known, key=ranks.__getitem__)
            if in_queue != by_rank:
                values = sorted(ranks[b] for b in known)
                ranks.update(zip(in_queue, values, strict=True))

    def _queued_rounds(self) -> dict[str, tuple[float, int, int]]:
        """Branch id -> (instant, priority, order) of its next availability round in the
        engine's queue: one look at the queue per instant."""
        cp = self.cp
        if self._rounds_at != cp.now:
            rounds = {}
            for t, prio, eid, event in cp.env._queue:  # type: ignore[attr-defined]
                for callback in event.callbacks or ():
                    owner = getattr(callback, "__self__", None)
                    if isinstance(owner, AvailabilityRound):
                        rounds[owner.branch.id] = (t, prio, eid)
            self._rounds, self._rounds_at = rounds, cp.now
        return self._rounds

    def _run_to(self, taken: Taken, until: float) -> tuple[list[Any], Any] | None:
        """The project's kernel run from its hand-over to `until`, if the engine can take it
        there (settled, no storage work underway); else None, its random streams untouched."""
        cp = self.cp
        project = cp.projects[taken.project_id]
        rngs = [cp.streams.get(f"ops/{h.compute.key}") for h in taken.handovers]
        rngs.append(cp.streams.get(f"ops/{project.key}"))
        states = [rng.bit_generator.state for rng in rngs]
        try:
            advanced, replayed = segment_to_call(cp, project, self.workloads, taken, until)
            if all(settled(adv) and not _fires_at_tick(cp, adv) for adv in advanced) \
                    and not np.any(replayed.ops.done_at >= until):
                return advanced, replayed
        except (HandBack, Tie):
            pass
        for rng, state in zip(rngs, states, strict=True):
            rng.bit_generator.state = state
        return None

    def _give(self, h: _Held) -> None:
        """The engine takes the project back now (its instant `back_at`)."""
        cp = self.cp
        assert cp.now == h.back_at
        project = cp.projects[h.taken.project_id]
        timers = idle_timers(cp, project, h.replayed.idle_since, h.taken.at)
        # requests may read any operation: the kernel's are made objects, not rows
        # in the order of their branches' check ranks: the engine's rounds (made anew for
        # the checks the kernel took) are then queued in the order the kernel ran them
        advanced = sorted(h.advanced, key=lambda adv: cp.check_ranks.get(adv.compute.branch_id,
                                                                          0))
        give_segment(cp, project, advanced, h.replayed, timers, as_rows=False)
        fold = getattr(cp, "history_fold", None)
        if fold is not None:  # what it made before the day's fold goes where the fold put it
            fold.fold_operations(project)
        self._rounds_at = -math.inf  # its rounds are queued anew
        for adv in advanced:
            _endpoint_fields(cp, adv)


def _fires_at_tick(cp: ControlPlane, adv: Any) -> bool:
    """Whether the compute's timer is due at its branch's next availability check: the
    engine orders the two by when each was scheduled, which a hand-over would change
    (the timer and the check made anew, in that order), so neither side takes it then."""
    f = adv.out["f"]
    return bool(f[k.ARMED_AT] < math.inf and f[k.FIRE_T] == f[k.TICK_T]
                and checks_of(cp, adv.compute) is not None)


def _timer_meets_check(cp: ControlPlane, project_id: str) -> bool:
    """`_fires_at_tick` for the engine's side, before a hand-over."""
    project = cp.projects[project_id]
    for b in project.branches:
        for cid in cp.branches[b].computes:
            c = cp.computes[cid]
            rt = c.runtime
            if rt is None or c.disabled or rt.armed_at == math.inf:
                continue
            tick = next_tick(cp, c)
            if tick is not None and tick[0] == max(rt.armed_at, cp.now):
                return True
    return False


def _endpoint_fields(cp: ControlPlane, adv: Any) -> None:
    """What an endpoint shows that only the engine writes (the kernel's runs are for
    figures): updated_at and suspended_at at each start and suspension that finished,
    last_active at each client's arrival, the release a start picks up."""
    c, out = adv.compute, adv.out
    n = int(out["i"][k.N_OPS])
    done = out["op_status"][:n] == k.FINISHED
    action, finished = out["op_action"][:n][done], out["op_finished"][:n][done]
    starts, suspends = finished[action == k.START], finished[action == k.SUSPEND]
    if len(starts):
        c.release = cp.release  # releases come at the steps' ends: one release in a step
    for at in (starts, suspends):
        if len(at) and at.max() > c.updated_at:
            c.updated_at = float(at.max())
    if len(suspends):
        c.suspended_at = float(suspends.max())
    arrived = adv.sessions.arrival_s[:int(out["i"][k.NEXT_ARR])]
    if len(arrived) and (c.last_active is None or arrived[-1] > c.last_active):
        c.last_active = float(arrived[-1])


class _NoWorkloads(Workloads):
    """A world made by API calls: its computes have no workload but /_sim/connections."""

    def __init__(self) -> None:
        super().__init__(None, {})  # type: ignore[arg-type]


def _specs(cp: ControlPlane, scenario: Scenario) -> dict[str, ComputeSpec]:
    """Compute id -> its declaration, for the computes the scenario built (by their keys,
    as `sim.scenario.runner.build_project` gives them)."""
    by_key: dict[str, ComputeSpec] = {}
    for inst in scenario.instances():
        for b in inst.template.branches:
            for i, spec in enumerate(b.computes):
                by_key[f"{inst.key}.{b.name}.{i}"] = spec
    return {c.id: by_key[c.key] for c in cp.computes.values() if c.key in by_key}


def _candidates(cp: ControlPlane) -> list[str]:
    """The projects the kernel may take: not deleted, with a compute."""
    return [pid for pid, p in cp.projects.items()
            if p.deleted_at is None and pid not in cp.kernel_storage
            and any(cp.branches[b].computes for b in p.branches)]


def _finish_instant(cp: ControlPlane) -> None:
    """Process every event due at this very instant (the clock stops before them)."""
    env, now = cp.env, cp.now
    while env.peek() <= now:
        env.step()


__all__ = ["KernelAdvance"]

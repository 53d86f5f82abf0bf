"""Projects named by scripted calls: the SimPy engine holds them around their calls, the
compute kernel between them.

A scripted call can do anything the API can (resize, restart, move, delete), so
the engine, which answers API calls, runs a named project while a call may
come. Before its first call, between two calls and after its last one, nothing
but its workload, its branches' availability checks and its storage lifecycle
touches it, and the kernel runs it. At each call the kernel's state (sessions
open, load, timers, idle clocks, storage) is given to the engine, when nothing
is underway and nobody waits at that instant (else the project is run by the
engine alone, from the start); after each call, once nothing is underway and
nobody waits (and before the next call), the engine's state is taken back as it
stands and the kernel carries on, exactly as the engine would have.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Generator
from typing import Any

import numpy as np

from sim.engine.control_plane import ControlPlane
from sim.engine.model import Compute
from sim.engine.operation_rows import OperationColumns, file_rows
from sim.engine.scheduling import timeout_at
from sim.kernel.handover import Taken, can_resume, give_to_engine, hand_over, settled, take_back
from sim.kernel.physics_run import Tie, op_order
from sim.kernel.storage_replay import (
    settle_storage,
    storage_columns,
    storage_operations,
    tally_storage,
)
from sim.scenario.kernel_run import HandBack as Unresolved
from sim.scenario.kernel_run import Workloads, _check_rank, checks_of, file_operations, segment_to_call
from sim.scenario.references import body_references, parse_reference
from sim.scenario.schema import Scenario

# While the project is not settled, look again this much later, twice as long each time
# up to a minute: a project that stays unsettled for days (an archived branch) costs a few
# thousand looks, not one a second; the hand-over is exact whenever it happens.
POLL_S, POLL_MAX_S = 1.0, 60.0



def action_keys(action: Any) -> set[str]:
    """The project instances a scripted call names."""
    keys = {ref.instance_key for ref in action.references()}
    return keys | {parse_reference(text).instance_key for _, text in body_references(action.body)}


def call_instants(scenario: Scenario) -> dict[str, list[float]]:
    """Instance key -> the instants of the scripted calls that name it, in order."""
    calls: dict[str, set[float]] = {}
    for action in scenario.actions:
        for key in action_keys(action):
            calls.setdefault(key, set()).add(action.at)
    return {key: sorted(instants) for key, instants in calls.items()}


def next_tick(cp: ControlPlane, c: Compute) -> tuple[float, float] | None:
    """(the next availability check of the compute's branch after now, the one before it),
    when those checks fall on this compute; the instants the engine's loop reaches by
    adding the period again and again."""

    checks = checks_of(cp, c)
    if checks is None:
        return None
    start, every = checks
    now = cp.now
    # a check due at this very instant is not yet taken: not handed over
    ticks = _TICKS.setdefault(checks, [start, start + every])
    while ticks[-1] < now:
        ticks.append(ticks[-1] + every)
    i = bisect_left(ticks, now, lo=1)
    return ticks[i], ticks[i - 1]


#: (loop start, period) -> the instants of such a loop so far, each the one before plus the
#: period (as the engine's loop adds it): a pure function, kept as a served world's
#: hand-overs ask for the next tick of every branch at every step
_TICKS: dict[tuple[float, float], list[float]] = {}


def _settled(cp: ControlPlane, project_id: str) -> list[tuple[Compute, Any]] | None:
    """The computes to hand over, with their next ticks, if the project is settled now."""
    project = cp.projects[project_id]
    if cp.executor.lane_busy(cp.project_lane(project)):
        return None  # detached or archived is fine: the kernel's side replays the storage
    branches = [cp.branches[b] for b in project.branches]
    chosen = []
    for b in branches:
        for cid in b.computes:
            c = cp.computes[cid]
            if c.disabled:
                continue  # a disabled compute does nothing more: it stays where it is
            tick = next_tick(cp, c)
            if not can_resume(cp, c, None if tick is None else tick[0]):
                return None
            chosen.append((c, tick))
    return chosen


def _wait_then_take(cp: ControlPlane, project_id: str, at: float, next_call: float | None,
                    taken: dict[str, Taken], back: dict[str, str]) -> Generator[Any, Any, None]:
    yield cp.env.timeout(at - cp.now)
    wait = POLL_S
    while True:
        project = cp.projects[project_id]
        if project.deleted_at is not None or project_id in back:
            return
        if next_call is not None and cp.now >= next_call:
            return  # not settled before the next call: the engine keeps it through that one
        got = take(cp, project_id)
        if got is not None:
            taken[project_id] = got
            return
        yield cp.env.timeout(wait)
        wait = min(2 * wait, POLL_MAX_S)


def take(cp: ControlPlane, project_id: str) -> Taken | None:
    """Hand the project's computes to the kernel now, if it has settled (else None)."""
    chosen = _settled(cp, project_id)
    if chosen is None:
        return None
    project = cp.projects[project_id]
    quiet: dict[str, float | None] = {"project": project.idle_since}
    project.idle_since = None  # the engine's idle clocks stop here: the replay of the
    for b in project.branches:  # project's storage takes them over from these instants
        branch = cp.branches[b]
        quiet[f"branch:{b}"] = branch.idle_since
        branch.idle_since = None
    cp.kernel_storage.add(project_id)  # the engine's idle clocks ring for nothing meanwhile
    return Taken(project_id, cp.now, [hand_over(cp, c, tick) for c, tick in chosen], quiet)


def untake(cp: ControlPlane, taken: Taken) -> None:
    """Undo `take` at its own instant, before the kernel ran anything: the engine holds the
    project exactly as before (its idle clocks, pending all along, count again)."""
    project = cp.projects[taken.project_id]
    for h in taken.handovers:
        take_back(cp, h)
    project.idle_since = taken.quiet_since["project"]
    for b in project.branches:
        cp.branches[b].idle_since = taken.quiet_since[f"branch:{b}"]
    cp.kernel_storage.discard(taken.project_id)


def schedule_handovers(cp: ControlPlane, scenario: Scenario, projects: dict[str, str],
                       keys: set[str], taken: dict[str, Taken], back: dict[str, str]) -> None:
    """For each instance key in `keys` (its project id in `projects`): after each of its
    scripted calls (a little after: the call itself runs at that instant), take it back
    from the engine once it has settled, before its next call; not if it is in `back`
    (project id -> why: the engine runs it alone)."""
    for key, instants in sorted(call_instants(scenario).items()):
        if key in projects and key in keys:
            for at, after in zip(instants, [*instants[1:], None], strict=True):
                cp.env.process(_wait_then_take(cp, projects[key], at, after, taken, back))


def schedule_calls(cp: ControlPlane, scenario: Scenario, projects: dict[str, str],
                   workloads: Workloads, taken: dict[str, Taken], back: dict[str, str]
                   ) -> None:
    """For each named project the kernel runs from creation: at each of its scripted calls,
    before the call (scheduled ahead of every call), give its computes to the engine if
    the kernel holds them (from creation up to the first call; from a hand-over after an
    earlier call), or put it in `back` when that cannot be done exactly."""
    as_rows = not reads_operations(scenario)
    for key, instants in sorted(call_instants(scenario).items()):
        if key in projects:
            for i, at in enumerate(instants):
                ev = timeout_at(cp.env, at)
                ev.callbacks.append(lambda _ev, pid=projects[key], first=i == 0:
                                    _give(cp, pid, workloads, taken, back, first, as_rows))


def reads_operations(scenario: Scenario) -> bool:
    """Whether a scripted call may read operations back (a list of them, or one). Only then
    are the kernel's operations of a project the engine holds around a call kept as
    objects; otherwise they go straight to rows, as nobody will ask for them."""
    return any("operations" in action.path.partition("?")[0].split("/")
               for action in scenario.actions)


def _give(cp: ControlPlane, project_id: str, workloads: Workloads,
          taken: dict[str, Taken], back: dict[str, str], first: bool, as_rows: bool) -> None:

    if project_id in back or project_id not in cp.kernel_storage:
        return  # the engine holds it (still)
    pending = taken.pop(project_id, None)
    project = cp.projects[project_id]
    try:
        if pending is None and not first:
            raise HandBack("held by the kernel at a call but never handed to it")
        if pending is None and not all(
                c.runtime is not None and c.runtime.external and c.runtime.activated_at
                is not None for c in _computes(cp, project)):
            raise HandBack("not active at its first scripted call")
        advanced, replayed = segment_to_call(cp, project, workloads, pending)
        if not all(settled(adv) for adv in advanced):
            raise HandBack("busy at the instant of a scripted call")
        if np.any(replayed.ops.done_at >= cp.now):
            raise HandBack("storage work underway at the instant of a scripted call")
        timers = idle_timers(cp, project, replayed.idle_since,
                             project.created_at if pending is None else pending.at)
    except (HandBack, Unresolved, Tie) as err:
        back[project_id] = str(err)
        return
    give_segment(cp, project, advanced, replayed, timers, as_rows)


def give_segment(cp: ControlPlane, project: Any, advanced: list[Any], replayed: Any,
                 timers: list[tuple[float, Any]], as_rows: bool) -> None:
    """Write a project's kernel segment up to now (`segment_to_call`, settled) into the
    engine, which holds the project from here; `timers`: its idle clocks to schedule
    (`idle_timers`)."""
    project_id = project.id
    if as_rows:
        parts = [give_to_engine(cp, adv, _check_rank(cp, adv.compute)) for adv in advanced]
        if cp.config.record_events:
            file_rows(cp, project, [*(p for p in parts if isinstance(p, OperationColumns)),
                                    storage_columns(cp, project, replayed)])
    else:
        created = []
        for adv in advanced:
            ops = give_to_engine(cp, adv)
            if ops:  # none are built when events are not recorded
                rank = _check_rank(cp, adv.compute)
                created += [(t, sched, rank, j, op) for j, ((t, sched), op)
                            in enumerate(zip(op_order(adv), ops, strict=True))]
        if cp.config.record_events:
            created += [(*order, op) for order, op in storage_operations(cp, project, replayed)]
        if created:
            file_operations(cp, project_id, created)
    if not cp.config.record_events:  # no row made: counted instead
        tally_storage(cp, project, replayed)
    settle_storage(cp, project, replayed)
    cp.kernel_storage.discard(project_id)
    for adv in advanced:  # its branch's availability checks are the engine's again
        branch = cp.branches[adv.compute.branch_id]
        tick = next_tick(cp, adv.compute)
        if tick is not None and branch.id in cp.ended_checks:
            cp.resume_availability_checks(branch, tick[0])
    for when, call in timers:
        timeout_at(cp.env, when).callbacks.append(lambda _ev, call=call: call())


def _computes(cp: ControlPlane, project: Any) -> list[Compute]:
    return [cp.computes[i] for b in project.branches for i in cp.branches[b].computes]


def idle_timers(cp: ControlPlane, project: Any, idle_since: dict[str | None, float | None],
                 taken_at: float) -> list[tuple[float, Any]]:
    """The engine's detach and archive clocks still running now that started while the
    kernel held the project (since `taken_at`), as timers to schedule: one that started
    before has the engine's own timer pending still, and one that rang before now, the
    replay took."""
    cfg, now = cp.config, cp.now
    timers: list[tuple[float, Any]] = []
    for holder, since in idle_since.items():
        if since is None or since <= taken_at:
            continue
        if holder is None:
            after, check, target = cfg.detach_after_s, cp._maybe_detach, project
        else:
            after, check, target = cfg.archive_after_s, cp._maybe_archive, cp.branches[holder]
        if after is not None and since + after >= now:
            timers.append((since + after, lambda check=check, target=target, since=since:
                           check(target, since)))
    return timers


class HandBack(Exception):
    """The project cannot be given to the engine exactly: the engine runs it alone."""


__all__ = ["Taken", "action_keys", "call_instants", "give_segment", "idle_timers", "schedule_calls",
           "schedule_handovers", "take", "untake"]

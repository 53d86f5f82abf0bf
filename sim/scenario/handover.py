"""Projects named by scripted calls: the compute kernel runs them up to their first call,
the SimPy engine from there until their last call has settled, the kernel again after.

A scripted call can do anything the API can (resize, restart, move, delete), so
the engine, which answers API calls, runs a named project while calls may come.
Before its first call and after its last one, nothing but its workload and its
branches' availability checks touches it. At the first call the kernel's state
(sessions open, load, timers, idle clocks) is given to the engine, when nothing
is underway and nobody waits at that instant (else the project is run by the
engine alone, from the start); after the last call, once nothing is underway
and nobody waits, the engine's state is taken back as it stands and the kernel
carries on, exactly as the engine would have.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from sim.engine.control_plane import ControlPlane
from sim.engine.kernel import timeout_at
from sim.engine.model import Compute
from sim.engine.physics import ON
from sim.engine.physics_run import (
    Advanced,
    Handover,
    Tie,
    advance_to_call,
    can_resume,
    give_to_engine,
    hand_over,
    longest_quiet,
    op_order,
    settled,
)
from sim.scenario.references import body_references, parse_reference
from sim.scenario.schema import Scenario

if TYPE_CHECKING:
    from sim.scenario.fleetpath_run import NamedWorkloads

# While the project is not settled, look again this much later, twice as long each time
# up to a minute: a project that stays unsettled for days (an archived branch) costs a few
# thousand looks, not one a second; the hand-over is exact whenever it happens.
POLL_S, POLL_MAX_S = 1.0, 60.0


@dataclass
class Taken:
    """A project's computes, handed over, and how long its storage had been quiet then."""

    project_id: str
    handovers: list[Handover]
    #: "project" / "branch:<id>" -> since when it was quiet at the hand-over (None: on)
    quiet_since: dict[str, float | None] = field(default_factory=dict)


def action_keys(action: Any) -> set[str]:
    """The project instances a scripted call names."""
    keys = {ref.instance_key for ref in action.references()}
    return keys | {parse_reference(text).instance_key for _, text in body_references(action.body)}


def last_calls(scenario: Scenario) -> dict[str, float]:
    """Instance key -> the instant of the last scripted call that names it."""
    last: dict[str, float] = {}
    for action in scenario.actions:
        for key in action_keys(action):
            last[key] = max(last.get(key, 0.0), action.at)
    return last


def first_calls(scenario: Scenario) -> dict[str, float]:
    """Instance key -> the instant of the first scripted call that names it."""
    first: dict[str, float] = {}
    for action in scenario.actions:
        for key in action_keys(action):
            first[key] = min(first.get(key, math.inf), action.at)
    return first


def next_tick(cp: ControlPlane, c: Compute) -> tuple[float, float] | None:
    """(the next availability check of the compute's branch after now, the one before it),
    when those checks fall on this compute; the instants the engine's loop reaches by
    adding the period again and again."""
    from sim.scenario.fleetpath_run import checks_of

    checks = checks_of(cp, c)
    if checks is None:
        return None
    start, every = checks
    before, t = start, start + every
    while t < cp.now:  # a check due at this very instant is not yet taken: not handed over
        before, t = t, t + every
    return t, before


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


def _wait_then_take(cp: ControlPlane, project_id: str, at: float, taken: list[Taken],
                    back: dict[str, str]) -> Generator[Any, Any, None]:
    yield cp.env.timeout(at - cp.now)
    wait = POLL_S
    while True:
        project = cp.projects[project_id]
        if project.deleted_at is not None or project_id in back:
            return
        chosen = _settled(cp, project_id)
        if chosen is not None:
            break
        yield cp.env.timeout(wait)
        wait = min(2 * wait, POLL_MAX_S)
    quiet: dict[str, float | None] = {"project": project.idle_since}
    project.idle_since = None  # the engine's idle clocks stop here: the kernel's check
    for b in project.branches:  # looks at the whole quiet stretch
        branch = cp.branches[b]
        quiet[f"branch:{b}"] = branch.idle_since
        branch.idle_since = None
    taken.append(Taken(project_id, [hand_over(cp, c, tick) for c, tick in chosen], quiet))


def schedule_handovers(cp: ControlPlane, scenario: Scenario, projects: dict[str, str],
                       keys: set[str], taken: list[Taken], back: dict[str, str]) -> None:
    """For each instance key in `keys` (its project id in `projects`): hand it over after
    its last scripted call (a little after: the call itself runs at that instant), unless
    it is in `back` (project id -> why: the engine runs it alone)."""
    last = last_calls(scenario)
    for key in sorted(keys):
        if key in projects and key in last:
            cp.env.process(_wait_then_take(cp, projects[key], last[key], taken, back))


def schedule_first_calls(cp: ControlPlane, scenario: Scenario, projects: dict[str, str],
                         workloads: NamedWorkloads, back: dict[str, str]) -> None:
    """For each named project the kernel runs from creation: at its first scripted call,
    before the call (scheduled ahead of every call), give its computes to the engine, or
    put it in `back` when that cannot be done exactly."""
    first = first_calls(scenario)
    for key in sorted(first):
        if key in projects:
            ev = timeout_at(cp.env, first[key])
            ev.callbacks.append(lambda _ev, pid=projects[key]: _give(cp, pid, workloads, back))


def _give(cp: ControlPlane, project_id: str, workloads: NamedWorkloads,
          back: dict[str, str]) -> None:
    from sim.scenario.fleetpath_run import _check_rank, checks_of, file_operations

    project = cp.projects[project_id]
    computes = [cp.computes[i] for b in project.branches for i in cp.branches[b].computes]
    advanced = []
    try:
        for c in computes:
            rt = c.runtime
            if rt is None or not rt.external or rt.activated_at is None:
                raise HandBack("not active at its first scripted call")
            adv = advance_to_call(cp, c, workloads.of(cp, c), cp.now, checks_of(cp, c))
            if not settled(adv):
                raise HandBack("busy at the instant of its first scripted call")
            advanced.append(adv)
        clocks = _idle_clocks(cp, project, advanced)
    except (HandBack, Tie) as err:
        back[project_id] = str(err)
        return
    created = []
    for adv in advanced:
        ops = give_to_engine(cp, adv)
        if ops:  # none are built when events are not recorded
            created += [(t, sched, _check_rank(cp, adv.compute), j, op)
                        for j, ((t, sched), op) in enumerate(zip(op_order(adv), ops, strict=True))]
    if created:
        file_operations(cp, project_id, created)
    for c in computes:  # its branch's availability checks are the engine's again
        branch = cp.branches[c.branch_id]
        tick = next_tick(cp, c)
        if tick is not None and branch.id in cp.ended_checks:
            cp.resume_availability_checks(branch, tick[0])
    for when, call in clocks:
        timeout_at(cp.env, when).callbacks.append(lambda _ev, call=call: call())


def _idle_clocks(cp: ControlPlane, project: Any, advanced: list[Advanced]
                 ) -> list[tuple[float, Any]]:
    """The engine's detach and archive clocks as they would stand now (set on the project
    and its branches), and the timers to schedule; HandBack if one would have rung."""
    cfg, now = cp.config, cp.now
    groups: dict[str, list[Advanced]] = {"project": list(advanced)}
    for adv in advanced:
        if not cp.branches[adv.compute.branch_id].default:
            groups.setdefault(f"branch:{adv.compute.branch_id}", []).append(adv)
    timers: list[tuple[float, Any]] = []
    for key, group in groups.items():
        if any(adv.out["i"][ON] for adv in group):
            continue  # on: its clock does not run
        since = max((float(adv.on_ends[-1]) for adv in group if len(adv.on_ends)), default=None)
        if since is None:
            continue
        if key == "project":
            after, holder = cfg.detach_after_s, project
        else:
            after, holder = cfg.archive_after_s, cp.branches[key.removeprefix("branch:")]
        holder.idle_since = since
        if after is None:
            continue
        if since + after < now:
            raise HandBack("the project would be detached or a branch archived")
        check = (cp._maybe_detach if key == "project" else cp._maybe_archive)
        timers.append((since + after, lambda check=check, holder=holder, since=since:
                       check(holder, since)))
    for key, group in groups.items():  # an earlier stretch long enough would have rung too
        after = cfg.detach_after_s if key == "project" else cfg.archive_after_s
        if after is None:
            continue
        starts = np.concatenate([adv.on_starts for adv in group])
        ends = np.concatenate([np.append(adv.on_ends, now) if adv.out["i"][ON] else adv.on_ends
                               for adv in group])
        if len(starts) and longest_quiet(starts, ends, now) >= after:
            raise HandBack("the project would be detached or a branch archived")
    return timers


class HandBack(Exception):
    """The project cannot be given to the engine exactly: the engine runs it alone."""


__all__ = ["Taken", "action_keys", "first_calls", "last_calls", "schedule_first_calls",
           "schedule_handovers"]

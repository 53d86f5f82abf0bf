"""Projects named by scripted calls: the SimPy engine runs them until their last call has
settled, then hands their computes to the compute kernel for the rest of the run.

A scripted call can do anything the API can (resize, restart, move, delete), so
the engine, which answers API calls, runs a named project while calls may come.
After its last call, nothing but its workload and its branches' availability
checks touches it again: once no operation of it is underway and nobody waits,
its computes' state is taken as it stands (sessions open, load, timers) and the
kernel carries on from there, exactly as the engine would have.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from sim.engine.control_plane import ControlPlane
from sim.engine.model import Compute
from sim.engine.physics_run import Handover, can_resume, hand_over
from sim.scenario.references import body_references, parse_reference
from sim.scenario.schema import Scenario

POLL_S = 1.0  # while an operation of the project is underway, look again this much later


@dataclass
class Taken:
    """A project's computes, handed over, and how long its storage had been quiet then."""

    project_id: str
    handovers: list[Handover]
    #: "project" / "branch:<id>" -> since when it was quiet at the hand-over (None: on)
    quiet_since: dict[str, float | None] = field(default_factory=dict)


def last_calls(scenario: Scenario) -> dict[str, float]:
    """Instance key -> the instant of the last scripted call that names it."""
    last: dict[str, float] = {}
    for action in scenario.actions:
        keys = {ref.instance_key for ref in action.references()}
        keys |= {parse_reference(text).instance_key for _, text in body_references(action.body)}
        for key in keys:
            last[key] = max(last.get(key, 0.0), action.at)
    return last


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
    if cp.executor.lane_busy(cp.project_lane(project)) or project.detached:
        return None
    branches = [cp.branches[b] for b in project.branches]
    if any(b.archived for b in branches):
        return None
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


def _wait_then_take(cp: ControlPlane, project_id: str, at: float, taken: list[Taken]
                    ) -> Generator[Any, Any, None]:
    yield cp.env.timeout(at - cp.now)
    while True:
        project = cp.projects[project_id]
        if project.deleted_at is not None:
            return
        chosen = _settled(cp, project_id)
        if chosen is not None:
            break
        yield cp.env.timeout(POLL_S)
    quiet: dict[str, float | None] = {"project": project.idle_since}
    project.idle_since = None  # the engine's idle clocks stop here: the kernel's check
    for b in project.branches:  # looks at the whole quiet stretch
        branch = cp.branches[b]
        quiet[f"branch:{b}"] = branch.idle_since
        branch.idle_since = None
    taken.append(Taken(project_id, [hand_over(cp, c, tick) for c, tick in chosen], quiet))


def schedule_handovers(cp: ControlPlane, scenario: Scenario, projects: dict[str, str],
                       keys: set[str], taken: list[Taken]) -> None:
    """For each instance key in `keys` (its project id in `projects`): hand it over after
    its last scripted call (a little after: the call itself runs at that instant)."""
    last = last_calls(scenario)
    for key in sorted(keys):
        if key in projects and key in last:
            cp.env.process(_wait_then_take(cp, projects[key], last[key], taken))


__all__ = ["Taken", "last_calls", "schedule_handovers"]

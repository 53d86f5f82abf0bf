"""Which projects of a scenario the fleet path computes, and running it after the engine.

A project qualifies when nothing but its computes' own workloads touches it:
no scripted call names it, operations never fail, no availability checks, and
each compute's load cannot move the autoscaler or fill its disk. What can only
be known afterwards (a refused connection, a project quiet long enough to be
detached) hands that project alone back to the SimPy engine: the runner runs
the projects handed back in a run of their own and merges the two results.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sim.engine.clock import to_us
from sim.engine.config import EngineConfig
from sim.engine.control_plane import ControlPlane
from sim.engine.fleetpath import (
    INF,
    Inputs,
    NotReproducible,
    Timeline,
    longest_quiet,
    op_instants,
    timeline,
)
from sim.engine.fleetpath_apply import apply_timeline, file_operations
from sim.engine.model import Compute
from sim.rules.operations import Action
from sim.scenario.references import body_references, parse_reference
from sim.scenario.schema import ComputeSpec, Scenario
from sim.workload.arrivals import chunks

FLEET_PATH = "fleet path"


def compute_reason(spec: ComputeSpec) -> str | None:
    """Why the SimPy engine must run this compute, or None when the fleet path can."""
    w = spec.workload
    if w is None:
        return None
    if spec.min_cu != spec.max_cu and (w.cpu_per_session or w.memory_gb_per_session):
        return "load per session moves the autoscaler"
    if w.temp_bytes_per_session is not None:
        return "temporary files"
    return None


def engine_reasons(scenario: Scenario, config: EngineConfig) -> dict[str, str]:
    """Instance key -> why the SimPy engine runs it, for the projects the fleet path cannot."""
    if config.operation_failure_rate > 0:
        world = "operation failures"
    elif config.check_availability_every_s is not None:
        world = "availability checks"
    else:
        world = None
    named: set[str] = set()
    for action in scenario.actions:
        named |= {ref.instance_key for ref in action.references()}
        named |= {parse_reference(text).instance_key for _, text in body_references(action.body)}
    reasons = {}
    for inst in scenario.instances():
        if world is not None:
            reasons[inst.key] = world
        elif inst.key in named:
            reasons[inst.key] = "named by a scripted call"
        else:
            why = next((r for b in inst.template.branches for c in b.computes
                        if (r := compute_reason(c)) is not None), None)
            if why is not None:
                reasons[inst.key] = why
    return reasons


def _arrays(scenario: Scenario, cp: ControlPlane, c: Compute, spec: ComputeSpec
            ) -> tuple[np.ndarray, np.ndarray]:
    """The compute's whole workload, drawn exactly as the engine's session feed draws it."""
    process, model = spec.arrival_process(scenario.start), spec.session_model()
    if process is None or model is None:
        return np.empty(0), np.empty(0)
    arrival_rng = cp.streams.fresh(f"arrivals/{c.key}")
    session_rng = cp.streams.fresh(f"sessions/{c.key}")
    times, lengths = [], []
    for part in chunks(process, arrival_rng, 0.0, scenario.duration):
        if len(part):
            times.append(part)
            lengths.append(model.sample(session_rng, len(part)).duration_s)
    if not times:
        return np.empty(0), np.empty(0)
    return np.concatenate(times), np.concatenate(lengths)


def _limits(cp: ControlPlane, c: Compute) -> tuple[float, float]:
    rt = c.runtime
    assert rt is not None
    if c.pooler_enabled:
        return 10_000, rt.pool_size
    return rt.max_conn, INF


def on_spans(tl: Timeline, created: float, until: float) -> tuple[np.ndarray, np.ndarray]:
    """When the compute counts as on for storage: from a wake (or creation) until suspended."""
    starts = np.array([created] + tl.wake_at, dtype=np.float64)
    ends = np.full(len(starts), INF)
    ends[: len(tl.suspended_at)] = tl.suspended_at[: len(starts)]
    keep = starts < until
    return starts[keep], np.minimum(ends[keep], until)


def _check_storage(cp: ControlPlane, spans: dict[str, list], until: float) -> None:
    """A project (or non-default branch) quiet long enough would detach (archive): engine only."""
    cfg = cp.config
    for key, group in spans.items():
        after = cfg.archive_after_s if key.startswith("branch:") else cfg.detach_after_s
        if after is None:
            continue
        starts = np.concatenate([s for s, _ in group])
        ends = np.concatenate([e for _, e in group])
        if longest_quiet(starts, ends, until) >= after:
            raise NotReproducible("the project would be detached or a branch archived")


def _check_stamps(cp: ControlPlane, project_id: str, timelines: list[Timeline]) -> None:
    """The engine never lets two operations of a project share a microsecond (it moves the
    later one); the fleet path cannot know which was later, so a tie is the engine's."""
    stamps = [op.created_us for op in cp.projects[project_id].operations]
    for tl in timelines:
        stamps += [to_us(created) for _, created, _ in op_instants(tl)]
    if len(set(stamps)) < len(stamps):
        raise NotReproducible("two operations of a project in the same microsecond")


def _project_timelines(cp: ControlPlane, scenario: Scenario,
                       group: Sequence[tuple[Compute, ComputeSpec]], until: float) -> list:
    """(compute, timeline, arrivals, durations) of every compute of one project, checked
    against everything that would need the engine. Raises NotReproducible."""
    cfg = cp.config
    spans: dict[str, list] = {}
    planned = []
    for c, spec in group:
        rt = c.runtime
        assert rt is not None and rt.external
        if rt.activated_at is None:
            raise NotReproducible("not active within the run")
        arrivals, durations = _arrays(scenario, cp, c, spec)
        tl = timeline(Inputs(
            arrivals, durations, rt.activated_at, rt.idle_timeout, until, _limits(cp, c),
            cfg.cold_start, cfg.duration_of(Action.SUSPEND_COMPUTE),
            cp.streams.get(f"ops/{c.key}"),
        ))
        planned.append((c, tl, arrivals, durations))
        mine = on_spans(tl, c.created_at, until)
        spans.setdefault(f"project:{c.project_id}", []).append(mine)
        if not cp.branches[c.branch_id].default:
            spans.setdefault(f"branch:{c.branch_id}", []).append(mine)
    _check_storage(cp, spans, until)
    if cfg.record_events and group:
        _check_stamps(cp, group[0][0].project_id, [tl for _, tl, _, _ in planned])
    return planned


def run_fleet_path(cp: ControlPlane, scenario: Scenario,
                   placed: Sequence[tuple[Compute, ComputeSpec]], until: float
                   ) -> dict[str, str]:
    """Compute every external compute's timeline and write it into `cp`, project by project.

    Returns the projects handed back to the engine (project id -> why); nothing of
    theirs is written."""
    by_project: dict[str, list[tuple[Compute, ComputeSpec]]] = {}
    for c, spec in placed:
        by_project.setdefault(c.project_id, []).append((c, spec))
    handed_back: dict[str, str] = {}
    for project_id, group in by_project.items():
        try:
            planned = _project_timelines(cp, scenario, group, until)
        except NotReproducible as err:
            handed_back[project_id] = str(err)
            continue
        ops = []
        for c, tl, arrivals, durations in planned:
            ops += apply_timeline(cp, c, tl, arrivals, durations, until)
        file_operations(cp, project_id, ops)
    return handed_back

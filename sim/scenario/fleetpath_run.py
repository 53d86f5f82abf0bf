"""Which projects of a scenario the fleet path may compute, and running it after the engine.

A project qualifies when nothing but its computes' own workloads touches it:
no scripted call names it, operations never fail, no availability checks, and
each compute's load cannot move the autoscaler or fill its disk. What can only
be known afterwards (a refused connection, a project quiet long enough to be
detached) makes `NotReproducible` propagate, and the runner falls back to the
engine for the whole run.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sim.engine.config import EngineConfig
from sim.engine.control_plane import ControlPlane
from sim.engine.fleetpath import (
    INF,
    Inputs,
    NotReproducible,
    Timeline,
    longest_quiet,
    timeline,
)
from sim.engine.fleetpath_apply import apply_timeline, file_operations
from sim.engine.model import Compute
from sim.rules.operations import Action
from sim.scenario.references import body_references, parse_reference
from sim.scenario.schema import ComputeSpec, Scenario
from sim.workload.arrivals import chunks


def compute_qualifies(spec: ComputeSpec) -> bool:
    w = spec.workload
    if w is None:
        return True
    steady = spec.min_cu == spec.max_cu or (w.cpu_per_session == 0 and w.memory_gb_per_session == 0)
    return steady and w.temp_bytes_per_session is None


def eligible_projects(scenario: Scenario, config: EngineConfig) -> set[str]:
    """Instance keys ("shop[3]") whose timelines the fleet path may compute."""
    if config.operation_failure_rate > 0 or config.check_availability_every_s is not None:
        return set()
    named: set[str] = set()
    for action in scenario.actions:
        named |= {ref.instance_key for ref in action.references()}
        named |= {parse_reference(text).instance_key for _, text in body_references(action.body)}
    keys = set()
    for inst in scenario.instances():
        if inst.key in named:
            continue
        if all(compute_qualifies(c) for b in inst.template.branches for c in b.computes):
            keys.add(inst.key)
    return keys


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
            raise NotReproducible(f"{key} would be detached or archived")


def run_fleet_path(cp: ControlPlane, scenario: Scenario,
                   placed: Sequence[tuple[Compute, ComputeSpec]], until: float) -> None:
    """Compute every external compute's timeline and write it into `cp`. Raises NotReproducible."""
    cfg = cp.config
    spans: dict[str, list] = {}
    ops_by_project: dict[str, list] = {}
    for c, spec in placed:
        rt = c.runtime
        assert rt is not None and rt.external
        arrivals, durations = _arrays(scenario, cp, c, spec)
        if rt.activated_at is None:
            raise NotReproducible(f"{c.id} was not active within the run")
        tl = timeline(Inputs(
            arrivals, durations, rt.activated_at, rt.idle_timeout, until, _limits(cp, c),
            cfg.cold_start, cfg.duration_of(Action.SUSPEND_COMPUTE),
            cp.streams.get(f"ops/{c.key}"),
        ))
        ops = apply_timeline(cp, c, tl, arrivals, durations, until)
        ops_by_project.setdefault(c.project_id, []).extend(ops)
        mine = on_spans(tl, c.created_at, until)
        spans.setdefault(f"project:{c.project_id}", []).append(mine)
        if not cp.branches[c.branch_id].default:
            spans.setdefault(f"branch:{c.branch_id}", []).append(mine)
    _check_storage(cp, spans, until)
    for project_id, ops in ops_by_project.items():
        file_operations(cp, project_id, ops)

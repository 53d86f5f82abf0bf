"""Run a scenario: build its fleet on a control plane, let time pass, collect the rows.

The fleet is built through the control plane's own verbs, and scripted
`actions:` go through the API's handlers, so a scenario meets exactly the
rules an API client meets.
"""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from sim.engine.config import ConnectionRecording
from sim.engine.control_plane import ControlPlane
from sim.engine.feed import session_feed
from sim.engine.model import Compute
from sim.engine.records import ActionRecord, RunResult
from sim.rules.connections import DEFAULT_POOL_SHARE
from sim.rules.errors import ApiError
from sim.scenario.call_port import dispatcher
from sim.scenario.handover import Taken, action_keys, schedule_calls, schedule_handovers
from sim.scenario.kernel_run import Workloads, engine_reasons, run_kernel
from sim.scenario.merge import canonical_result, instance_order
from sim.scenario.references import Reference, render_body, render_path
from sim.scenario.roads import HANDED_BACK, KERNEL, KERNEL_AFTER_CALLS, KERNEL_OFF, PER_SESSION
from sim.scenario.schema import ComputeSpec, ProjectInstance, Scenario
from sim.scenario.warm_up import arrivals_on_engine_clock, led_by_warm_up
from sim.workload import Poisson, chunks

Progress = Callable[[float, float], None]  # (simulated seconds reached, total)


class ScenarioRunError(Exception):
    """The control plane refused to build what the scenario declares."""


@dataclass
class Fleet:
    """Where each declared resource went, so `{shop[0].main.read_write}` can be resolved."""

    projects: dict[str, str] = field(default_factory=dict)  # "shop[0]" -> project id
    branches: dict[tuple[str, str], str] = field(default_factory=dict)
    computes: dict[tuple[str, str, str], list[str]] = field(default_factory=dict)
    signups: int = 0  # auth users the `auth.signups` processes created

    def resolve(self, ref: Reference) -> str:
        key = ref.instance_key
        if key not in self.projects:
            raise KeyError(f"{{{ref.text}}} names a project this run does not hold")
        if ref.branch is None:
            return self.projects[key]
        if ref.compute_type is None:
            return self.branches[(key, ref.branch)]
        return self.computes[(key, ref.branch, ref.compute_type)][ref.compute_index]


def endpoint_values(spec: ComputeSpec) -> dict[str, Any]:
    values: dict[str, Any] = {
        "autoscaling_limit_min_cu": spec.min_cu,
        "autoscaling_limit_max_cu": spec.max_cu,
        "suspend_timeout_seconds": spec.suspend_timeout_seconds,
        "pooler_enabled": spec.pooler_enabled,
    }
    if spec.pool_size is not None:
        values["pool_size"] = spec.pool_size
    return values


def build_project(cp: ControlPlane, scenario: Scenario, inst: ProjectInstance, fleet: Fleet
                  ) -> list[tuple[Compute, ComputeSpec]]:
    t = inst.template
    first = t.branches[0]
    primary = next((i for i, c in enumerate(first.computes) if c.type == "read_write"), None)
    created = cp.create_project(
        f"{t.name}-{inst.index}", key=inst.key, plan=scenario.plan_of(t),
        history_retention_seconds=int(t.history_retention), branch_name=first.name,
        default_endpoint=endpoint_values(first.computes[primary]) if primary is not None else None,
        with_compute=primary is not None, compute_key=f"{inst.key}.{first.name}.{primary}",
    )
    project = created.project
    fleet.projects[inst.key] = project.id
    fleet.branches[(inst.key, first.name)] = created.branch.id
    placed: list[tuple[Compute, ComputeSpec]] = []
    for i, spec in enumerate(first.computes):
        if i == primary:
            compute = created.computes[0]
        else:
            compute, _ = cp.create_compute(project.id, created.branch.id, spec.type,
                                           key=f"{inst.key}.{first.name}.{i}",
                                           **endpoint_values(spec))
        placed.append((compute, spec))
    for b in t.branches[1:]:
        parent = fleet.branches[(inst.key, t.parent_of(b) or first.name)]
        made = cp.create_branch(project.id, b.name, parent,
                                [{"type": c.type, **endpoint_values(c)} for c in b.computes],
                                key=f"{inst.key}.{b.name}")
        fleet.branches[(inst.key, b.name)] = made.branch.id
        placed += list(zip(made.computes, b.computes, strict=True))
    for compute, spec in placed:
        branch_name = cp.branches[compute.branch_id].name
        fleet.computes.setdefault((inst.key, branch_name, spec.type), []).append(compute.id)
    if t.auth is not None:
        set_up_auth(cp, scenario, inst, fleet)
    return placed


def set_up_auth(cp: ControlPlane, scenario: Scenario, inst: ProjectInstance, fleet: Fleet
                ) -> None:
    """The template's `auth:`: the integration now, sign-ups as a Poisson process after."""
    spec, branch = inst.template.auth, inst.template.auth_branch
    assert spec is not None and branch is not None
    project_id = fleet.projects[inst.key]
    cp.auth.create_integration(project_id, fleet.branches[(inst.key, branch)], spec.provider)
    if spec.signups is not None and spec.signups.per_hour > 0:
        # sign-ups from the first instant: each is a user created, a figure of the run
        times = chunks(Poisson(spec.signups.per_hour), cp.streams.fresh(f"signups/{inst.key}"),
                       cp.config.count_from_s, scenario.duration)
        domain = f"{inst.template.name}-{inst.index}.example.com"
        cp.env.process(_signups(cp, fleet, project_id, spec.provider, domain, times))


def _signups(cp: ControlPlane, fleet: Fleet, project_id: str, provider: str, domain: str,
             times: Iterator[Any]) -> Generator[Any, Any, None]:
    """Each arrival creates a user through the verb of POST /projects/auth/user. One that
    the control plane refuses (an action deleted the integration) is not counted."""
    n = 0
    for chunk in times:
        for t in chunk:
            yield cp.env.timeout(max(0.0, float(t) - cp.now))
            n += 1
            try:
                cp.auth.create_user(project_id, provider, f"user{n}@{domain}", f"User {n}")
            except ApiError:
                continue
            fleet.signups += 1


def attach_workloads(cp: ControlPlane, scenario: Scenario,
                     placed: Sequence[tuple[Compute, ComputeSpec]]) -> None:
    for compute, spec in placed:
        process = arrivals_on_engine_clock(spec.arrival_process(scenario.start),
                                           cp.config.count_from_s)
        model = spec.session_model()
        if process is None or model is None:
            continue
        feed = session_feed(process, model, cp.streams.fresh(f"arrivals/{compute.key}"),
                            cp.streams.fresh(f"sessions/{compute.key}"), 0.0, scenario.duration)
        assert compute.runtime is not None
        compute.runtime.attach_workload(feed)


def schedule_releases(cp: ControlPlane, scenario: Scenario) -> None:
    for release in scenario.releases:
        ev = cp.env.timeout(release.at)
        ev.callbacks.append(lambda _ev, v=release.version: cp.publish_release(v))


def schedule_actions(cp: ControlPlane, scenario: Scenario, fleet: Fleet,
                     log: list[ActionRecord], named: list[set[str]] | None = None) -> None:
    """Each scripted call at its instant; `log` gets what the control plane answered and
    `named`, beside it, the project instances each call named."""
    if not scenario.actions:
        return
    dispatch = dispatcher()  # the HTTP layer's route handlers, through the port; FastAPI only when needed

    def run(action) -> None:
        try:
            path = render_path(action.path, fleet.resolve)
            body = render_body(action.body, fleet.resolve)
        except KeyError:
            return  # the action names a project of another shard
        status, payload = dispatch(cp, action.method, path, body)
        code = payload.get("code", "") if status >= 400 and isinstance(payload, dict) else ""
        # at its instant of the scenario (the engine's clock began a warm-up earlier)
        log.append(ActionRecord(cp.env.now - cp.config.count_from_s, f"{action.method} {path}",
                                status, code))
        if named is not None:
            named.append(action_keys(action))

    for action in scenario.actions:
        ev = cp.env.timeout(action.at)
        ev.callbacks.append(lambda _ev, a=action: run(a))


def assumptions(scenario: Scenario, cp: ControlPlane) -> dict[str, str]:
    cfg = cp.config
    signups = [f"{p.name} {p.auth.signups.per_hour:g}/h" for p in scenario.projects
               if p.auth is not None and p.auth.signups is not None]
    extra = {"auth sign-ups per project (Poisson)": ", ".join(signups)} if signups else {}
    return {
        "cold start (start_compute)": cfg.cold_start.describe(),
        "operation failure rate": f"{cfg.operation_failure_rate:g}",
        "pooler server pool": f"{cfg.pool_share:.0%} of max_connections"
        + ("" if cfg.pool_share == DEFAULT_POOL_SHARE else " (scenario)"),
        "pool queue timeout": f"{cfg.pool_queue_timeout_s:g} s",
        "autoscaling max_connections from": f"{cfg.autoscaling_connections.value} CU",
        "autoscaler": (f"target CPU {cfg.autoscaler.target_cpu_utilisation:.0%}, "
                       f"reaction {cfg.autoscaler.reaction_delay_s:g} s"),
        "price per CU-hour": f"{scenario.price_per_cu_hour:g}",
        "check_availability every": _maybe_s(cfg.check_availability_every_s),
        "detach idle projects after": _maybe_s(cfg.detach_after_s),
        "archive idle branches after": _maybe_s(cfg.archive_after_s),
        "connection records": cfg.record_connections.value,
    } | _pricing_notes(scenario) | extra


def _pricing_notes(scenario: Scenario) -> dict[str, str]:
    """The compute terms of the templates that set their own (`pricing:`)."""
    notes = {}
    for t in scenario.projects:
        if t.pricing is not None:
            p = scenario.pricing_of(t)
            preset = f"{t.pricing} plan: " if isinstance(t.pricing, str) else ""
            notes[f"pricing of {t.name}"] = (
                f"{preset}{p.per_cu_hour:g} per CU-hour beyond "
                f"{p.included_cu_hours:g} CU-hours included per project and month")
    return notes


def _maybe_s(value: float | None) -> str:
    return "off" if value is None else f"{value:g} s"


@dataclass
class _Part:
    """One run of some of a scenario's project instances, before it is merged."""

    result: RunResult
    keys: list[str]  # the instances whose rows it holds, in fleet order
    handed_back: list[str]  # instances the kernel handed back to the engine
    cp: ControlPlane
    fleet: Fleet


def _simulate(scenario: Scenario, seed: int, instances: Sequence[ProjectInstance],
              progress: Progress | None, steps: int, kernel: bool) -> _Part:
    warm_up = scenario.warm_up_s
    cp = ControlPlane(replace(scenario.engine_config(), count_from_s=warm_up), seed=seed,
                      start=scenario.start - timedelta(seconds=warm_up),
                      region_id=scenario.region_id, plan=scenario.plan_of(scenario.projects[0]))
    counted = scenario.duration
    scenario = led_by_warm_up(scenario, warm_up)  # on the engine's clock from here
    cp.streams.prepare(stream_names(
        instances, sampled=cp.config.record_connections is ConnectionRecording.SAMPLED))
    fleet = Fleet()
    placed: list[tuple[Compute, ComputeSpec]] = []
    external: list[tuple[Compute, ComputeSpec]] = []
    reasons = engine_reasons(scenario) if kernel else {}
    for inst in instances:
        try:
            built = build_project(cp, scenario, inst, fleet)
        except ApiError as err:
            raise ScenarioRunError(f"{inst.key}: {err.message}") from None
        if kernel:  # the kernel's from creation (a named project: up to its first call)
            for compute, _ in built:
                compute.runtime.external = True  # type: ignore[union-attr]
        if kernel and inst.key not in reasons:
            external += built
        else:
            placed += built
    # the kernel holds every project at first (a named one up to its first call), and the
    # storage replay runs its storage lifecycle while it does
    cp.kernel_storage = {c.project_id for c, _ in external + placed} if kernel else set()
    workloads = Workloads(scenario, {c.id: spec for c, spec in placed})
    back: dict[str, str] = {}  # project id -> why the engine runs it alone
    taken: dict[str, Taken] = {}  # project id -> handed to the kernel after a call
    if kernel:
        # ahead of the calls: the engine must hold a named project when a call runs
        schedule_calls(cp, scenario, fleet.projects, workloads, taken, back)
    else:
        attach_workloads(cp, scenario, placed)
    schedule_releases(cp, scenario)
    actions: list[ActionRecord] = []
    named: list[set[str]] = []
    schedule_actions(cp, scenario, fleet, actions, named)
    if kernel:
        schedule_handovers(cp, scenario, fleet.projects, set(reasons), taken, back)
    total = scenario.duration
    if progress is None:  # stopping the clock costs a SimPy event and an exception each time
        steps = 1
    for i in range(1, steps + 1):
        cp.run_until(total * i / steps)
        if progress is not None:
            progress(cp.now, total)
    kept = [t for t in taken.values() if t.project_id not in back]
    if external or kept:
        back |= run_kernel(cp, workloads, external, cp.now, kept)
    back_keys = _linked({cp.projects[pid].key for pid in back}, named)
    excluded = {pid for pid, p in cp.projects.items() if p.key in back_keys}
    result = cp.result(scenario.name, counted, scenario.price_per_cu_hour,
                       assumptions(scenario, cp), exclude=excluded)
    result.warm_up_s = warm_up
    result.pricing = {t.name: scenario.pricing_of(t) for t in scenario.projects
                      if t.pricing is not None}
    result.actions = [a for a, keys in zip(actions, named, strict=True) if not keys & back_keys]
    result.roads = _roads(cp, reasons if kernel else None, kept, excluded)
    keys = [inst.key for inst in instances if inst.key not in back_keys]
    return _Part(result, keys, [inst.key for inst in instances if inst.key in back_keys], cp,
                 fleet)


def stream_names(instances: Sequence[ProjectInstance], sampled: bool = False) -> Iterator[str]:
    """The random streams the run of these project instances asks for, by name: each
    project's and each of its computes' (keys as `build_project` gives them); `sampled`:
    connections are recorded by sample."""
    kinds = ("ids", "ops", "arrivals", "sessions", *(("connection-sample",) if sampled else ()))
    for inst in instances:
        yield from (f"ids/{inst.key}", f"ops/{inst.key}")
        for b in inst.template.branches:
            for i in range(len(b.computes)):
                yield from (f"{kind}/{inst.key}.{b.name}.{i}" for kind in kinds)


def _linked(keys: set[str], named: list[set[str]]) -> set[str]:
    """`keys` and every project instance a scripted call names together with one of them:
    those run again together, with their calls."""
    keys = set(keys)
    grown = True
    while grown:
        grown = False
        for group in named:
            if group & keys and not group <= keys:
                keys |= group
                grown = True
    return keys


def _roads(cp: ControlPlane, reasons: dict[str, str] | None, taken: Sequence[Taken],
           handed_back: set[str]) -> dict[str, int]:
    """Computes by the road that computed them (projects handed back are not counted here:
    the run that takes them counts them)."""
    resumed = {h.compute.id for t in taken for h in t.handovers}
    roads: Counter[str] = Counter()
    for c in cp.computes.values():
        key = cp.projects[c.project_id].key
        if c.project_id in handed_back:
            continue
        if c.runtime is not None and c.runtime.external:
            named = c.id in resumed or (reasons is not None and key in reasons)
            roads[KERNEL_AFTER_CALLS if named else KERNEL] += 1
        else:
            reason = KERNEL_OFF if reasons is None else reasons.get(key, "created by a call")
            roads[PER_SESSION + reason] += 1
    return dict(sorted(roads.items()))


def run_scenario(
    scenario: Scenario,
    *,
    seed: int | None = None,
    instances: Sequence[ProjectInstance] | None = None,
    progress: Progress | None = None,
    steps: int = 200,
    kernel: bool = True,
) -> RunResult:
    """Run `scenario` (or only the given project instances: one shard of the fleet).

    Computes are advanced by the kernel (the compiled bulk path,
    `sim.scenario.kernel_run`), which gives the engine's results exactly; a
    project it finds it cannot reproduce (a detach, two events at one instant)
    is run again in the SimPy engine alone, and the two results are merged.
    `kernel=False` runs everything per-session in the SimPy engine. Rows come in the
    canonical order of `sim.scenario.merge`."""
    with _old_objects_left_out_of_collections():
        return _run(scenario, scenario.seed if seed is None else seed,
                    list(instances) if instances is not None else scenario.instances(),
                    instances is None, progress, steps, kernel)


@contextmanager
def _old_objects_left_out_of_collections() -> Iterator[None]:
    """A run allocates millions of short-lived objects, and each full pass of Python's
    cycle collector would walk every object alive before it too (pandas, numba, the
    scenario...): half the cost of a small run. Those are frozen out of the passes
    (`gc.freeze`) while it runs; whatever the run leaves as garbage is collected as usual.
    Where objects are frozen already (a worker forked from the cluster's fork server, whose
    loaded heap stays frozen), they stay so, and the run leaves the collector as it is."""
    if gc.get_freeze_count():  # unfreezing after the run would thaw theirs too
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _run(scenario: Scenario, seed: int, chosen: list[ProjectInstance], whole: bool,
         progress: Progress | None, steps: int, kernel: bool) -> RunResult:
    parts = [_simulate(scenario, seed, chosen, progress, steps, kernel)]
    if parts[0].handed_back:
        again = set(parts[0].handed_back)
        # with the calls that name them (a call names them all, or none: see _linked)
        alone = scenario.model_copy(update={"actions": [
            a for a in scenario.actions if action_keys(a) and action_keys(a) <= again]})
        parts.append(_simulate(alone, seed, [i for i in chosen if i.key in again],
                               None, steps, False))
        parts[1].result.roads = {
            road.replace(KERNEL_OFF, HANDED_BACK): n
            for road, n in parts[1].result.roads.items()}
    if whole and any(p.auth is not None for p in scenario.projects):
        # whole runs only: the shards of one run must agree on their assumptions
        users = auth_users(parts)
        for part in parts:
            part.result.assumptions["auth users created"] = users
    return canonical_result([(part.result, part.keys) for part in parts],
                            instance_order(scenario))


def auth_users(parts: Sequence[_Part]) -> str:
    """Users the sign-ups created, and the rows of every synced table at the end."""
    signups = sum(part.fleet.signups for part in parts)
    synced = sum(len(rows) for part in parts
                 for rows in part.cp.auth.state()["databases"].values() if rows is not None)
    return f"{signups} by sign-ups; {synced} rows in svc_auth.users_sync at the end"

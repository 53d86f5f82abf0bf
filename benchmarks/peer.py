"""The peer: a plain SimPy model of a fleet of computes, as a capacity planner writes it in
an afternoon. Every engine figure of `versus_peer.py` is a ratio against this model.

Written the ordinary way, neither tuned nor handicapped: a source process per
compute that starts a process per session, a long-lived scale-to-zero timer
process per compute, a wake that takes a drawn cold start, a suspend that takes
a drawn duration, refusals beyond max_connections, the pooler's server pool as
a `simpy.Resource` with a patience timeout (the SimPy bank-renege idiom), and
an autoscaler that answers a change of load after its reaction delay. Operation
attempts fail with the scenario's failure rate and are retried after the
backoff; availability checks wake a suspended compute; a scripted PATCH changes
a compute's settings at its instant.

It consumes exactly the arrivals and session lengths the engine consumes:
`draw_workloads` draws them from the same named streams
("arrivals/<compute key>", "sessions/<compute key>") through the project's own
workload code, so peer and engine differ only in how they simulate.

What it leaves out (a planner's afternoon does too): operation records, ids
and the API; project and branch storage (detach, archive, reattach); releases
and restarts (a PATCH of the autoscaling range restarts a compute in the
engine, here it only changes the limits); temporary files and 53100; scripted
calls other than PATCH of an endpoint; one operation lane per compute (a check
of availability does not hold back a suspend here); auth and sign-ups.

    python benchmarks/peer.py benchmarks/fleet.yaml     # run the peer alone, print totals
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import simpy

from sim.engine.config import EngineConfig
from sim.engine.streams import Streams
from sim.rules.connections import POOLER_MAX_CLIENTS, default_pool_size, max_connections
from sim.rules.operations import Action
from sim.rules.sizes import RAM_GB_PER_CU, step_up
from sim.rules.timeouts import effective_suspend_timeout
from sim.scenario.schema import ComputeSpec, Scenario
from sim.scenario.warm_up import arrivals_on_engine_clock
from sim.workload import chunks

OFF, STARTING, ON, STOPPING = "off", "starting", "on", "stopping"


# ---- the workload, drawn as the engine draws it ------------------------------------------


@dataclass
class ComputeLoad:
    """One compute of the scenario and the sessions it will receive."""

    key: str  # "shop[3].main.0": the engine's stable name, which seeds its streams
    instance: str  # "shop[3]"
    branch: str  # "main"
    spec: ComputeSpec
    arrivals: np.ndarray  # seconds since the start, sorted
    lengths: np.ndarray  # seconds each session stays


def draw_workloads(scenario: Scenario, seed: int | None = None) -> list[ComputeLoad]:
    """Every compute's sessions, from the streams the engine draws them from."""
    streams = Streams(scenario.seed if seed is None else seed)
    loads = []
    for inst in scenario.instances():
        for branch in inst.template.branches:
            for i, spec in enumerate(branch.computes):
                key = f"{inst.key}.{branch.name}.{i}"
                process = arrivals_on_engine_clock(spec.arrival_process(scenario.start),
                                                   scenario.warm_up_s)
                model = spec.session_model()
                times, lengths = [np.empty(0)], [np.empty(0)]
                if process is not None and model is not None:
                    arrival_rng = streams.fresh(f"arrivals/{key}")
                    session_rng = streams.fresh(f"sessions/{key}")
                    for part in chunks(process, arrival_rng, 0.0,
                                       scenario.warm_up_s + scenario.duration):
                        if len(part):
                            times.append(part)
                            lengths.append(model.sample(session_rng, len(part)).duration_s)
                loads.append(ComputeLoad(key, inst.key, branch.name, spec,
                                         np.concatenate(times), np.concatenate(lengths)))
    return loads


def offered_sessions(loads: list[ComputeLoad], warm_up_s: float = 0.0) -> int:
    """Sessions offered from the first instant (the warm-up's are in no figure)."""
    return sum(int((load.arrivals >= warm_up_s).sum()) for load in loads)


# ---- the model -----------------------------------------------------------------------------


@dataclass
class Totals:
    arrivals: int = 0
    sessions: int = 0  # began a session
    refused: int = 0  # max_connections, or the pooler's client limit
    queue_timeouts: int = 0
    cold_starts: int = 0
    on_s: float = 0.0  # seconds on (starting excluded, suspending included, as the engine)
    cu_s: float = 0.0
    per_compute: dict[str, dict[str, float]] = field(default_factory=dict)


class Fleet:
    """The environment, the scenario's assumptions, and the operations every compute uses."""

    def __init__(self, scenario: Scenario, seed: int | None = None):
        cfg: EngineConfig = scenario.engine_config()
        self.env = simpy.Environment()
        #: the scenario's start on this clock, after the warm-up (as the engine's)
        self.count_from = scenario.warm_up_s
        self.cfg = cfg
        self.rng = np.random.default_rng(scenario.seed if seed is None else seed)
        self.cold_start = cfg.cold_start
        self.suspend_duration = cfg.duration_of(Action.SUSPEND_COMPUTE)

    def operation(self, duration) -> Generator[Any, Any, None]:
        """An operation's attempts: each takes a drawn duration and may fail, then waits
        the backoff and tries again."""
        env, rng = self.env, self.rng
        while True:
            yield env.timeout(duration.sample_one(rng))
            if rng.random() >= self.cfg.operation_failure_rate:
                return
            yield env.timeout(self.cfg.retry_backoff_s)


class Compute:
    def __init__(self, fleet: Fleet, load: ComputeLoad):
        spec = load.spec
        self.fleet = fleet
        self.env = env = fleet.env
        self.key = load.key
        self.min_cu, self.max_cu = spec.min_cu, spec.max_cu
        self.timeout = effective_suspend_timeout(spec.suspend_timeout_seconds)
        self.max_conn = max_connections(self.min_cu, self.max_cu, fleet.cfg.autoscaling_connections)
        self.pool = None
        if spec.pooler_enabled:
            size = spec.pool_size or default_pool_size(self.max_conn, fleet.cfg.pool_share)
            self.pool = simpy.Resource(env, capacity=size)
        self.limit = POOLER_MAX_CLIENTS if self.pool is not None else self.max_conn
        w = spec.workload
        self.autoscales = (self.min_cu != self.max_cu and w is not None
                           and (w.cpu_per_session > 0 or w.memory_gb_per_session > 0))
        self.state, self.cu = STARTING, 0.0
        self.ready = env.event()  # fires when the compute is on
        self.wake_after_stop = False
        self.open = 0  # connections held or waiting for the compute
        self.last_activity = 0.0
        self.cpu = self.mem = 0.0
        self.resizing = False
        self.since = 0.0
        self.arrivals = self.sessions = self.refused = self.queue_timeouts = 0
        self.cold_starts = 0
        self.on_s = self.cu_s = 0.0
        env.process(self.start(cold=False))  # created: started once, not a cold start
        env.process(self.idle_timer())

    # -- on and off
    def wake(self) -> simpy.Event:
        if self.state == OFF:
            self.state = STARTING
            self.env.process(self.start(cold=True))
        elif self.state == STOPPING:
            self.wake_after_stop = True
        return self.ready

    def start(self, cold: bool):
        woken = self.env.now
        yield from self.fleet.operation(self.fleet.cold_start)
        self.state, self.cu, self.since = ON, self.min_cu, self.env.now
        self.cold_starts += cold and woken >= self.fleet.count_from
        self.last_activity = max(self.last_activity, self.env.now)
        ready, self.ready = self.ready, self.env.event()
        ready.succeed()

    def idle_timer(self):
        """Scale to zero: suspend after `timeout` seconds without a connection."""
        if self.timeout is None:
            return
        env = self.env
        while True:
            if self.state != ON:
                yield self.ready
                continue
            due = self.last_activity + self.timeout
            if self.open:  # busy: the last session's end restarts the countdown anyway
                yield env.timeout(self.timeout)
            elif env.now < due:
                yield env.timeout(due - env.now)
            else:
                yield from self.suspend()

    def suspend(self):
        self.state = STOPPING
        yield from self.fleet.operation(self.fleet.suspend_duration)
        self.account()
        self.state, self.cu = OFF, 0.0
        if self.wake_after_stop:  # clients arrived while it was suspending
            self.wake_after_stop = False
            self.wake()

    def account(self) -> None:
        now = self.env.now
        counted = max(0.0, now - max(self.since, self.fleet.count_from))  # not the warm-up
        self.on_s += counted
        self.cu_s += self.cu * counted
        self.since = now

    # -- sessions
    def source(self, arrivals: np.ndarray, lengths: np.ndarray, cpu: float, mem: float):
        env = self.env
        for t, length in zip(arrivals.tolist(), lengths.tolist(), strict=True):
            yield env.timeout(t - env.now)
            env.process(self.session(length, cpu, mem))

    def session(self, length: float, cpu: float, mem: float):
        env = self.env
        counted = env.now >= self.fleet.count_from  # a client of the warm-up is in no figure
        self.arrivals += counted
        self.last_activity = env.now
        if self.open >= self.limit:
            self.refused += counted
            return
        self.open += 1
        if self.state != ON:
            yield self.wake()
        if self.pool is None:
            yield from self.use(length, cpu, mem, counted)
        else:
            with self.pool.request() as req:
                got = yield req | env.timeout(self.fleet.cfg.pool_queue_timeout_s)
                if req in got:
                    yield from self.use(length, cpu, mem, counted)
                else:
                    self.queue_timeouts += counted
        self.open -= 1
        self.last_activity = env.now

    def use(self, length: float, cpu: float, mem: float, counted: bool):
        self.sessions += counted
        if self.autoscales:
            self.cpu += cpu
            self.mem += mem
            self.load_changed()
        yield self.env.timeout(length)
        if self.autoscales:
            self.cpu -= cpu
            self.mem -= mem
            self.load_changed()

    # -- the autoscaler
    def goal(self) -> float:
        a = self.fleet.cfg.autoscaler
        need = max(self.cpu / a.target_cpu_utilisation,
                   self.mem / (RAM_GB_PER_CU * a.target_memory_utilisation), self.min_cu)
        return min(step_up(need), self.max_cu)

    def load_changed(self) -> None:
        if not self.resizing and self.goal() != self.cu:
            self.resizing = True
            self.env.process(self.resize())

    def resize(self):
        yield self.env.timeout(self.fleet.cfg.autoscaler.reaction_delay_s)
        self.resizing = False
        if self.state == ON:
            goal = self.goal()
            if goal != self.cu:
                self.account()
                self.cu = goal

    # -- background and scripted activity
    def check_availability(self, every: float):
        while True:
            yield self.env.timeout(every)
            if self.state == OFF:
                self.wake()
            self.last_activity = self.env.now

    def patch(self, at: float, endpoint: dict):
        yield self.env.timeout(at)
        if "suspend_timeout_seconds" in endpoint:
            self.timeout = effective_suspend_timeout(endpoint["suspend_timeout_seconds"])
        self.min_cu = endpoint.get("autoscaling_limit_min_cu", self.min_cu)
        self.max_cu = endpoint.get("autoscaling_limit_max_cu", self.max_cu)
        if self.pool is None:
            self.limit = self.max_conn = max_connections(
                self.min_cu, self.max_cu, self.fleet.cfg.autoscaling_connections)


def run_peer(scenario: Scenario, loads: list[ComputeLoad], seed: int | None = None) -> Totals:
    """Simulate `loads` for the scenario's duration; totals and per-compute figures."""
    fleet = Fleet(scenario, seed)
    env = fleet.env
    computes: dict[str, Compute] = {}
    by_type: dict[tuple[str, str, str], list[Compute]] = {}
    checked: set[tuple[str, str]] = set()
    every = fleet.cfg.check_availability_every_s
    for load in loads:
        c = computes[load.key] = Compute(fleet, load)
        by_type.setdefault((load.instance, load.branch, load.spec.type), []).append(c)
        w = load.spec.workload
        if len(load.arrivals) and w is not None:
            env.process(c.source(load.arrivals, load.lengths, w.cpu_per_session,
                                 w.memory_gb_per_session))
    if every is not None:  # one check per branch, on its read-write compute if it has one
        for (instance, branch, _kind), group in sorted(by_type.items(),
                                                     key=lambda kv: kv[0][2] != "read_write"):
            if (instance, branch) not in checked:
                checked.add((instance, branch))
                env.process(group[0].check_availability(every))
    for action in scenario.actions:
        body = action.body or {}
        refs = action.references()
        if action.method != "PATCH" or "endpoint" not in body or len(refs) < 2:
            continue  # the peer models endpoint edits only
        ref = refs[-1]
        group = by_type.get((ref.instance_key, ref.branch or "", ref.compute_type or ""), [])
        if ref.compute_index < len(group):
            env.process(group[ref.compute_index].patch(fleet.count_from + action.at,
                                                       body["endpoint"]))
    env.run(until=fleet.count_from + scenario.duration)
    totals = Totals()
    for c in computes.values():
        if c.state in (ON, STOPPING):
            c.account()
        totals.arrivals += c.arrivals
        totals.sessions += c.sessions
        totals.refused += c.refused
        totals.queue_timeouts += c.queue_timeouts
        totals.cold_starts += c.cold_starts
        totals.on_s += c.on_s
        totals.cu_s += c.cu_s
        totals.per_compute[c.key] = {"arrivals": c.arrivals, "sessions": c.sessions,
                                     "refused": c.refused, "cold_starts": c.cold_starts,
                                     "on_s": c.on_s, "cu_s": c.cu_s}
    return totals


def main(argv: list[str] | None = None) -> int:
    from sim.scenario.loader import load_scenario

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path, help="scenario YAML file")
    args = parser.parse_args(argv)
    scenario = load_scenario(args.file)
    cpu = time.process_time()
    loads = draw_workloads(scenario)
    totals = run_peer(scenario, loads)
    cpu = time.process_time() - cpu
    print(f"{len(loads):,} computes, {totals.arrivals:,} arrivals, {totals.sessions:,} sessions, "
          f"{totals.refused:,} refused, {totals.queue_timeouts:,} queue timeouts, "
          f"{totals.cold_starts:,} cold starts, {totals.on_s / 3600:,.1f} h on, "
          f"{totals.cu_s / 3600:,.1f} CU-h; {cpu:.1f} CPU s = "
          f"{totals.arrivals / cpu:,.0f} sessions/CPU s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

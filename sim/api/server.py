"""The state behind `sim serve`: one control plane, its clock, keys, faults and one lock.

uvicorn runs the (sync) route handlers in worker threads, so every call into
the control plane and every move of its clock happens under `lock`: a
request sees the world at one instant and leaves it consistent.

Clock modes:
- manual: time moves only through `advance()` (POST /_sim/advance);
- realtime: before each request the world runs up to
  speed x (wall seconds since the server started), so polling an operation
  over HTTP sees it progress as a client of the real service would.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from sim.api.keys import ORG_ID, ApiKey, KeyStore, scenario_keys
from sim.engine.clock import DEFAULT_START
from sim.engine.config import EngineConfig
from sim.engine.control_plane import ControlPlane
from sim.engine.records import ActionRecord
from sim.rules.errors import ApiError, conflict, unavailable

if TYPE_CHECKING:
    from sim.engine.model import Compute
    from sim.scenario.schema import ComputeSpec, Scenario


class ClockMode(StrEnum):
    MANUAL = "manual"
    REALTIME = "realtime"


@dataclass
class Faults:
    """Injected trouble. The operation failure rate lives on the executor itself."""

    extra_latency_ms: float = 0.0
    outages: list[tuple[float, float]] = field(default_factory=list)  # [start, end) simulated s

    def in_outage(self, t: float) -> bool:
        return any(start <= t < end for start, end in self.outages)


class SimServer:
    def __init__(
        self,
        *,
        seed: int | None = None,
        clock: ClockMode | str = ClockMode.MANUAL,
        speed: float = 1.0,
        scenario: Scenario | None = None,
        config: EngineConfig | None = None,
        control_plane: ControlPlane | None = None,
        wall: Callable[[], float] = time.monotonic,
    ):
        """A server over a fresh control plane (or a scenario's fleet, or `control_plane`)."""
        if not speed > 0:
            raise ValueError("speed must be > 0")
        if seed is None:
            seed = scenario.seed if scenario is not None else 0
        self.seed = seed
        self.mode = ClockMode(clock)
        self.speed = float(speed)
        self.scenario = scenario
        self.config = config
        self.lock = threading.RLock()
        self.keys = KeyStore()
        self.faults = Faults()
        self.actions: list[ActionRecord] = []  # scenario actions run so far
        self._wall = wall
        self._request_ids = itertools.count(1)
        self._wrapped = control_plane is not None
        self.cp: ControlPlane = control_plane if control_plane is not None else self._build()
        self._wall_origin = wall()

    # -- building -----------------------------------------------------------------------
    def _build(self) -> ControlPlane:
        scenario = self.scenario
        if scenario is None:
            return ControlPlane(self.config, seed=self.seed, start=DEFAULT_START)
        from sim.scenario.runner import (
            Fleet,
            ScenarioRunError,
            attach_workloads,
            build_project,
            schedule_actions,
            schedule_releases,
        )

        cp = ControlPlane(scenario.engine_config(), seed=self.seed, start=scenario.start,
                          region_id=scenario.region_id,
                          plan=scenario.plan_of(scenario.projects[0]))
        fleet = Fleet()
        placed: list[tuple[Compute, ComputeSpec]] = []
        for inst in scenario.instances():
            try:
                placed += build_project(cp, scenario, inst, fleet)
            except ApiError as err:
                raise ScenarioRunError(f"{inst.key}: {err.message}") from None
        for project_id in fleet.projects.values():
            cp.projects[project_id].org_id = ORG_ID  # the fleet is the organization's
        attach_workloads(cp, scenario, placed)
        schedule_releases(cp, scenario)
        self.actions = []
        schedule_actions(cp, scenario, fleet, self.actions)
        faults = scenario.faults
        self.faults = Faults(faults.extra_latency_ms,
                             [(o.at, o.at + o.duration) for o in faults.outages])
        self.keys.discard_project_keys()
        scenario_keys(self.keys, scenario.keys, fleet.projects)
        return cp

    def reset(self) -> None:
        """A fresh control plane: same seed, scenario and keys; the clock back at 0."""
        if self._wrapped:
            raise conflict("reset", "this server wraps a control plane it did not build")
        with self.lock:
            self.faults = Faults()
            self.cp = self._build()
            self._wall_origin = self._wall()

    # -- keys ----------------------------------------------------------------------------
    def add_personal_key(self, secret: str | None = None) -> ApiKey:
        return self.keys.personal(secret)

    def authenticate(self, authorization: str | None) -> ApiKey:
        return self.keys.authenticate(authorization)

    def next_request_id(self) -> str:
        return f"req-{next(self._request_ids):08d}"

    # -- time ------------------------------------------------------------------------------
    def sync(self) -> None:
        """Realtime mode: run the world up to speed x wall seconds since the start."""
        if self.mode is ClockMode.REALTIME:
            self.cp.run_until(self.speed * (self._wall() - self._wall_origin))

    def advance(self, seconds: float) -> None:
        if self.mode is ClockMode.REALTIME:
            raise conflict("seconds", "the server runs a realtime clock; time moves by itself "
                                      "(start it with --clock manual to advance it by hand)")
        with self.lock:
            self.cp.advance(seconds)

    @contextmanager
    def world(self, *, api: bool = True) -> Iterator[ControlPlane]:
        """The control plane at the current instant, under the lock.

        `api` requests feel the injected faults: extra latency, then 503 during
        an outage window; the /_sim control calls never do.
        """
        if api and self.faults.extra_latency_ms > 0:
            time.sleep(self.faults.extra_latency_ms / 1000)
        with self.lock:
            self.sync()
            if api and self.faults.in_outage(self.cp.now):
                raise unavailable()
            yield self.cp

    # -- faults ------------------------------------------------------------------------------
    def set_faults(self, *, operation_failure_rate: float | None = None,
                   extra_latency_ms: float | None = None,
                   outage: tuple[float, float] | None = None, clear_outages: bool = False) -> None:
        """`outage` is (start_in_seconds, duration_seconds) from now, in simulated time."""
        with self.lock:
            self.sync()
            if operation_failure_rate is not None:
                self.cp.executor.failure_rate = operation_failure_rate
            if extra_latency_ms is not None:
                self.faults.extra_latency_ms = extra_latency_ms
            if clear_outages:
                self.faults.outages = []
            if outage is not None:
                start = self.cp.now + outage[0]
                self.faults.outages = [(start, start + outage[1])]

"""The state behind `sim serve`: one control plane, its clock, keys, faults and one lock.

uvicorn runs the (sync) route handlers in worker threads, so every call into
the control plane and every move of its clock happens under `lock`: a
request sees the world at one instant and leaves it consistent.

Clock modes:
- manual: time moves only through `advance()` (POST /_sim/advance);
- realtime: before each request the world runs up to
  speed x (wall seconds since the server started), so polling an operation
  over HTTP sees it progress as a client of the real service would.

Options of `sim serve` (docs/reliability.md): rate limits and the body cap
(`sim.api.limits`, read by its middleware), and a state file (`journal`,
`sim.api.journal`): every change of the world made here or through a route is
appended to it inside the lock, and every lock section waits, after leaving
the lock, until what it saw is committed.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import timedelta
from enum import StrEnum
from types import EllipsisType
from typing import TYPE_CHECKING

from sim.api import freed_memory
from sim.api.journal import CURRENT, Entry, Journal, StateError
from sim.api.keys import (
    ORG_ID,
    ApiKey,
    KeyKind,
    KeyRecord,
    KeyStore,
    new_secret,
    scenario_keys,
)
from sim.api.limits import DEFAULT_BODY_TIMEOUT_S, DEFAULT_MAX_BODY_BYTES, RateLimit, RateLimiter
from sim.engine.clock import DEFAULT_START
from sim.engine.config import ConnectionRecording, EngineConfig
from sim.engine.control_plane import MAX_SIMULATED_S, ControlPlane
from sim.engine.history_fold import HistoryFold
from sim.engine.records import ActionRecord
from sim.rules.errors import STOPPING, ApiError, conflict, not_found, unavailable

if TYPE_CHECKING:
    from sim.api.held_file import Unapplied
    from sim.api.kernel_advance import KernelAdvance
    from sim.engine.model import Compute
    from sim.scenario.schema import ComputeSpec, Scenario


log = logging.getLogger("sim.api.server")


#: the longest move of the clock made without leaving the lock: a request waits for at most
#: one such step of an advance (docs/reliability.md)
ADVANCE_STEP_S = 86_400.0


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


@dataclass
class FleetBuild:
    """What building a scenario's fleet leaves beside the world itself. A snapshot keeps it,
    so a restart from one needs no build (`sim.api.restore`)."""

    #: each instance of the scenario ("shop[0]") -> its project id: what the scenario's
    #: project-scoped `keys:` are scoped to
    projects: dict[str, str] = field(default_factory=dict)
    #: wall seconds the warm-up took here, for the simulated seconds it ran: what a step of
    #: the fleet costs (`sim.api.realtime_check`); kept, as timing it again would cost a build
    warm_up_wall_s: float = 0.0
    warm_up_s: float = 0.0


def _on_engine_clock(scenario: Scenario) -> Scenario:
    """The scenario on the engine's clock, which starts its warm-up before the scenario's
    start (the fleet is served from there)."""
    from sim.scenario.warm_up import led_by_warm_up

    return led_by_warm_up(scenario, scenario.warm_up_s)


class SimServer:
    cp: ControlPlane  # the world: built, given, or restored from a snapshot

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
        rate_limit: RateLimit | None = None,
        max_body_bytes: int | None = DEFAULT_MAX_BODY_BYTES,
        kernel: bool | None = None,
        advance_step_s: float = ADVANCE_STEP_S,
        build: bool = True,
    ):
        """A server over a fresh control plane (or a scenario's fleet, or `control_plane`).

        `rate_limit` None: not limited (the in-process client, dispatch); `sim serve`
        gives one. `max_body_bytes` None: no cap on request bodies. `kernel`: the
        computes advance in the compute kernel between calls (`sim.api.kernel_advance`);
        None: when serving a scenario's fleet. `advance_step_s`: the longest move of
        the clock between two looks at the waiting requests (`advance`). `build` False
        (a state file's server, `sim.api.restore`): no world yet; it is restored from a
        snapshot (`restore_world`) or built (`build_world`) before anything else.
        """
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
        self._turns = threading.Condition()  # who waits for the lock (_let_waiting_in)
        self._queued = self._entered = 0
        self.keys = KeyStore()
        self.keys.now = self._now_iso
        self.faults = Faults()
        self.actions: list[ActionRecord] = []  # scenario actions run so far
        self._wall = wall
        self._request_ids = itertools.count(1)
        self._wrapped = control_plane is not None
        self.kernel = scenario is not None if kernel is None else kernel
        self.advancing: KernelAdvance | None = None  # set by _build / restore_world
        self._engine_scenario: Scenario | None = None  # the scenario on the engine's clock
        self.fleet_build = FleetBuild()
        self._wall_origin = 0.0  # wall() when the world's clock was at 0 (_start_clock)
        self.journal: Journal | None = None  # sim serve --state (sim.api.state_file)
        #: a state file served read only up to a row its restart could not apply
        self.held: Unapplied | None = None  # (sim.api.held_file)
        self.advance_step_s = float(advance_step_s)
        self.snapshot_every: int | None = None  # journal rows between snapshots of the world
        self.replaying = False  # replaying a journal: no injected latency
        #: set when the server is asked to stop: whatever a request waits for ends at once
        self.stopping = threading.Event()
        self._thread = threading.local()  # lock depth of this thread (see _section)
        self.max_body_bytes = max_body_bytes
        #: seconds a request body may take to arrive whole (408 after); None: no limit
        self.body_timeout_s: float | None = DEFAULT_BODY_TIMEOUT_S
        self.limiter: RateLimiter | None = None if rate_limit is None else RateLimiter(
            rate_limit, self.limit_clock)
        if control_plane is not None:
            self.cp = control_plane
            self._start_clock()
        elif build:
            self.build_world()

    @property
    def warm_up_timed(self) -> tuple[float, float]:
        """(wall s, simulated s) of the fleet's warm-up: what a step of the fleet costs here."""
        return self.fleet_build.warm_up_wall_s, self.fleet_build.warm_up_s

    def _start_clock(self) -> None:
        """A realtime clock counts from the world's current instant (a scenario's: after
        its warm-up; a restored world's: where it stopped)."""
        self._wall_origin = self._wall() - self.cp.now / self.speed

    def configure(self, *, clock: ClockMode | str | None = None, speed: float | None = None,
                  rate_limit: RateLimit | None | EllipsisType = ...,
                  max_body_bytes: int | None | EllipsisType = ...) -> None:
        """Change the clock or the limits (`...`: leave as is); a restored server resumes
        with them. A realtime clock resumes at the world's current instant."""
        if speed is not None:
            if not speed > 0:
                raise ValueError("speed must be > 0")
            self.speed = float(speed)
        if clock is not None:
            self.mode = ClockMode(clock)
        self._start_clock()
        if not isinstance(rate_limit, EllipsisType):
            self.limiter = None if rate_limit is None else RateLimiter(rate_limit,
                                                                       self.limit_clock)
        if not isinstance(max_body_bytes, EllipsisType):
            self.max_body_bytes = max_body_bytes

    # -- building -----------------------------------------------------------------------
    def build_world(self) -> None:
        """The world made from the seed (and the scenario's fleet, run through its warm-up):
        a new server's, or a state file's that holds no snapshot it can load."""
        self.cp = self._served()
        self._start_clock()

    def _served(self) -> ControlPlane:
        """A control plane built to be served: it folds the history no API call reads
        (`sim.engine.history_fold`), once a simulated day."""
        cp = self._build()
        HistoryFold(cp).start()
        return cp

    def _build(self) -> ControlPlane:
        scenario = self.scenario
        if scenario is None:
            cp = ControlPlane(self.config, seed=self.seed, start=DEFAULT_START)
            cp.keep_usage()  # a served world answers its consumption history
            self.fleet_build = FleetBuild()
            self._engine_scenario = None
            self._kernel_for(cp)
            return cp
        from sim.scenario.runner import (
            Fleet,
            ScenarioRunError,
            attach_workloads,
            build_project,
            schedule_actions,
            schedule_releases,
        )

        # the fleet already exists: made a warm-up before the scenario's start, served from it
        warm_up = scenario.warm_up_s
        # events recorded: the API lists every operation, also those the kernel made
        config = replace(scenario.engine_config(), count_from_s=warm_up, record_events=True,
                         record_connections=ConnectionRecording.OFF)
        cp = ControlPlane(config, seed=self.seed,
                          start=scenario.start - timedelta(seconds=warm_up),
                          region_id=scenario.region_id,
                          plan=scenario.plan_of(scenario.projects[0]))
        cp.keep_usage()
        scenario = _on_engine_clock(scenario)
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
                             [(warm_up + o.at, warm_up + o.at + o.duration)
                              for o in faults.outages])
        built = FleetBuild(dict(fleet.projects))
        self._scenario_keys(built)
        self._engine_scenario = scenario
        self._kernel_for(cp)
        started = time.perf_counter()
        self._run_until(cp, warm_up)
        built.warm_up_wall_s, built.warm_up_s = time.perf_counter() - started, warm_up
        self.fleet_build = built
        return cp

    def _scenario_keys(self, built: FleetBuild) -> None:
        """The scenario's `keys:`, its project keys scoped to the projects of `built`."""
        if self.scenario is not None:
            self.keys.discard_project_keys()
            scenario_keys(self.keys, self.scenario.keys, built.projects)

    def _kernel_for(self, cp: ControlPlane) -> None:
        """The kernel's side of the world `cp` (none with the kernel off)."""
        self.advancing = None
        if self.kernel:  # the kernel (numba) is loaded only by a server that runs it
            from sim.api.kernel_advance import KernelAdvance

            self.advancing = KernelAdvance(cp, self._engine_scenario)

    def _run_until(self, cp: ControlPlane, t: float) -> None:
        fold = getattr(cp, "history_fold", None)
        folds = fold.folds if fold is not None else 0
        if self.advancing is not None and self.advancing.cp is cp:
            self.advancing.run_until(t)
        else:
            cp.run_until(t)
        if fold is not None and fold.folds != folds:
            freed_memory.give_back()  # what the fold freed (sim.api.freed_memory)

    def run_until(self, t: float) -> None:
        """Move the world's clock to `t` (under the lock), through the kernel when it is on."""
        self._run_until(self.cp, t)

    def reset(self) -> None:
        """A fresh control plane: same seed, scenario and keys; the clock back at 0."""
        if self._wrapped:
            raise conflict("reset", "this server wraps a control plane it did not build")
        with self._section():
            self.faults = Faults()
            self.build_world()
            self._journal(Entry("reset", 0.0))

    # -- keys ----------------------------------------------------------------------------
    def add_personal_key(self, secret: str | None = None) -> ApiKey:
        return self.keys.personal(secret)

    def authenticate(self, authorization: str | None) -> ApiKey:
        return self.keys.authenticate(authorization)

    @property
    def saved_keys(self) -> dict[str, ApiKey]:
        """Keys restored from the state file, by the SHA-256 of their secret."""
        return self.keys.hashed

    def _now_iso(self) -> str | None:
        cp = getattr(self, "cp", None)
        return None if cp is None else cp.clock.iso(cp.now)

    def keep_key(self, key: ApiKey) -> KeyRecord | None:
        """With a state file: keep `key` (as the hash of its secret), durable on return."""
        record = self.keys.record_of(key.secret)
        if self.journal is not None and record is not None:
            self.journal.save_key(record)
        return record

    def create_api_key(self, name: str) -> tuple[KeyRecord, str]:
        """A new personal key: (its record, its secret: shown once, never kept)."""
        with self._section():
            secret = new_secret()
            self.keys.personal(secret, name=name)
            record = self.keys.record_of(secret)
            assert record is not None
            self._journal(Entry("key", 0.0, {"record": record}))
        return record, secret

    def create_org_api_key(self, name: str, org_id: str,
                           project_id: str | None = None) -> tuple[KeyRecord, str]:
        """A new organization key, or one scoped to a project of the organization."""
        with self._section():
            if project_id is not None:  # a live project of the organization (else 404)
                project = self.cp.projects.get(project_id)
                if project is None or project.deleted_at is not None or project.org_id != org_id:
                    raise not_found("project", project_id, "project_id")
            secret = new_secret()
            kind = KeyKind.PROJECT if project_id else KeyKind.ORGANIZATION
            self.keys.add(ApiKey(secret, kind, org_id=org_id, project_id=project_id), name)
            record = self.keys.record_of(secret)
            assert record is not None
            self._journal(Entry("key", 0.0, {"record": record}))
        return record, secret

    def api_key_records(self) -> list[KeyRecord]:
        """The keys accepted now; with a state file, answered once all it shows is on disk."""
        with self._section():
            return self.keys.records()

    def revoke_api_key(self, key_id: int) -> KeyRecord | None:
        """Revoke a key by id, journaled (refused from now on, also after a restart);
        None when no accepted key has that id."""
        with self._section():
            return self.keys.revoke_id(key_id)

    def _key_revoked(self, record: KeyRecord) -> None:
        with self._section():
            self._journal(Entry("key", 0.0, {"record": record}))

    def close_state(self, wait_s: float = 60.0) -> None:
        """A clean stop: snapshot the world, commit, fold the -wal into the file, close it.

        The snapshot is written by a forked copy (`sim.api.snapshot_fork`) and waited for
        up to `wait_s` seconds (`sim serve` on SIGTERM: a short wait, so a stop is quick);
        one not written by then is given up: the journal holds everything, and the next
        start replays the rows since the last snapshot. None is taken when nothing was
        journaled since the latest one."""
        journal = self.journal
        if journal is None:
            return
        try:
            if not journal.failed and journal.since_snapshot > 0:
                from sim.api import snapshot, snapshot_fork  # a server with a state file's

                with self._section():
                    snapshot.dumps([])  # the codec's modules loaded here, not in the copy
                    world = snapshot_fork.capture(self.world_state(), journal.poke)
                    journal.append(Entry("snapshot", self.cp.now, {"world": world}))
        except Exception as err:  # noqa: BLE001 - the stop goes on: the journal has it all
            log.error("state file: no snapshot at the stop (%s: %s); the next start replays "
                      "the journal", type(err).__name__, err)
        finally:
            journal.close(wait_s)

    def attach_journal(self, journal: Journal) -> None:
        self.journal = journal
        self.keys.on_revoke = self._key_revoked

    # -- snapshots of the world (sim serve --state) -------------------------------------------
    def world_state(self) -> tuple[object, ...]:
        """What a snapshot holds: everything that changes as the world runs, and what the
        build of a scenario's fleet left beside it."""
        return self.cp, self.faults, self.actions, self.fleet_build

    def restore_world(self, state: tuple[object, ...]) -> None:
        """The world of a snapshot (`world_state`), in place of this server's or before it
        has one: no fleet is built, what a build sets beside the world is set from it."""
        cp, faults, actions, built = state
        self.cp, self.faults, self.actions = cp, faults, actions  # type: ignore[assignment]
        # where auth keeps its databases is this server's, never a snapshot's: in memory
        self.cp.auth.data_dir = None
        self.fleet_build = built  # type: ignore[assignment]
        self._scenario_keys(self.fleet_build)
        self._engine_scenario = None if self.scenario is None else _on_engine_clock(self.scenario)
        self._kernel_for(self.cp)  # a snapshot holds a plain engine world: nothing of it
        self._start_clock()

    def _periodic_snapshot(self, journal: Journal) -> None:
        """A snapshot on the way out of a lock section, encoded by a forked copy of the
        process (`sim.api.snapshot_fork`): the lock is held only for the fork. If the world
        cannot be encoded (a bug), the request that happened to cross the line must not
        fail for it: say so once and go on without snapshots (restarts replay the journal)."""
        from sim.api import snapshot, snapshot_fork  # a server with a state file's

        try:
            snapshot.dumps([])  # the codec's modules loaded here, not in every copy
            world = snapshot_fork.capture(self.world_state(), journal.poke)
        except Exception as err:  # noqa: BLE001 - any failure: snapshots off, service on
            log.error("state file: cannot snapshot the world (%s: %s); restarts will replay "
                      "the whole journal", type(err).__name__, err)
            self.snapshot_every = None
            return
        journal.append(Entry("snapshot", self.cp.now, {"world": world}))

    def take_snapshot(self) -> None:
        """Append a snapshot of the world to the journal (under the lock)."""
        from sim.api import snapshot  # a server with a state file's

        with self._section():
            if self.journal is not None:
                self.journal.append(Entry("snapshot", self.cp.now,
                                          {"world": snapshot.dumps(self.world_state())}))

    def snapshot_if_due(self) -> None:
        """Take the periodic snapshot now if it is due (at a start that replayed many rows)."""
        with self._section():
            pass  # leaving the section takes it when due

    def next_request_id(self) -> str:
        return f"req-{next(self._request_ids):08d}"

    # -- time ------------------------------------------------------------------------------
    def sync(self) -> None:
        """Realtime mode: run the world up to speed x wall seconds since the start."""
        if self.mode is ClockMode.REALTIME:
            self.run_until(self.speed * (self._wall() - self._wall_origin))

    def limit_clock(self) -> float:
        """The clock rate limits are measured on: simulated seconds in realtime mode
        (speed x wall), wall seconds in manual mode (simulated time stands still there)."""
        if self.mode is ClockMode.REALTIME:
            return self.speed * self._wall()
        return self._wall()

    def wall_seconds(self, limit_seconds: float) -> float:
        """A wait on `limit_clock`, in wall seconds (what Retry-After tells a client)."""
        return limit_seconds / self.speed if self.mode is ClockMode.REALTIME else limit_seconds

    def advance(self, seconds: float) -> None:
        """Run the world `seconds` forward in steps of at most `advance_step_s`, leaving the
        lock between them so that requests get in (each sees the world at a step's end);
        each step is journaled as an advance of its own."""
        if self.mode is ClockMode.REALTIME:
            raise conflict("seconds", "the server runs a realtime clock; time moves by itself "
                                      "(start it with --clock manual to advance it by hand)")
        ctx = CURRENT.get()
        if ctx is not None and ctx.server is self:
            # its steps are its journal rows, and it may have none: another advance may have
            # reached its target first. A row of the request itself would, replayed, move
            # the clock a whole `seconds` again
            ctx.journaled = True
        with self._section():
            if not (isinstance(seconds, (int, float)) and seconds >= 0) \
                    or self.cp.now + seconds > MAX_SIMULATED_S:
                self.cp.advance(seconds)  # refuses it, naming the field, before any move
            target = self.cp.now + seconds
        while True:
            with self._section():
                if self.cp.now >= target:
                    return
                if self.stopping.is_set():  # each step done is journaled: the rest is not
                    at = self.cp.clock.iso(self.cp.now)
                    raise unavailable(f"the server is stopping; the clock was advanced to {at} "
                                      f"({self.cp.now:g} s), {target - self.cp.now:g} s short "
                                      f"of the advance asked (advance the rest once the "
                                      f"server is back)")
                self.run_until(min(target, self.cp.now + self.advance_step_s))
                self._journal(Entry("advance", self.cp.now))
            self._let_waiting_in()

    def _let_waiting_in(self, most_s: float = 1.0) -> None:
        """Between two steps of an advance: let the requests waiting for the lock now take
        it first (a lock is not fair: the advancing thread would take it again at once), for
        at most `most_s` wall seconds."""
        with self._turns:
            due = self._entered + self._queued  # those waiting now (this thread is not)
            self._turns.wait_for(lambda: self._entered >= due, timeout=most_s)

    def stop_waiting(self) -> None:
        """The server is asked to stop: a request waiting out an injected latency answers
        503 (not applied) at once, and an advance ends after the step under way."""
        self.stopping.set()

    @contextmanager
    def world(self, *, api: bool = True) -> Iterator[ControlPlane]:
        """The control plane at the current instant, under the lock.

        `api` requests feel the injected faults: extra latency, then 503 during
        an outage window; the /_sim control calls never do.

        With a state file, a mutating request that leaves without a refusal is
        journaled at the instant it was applied (a refusal changes nothing).
        """
        if api and self.faults.extra_latency_ms > 0 and not self.replaying:
            # a wait a stop ends (`stop_waiting`): the request was not applied
            if self.stopping.wait(self.faults.extra_latency_ms / 1000):
                raise unavailable(STOPPING)
        with self._section():
            self.sync()
            if api and self.faults.in_outage(self.cp.now):
                raise unavailable()
            at = self.cp.now
            try:
                yield self.cp
            except ApiError:
                raise
            except Exception:
                self._journal_request(at, "error")  # it may have changed something first
                raise
            self._journal_request(at, "applied")

    # -- the state file ------------------------------------------------------------------
    @contextmanager
    def _section(self) -> Iterator[None]:
        """The lock; leaving the outermost section, wait until what it saw is committed."""
        local = self._thread
        depth = getattr(local, "depth", 0)
        seen = None
        with self._turns:
            self._queued += 1  # a request waiting for the lock (see _let_waiting_in)
        try:
            with self.lock:
                with self._turns:
                    self._queued -= 1
                    self._entered += 1
                    self._turns.notify_all()
                if self.journal is not None and self.journal.failed:
                    raise unavailable("the state file cannot be written; restart the server")
                local.depth = depth + 1
                try:
                    yield
                finally:
                    local.depth = depth
                    journal = self.journal
                    if journal is not None and depth == 0:
                        if self.mode is ClockMode.REALTIME:
                            journal.note_clock(self.cp.now)
                        every = self.snapshot_every
                        # stopping: the stop takes its own, without waiting for a copy
                        if (every is not None and journal.since_snapshot >= every
                                and not self.stopping.is_set()):
                            journal.wait_for_copy()  # the last one lands first
                            self._periodic_snapshot(journal)
                        seen = journal.appended
        finally:
            if seen:
                try:
                    self.journal.wait_durable(seen)  # type: ignore[union-attr]
                except StateError:  # not on disk: not acknowledged (the log has the cause)
                    raise unavailable("the state file cannot be written; restart the "
                                      "server") from None

    def _journal(self, entry: Entry) -> None:
        """Append a change of the world made by this server (under the lock)."""
        if self.journal is None:
            return
        ctx = CURRENT.get()
        if ctx is not None and ctx.server is self:
            ctx.journaled = True  # the request that asked for it needs no entry of its own
        self.journal.append(entry)

    def _journal_request(self, at: float, outcome: str) -> None:
        ctx = CURRENT.get()
        if (self.journal is None or ctx is None or ctx.server is not self or ctx.journaled
                or not ctx.mutating):
            return
        ctx.journaled = True
        self.journal.append_request(ctx, at, outcome)

    # -- faults ------------------------------------------------------------------------------
    def set_faults(self, *, operation_failure_rate: float | None = None,
                   extra_latency_ms: float | None = None,
                   outage: tuple[float, float] | None = None, clear_outages: bool = False) -> None:
        """`outage` is (start_in_seconds, duration_seconds) from now, in simulated time."""
        with self._section():
            self.sync()
            self._journal(Entry("faults", self.cp.now, {"args": json.dumps({
                "operation_failure_rate": operation_failure_rate,
                "extra_latency_ms": extra_latency_ms, "outage": outage,
                "clear_outages": clear_outages})}))
            if operation_failure_rate is not None:
                self.cp.executor.failure_rate = operation_failure_rate
            if extra_latency_ms is not None:
                self.faults.extra_latency_ms = extra_latency_ms
            if clear_outages:
                self.faults.outages = []
            if outage is not None:
                start = self.cp.now + outage[0]
                self.faults.outages = [(start, start + outage[1])]

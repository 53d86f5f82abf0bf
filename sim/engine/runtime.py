"""What happens inside one compute while time passes: connections, the pooler's
queue, the scale-to-zero countdown and the autoscaler.

Cost matters here (a month of a large fleet is tens of millions of sessions),
so a session is not a SimPy process. Each compute keeps one timer, armed at
the next instant something can change state: the next arrival of its
workload, the end of its scale-to-zero countdown, the next change of load the
autoscaler must see, or a pending resize. Session ends are kept in heaps and
expired lazily when the compute is next looked at: an end changes nothing
until then, except what the timer is already armed for. A session therefore
costs about one SimPy event.

This is the per-session form of a compute's physics, for computes the SimPy
engine runs itself: under `sim serve`, and in scenario runs for projects that
scripted calls still touch. Scenario runs otherwise advance computes with the
compiled kernel of `sim.kernel.physics`, which makes the same decisions in the
same order; the two are held equal by tests on random workloads.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from sim.engine.config import ConnectionRecording
from sim.engine.model import Compute, ComputeStats
from sim.engine.records import ConnectionRecord, Outcome, StateInterval
from sim.engine.scheduling import timeout_at
from sim.rules.connections import POOLER_MAX_CLIENTS, default_pool_size
from sim.rules.sizes import RAM_GB_PER_CU, step_up, temp_disk_bytes
from sim.rules.states import ComputeState

if TYPE_CHECKING:
    from sim.engine.control_plane import ControlPlane

INF = math.inf
ACTIVE = ComputeState.ACTIVE.value
IDLE = ComputeState.IDLE.value
INIT = ComputeState.INIT.value
WAITING = "waiting"  # returned by connect(): the compute is starting; the session follows


#: where the counts of a client of the warm-up go: a tally no figure reads
_UNCOUNTED = ComputeStats()


class SessionArrays(NamedTuple):
    """A batch of sessions of a workload, as Python lists (fast scalar access)."""

    arrival_s: list[float]
    duration_s: list[float]
    cpu: list[float]
    memory_gb: list[float]
    temp_bytes: list[float]


class ComputeRuntime:
    __slots__ = (
        "cp", "env", "c", "config", "open_ends", "server_ends", "client_ends", "waiting",
        "load_ends", "load_starts", "cpu_load", "mem_load", "temp_ends", "leaving", "busy_until",
        "quiet_since", "armed_at", "armed_sched", "resize_at", "feed", "batch", "idx", "next_arrival",
        "wake_at", "wake_cause", "iv_state", "iv_cu", "iv_start", "max_conn", "pool_size",
        "disk_bytes", "record_mode", "sample_rng", "sample_rate", "recorder", "idle_timeout",
        "external", "activated_at", "open_records", "consumed",
    )

    def __init__(self, cp: ControlPlane, compute: Compute):
        self.cp = cp
        self.env = cp.env
        self.c = compute
        self.config = cp.config
        self.recorder = cp.recorder
        self.open_ends: list[float] = []  # direct: ends of admitted sessions
        self.server_ends: list[float] = []  # pooled: when each server connection frees up
        self.client_ends: list[float] = []  # pooled: when each client leaves
        #: pooled clients that leave without a session (a queue timeout, or 53100 at their
        #: turn), when they leave: they are in client_ends too, but a cut drops none of them
        self.leaving: list[float] = []
        self.waiting: list[tuple[float, float, float, float, float]] = []  # until started
        self.load_ends: list[tuple[float, float, float]] = []  # (end, cpu, memory GB)
        #: (start, cpu, memory GB) of queued sessions: their load counts from their start
        self.load_starts: list[tuple[float, float, float]] = []
        self.cpu_load = 0.0
        self.mem_load = 0.0
        #: (end, bytes, start): a session holds its temporary files while it runs
        self.temp_ends: list[tuple[float, float, float]] = []
        self.busy_until = -INF  # latest end of an admitted session
        self.quiet_since = self.env.now  # last activity: the countdown runs from here
        self.armed_at = INF
        self.armed_sched = 0.0  # when the pending timer was set: orders ties with others
        self.resize_at: float | None = None
        self.feed: Iterator[SessionArrays] | None = None
        self.batch: SessionArrays | None = None
        self.idx = 0
        self.consumed = 0  # sessions of the workload that have arrived so far
        self.next_arrival = INF
        self.wake_at: float | None = None
        self.wake_cause = ""
        self.iv_state = compute.current_state
        self.iv_cu = compute.cu
        self.iv_start = self.env.now
        #: set when the kernel computes this compute's timeline instead of SimPy
        self.external = False
        self.activated_at: float | None = None
        self.record_mode = self.config.record_connections
        self.sample_rate = self.config.connection_sample_rate
        self.sample_rng: np.random.Generator | None = None  # drawn from only when sampling
        #: indices in the recorder's connections of recorded sessions that may still be open:
        #: a restart, suspension or deletion rewrites them as cut
        self.open_records: list[int] = []
        self.refresh_settings()

    # -- configuration -----------------------------------------------------
    def refresh_settings(self) -> None:
        """Re-read what the compute's settings imply (after an edit)."""
        c = self.c
        self.idle_timeout = c.idle_timeout_s
        self.max_conn = c.max_connections(self.config.autoscaling_connections)
        self.pool_size = c.pool_size or default_pool_size(self.max_conn, self.config.pool_share)
        self.disk_bytes = float(temp_disk_bytes(c.autoscaling_limit_max_cu))

    def attach_workload(self, feed: Iterator[SessionArrays]) -> None:
        self.feed = feed
        self._next_batch()
        self.arm()

    def _next_batch(self) -> None:
        assert self.feed is not None
        for batch in self.feed:
            if batch.arrival_s:
                self.batch, self.idx = batch, 0
                self.next_arrival = batch.arrival_s[0]
                return
        self.batch, self.next_arrival = None, INF

    # -- the timer ---------------------------------------------------------
    def deadline(self) -> float | None:
        """When scale to zero suspends this compute if nothing else happens."""
        c = self.c
        timeout = self.idle_timeout
        if (
            timeout is None
            or c.current_state != ACTIVE
            or c.pending_state is not None
            or self.waiting
            or c.deleted
            or self.cp.executor.lane_busy(c.id)
        ):
            return None
        return max(self.busy_until, self.quiet_since) + timeout

    def arm(self, deadline: float | None | bool = False) -> None:
        """Make sure the timer fires at the next instant something can change.

        `deadline` saves recomputing it when the caller just did (False: compute it)."""
        if self.external:
            return
        t = self.next_arrival
        d = self.deadline() if deadline is False else deadline
        if d is not None and d < t:
            t = d
        # a session end can only lower the autoscaler's goal: it matters above the minimum
        if self.load_ends and self.c.cu > self.c.autoscaling_limit_min_cu and self.load_ends[0][0] < t:
            t = self.load_ends[0][0]
        if self.load_starts and self.load_starts[0][0] < t:  # a queued session's load begins
            t = self.load_starts[0][0]
        if self.resize_at is not None and self.resize_at < t:
            t = self.resize_at
        if t < self.armed_at:
            self.armed_at = t
            self.armed_sched = self.env.now
            # a deadline already passed (the lane was busy, or the timeout shortened): fire now
            ev = timeout_at(self.env, max(t, self.env.now))
            ev.callbacks.append(lambda _ev, at=t: self._fire(at))

    def _fire(self, at: float) -> None:
        if at != self.armed_at:  # a later timer that an earlier re-arm made stale
            return
        self.armed_at = INF
        c = self.c
        if c.deleted:
            return
        now = self.env.now
        while self.next_arrival <= now:
            self._arrive_next()
        if self._load_due(now):
            self._expire_load(now)
            self._load_changed()
        if self.resize_at is not None and self.resize_at <= now:
            self._resize()
        d = self.deadline()
        if d is not None and d <= now:
            self.cp.scale_to_zero(c)
            self.arm()
        else:
            self.arm(d)

    def _arrive_next(self) -> None:
        b = self.batch
        assert b is not None
        i = self.idx
        self.consumed += 1
        self.connect(b.arrival_s[i], b.duration_s[i], b.cpu[i], b.memory_gb[i], b.temp_bytes[i])
        i += 1
        if i < len(b.arrival_s):
            self.idx = i
            self.next_arrival = b.arrival_s[i]
        else:
            self._next_batch()

    # -- connections -------------------------------------------------------
    def _expire(self, now: float) -> None:
        for heap in (self.open_ends, self.server_ends, self.client_ends, self.leaving):
            while heap and heap[0] <= now:
                heapq.heappop(heap)
        temp = self.temp_ends
        while temp and temp[0][0] <= now:
            heapq.heappop(temp)
        if self._load_due(now):
            self._expire_load(now)

    def _temp_at(self, t: float) -> float:
        """Bytes of temporary files held at `t` (now or later) by the sessions admitted so far:
        those running then. Summed in heap order, as the compute kernel sums them."""
        used = 0.0
        for end, size, start in self.temp_ends:
            if start <= t < end:
                used += size
        return used

    def held(self) -> int:
        """Client sessions open now: direct ones and pooled ones. Both count, whatever the
        pooler setting is now: turning the pooler on or off cuts no session."""
        return len(self.open_ends) + len(self.client_ends)

    def open_connections(self, now: float) -> int:
        self._expire(now)
        return self.held() + len(self.waiting)

    def last_active(self, now: float) -> float | None:
        c = self.c
        if self.busy_until > -INF:
            busy = min(self.busy_until, now)
            return busy if c.last_active is None else max(c.last_active, busy)
        return c.last_active

    def connect(
        self, t: float, duration: float, cpu: float = 0.0, mem: float = 0.0, temp: float = 0.0
    ) -> str:
        """A client opens a connection at `t` and keeps it for `duration` seconds."""
        c = self.c
        self.quiet_since = t  # every connection resets the scale-to-zero countdown
        c.last_active = t
        if c.deleted or c.disabled:
            return self._refuse(t, duration, Outcome.REFUSED_DISABLED)
        self._expire(t)
        if c.pooler_enabled:
            if len(self.client_ends) + len(self.waiting) >= POOLER_MAX_CLIENTS:
                return self._refuse(t, duration, Outcome.REFUSED_POOLER_FULL)
        elif (len(self.open_ends) + len(self.server_ends) + len(self.waiting)
              >= self.max_conn):  # the pool's server connections are Postgres connections too
            return self._refuse(t, duration, Outcome.REFUSED_TOO_MANY)
        if c.current_state != ACTIVE or c.pending_state is not None:
            self.waiting.append((t, duration, cpu, mem, temp))
            if c.current_state == IDLE and c.pending_state is None:
                self.cp.wake(c, "connection")
            return WAITING
        return self._admit(t, t, duration, cpu, mem, temp, False)

    def _refuse(self, t: float, duration: float, outcome: str) -> str:
        self._count_refused(outcome, t)
        self._record(t, 0.0, duration, outcome, False)
        return outcome

    def _count_refused(self, outcome: str, arrival: float) -> None:
        """Each cause of a refusal has its own count; `refused` is 53300 alone."""
        if arrival < self.config.count_from_s:  # a client of the warm-up is in no figure
            return
        stats = self.c.stats
        if outcome == Outcome.REFUSED_TOO_MANY:
            stats.refused += 1
        elif outcome == Outcome.REFUSED_POOLER_FULL:
            stats.refused_pooler_full += 1
        else:
            stats.refused_disabled += 1

    def _admit(
        self, arrival: float, now: float, d: float, cpu: float, mem: float, temp: float, cold: bool
    ) -> str:
        c = self.c
        # a client of the warm-up is in no figure: its counts go to a scratch tally
        stats = c.stats if arrival >= self.config.count_from_s else _UNCOUNTED
        # The client's fate is decided now, at its admission: a pooled client that would wait
        # past the queue timeout gives up; else its session starts when a server connection
        # frees up, and from then (not while it waits) it runs and holds its files and load.
        start = now
        slot = self._next_slot() if c.pooler_enabled else None
        if slot is not None:
            start = slot[0]
            if start - now > self.config.pool_queue_timeout_s:
                stats.queue_timeouts += 1
                self._leave(now + self.config.pool_queue_timeout_s)
                self._record(arrival, now - arrival, d, Outcome.QUEUE_TIMEOUT, cold)
                return Outcome.QUEUE_TIMEOUT
        if temp > 0.0 and self._temp_at(start) + temp > self.disk_bytes:
            stats.disk_full += 1  # SQLSTATE 53100: no space left on device, at its turn
            if start > now:  # a client of the pooler until then; its server connection
                self._leave(start)  # passes on at once
            self._record(arrival, start - arrival, d, Outcome.DISK_FULL, cold)
            return Outcome.DISK_FULL
        if c.pooler_enabled:
            if slot is not None:
                heapq.heappop(slot)  # the slot passes to this session when it frees
                stats.queued += 1
                stats.queue_wait_s += start - now
            end = start + d
            heapq.heappush(self.server_ends, end)
            heapq.heappush(self.client_ends, end)
        else:
            end = now + d
            heapq.heappush(self.open_ends, end)
        held = self.held()
        if temp > 0.0:
            heapq.heappush(self.temp_ends, (end, temp, start))
        stats.sessions += 1
        if held > c.stats.peak_connections and now >= self.config.count_from_s:
            c.stats.peak_connections = held
        if end > self.busy_until:
            self.busy_until = end
        if (cpu > 0.0 or mem > 0.0) and not c.fixed_size:
            heapq.heappush(self.load_ends, (end, cpu, mem))
            if start > now:  # queued: the autoscaler sees it when it starts (arm())
                heapq.heappush(self.load_starts, (start, cpu, mem))
            else:
                self.cpu_load += cpu
                self.mem_load += mem
                self._load_changed()
        if self._record(arrival, start - arrival, d, Outcome.OK, cold):
            self.open_records.append(len(self.recorder.connections) - 1)
            if len(self.open_records) > 2 * held + 64:  # forget the ones that ended
                rows = self.recorder.connections
                self.open_records = [i for i in self.open_records
                                     if rows[i].arrival_s + rows[i].wait_s + rows[i].duration_s > now]
        return Outcome.OK

    def _leave(self, at: float) -> None:
        """A pooled client that gets no session stays a client of the pooler until `at`."""
        heapq.heappush(self.client_ends, at)
        heapq.heappush(self.leaving, at)

    def _next_slot(self) -> list[float] | None:
        """When a pooled session must queue: the heap whose first end frees its slot.

        The pool holds at most pool_size server connections, and never more than the
        Postgres connections that direct sessions leave free (direct sessions are only
        there when the pooler was turned on while they were open)."""
        servers, direct = self.server_ends, self.open_ends
        if not direct:
            return servers if len(servers) >= self.pool_size else None
        if len(servers) < min(self.pool_size, self.max_conn - len(direct)):
            return None
        if len(servers) >= self.pool_size or (servers and servers[0] <= direct[0]):
            return servers
        return direct

    def _record(self, arrival: float, wait: float, d: float, outcome: str, cold: bool) -> bool:
        """Append a connection record (unless recording is off or the sample skips it)."""
        # counted whatever the rows keep; a client of the warm-up is in no figure
        if self.c.pooler_enabled and not cold and arrival >= self.config.count_from_s:
            self.recorder.engine_queue.setdefault(self.c.id, []).append((wait, outcome))
        mode = self.record_mode
        if mode is ConnectionRecording.OFF:
            return False
        if mode is ConnectionRecording.SAMPLED:
            if self.sample_rng is None:
                self.sample_rng = self.cp.streams.get(f"connection-sample/{self.c.key}")
            if self.sample_rng.random() >= self.sample_rate:
                return False
        c = self.c
        self.recorder.connections.append(
            ConnectionRecord(c.id, c.project_id, arrival, wait, d, outcome, cold)
        )
        return True

    def drop_all(self, now: float, outcome_waiting: str | None = None) -> int:
        """Cut every open session (restart, resize, suspend, delete). Returns how many.

        Their records say so: outcome dropped, and the time they had up to the cut. Clients
        of the pooler that were to leave without a session keep their outcome."""
        self._expire(now)
        held = self.held() - len(self.leaving)
        if now >= self.config.count_from_s:
            self.c.stats.dropped += held
        rows = self.recorder.connections
        for i in self.open_records:
            row = rows[i]
            began = row.arrival_s + row.wait_s
            if row.outcome == Outcome.OK and began + row.duration_s > now:
                rows[i] = row._replace(outcome=Outcome.DROPPED, duration_s=max(0.0, now - began))
        self.open_records.clear()
        self.open_ends.clear()
        self.server_ends.clear()
        self.client_ends.clear()
        self.leaving.clear()
        self.temp_ends.clear()
        self.load_ends.clear()
        self.load_starts.clear()
        self.cpu_load = self.mem_load = 0.0
        if self.busy_until > now:  # cut short; never invent activity for an unused compute
            self.busy_until = now
        self.quiet_since = now
        if outcome_waiting is not None:  # the compute is going away: waiting clients too
            for arrival, d, *_ in self.waiting:
                self._count_refused(outcome_waiting, arrival)
                self._record(arrival, now - arrival, d, outcome_waiting, True)
            self.waiting.clear()
        return held

    # -- starting and stopping ---------------------------------------------
    def activated(self) -> None:
        """The compute became active: admit everyone who waited for it."""
        now = self.env.now
        if self.external:  # the kernel takes it from here
            self.activated_at = now
            return
        self.quiet_since = now
        self._expire(now)
        waiting, self.waiting = self.waiting, []
        for arrival, d, cpu, mem, temp in waiting:
            self._admit(arrival, now, d, cpu, mem, temp, True)
        self.arm()

    # -- autoscaling -------------------------------------------------------
    def goal_cu(self) -> float:
        c = self.c
        cfg = self.config.autoscaler
        need = max(
            self.cpu_load / cfg.target_cpu_utilisation,
            self.mem_load / (RAM_GB_PER_CU * cfg.target_memory_utilisation),
            c.autoscaling_limit_min_cu,
        )
        return min(step_up(need), c.autoscaling_limit_max_cu)

    def _load_changed(self) -> None:
        if self.resize_at is None and self.goal_cu() != self.c.cu:
            self.resize_at = self.env.now + self.config.autoscaler.reaction_delay_s

    def _load_due(self, now: float) -> bool:
        return bool((self.load_starts and self.load_starts[0][0] <= now)
                    or (self.load_ends and self.load_ends[0][0] <= now))

    def _expire_load(self, now: float) -> None:
        """The load of sessions that started and ended by `now` (starts first: a session's
        end never comes before its start)."""
        starts = self.load_starts
        started = bool(starts) and starts[0][0] <= now
        while starts and starts[0][0] <= now:
            _, cpu, mem = heapq.heappop(starts)
            self.cpu_load += cpu
            self.mem_load += mem
        heap = self.load_ends
        while heap and heap[0][0] <= now:
            _, cpu, mem = heapq.heappop(heap)
            self.cpu_load -= cpu
            self.mem_load -= mem
        if not heap:  # keep float sums exact at rest
            self.cpu_load = self.mem_load = 0.0
        if started:  # a rise the autoscaler reacts to, whoever noticed it
            self._load_changed()

    def _resize(self) -> None:
        """An automatic resize: no restart, no dropped connection (the specification #3)."""
        self._expire_load(self.env.now)  # (a start noticed here needs no resize of its own)
        self.resize_at = None
        c = self.c
        if c.current_state == ACTIVE:
            goal = self.goal_cu()
            if goal != c.cu:
                c.cu = goal
                self.note_state()

    # -- accounting ----------------------------------------------------------
    def note_state(self) -> None:
        """Close the current state interval if the state or size changed."""
        c = self.c
        if c.current_state == self.iv_state and c.cu == self.iv_cu:
            return
        self.close_interval(self.env.now)
        self.iv_state, self.iv_cu = c.current_state, c.cu

    def close_interval(self, now: float) -> None:
        length = now - self.iv_start
        if length > 0:
            c = self.c
            self.recorder.intervals.append(
                StateInterval(c.id, c.project_id, self.iv_state, self.iv_cu, self.iv_start, now)
            )
            if self.iv_state != IDLE and self.cp.usage is not None:  # the consumption history
                self.cp.usage.add(c.id, self.iv_cu, self.iv_start, now)
            counted = now - max(self.iv_start, self.config.count_from_s)  # not the warm-up
            if self.iv_state != IDLE and counted > 0:
                c.stats.active_s += counted
                c.stats.cu_s += self.iv_cu * counted
        self.iv_start = now

"""A Hypothesis state machine: the ControlPlane beside a small model of the specification's rules.

The model keeps what the specification decides on its own terms: which compute sits on
which branch with which type, every host ever handed out, each connection the
machine opened, and the calls that cut connections. From that and what the
API shows (current_state, pending_state, the operations list) it predicts the
answer of every call: success with the operations the specification names, or a refusal
with an exact status (409 a second read_write on a branch, 422 restart of a
compute that is not active, 423 an operation of the compute not finished).
A refusal must leave the whole state as it was (`state_digest`).

Invariants, after every step: at most one read_write per branch, and the
topology is the model's; current_state is init, idle or active; a terminal
operation never changes again; at most one operation of a compute runs at a
time and pending_state tells which; every connection made is recorded; a
compute holding an open session is active; a compute with nothing open for
longer than its timeout (after its operations ended) is idle; an active
compute's project is attached and its branch unarchived; paging through the
operations gives each exactly once, newest first.

The set-up draws the seed, a failure rate (failed attempts are retried),
whether storage detaches/archives after 300 s idle, and whether branches are
checked every 100 s. Durations are fixed (exact binary fractions), so replays
are exact.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from hypothesis import event, note
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
)

from sim.engine.config import EngineConfig
from sim.engine.control_plane import ControlPlane
from sim.engine.model import Compute, Operation
from sim.engine.records import Outcome
from sim.rules.errors import ApiError
from sim.rules.operations import Action
from sim.rules.states import TERMINAL_STATUSES
from sim.rules.timeouts import effective_suspend_timeout
from sim.workload.distributions import Distribution

COLD_S = 2.0
OP_S = 0.5
BRANCHES = ("b1", "b2", "main")  # sorted: replays draw the same
TYPES = ("read_only", "read_write")
TIMEOUTS = (-1, 0, 60, 120)
SIZES = ((0.25, 0.25), (0.25, 2.0), (0.5, 4.0), (1.0, 1.0))
DURATIONS = (1.0, 30.0, 90.0, 400.0)
STEPS = (0.25, 1.0, 5.0, 30.0, 61.0, 400.0, 1000.0)
EPS = 1e-6


def _fields(obj: Any, skip: frozenset[str] = frozenset()) -> tuple:
    return tuple(
        (f.name, repr(getattr(obj, f.name)))
        for f in dataclasses.fields(obj) if f.name not in skip
    )


def state_digest(cp: ControlPlane) -> tuple:
    """Everything a request could change, as a comparable value.

    A refused request must leave this exactly as it was: resources and
    operations, what each compute holds open and its timers, the executor's
    queues, SimPy's pending events, issued ids, every random stream that has
    drawn (a refusal that draws changes the rest of the run), the records.
    """
    projects = tuple(
        (_fields(p, frozenset({"operations"})), tuple(_fields(o) for o in p.operations))
        for p in cp.projects.values()
    )
    branches = tuple(_fields(b) for b in cp.branches.values())
    computes = []
    for c in cp.computes.values():
        rt = c.runtime
        held = None
        if rt is not None:
            held = (sorted(rt.open_ends), sorted(rt.server_ends), sorted(rt.client_ends),
                    list(rt.waiting), sorted(rt.load_ends), rt.cpu_load, rt.mem_load,
                    sorted(rt.temp_ends), sorted(rt.load_starts), sorted(rt.leaving),
                    rt.busy_until, rt.quiet_since, rt.resize_at, rt.wake_at,
                    rt.wake_cause, rt.armed_at, rt.max_conn, rt.pool_size, rt.disk_bytes)
        computes.append((_fields(c, frozenset({"runtime", "stats"})),
                         dataclasses.astuple(c.stats), held))
    lanes = tuple(sorted((lane, tuple(t.op.id for t in q))
                         for lane, q in cp.executor._lanes.items()))
    streams = tuple(sorted((name, repr(rng.bit_generator.state))
                           for name, rng in cp.streams._cache.items()))
    records = tuple((f.name, len(v)) for f in dataclasses.fields(cp.recorder)
                    if isinstance(v := getattr(cp.recorder, f.name), list))
    return (cp.env.now, cp.release, projects, branches, tuple(computes), lanes,
            tuple(sorted(cp.operations)), tuple(sorted(cp.ids._issued)), streams, records,
            tuple(sorted((t, prio) for t, prio, _, _ in cp.env._queue)))


@dataclass
class ModelCompute:
    """What the model knows of one compute, from the calls it made."""

    id: str
    host: str
    branch: str  # a name of BRANCHES
    type: str
    timeout: int
    size: tuple[float, float]
    #: connections opened: (instant, duration, how many)
    connections: list[tuple[float, float, int]] = field(default_factory=list)
    #: instants of accepted calls that cut every open connection
    cuts: list[float] = field(default_factory=list)


class ControlPlaneMachine(RuleBasedStateMachine):
    computes = Bundle("computes")

    def __init__(self) -> None:
        super().__init__()
        self.cp: ControlPlane | None = None
        self.model: dict[str, ModelCompute] = {}
        self.branch_ids: dict[str, str] = {}
        self.hosts: set[str] = set()
        self.ids: set[str] = set()
        self.terminal: dict[str, tuple] = {}

    # -- set-up ----------------------------------------------------------------
    @initialize(target=computes, seed=st.integers(0, 2**16),
                primary_timeout=st.sampled_from(TIMEOUTS),
                failure_rate=st.sampled_from((0.0, 0.25)),
                storage_after=st.sampled_from((None, 300.0)),
                check_every=st.sampled_from((None, 100.0)))
    def set_up(self, seed: int, primary_timeout: int, failure_rate: float,
               storage_after: float | None, check_every: float | None) -> Any:
        """One project with branches main, b1, b2, and a read_write compute on main."""
        note(f"seed={seed} failure_rate={failure_rate} detach/archive after {storage_after} "
             f"check_availability every {check_every}")
        config = EngineConfig(
            cold_start=Distribution.fixed(COLD_S),
            operation_durations={a: Distribution.fixed(OP_S) for a in Action},
            operation_failure_rate=failure_rate, retry_backoff_s=4.0,
            detach_after_s=storage_after, archive_after_s=storage_after,
            check_availability_every_s=check_every,
        )
        cp = self.cp = ControlPlane(config, seed=seed)
        created = cp.create_project("machine", with_compute=False, branch_name="main")
        self.project = created.project
        self.branch_ids["main"] = created.branch.id
        for name in ("b1", "b2"):
            self.branch_ids[name] = cp.create_branch(self.project.id, name).branch.id
        return self.create_compute("main", "read_write", primary_timeout, SIZES[1])

    # -- helpers ---------------------------------------------------------------
    @property
    def now(self) -> float:
        assert self.cp is not None
        return self.cp.now

    def compute(self, cid: str) -> Compute:
        assert self.cp is not None
        return self.cp.computes[cid]

    def ops_of(self, cid: str) -> list[Operation]:
        return [o for o in self.project.operations if o.endpoint_id == cid]

    def locked(self, cid: str) -> bool:
        """the specification / the design notes: 423 while an operation on the compute has not ended."""
        return any(o.status not in TERMINAL_STATUSES for o in self.ops_of(cid))

    def primary_on(self, branch: str) -> str | None:
        return next((m.id for m in self.model.values()
                     if m.branch == branch and m.type == "read_write"), None)

    def call(self, predicted: int | None, fn, *args: Any, **kwargs: Any) -> Any:
        """Make the call; the model predicted `predicted` (None: success)."""
        assert self.cp is not None
        before = state_digest(self.cp)
        try:
            result = fn(*args, **kwargs)
        except ApiError as err:
            note(f"  -> refused {err.status} {err.code}")
            event(f"{fn.__name__} refused {err.status}")
            assert err.status == predicted, (
                f"{fn.__name__} refused with {err.status} ({err.message}); model: {predicted}")
            assert state_digest(self.cp) == before, f"refused {fn.__name__} changed the state"
            return None
        assert predicted is None, f"{fn.__name__} succeeded; the model predicted {predicted}"
        event(f"{fn.__name__} accepted")
        return result

    def wake_actions(self, cid: str, branch_id: str | None = None) -> list[str]:
        """What waking a compute produces: storage first when it is detached or archived."""
        assert self.cp is not None
        branch = self.cp.branches[branch_id or self.compute(cid).branch_id]
        return ((["tenant_reattach"] if self.project.detached else [])
                + (["timeline_unarchive"] if branch.archived else []) + ["start_compute"])

    def is_active(self, cid: str) -> bool:
        c = self.compute(cid)
        return c.current_state == "active" and c.pending_state is None

    def cut(self, cid: str) -> None:
        self.model[cid].cuts.append(self.now)

    # -- rules: computes ---------------------------------------------------------
    @rule(target=computes, branch=st.sampled_from(BRANCHES), ctype=st.sampled_from(TYPES),
          timeout=st.sampled_from(TIMEOUTS), size=st.sampled_from(SIZES))
    def create_compute(self, branch: str, ctype: str, timeout: int,
                       size: tuple[float, float]) -> Any:
        note(f"t={self.now:g} create {ctype} on {branch} timeout={timeout} size={size}")
        conflict = ctype == "read_write" and self.primary_on(branch) is not None
        made = self.call(409 if conflict else None, self.cp.create_compute,  # type: ignore
                         self.project.id, self.branch_ids[branch], ctype,
                         suspend_timeout_seconds=timeout, autoscaling_limit_min_cu=size[0],
                         autoscaling_limit_max_cu=size[1])
        if made is None:
            return multiple()
        c, ops = made
        assert c.id.startswith("ep-") and c.id not in self.ids, "a compute id came back"
        assert c.host not in self.hosts, "a new compute got the connection details of another"
        assert (c.current_state, c.pending_state) == ("init", "active")
        assert [o.action for o in ops][-1:] == ["start_compute"]
        self.ids.add(c.id)
        self.hosts.add(c.host)
        self.model[c.id] = ModelCompute(c.id, c.host, branch, ctype, timeout, size)
        return c.id

    @rule(cid=computes, timeout=st.sampled_from(TIMEOUTS))
    def set_timeout(self, cid: str, timeout: int) -> None:
        note(f"t={self.now:g} {cid} suspend_timeout_seconds={timeout}")
        m = self.model[cid]
        done = self.call(423 if self.locked(cid) else None, self.cp.update_compute,  # type: ignore
                         self.project.id, cid, suspend_timeout_seconds=timeout)
        if done is not None:
            expected = [] if timeout == m.timeout else ["apply_config"]
            assert [o.action for o in done[1]] == expected  # never a restart
            m.timeout = timeout

    @rule(cid=computes, size=st.sampled_from(SIZES))
    def resize(self, cid: str, size: tuple[float, float]) -> None:
        note(f"t={self.now:g} {cid} size={size}")
        m = self.model[cid]
        was_active = self.compute(cid).current_state == "active"
        done = self.call(423 if self.locked(cid) else None, self.cp.update_compute,  # type: ignore
                         self.project.id, cid, autoscaling_limit_min_cu=size[0],
                         autoscaling_limit_max_cu=size[1])
        if done is None:
            return
        actions = [o.action for o in done[1]]
        if size == m.size:
            assert actions == []
        elif was_active:  # the specification: a size or autoscaling edit restarts and drops connections
            assert actions == ["apply_config", "suspend_compute", *self.wake_actions(cid)]
            self.cut(cid)
        else:
            assert actions == ["apply_config"]
        m.size = size

    @rule(cid=computes, branch=st.sampled_from(BRANCHES))
    def move(self, cid: str, branch: str) -> None:
        note(f"t={self.now:g} move {cid} to {branch}")
        m = self.model[cid]
        occupied = any(x.branch == branch for x in self.model.values() if x.id != cid)
        predicted = None
        if m.type == "read_write" and branch != m.branch and occupied:
            predicted = 409  # a read_write compute moves only to a branch with no compute
        elif self.locked(cid):
            predicted = 423
        was_active = self.compute(cid).current_state == "active"
        restart = ["apply_config", "suspend_compute",
                   *self.wake_actions(cid, self.branch_ids[branch])]  # on its new branch
        done = self.call(predicted, self.cp.update_compute, self.project.id, cid,  # type: ignore
                         branch_id=self.branch_ids[branch])
        if done is None:
            return
        actions = [o.action for o in done[1]]
        if branch == m.branch:
            assert actions == []
        elif was_active:
            assert actions == restart
            self.cut(cid)
        else:
            assert actions == ["apply_config"]
        m.branch = branch

    @rule(target=computes, cid=consumes(computes))
    def delete(self, cid: str) -> Any:
        note(f"t={self.now:g} delete {cid}")
        was_on = self.compute(cid).current_state != "idle"
        done = self.call(423 if self.locked(cid) else None, self.cp.delete_compute,  # type: ignore
                         self.project.id, cid)
        if done is None:
            return cid  # still there: back into the bundle
        assert [o.action for o in done[1]] == (["suspend_compute"] if was_on else [])
        self.cut(cid)
        del self.model[cid]
        self.call(404, self.cp.get_compute, self.project.id, cid)  # type: ignore
        return multiple()

    @rule(cid=computes)
    def start(self, cid: str) -> None:
        note(f"t={self.now:g} start {cid}")
        active = self.compute(cid).current_state == "active"
        expected = [] if active else self.wake_actions(cid)
        done = self.call(423 if self.locked(cid) else None, self.cp.start_compute,  # type: ignore
                         self.project.id, cid)
        if done is not None:
            assert [o.action for o in done[1]] == expected
            assert self.compute(cid).pending_state == (None if active else "active")

    @rule(cid=computes)
    def suspend(self, cid: str) -> None:
        note(f"t={self.now:g} suspend {cid}")
        active = self.compute(cid).current_state == "active"
        done = self.call(423 if self.locked(cid) else None, self.cp.suspend_compute,  # type: ignore
                         self.project.id, cid)
        if done is not None:
            assert [o.action for o in done[1]] == (["suspend_compute"] if active else [])
            if active:
                self.cut(cid)

    @rule(cid=computes)
    def restart(self, cid: str) -> None:
        note(f"t={self.now:g} restart {cid}")
        predicted = 423 if self.locked(cid) else (None if self.is_active(cid) else 422)
        expected = ["suspend_compute", *self.wake_actions(cid)]
        done = self.call(predicted, self.cp.restart_compute, self.project.id, cid)  # type: ignore
        if done is not None:
            assert [o.action for o in done[1]] == expected
            self.cut(cid)

    @precondition(lambda self: self.cp is not None and any(
        self.is_active(c) and not self.locked(c) for c in self.model))
    @rule(data=st.data())
    def restart_an_active_compute(self, data: st.DataObject) -> None:
        ready = sorted(c for c in self.model if self.is_active(c) and not self.locked(c))
        cid = data.draw(st.sampled_from(ready), label="active compute")
        self.restart(cid)

    @precondition(lambda self: self.cp is not None and any(
        self.compute(c).current_state == "idle" and not self.locked(c) for c in self.model))
    @rule(data=st.data())
    def restart_an_idle_compute(self, data: st.DataObject) -> None:
        idle = sorted(c for c in self.model
                      if self.compute(c).current_state == "idle" and not self.locked(c))
        self.restart(data.draw(st.sampled_from(idle), label="idle compute"))  # 422

    # -- rules: connections and time ----------------------------------------------
    @rule(cid=computes, duration=st.sampled_from(DURATIONS), count=st.integers(1, 3))
    def connect(self, cid: str, duration: float, count: int) -> None:
        note(f"t={self.now:g} {count} connection(s) to {cid} for {duration:g}s")
        c = self.compute(cid)
        idle = c.current_state == "idle" and c.pending_state is None
        active = self.is_active(cid)
        starts_before = len([o for o in self.ops_of(cid) if o.action == "start_compute"])
        expected_wake = self.wake_actions(cid) if idle else []
        ops_before = len(self.project.operations)
        outcomes = self.cp.connect(self.project.id, cid, duration, count=count)  # type: ignore
        self.model[cid].connections.append((self.now, duration, count))
        recent = sum(n for t, d, n in self.model[cid].connections if t + d + 60 > self.now)
        if recent <= 112:  # far below every size's max_connections
            assert outcomes == ([Outcome.OK] if active else ["waiting"]) * count
        new = self.project.operations[ops_before:]
        starts_after = len([o for o in self.ops_of(cid) if o.action == "start_compute"])
        if idle:  # a connection to an idle compute starts it
            event("connection to an idle compute" + (" (storage first)" if expected_wake[:-1] else ""))
            assert [o.action for o in new] == expected_wake
            assert starts_after == starts_before + 1 and c.pending_state == "active"
        else:
            assert new == [] and starts_after == starts_before

    @precondition(lambda self: self.cp is not None and any(
        self.compute(c).current_state == "idle" and self.compute(c).pending_state is None
        for c in self.model))
    @rule(data=st.data(), duration=st.sampled_from(DURATIONS))
    def connect_to_an_idle_compute(self, data: st.DataObject, duration: float) -> None:
        idle = sorted(c for c in self.model if self.compute(c).current_state == "idle"
                      and self.compute(c).pending_state is None)
        self.connect(data.draw(st.sampled_from(idle), label="idle compute"), duration, 1)

    @precondition(lambda self: self.cp is not None and any(
        self.is_active(c) and self.compute(c).max_connections() <= 901 for c in self.model))
    @rule(data=st.data(), extra=st.integers(1, 4))
    def fill_to_max_connections(self, data: st.DataObject, extra: int) -> None:
        """Direct connections up to max_connections are admitted, the rest refused (53300)."""
        ready = sorted(c for c in self.model
                       if self.is_active(c) and self.compute(c).max_connections() <= 901)
        cid = data.draw(st.sampled_from(ready), label="active compute")
        room = self.compute(cid).max_connections() - self.held(cid)
        note(f"t={self.now:g} fill {cid}: {room} + {extra} connections")
        event("filled a compute to max_connections")
        outcomes = self.cp.connect(self.project.id, cid, 30.0, count=room + extra)  # type: ignore
        self.model[cid].connections.append((self.now, 30.0, room + extra))
        assert outcomes == [Outcome.OK] * room + [Outcome.REFUSED_TOO_MANY] * extra

    @rule(cid=computes)
    def hold_a_session_past_the_timeout(self, cid: str) -> None:
        """A session longer than the timeout: the compute must stay on until it ends."""
        timeout = effective_suspend_timeout(self.model[cid].timeout) or 100.0
        event("held a session past the timeout")
        self.connect(cid, 2 * timeout + 50.0, 1)
        self.advance(timeout + 10.0)  # past the timeout, inside the session (even after a start)

    @rule(seconds=st.sampled_from(STEPS))
    def advance(self, seconds: float) -> None:
        note(f"t={self.now:g} advance {seconds:g}s")
        self.cp.advance(seconds)  # type: ignore[union-attr]

    # -- invariants ---------------------------------------------------------------
    @invariant()
    def one_read_write_per_branch_and_the_model_topology(self) -> None:
        if self.cp is None:
            return
        for name, bid in self.branch_ids.items():
            on = [self.compute(i) for i in self.cp.branches[bid].computes]
            assert sum(c.type == "read_write" for c in on) <= 1, f"two read_write on {name}"
            assert sorted(c.id for c in on) == sorted(
                m.id for m in self.model.values() if m.branch == name)
        for m in self.model.values():
            c = self.compute(m.id)
            assert (c.type, c.suspend_timeout_seconds, c.host, c.deleted_at) == (
                m.type, m.timeout, m.host, None)
            assert (c.autoscaling_limit_min_cu, c.autoscaling_limit_max_cu) == m.size

    @invariant()
    def states_are_those_of_the_spec(self) -> None:
        if self.cp is None:
            return
        for cid in self.model:
            c = self.compute(cid)
            assert c.current_state in {"init", "idle", "active"}
            assert c.pending_state in {None, "idle", "active"}
            unfinished = [o for o in self.ops_of(cid) if o.status not in TERMINAL_STATUSES]
            if c.pending_state is not None:
                assert unfinished, f"{cid} pending {c.pending_state} with no operation underway"
            underway = [o for o in unfinished if o.status in ("running", "failed")]
            assert len(underway) <= 1, f"{cid} runs {len(underway)} operations at once"
            if underway and underway[0].action == "start_compute":
                assert c.pending_state == "active", f"{cid} starting but pending {c.pending_state}"
            if underway and underway[0].action == "suspend_compute":
                # idle, unless a restart's start_compute is queued behind the suspension
                restarting = any(o.action == "start_compute" for o in unfinished)
                assert c.pending_state == ("active" if restarting else "idle"), (
                    f"{cid} suspending, pending {c.pending_state}")

    @invariant()
    def an_active_compute_has_its_storage_attached(self) -> None:
        """tenant_detach and timeline_archive are for idle projects and branches only."""
        if self.cp is None:
            return
        for cid in self.model:
            c = self.compute(cid)
            if c.current_state == "active" and c.pending_state is None:
                assert not self.project.detached, f"{cid} active on a detached project"
                assert not self.cp.branches[c.branch_id].archived, f"{cid} on an archived branch"

    @invariant()
    def terminal_operations_never_change(self) -> None:
        if self.cp is None:
            return
        for op in self.cp.operations.values():
            snap = (op.status, op.failures_count, op.updated_at, op.finished_at, op.error)
            seen = self.terminal.get(op.id)
            if seen is not None:
                assert snap == seen, f"terminal operation {op.action} {op.id} changed: {seen} -> {snap}"
            elif op.status in TERMINAL_STATUSES:
                self.terminal[op.id] = snap

    def _sessions(self, cid: str) -> list[tuple[float, float, bool]]:
        """(start, end, ok) of each connection the engine recorded for the compute."""
        assert self.cp is not None
        out = []
        for r in self.cp.recorder.connections:
            if r.compute_id == cid:
                start = r.arrival_s + r.wait_s
                out.append((start, start + r.duration_s, r.outcome == Outcome.OK))
        return out

    @invariant()
    def records_match_the_connections_made(self) -> None:
        if self.cp is None:
            return
        for cid, m in self.model.items():
            made = sum(n for _, _, n in m.connections)
            waiting = len(self.compute(cid).runtime.waiting)  # type: ignore[union-attr]
            assert len(self._sessions(cid)) + waiting == made

    def held(self, cid: str) -> int:
        """Sessions of the compute open now by the model: recorded, begun, not ended, not cut."""
        now, cuts = self.now, self.model[cid].cuts
        return sum(1 for start, end, ok in self._sessions(cid)
                   if ok and start <= now < end and not any(start <= t for t in cuts))

    @invariant()
    def open_connections_are_the_sessions_held(self) -> None:
        """The engine's count: held sessions plus clients waiting for a start, never above
        max_connections (a refused connection holds nothing)."""
        if self.cp is None:
            return
        for cid in self.model:
            c = self.compute(cid)
            rt = c.runtime
            assert rt is not None
            count = rt.open_connections(self.now)
            assert count == self.held(cid) + len(rt.waiting), (
                f"{cid} counts {count} open, the model {self.held(cid)} + {len(rt.waiting)}")
            assert count <= c.max_connections()

    @invariant()
    def a_compute_holding_an_open_session_is_active(self) -> None:
        if self.cp is None:
            return
        now = self.now
        for cid, m in self.model.items():
            for start, end, ok in self._sessions(cid):
                cut = any(start <= t for t in m.cuts)
                if ok and not cut and start <= now < end - EPS:
                    event("checked: open session, compute active")
                    c = self.compute(cid)
                    assert (c.current_state, c.pending_state) == ("active", None), (
                        f"{cid} is {c.current_state}/{c.pending_state} with a session open "
                        f"{start:g}..{end:g} at {now:g}")

    @invariant()
    def a_compute_quiet_past_its_timeout_is_idle(self) -> None:
        if self.cp is None:
            return
        for cid, m in self.model.items():
            timeout = effective_suspend_timeout(m.timeout)
            if timeout is None or self.locked(cid):
                continue
            last = max([t for t, _, _ in m.connections]
                       + [end if ok else start for start, end, ok in self._sessions(cid)]
                       + [o.finished_at or 0.0 for o in self.ops_of(cid)])
            if self.now > last + timeout + EPS:
                event("checked: quiet past its timeout, compute idle")
                c = self.compute(cid)
                assert c.current_state == "idle", (
                    f"{cid} still {c.current_state} at {self.now:g}: quiet since {last:g}, "
                    f"timeout {timeout:g}")

    @invariant()
    def operations_page_out_exactly_once_newest_first(self) -> None:
        if self.cp is None:
            return
        for limit in (1, 7):
            seen: list[Operation] = []
            cursor = None
            while True:
                page, cursor = self.cp.list_operations(self.project.id, limit=limit,
                                                       cursor=cursor)
                if not page:
                    break
                seen += page
            assert [o.id for o in seen] == [o.id for o in reversed(self.project.operations)]
            assert len({o.id for o in seen}) == len(seen)

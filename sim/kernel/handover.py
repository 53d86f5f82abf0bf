"""The handover both ways between the SimPy engine and the kernel, one compute at a time.

`give_to_engine` writes what the kernel computed into the control plane and gives the
compute's state to its per-session runtime; `hand_over` takes it back from the engine
as it stands, and `resume_compute` lets the kernel carry on from there. `Taken` is a
whole project's computes, handed over at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from sim.engine.model import Compute, Operation
from sim.engine.operation_rows import OperationColumns
from sim.engine.runtime import SessionArrays
from sim.engine.scheduling import timeout_at
from sim.kernel import physics as k
from sim.kernel.physics_run import (
    _STATES,
    INF,
    Advanced,
    Gates,
    Sessions,
    _apply_rows,
    _params,
    _run,
    _state,
    apply_advanced,
    operation_columns,
)

if TYPE_CHECKING:
    from sim.engine.control_plane import ControlPlane


def settled(adv: Advanced) -> bool:
    """Nothing underway and nobody waiting at the end: the engine can take the compute."""
    i = adv.out["i"]
    return (i[k.PENDING] == k.NONE and i[k.LANE_HEAD] == i[k.LANE_TAIL]
            and i[k.OP_EVT_KIND] == 0 and i[k.WAITING] == 0)


def give_to_engine(cp: ControlPlane, adv: Advanced, rank: int | None = None
                   ) -> list[Operation] | OperationColumns | None:
    """Write what the kernel computed (`advance_to_call`) into `cp` and hand the compute's
    state to its per-session runtime, which the engine runs from now on. Returns the
    kernel's operations (not filed): objects, or with `rank` (its branch's check rank)
    columns, which no call can look at (None when events are not recorded)."""
    c, out = adv.compute, adv.out
    f, i = out["f"], out["i"]
    rt = c.runtime
    assert rt is not None and settled(adv)
    ops: list[Operation] | OperationColumns | None
    if rank is None:
        ops = apply_advanced(cp, adv, engine_next=True)
    else:
        ops = operation_columns(cp, adv, rank) if _apply_rows(cp, adv, True) else None
    now = cp.now
    c.current_state, c.pending_state, c.cu = _STATES[int(i[k.CUR])], None, float(f[k.CU])
    rt.open_ends = out["open_f"].tolist()
    rt.server_ends = out["server_f"].tolist()
    rt.client_ends = out["client_f"].tolist()
    rt.leaving = out["leave_f"].tolist()
    rt.temp_ends = [(a, b, s) for a, b, s in out["temp_f"].tolist()]
    rt.load_ends = [(a, b, m) for a, b, m in out["load_f"].tolist()]
    rt.load_starts = [(a, b, m) for a, b, m in out["load_start_f"].tolist()]
    rt.cpu_load, rt.mem_load = float(f[k.CPU_LOAD]), float(f[k.MEM_LOAD])
    rt.busy_until = float(f[k.BUSY_UNTIL])
    rt.quiet_since = float(f[k.QUIET_SINCE])
    rt.resize_at = None if f[k.RESIZE_AT] == INF else float(f[k.RESIZE_AT])
    rt.iv_state, rt.iv_cu, rt.iv_start = _STATES[int(i[k.IV_STATE])], float(f[k.IV_CU]), float(f[k.IV_START])
    rt.wake_at, rt.waiting = None, []
    rt.open_records = adv.open_records
    start = int(i[k.NEXT_ARR])
    rt.consumed = start
    rt.feed = RestOfSessions(adv.sessions, start)
    rt._next_batch()
    rt.external = False
    rt.armed_at = INF
    if f[k.ARMED_AT] < INF:  # the kernel's timer, as the engine would have it pending
        rt.armed_at = at = float(f[k.ARMED_AT])
        ev = timeout_at(cp.env, max(float(f[k.FIRE_T]), now))
        ev.callbacks.append(lambda _ev: rt._fire(at))
    return ops


class RestOfSessions:
    """The sessions of a workload from one on, as the runtime's batches, a few at a time:
    the engine holds a compute only until the kernel can take it back, so most of the rest
    is never asked for (and need not become lists). Plain data, as the runtime's feed is
    (a snapshot holds it)."""

    BATCH = 64

    def __init__(self, sessions: Sessions, start: int):
        self.sessions, self.start = sessions, start

    def __getstate__(self) -> dict[str, object]:
        """Only the sessions not yet given (a snapshot of a month-long feed on its last day
        holds a day of it, not the month)."""
        a = self.start
        return {"sessions": Sessions(*(np.ascontiguousarray(col[a:]) for col in self.sessions)),
                "start": 0}

    def __setstate__(self, state: dict[str, object]) -> None:
        """From a snapshot (a file): columns of one length, a start within them."""
        sessions, start = state.get("sessions"), state.get("start")
        if (type(sessions) is not Sessions or type(start) is not int
                or not all(type(col) is np.ndarray and col.ndim == 1
                           and col.dtype == np.float64 for col in sessions)
                or len({len(col) for col in sessions}) != 1
                or not 0 <= start <= len(sessions.arrival_s)):
            raise ValueError("a rest of sessions that is not columns of one length")
        self.sessions, self.start = sessions, start

    def __iter__(self) -> RestOfSessions:
        return self

    def __next__(self) -> SessionArrays:
        s, a = self.sessions, self.start
        if a >= len(s.arrival_s):
            raise StopIteration
        b = self.start = a + self.BATCH
        return SessionArrays(s.arrival_s[a:b].tolist(), s.duration_s[a:b].tolist(),
                             s.cpu[a:b].tolist(), s.memory_gb[a:b].tolist(),
                             s.temp_bytes[a:b].tolist())


def can_resume(cp: ControlPlane, c: Compute, next_tick: float | None) -> bool:
    """Whether the engine can hand `c` over to the kernel now: nothing underway, nobody
    waiting, nothing of it due at this very instant."""
    rt = c.runtime
    now = cp.now
    return (rt is not None and not c.deleted and not c.disabled and c.pending_state is None
            and c.current_state in (_STATES[k.ACTIVE], _STATES[k.IDLE])
            and rt.iv_state == c.current_state and not rt.waiting
            and not cp.executor.lane_busy(c.id) and rt.armed_at > now
            and (next_tick is None or next_tick > now))


@dataclass
class Handover:
    """A compute's state when the engine handed it to the kernel, taken at once."""

    compute: Compute
    at: float
    f: np.ndarray
    i: np.ndarray
    heaps: tuple[np.ndarray, ...]
    tick: tuple[float, float] | None  # (next tick, the tick before it)


def hand_over(cp: ControlPlane, c: Compute, tick: tuple[float, float] | None) -> Handover:
    """Take `c` from the engine now (see `can_resume`); the kernel runs it from here."""
    rt = c.runtime
    assert rt is not None
    f, i = _state(c, cp.config.count_from_s)
    on = c.current_state == _STATES[k.ACTIVE]
    i[k.CUR] = i[k.IV_STATE] = k.ACTIVE if on else k.IDLE
    i[k.ON] = 1 if on else 0
    i[k.NEXT_ARR] = rt.consumed
    f[k.NOW] = cp.now
    f[k.CPU_LOAD], f[k.MEM_LOAD] = rt.cpu_load, rt.mem_load
    f[k.ARMED_AT] = f[k.FIRE_T] = rt.armed_at
    f[k.FIRE_SCHED] = rt.armed_sched  # orders exact ties between computes
    f[k.RESIZE_AT] = INF if rt.resize_at is None else rt.resize_at
    if tick is not None:
        f[k.TICK_T], f[k.TICK_SCHED] = tick
    heaps = (np.array(rt.open_ends, dtype=np.float64), np.array(rt.server_ends, dtype=np.float64),
             np.array(rt.client_ends, dtype=np.float64),
             np.array(rt.temp_ends, dtype=np.float64).reshape(-1, 3),
             np.array(rt.load_ends, dtype=np.float64).reshape(-1, 3),
             np.array(rt.load_starts, dtype=np.float64).reshape(-1, 3),
             np.array(rt.leaving, dtype=np.float64))
    rt.external = True
    rt.armed_at = INF  # its pending timer event finds itself stale and does nothing
    return Handover(c, cp.now, f, i, heaps, tick)


def take_back(cp: ControlPlane, h: Handover) -> None:
    """Undo `hand_over` at its own instant, before the kernel ran anything: the engine holds
    `c` as it did (its pending timer event, made stale by the hand-over, counts again)."""
    rt = h.compute.runtime
    assert rt is not None and cp.now == h.at
    rt.external = False
    rt.armed_at = float(h.f[k.ARMED_AT])


def resume_compute(cp: ControlPlane, h: Handover, sessions: Sessions, until: float,
                   checks: tuple[float, float] | None, gates: Gates | None = None,
                   to_call: bool = False) -> Advanced:
    """Run a compute the engine handed over (`hand_over`) to `until`; `to_call`: up to (not
    including) `until`, the instant of a scripted call, leaving what is open then open (see
    `give_to_engine`). Raises Tie."""
    c = h.compute
    p = _params(cp, c, h.at, until, checks, True)
    p[k.P_OPEN_END] = 1.0 if to_call else 0.0
    out = _run(cp, c, sessions, p, h.f.copy(), h.i.copy(), h.heaps, gates)
    n_span = int(out["i"][k.N_SPAN])
    open_span = int(out["i"][k.ON]) if to_call else 0
    return Advanced(c, sessions, out, out["sp_start"][:n_span + open_span].copy(),
                    out["sp_end"][:n_span].copy())


@dataclass
class Taken:
    """A project's computes, handed over, and how long its storage had been quiet then."""

    project_id: str
    at: float  # when
    handovers: list[Handover]
    #: "project" / "branch:<id>" -> since when it was quiet at the hand-over (None: on)
    quiet_since: dict[str, float | None] = field(default_factory=dict)


__all__ = ["Handover", "RestOfSessions", "Taken", "can_resume", "give_to_engine", "hand_over",
           "resume_compute", "settled", "take_back"]

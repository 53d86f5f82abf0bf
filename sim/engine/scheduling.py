"""SimPy scheduling helpers of the engine (not the kernel): an event at an exact absolute
instant, and one now.

`env.timeout(t - env.now)` lands at `env.now + (t - env.now)`, which in floating
point may differ from `t` by an ulp. The compute runtime arms its timer at
instants it computed itself (a deadline, an arrival), and the kernel (`sim.kernel`)
must reproduce those instants bit for bit, so the timer is pushed onto
SimPy's heap at `t` itself: the same `(time, priority, counter, event)` entry
`Environment.schedule` would push.
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappush

import simpy
from simpy.core import NORMAL, URGENT


def timeout_at(env: simpy.Environment, t: float) -> simpy.Event:
    """A triggered event that SimPy processes at exactly time `t` (>= env.now)."""
    if t < env.now:
        raise ValueError(f"cannot schedule at {t!r}, before now ({env.now!r})")
    event = simpy.Event(env)
    event._ok = True
    event._value = None
    heappush(env._queue, (t, NORMAL, next(env._eid), event))  # type: ignore[attr-defined]
    return event


def schedule_now(env: simpy.Environment, callback: Callable[[simpy.Event], None] | None,
                 *, urgent: bool = False) -> simpy.Event:
    """A triggered event processed at `env.now` (first among equals when `urgent`), as
    SimPy schedules a process's start (urgent) or its end; `callback` runs then."""
    event = simpy.Event(env)
    event._ok = True
    event._value = None
    if callback is not None:
        event.callbacks.append(callback)  # type: ignore[union-attr]
    env.schedule(event, URGENT if urgent else NORMAL)
    return event

"""What a snapshot's world must be for a running server to hold it: its parts, and numbers
it can go on from.

The codec (`sim.api.world_decode`) checks that every value is data of its declared
type; this checks the world as a whole, once decoded and before it is served: a
control plane (the only one: every timer and event names it), the injected faults,
the scripted calls' records and the fleet's build; a clock that is finite and
within the control plane's maximum (`MAX_SIMULATED_S`); pending events at instants
the clock can show; faults within what `/_sim/faults` sets (`MAX_EXTRA_LATENCY_MS`,
one outage window of finite instants, a failure rate below 1). A world outside
these would be served and then answer every advance or read with a 500.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from sim.api.schemas import MAX_EXTRA_LATENCY_MS
from sim.api.world_codec import Refused
from sim.engine.control_plane import MAX_SIMULATED_S, ControlPlane

#: the last instant a clock can show (a datetime's range)
_LAST = datetime(9999, 12, 31, tzinfo=UTC)


def check_world(world: Any) -> None:
    """Refused (naming what and why) unless `world` is one a running server can hold."""
    from sim.api.server import Faults, FleetBuild
    from sim.engine.records import ActionRecord

    if not (type(world) is tuple and len(world) == 4 and type(world[0]) is ControlPlane
            and type(world[1]) is Faults and type(world[2]) is list
            and all(type(a) is ActionRecord for a in world[2])
            and type(world[3]) is FleetBuild and type(world[3].projects) is dict
            and all(type(k) is str and type(v) is str
                    for k, v in world[3].projects.items())):
        raise Refused("not a control plane, faults, actions and its fleet's build")
    cp, faults = world[0], world[1]
    _check_clock(cp)
    _check_faults(faults, cp)


def _finite(x: Any) -> bool:
    return type(x) in (int, float) and math.isfinite(x)


def _check_clock(cp: ControlPlane) -> None:
    now = cp.env.now
    if not (_finite(now) and 0 <= now <= MAX_SIMULATED_S):
        raise Refused(f"a clock at {now!r} s: a world's clock is finite, from 0 to "
                      f"{MAX_SIMULATED_S:g} s")
    last = (_LAST - cp.clock.start).total_seconds()
    for item in cp.env._queue:  # noqa: SLF001 - the heap the codec rebuilt and checked
        t = item[0]
        if not (_finite(t) and t <= last):
            raise Refused(f"an event due at {t!r} s, an instant no clock shows")
    rate = cp.executor.failure_rate
    if not (_finite(rate) and 0 <= rate < 1):
        raise Refused(f"an operation failure rate of {rate!r}: from 0 to below 1")


def _check_faults(faults: Any, cp: ControlPlane) -> None:
    latency = faults.extra_latency_ms
    if not (_finite(latency) and 0 <= latency <= MAX_EXTRA_LATENCY_MS):
        raise Refused(f"an injected latency of {latency!r} ms: from 0 to "
                      f"{MAX_EXTRA_LATENCY_MS} ms, as /_sim/faults sets it")
    outages = faults.outages
    if type(outages) is not list or len(outages) > 1:
        raise Refused(f"{len(outages) if type(outages) is list else 'no list of'} outage "
                      f"windows: /_sim/faults sets one at most")
    last = (_LAST - cp.clock.start).total_seconds()
    for window in outages:
        if not (type(window) is tuple and len(window) == 2
                and all(_finite(t) and 0 <= t <= last for t in window)
                and window[0] < window[1]):
            raise Refused(f"an outage window {str(window)[:60]}: two finite instants, the "
                          f"first before the second")

"""Whether a served fleet can keep up with a realtime clock: one line at start if not.

A realtime clock moves the world to speed x wall time before each request, so a
request waits while the world catches up: at least one step of the whole fleet
(every project handed to the kernel and back, `sim.api.kernel_advance`), and the
simulated time since the last request. The warm-up a scenario's world runs
before it is served is such a step, timed at the start: when it (or the part of
it a wall second asks for at this speed) takes longer than a second, requests
will find the clock behind its schedule by about that much, and `sim serve`
says so before it serves anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sim.api.server import SimServer

#: how far behind its schedule a realtime clock may fall before `sim serve` says so (s)
KEEP_UP_S = 1.0


def catch_up_s(server: SimServer) -> float | None:
    """About how long a request waits for the world at the server's speed (wall s); None
    when nothing was timed (no scenario, no warm-up)."""
    wall, simulated = server.warm_up_timed
    if simulated <= 0:
        return None
    return wall * max(1.0, server.speed / simulated)


def realtime_warning(server: SimServer) -> str | None:
    """The line `sim serve` prints at start when the fleet is too large for its speed."""
    needed = catch_up_s(server)
    if needed is None or needed <= KEEP_UP_S:
        return None
    computes = sum(1 for c in server.cp.computes.values() if not c.deleted)
    return (f"sim serve: {computes} computes are too many for --speed {server.speed:g}: "
            f"a step of the fleet takes about {needed:.1f} s here, so the realtime clock "
            f"will run up to about that far behind its schedule (a smaller --speed, a "
            f"smaller fleet or --clock manual keeps it exact)")


__all__ = ["KEEP_UP_S", "catch_up_s", "realtime_warning"]

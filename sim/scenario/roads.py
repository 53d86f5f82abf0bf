"""The roads a compute takes through a run, by name: what `run.json`'s `roads` counts and
`sim run` prints.

A compute is advanced by the kernel (the compiled bulk path, `sim.kernel`), by the
kernel but for its scripted calls (the SimPy engine holds it around each call), or
per-session by the SimPy engine for a reason given after the prefix. Runs before these
names said "fleet path" for the kernel and "engine: " for per-session; `current` reads
those too.
"""

from __future__ import annotations

from collections.abc import Mapping

KERNEL = "kernel"
KERNEL_AFTER_CALLS = "kernel but for its scripted calls"
#: a per-session road is this prefix and why
PER_SESSION = "per-session: "
#: why, when the run was asked not to use the kernel (`run_scenario(kernel=False)`)
KERNEL_OFF = "kernel off"
#: why, for a project the kernel handed back to the engine
HANDED_BACK = "handed back by the kernel"

_OLD = (("fleet path", KERNEL), ("engine: ", PER_SESSION))


def current(roads: Mapping[str, int]) -> dict[str, int]:
    """`roads` in today's words (a run.json written before them reads the same)."""
    out: dict[str, int] = {}
    for road, n in roads.items():
        for old, new in _OLD:
            road = road.replace(old, new)
        out[road] = out.get(road, 0) + n
    return out


__all__ = ["HANDED_BACK", "KERNEL", "KERNEL_AFTER_CALLS", "KERNEL_OFF", "PER_SESSION", "current"]

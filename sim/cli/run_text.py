"""How `sim run` words a run: its simulated span and the roads its computes took."""

from __future__ import annotations

from sim.scenario.roads import KERNEL, PER_SESSION, current


def days(seconds: float) -> str:
    """A simulated span in days: "1 day", "0.5 days", "30 days"."""
    n = seconds / 86_400
    return f"{n:g} day" if n == 1 else f"{n:g} days"


def roads_line(roads: dict[str, int]) -> str:
    """How many computes each road computed, e.g. "16 computes: 14 by the kernel,
    2 by the kernel but for their scripted calls"."""
    roads = current(roads)
    kernel = {road: n for road, n in roads.items() if not road.startswith(PER_SESSION)}
    per_session = {road.removeprefix(PER_SESSION): n for road, n in roads.items()
                   if road.startswith(PER_SESSION)}
    parts = [f"{n} by the {road.replace('its scripted', 'their scripted')}"
             for road, n in kernel.items()]
    line = f"{sum(roads.values())} computes: " + ", ".join(parts or [f"0 by the {KERNEL}"])
    if per_session:
        why = ", ".join(f"{n} {reason}" for reason, n in per_session.items())
        line += f", {sum(per_session.values())} per-session in the SimPy engine ({why})"
    return line

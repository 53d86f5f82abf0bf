"""How `sim run` words a run: its simulated span and the roads its computes took."""

from __future__ import annotations


def days(seconds: float) -> str:
    """A simulated span in days: "1 day", "0.5 days", "30 days"."""
    n = seconds / 86_400
    return f"{n:g} day" if n == 1 else f"{n:g} days"


def roads_line(roads: dict[str, int]) -> str:
    """How many computes each road computed, e.g. "16 computes: 14 by the fleet path,
    2 by the fleet path but for their scripted calls"."""
    kernel = {road: n for road, n in roads.items() if not road.startswith("engine: ")}
    engine = {road.removeprefix("engine: "): n for road, n in roads.items()
              if road.startswith("engine: ")}
    parts = [f"{n} by the {road.replace('its scripted', 'their scripted')}"
             for road, n in kernel.items()]
    line = f"{sum(roads.values())} computes: " + ", ".join(parts or ["0 by the fleet path"])
    if engine:
        why = ", ".join(f"{n} {reason}" for reason, n in engine.items())
        line += f", {sum(engine.values())} by the SimPy engine ({why})"
    return line

"""Verbs of the control plane due at a simulated instant, scheduled as plain data.

A timer names the verb and its arguments (ids and numbers), not a closure: the
world is saved as a data tree, and a pending timer must survive that as any
other state. It goes on SimPy's heap like every other event of the engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sim.engine.scheduling import timeout_at

if TYPE_CHECKING:
    from sim.engine.control_plane import ControlPlane


@dataclass
class Timer:
    """`cp.<verb>(*args)` at simulated second `at`."""

    cp: ControlPlane
    verb: str
    args: tuple[Any, ...]
    at: float

    def fire(self, _event: object) -> None:
        getattr(self.cp, self.verb)(*self.args)


def call_at(cp: ControlPlane, at: float, verb: str, *args: Any) -> Timer:
    """Schedule `cp.<verb>(*args)` at `at` (now, if `at` has passed)."""
    timer = Timer(cp, verb, args, max(at, cp.now))
    timeout_at(cp.env, timer.at).callbacks.append(timer.fire)
    return timer

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


#: the verbs a timer may name: a timer read back from a snapshot naming another is refused
VERBS = frozenset({"expire_branch", "expire_snapshot", "take_scheduled_snapshot"})


@dataclass
class Timer:
    """`cp.<verb>(*args)` at simulated second `at`."""

    cp: ControlPlane
    verb: str
    args: tuple[Any, ...]
    at: float

    def fire(self, _event: object) -> None:
        getattr(self.cp, self.verb)(*self.args)

    def check_restored(self) -> None:
        """Called when a snapshot is read (`sim.api.world_decode`): a known verb only."""
        if self.verb not in VERBS or type(self.args) is not tuple:
            raise ValueError(f"a timer of no known verb {str(self.verb)[:40]!r}")


def call_at(cp: ControlPlane, at: float, verb: str, *args: Any) -> Timer:
    """Schedule `cp.<verb>(*args)` at `at` (now, if `at` has passed)."""
    if verb not in VERBS:
        raise ValueError(f"{verb}: not a verb timers schedule (add it to VERBS)")
    timer = Timer(cp, verb, args, max(at, cp.now))
    timeout_at(cp.env, timer.at).callbacks.append(timer.fire)
    return timer

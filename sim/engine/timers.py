"""Verbs of the control plane due at a simulated instant, scheduled as plain data.

A timer names the verb and its arguments (ids and numbers), not a closure: the
world is saved as a data tree, and a pending timer must survive that as any
other state. It goes on SimPy's heap like every other event of the engine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sim.engine.scheduling import timeout_at

if TYPE_CHECKING:
    from sim.engine.control_plane import ControlPlane


#: the verbs a timer may name, with the types of their arguments (ids, instants, counts):
#: a timer read back from a snapshot naming another, or given other arguments, is refused
VERBS: dict[str, tuple[type, ...]] = {
    "expire_branch": (str, str),  # branch id, its expiry as the API shows it
    "expire_snapshot": (str, float),  # snapshot id, the instant it expires
    "take_scheduled_snapshot": (str, int, int),  # branch id, schedule index, generation
}


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
        """Called when a snapshot is read (`sim.api.world_decode`): a known verb, given
        arguments of its types, at a finite instant (the world's control plane is checked
        there: there is one, and every timer's is it)."""
        kinds = VERBS.get(self.verb) if type(self.verb) is str else None
        if kinds is None:
            raise ValueError(f"a timer of no known verb {str(self.verb)[:40]!r}")
        if (type(self.args) is not tuple or len(self.args) != len(kinds)
                or not all(type(a) is k or (k is float and type(a) is int)
                           for a, k in zip(self.args, kinds, strict=False))
                or any(type(a) is float and not math.isfinite(a) for a in self.args)):
            raise ValueError(f"a timer of {self.verb} not given its arguments (ids, instants)")
        if type(self.at) not in (int, float) or not math.isfinite(self.at):
            raise ValueError(f"a timer of {self.verb} at no instant")


def call_at(cp: ControlPlane, at: float, verb: str, *args: Any) -> Timer:
    """Schedule `cp.<verb>(*args)` at `at` (now, if `at` has passed)."""
    if verb not in VERBS:
        raise ValueError(f"{verb}: not a verb timers schedule (add it to VERBS)")
    timer = Timer(cp, verb, args, max(at, cp.now))
    timeout_at(cp.env, timer.at).callbacks.append(timer.fire)
    return timer

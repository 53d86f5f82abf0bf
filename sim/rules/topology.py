"""How computes may sit on a branch (the specification: one read-write compute per branch).

The scenario schema checks a template's branches with this before a run; the
control plane checks a create or a move of a compute with it during one.
"""

from __future__ import annotations

from collections.abc import Iterable

from sim.rules.errors import conflict
from sim.rules.states import ComputeType


def check_one_primary(types: Iterable[str]) -> None:
    """Refuse a branch whose computes hold more than one read_write. Raises ApiError(409)."""
    primaries = sum(1 for t in types if str(getattr(t, "value", t)) == ComputeType.READ_WRITE.value)
    if primaries > 1:
        raise conflict(
            "type",
            "a branch has at most one read_write compute (add read_only replicas instead)",
        )

"""The rules of the specification, pure and clock-free: sizes, limits, states, errors.

Nothing here imports SimPy, an HTTP library or pandas, and nothing reads a clock.
"""

from sim.rules.connections import (
    POOLER_MAX_CLIENTS,
    AutoscalingConnections,
    default_pool_size,
    max_connections,
)
from sim.rules.errors import ApiError
from sim.rules.operations import Action
from sim.rules.sizes import VALID_CU, Plan, validate_size
from sim.rules.states import ComputeState, ComputeType, OperationStatus
from sim.rules.timeouts import effective_suspend_timeout, validate_suspend_timeout

__all__ = [
    "POOLER_MAX_CLIENTS",
    "VALID_CU",
    "Action",
    "ApiError",
    "AutoscalingConnections",
    "ComputeState",
    "ComputeType",
    "OperationStatus",
    "Plan",
    "default_pool_size",
    "effective_suspend_timeout",
    "max_connections",
    "validate_size",
    "validate_suspend_timeout",
]

"""Compute sizes and the resources a size brings (the specification, Limits).

One compute unit (CU) is 1 vCPU and 4 GB of RAM. Sizes are quantised: only the
values of VALID_CU exist. A compute is either fixed (min == max, any valid CU
up to 56) or autoscaling (0.25..16 CU, min <= max).
"""

from __future__ import annotations

import math
from enum import StrEnum

from sim.rules.errors import ApiError, invalid

#: 0.25, 0.5, every integer 1..16, every even integer 18..56.
VALID_CU: tuple[float, ...] = (
    (0.25, 0.5) + tuple(float(i) for i in range(1, 17)) + tuple(float(i) for i in range(18, 57, 2))
)
_VALID_SET = frozenset(VALID_CU)

MIN_CU = 0.25
MAX_FIXED_CU = 56.0
MAX_AUTOSCALING_CU = 16.0
SHARED_CU = frozenset({0.25, 0.5})  # shared compute (not a dedicated VM core)

RAM_GB_PER_CU = 4.0
LFC_SHARE_OF_RAM = 0.75  # Local File Cache: up to 75% of RAM
TEMP_DISK_MIN_GIB = 20.0
TEMP_DISK_GIB_PER_CU = 15.0
GIB = 1024**3


class Plan(StrEnum):
    FREE = "free"
    LAUNCH = "launch"
    SCALE = "scale"
    BUSINESS = "business"


#: Largest compute a plan allows. the specification: free is capped at 2 vCPU / 8 GB;
#: paid plans allow larger (the limits of the size table apply).
PLAN_MAX_CU: dict[Plan, float] = {
    Plan.FREE: 2.0,
    Plan.LAUNCH: MAX_FIXED_CU,
    Plan.SCALE: MAX_FIXED_CU,
    Plan.BUSINESS: MAX_FIXED_CU,
}


def is_valid_cu(cu: float) -> bool:
    return isinstance(cu, (int, float)) and not isinstance(cu, bool) and float(cu) in _VALID_SET


def is_shared(cu: float) -> bool:
    return float(cu) in SHARED_CU


def vcpu(cu: float) -> float:
    return float(cu)


def ram_gb(cu: float) -> float:
    return RAM_GB_PER_CU * float(cu)


def lfc_gb(cu: float) -> float:
    """Largest Local File Cache of a compute of this size."""
    return LFC_SHARE_OF_RAM * ram_gb(cu)


def temp_disk_gib(max_cu: float) -> float:
    """Local disk for temporary files: the larger of 20 GiB or 15 GiB x max CU."""
    return max(TEMP_DISK_MIN_GIB, TEMP_DISK_GIB_PER_CU * float(max_cu))


def temp_disk_bytes(max_cu: float) -> int:
    return int(temp_disk_gib(max_cu) * GIB)


def step_up(cu: float) -> float:
    """The smallest valid size at or above `cu` (the autoscaler only lands on valid sizes)."""
    for v in VALID_CU:
        if v >= cu - 1e-12:
            return v
    return VALID_CU[-1]


def validate_size(
    min_cu: float,
    max_cu: float,
    plan: Plan = Plan.LAUNCH,
    *,
    min_field: str = "autoscaling_limit_min_cu",
    max_field: str = "autoscaling_limit_max_cu",
) -> None:
    """Refuse a size that the limits table does not allow. Raises ApiError(400)."""
    for value, field in ((min_cu, min_field), (max_cu, max_field)):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
            raise invalid(field, f"must be a number, got {value!r}")
        if not is_valid_cu(value):
            raise invalid(
                field,
                f"{value:g} CU is not a valid size (0.25, 0.5, 1 to 16, or an even number 18 to 56)",
            )
    if min_cu > max_cu:
        raise invalid(min_field, f"minimum {min_cu:g} CU is above the maximum {max_cu:g} CU")
    if min_cu != max_cu and max_cu > MAX_AUTOSCALING_CU:
        raise invalid(
            max_field,
            f"autoscaling goes up to {MAX_AUTOSCALING_CU:g} CU; sizes above are fixed only "
            f"(set minimum and maximum equal)",
        )
    cap = PLAN_MAX_CU[Plan(plan)]
    if max_cu > cap:
        raise ApiError(
            400,
            "PLAN_LIMIT",
            f"{max_field}: the {Plan(plan).value} plan allows up to {cap:g} CU, got {max_cu:g}",
            max_field,
        )

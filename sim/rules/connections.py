"""Connection limits (the specification, Limits): max_connections per size and the pooler."""

from __future__ import annotations

from enum import StrEnum

from sim.rules.sizes import VALID_CU

#: the specification's table for fixed sizes; 9 to 38 CU all give 4000.
MAX_CONNECTIONS_TABLE: dict[float, int] = {
    0.25: 112,
    0.5: 225,
    1.0: 450,
    2.0: 901,
    3.0: 1351,
    4.0: 1802,
    5.0: 2253,
    6.0: 2703,
    7.0: 3154,
    8.0: 3604,
}
MAX_CONNECTIONS_CAP = 4000  # 9..38 CU; also assumed above 38 CU (not shown in the specification)

POOLER_MAX_CLIENTS = 10_000  # pooled: concurrent client connections
DEFAULT_POOL_SHARE = 0.9  # server pool = 90% of max_connections (assumption, see docs/model.md)

SQLSTATE_TOO_MANY_CONNECTIONS = "53300"
SQLSTATE_DISK_FULL = "53100"


class AutoscalingConnections(StrEnum):
    """Which end of an autoscaling range sets max_connections (the specification: not shown)."""

    MAX = "max"
    MIN = "min"


def max_connections_fixed(cu: float) -> int:
    """Postgres max_connections of a compute of `cu` CU (the size table; `sim limits`)."""
    cu = float(cu)
    if cu in MAX_CONNECTIONS_TABLE:
        return MAX_CONNECTIONS_TABLE[cu]
    if cu >= 9 and cu in VALID_CU:
        return MAX_CONNECTIONS_CAP
    raise ValueError(f"{cu:g} CU is not a valid size")


def max_connections(
    min_cu: float, max_cu: float, rule: AutoscalingConnections = AutoscalingConnections.MAX
) -> int:
    """max_connections of a compute; for autoscaling, taken from one end of the range."""
    if min_cu == max_cu:
        return max_connections_fixed(min_cu)
    use_max = AutoscalingConnections(rule) is AutoscalingConnections.MAX
    return max_connections_fixed(max_cu if use_max else min_cu)


def default_pool_size(max_conn: int, share: float = DEFAULT_POOL_SHARE) -> int:
    """The pooler's server connections when the scenario sets no pool_size: a share of
    the compute's max_connections, at least one."""
    return max(1, int(max_conn * share))

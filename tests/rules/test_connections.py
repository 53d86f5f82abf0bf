"""the specification, Limits: max_connections by compute size, the autoscaling rule
(the design notes: from the maximum, configurable), the default pool and the pooler cap."""

from __future__ import annotations

import pytest

from sim.rules.connections import (
    DEFAULT_POOL_SHARE,
    MAX_CONNECTIONS_CAP,
    POOLER_MAX_CLIENTS,
    AutoscalingConnections,
    default_pool_size,
    max_connections,
    max_connections_fixed,
)
from sim.rules.sizes import VALID_CU

#: the specification's table, column by column.
SPEC_TABLE = [
    (0.25, 112),
    (0.5, 225),
    (1, 450),
    (2, 901),
    (3, 1351),
    (4, 1802),
    (5, 2253),
    (6, 2703),
    (7, 3154),
    (8, 3604),
]
NINE_TO_38 = [v for v in VALID_CU if 9 <= v <= 38]
ABOVE_38 = [v for v in VALID_CU if v > 38]


def _id(v: object) -> str:
    return repr(v)


@pytest.mark.parametrize(("cu", "expected"), SPEC_TABLE, ids=[f"{c:g}CU" for c, _ in SPEC_TABLE])
def test_table_column(cu, expected):
    assert max_connections_fixed(cu) == expected
    assert max_connections(cu, cu) == expected


@pytest.mark.parametrize("cu", NINE_TO_38, ids=lambda c: f"{c:g}CU")
def test_9_to_38_gives_4000(cu):
    assert max_connections_fixed(cu) == 4000
    assert max_connections(cu, cu) == 4000


def test_9_to_38_covers_every_valid_size_in_range():
    assert NINE_TO_38 == [*map(float, range(9, 17)), *map(float, range(18, 39, 2))]


@pytest.mark.parametrize("cu", ABOVE_38, ids=lambda c: f"{c:g}CU")
def test_above_38_capped_at_4000_assumption(cu):
    assert max_connections(cu, cu) == 4000


def test_cap_constant():
    assert MAX_CONNECTIONS_CAP == 4000


@pytest.mark.parametrize("cu", VALID_CU, ids=lambda c: f"{c:g}CU")
def test_every_valid_size_has_a_value(cu):
    assert 112 <= max_connections_fixed(cu) <= 4000


def test_max_connections_grows_with_size():
    values = [max_connections_fixed(v) for v in VALID_CU]
    assert values == sorted(values)


@pytest.mark.parametrize(
    "cu", [0, 0.75, 1.5, 8.5, 9.5, 17, 39, 57, 58, -1, float("nan"), float("inf")], ids=_id
)
def test_invalid_size_has_no_max_connections(cu):
    with pytest.raises(ValueError):
        max_connections_fixed(cu)


# -- autoscaling ------------------------------------------------------------------------

AUTOSCALING_CASES = [
    # (min, max, from max, from min)
    (0.25, 4, 1802, 112),
    (0.25, 0.5, 225, 112),
    (0.5, 1, 450, 225),
    (1, 8, 3604, 450),
    (2, 16, 4000, 901),
    (8, 9, 4000, 3604),
]


@pytest.mark.parametrize(("lo", "hi", "by_max", "by_min"), AUTOSCALING_CASES, ids=_id)
def test_autoscaling_from_max_by_default(lo, hi, by_max, by_min):
    assert max_connections(lo, hi) == by_max
    assert max_connections(lo, hi, AutoscalingConnections.MAX) == by_max


@pytest.mark.parametrize(("lo", "hi", "by_max", "by_min"), AUTOSCALING_CASES, ids=_id)
def test_autoscaling_from_min_when_configured(lo, hi, by_max, by_min):
    assert max_connections(lo, hi, AutoscalingConnections.MIN) == by_min


@pytest.mark.parametrize(("lo", "hi", "by_max", "by_min"), AUTOSCALING_CASES, ids=_id)
def test_autoscaling_rule_given_as_plain_string(lo, hi, by_max, by_min):
    # scenario files spell the rule as text; "max" must not silently mean the minimum
    assert max_connections(lo, hi, "max") == by_max
    assert max_connections(lo, hi, "min") == by_min


def test_unknown_autoscaling_rule_refused():
    with pytest.raises(ValueError):
        max_connections(0.25, 4, "middle")


@pytest.mark.parametrize("rule", list(AutoscalingConnections), ids=lambda r: r.value)
@pytest.mark.parametrize("cu", [0.25, 4, 16, 56], ids=_id)
def test_fixed_size_ignores_rule(cu, rule):
    assert max_connections(cu, cu, rule) == max_connections_fixed(cu)


def test_rule_values():
    assert {r.value for r in AutoscalingConnections} == {"max", "min"}


# -- pooler -----------------------------------------------------------------------------


def test_default_pool_share_is_90_percent():
    assert DEFAULT_POOL_SHARE == 0.9


@pytest.mark.parametrize("max_conn", [m for _, m in SPEC_TABLE] + [4000], ids=lambda m: f"max{m}")
def test_default_pool_is_90_percent_of_max_connections(max_conn):
    assert default_pool_size(max_conn) == max_conn * 9 // 10


@pytest.mark.parametrize(("max_conn", "pool"), [(112, 100), (450, 405), (4000, 3600)], ids=_id)
def test_default_pool_points(max_conn, pool):
    assert default_pool_size(max_conn) == pool


def test_pool_share_configurable_and_at_least_one():
    assert default_pool_size(1000, 0.5) == 500
    assert default_pool_size(1) == 1


def test_pooler_client_cap_is_10000():
    assert POOLER_MAX_CLIENTS == 10_000

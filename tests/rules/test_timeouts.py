"""the design notes fills the specification's gap: suspend_timeout_seconds 0 = default (300 s,
the specification's 5 minutes), -1 = never, otherwise 60..604800."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.rules.errors import ApiError
from sim.rules.timeouts import (
    DEFAULT_SUSPEND_TIMEOUT_S,
    effective_suspend_timeout,
    validate_suspend_timeout,
)

FIELD = "suspend_timeout_seconds"


def _id(v: object) -> str:
    return repr(v)


def test_default_is_five_minutes():
    assert DEFAULT_SUSPEND_TIMEOUT_S == 5 * 60


@pytest.mark.parametrize(
    ("value", "effective"),
    [(0, 300.0), (-1, None), (60, 60.0), (300, 300.0), (3600, 3600.0), (604_800, 604_800.0)],
    ids=_id,
)
def test_accepted_values_and_their_meaning(value, effective):
    assert validate_suspend_timeout(value) is None
    assert effective_suspend_timeout(value) == effective


def test_minus_one_means_never():
    assert effective_suspend_timeout(-1) is None


def test_zero_means_default_300_seconds():
    assert effective_suspend_timeout(0) == 300


@pytest.mark.parametrize(
    "value",
    [59, 604_801, -2, 1, 30, -60, 10**9, True, False, 60.0, 300.5, 0.0, "300", None],
    ids=_id,
)
def test_refused_values_name_the_field(value):
    with pytest.raises(ApiError) as exc:
        validate_suspend_timeout(value)
    err = exc.value
    assert err.status == 400
    assert err.code == "INVALID_REQUEST"
    assert err.field == FIELD
    assert FIELD in err.message


def test_custom_field_name_in_message():
    with pytest.raises(ApiError) as exc:
        validate_suspend_timeout(59, field="endpoint.suspend_timeout_seconds")
    assert exc.value.field == "endpoint.suspend_timeout_seconds"
    assert "endpoint.suspend_timeout_seconds" in exc.value.message


@given(st.integers(min_value=-(10**7), max_value=10**7))
def test_integer_accepted_iff_in_rule(value):
    ok = value in (0, -1) or 60 <= value <= 604_800
    try:
        validate_suspend_timeout(value)
    except ApiError:
        assert not ok
    else:
        assert ok

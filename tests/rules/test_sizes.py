"""the specification, Limits: valid CU values, fixed/autoscaling ranges, shared compute,
vCPU/RAM/LFC per CU, local temporary disk, plan caps, and step_up."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.rules.errors import ApiError
from sim.rules.sizes import (
    GIB,
    PLAN_MAX_CU,
    VALID_CU,
    Plan,
    is_shared,
    is_valid_cu,
    lfc_gb,
    ram_gb,
    step_up,
    temp_disk_bytes,
    temp_disk_gib,
    validate_size,
    vcpu,
)

MIN_FIELD = "autoscaling_limit_min_cu"
MAX_FIELD = "autoscaling_limit_max_cu"

#: the specification: "0.25, 0.5, every integer 1 to 16, every even integer 18 to 56"
SPEC_VALID_CU = [0.25, 0.5, *range(1, 17), *range(18, 57, 2)]
AUTOSCALING_CU = [v for v in SPEC_VALID_CU if v <= 16]
ABOVE_16 = list(range(18, 57, 2))
ODD_17_TO_55 = list(range(17, 56, 2))
INVALID_NUMBERS = [0, 0.0, 0.75, 1.5, 2.5, 16.5, 57, 58, 60, -0.25, -1, -56, 0.125]
NON_NUMBERS = [math.nan, math.inf, -math.inf, True, False, "1", "0.25", None, [1], b"1"]
PAID_PLANS = [p for p in Plan if p is not Plan.FREE]


def _id(v: object) -> str:
    return repr(v)


# -- valid CU values -------------------------------------------------------------------


def test_valid_cu_is_exactly_the_spec_list():
    assert list(VALID_CU) == [float(v) for v in SPEC_VALID_CU]
    assert len(VALID_CU) == 2 + 16 + 20


@pytest.mark.parametrize("cu", SPEC_VALID_CU, ids=_id)
def test_spec_value_is_valid(cu):
    assert is_valid_cu(cu)
    assert is_valid_cu(float(cu))


@pytest.mark.parametrize("cu", ODD_17_TO_55, ids=_id)
def test_odd_size_above_16_is_not_valid(cu):
    assert not is_valid_cu(cu)
    assert float(cu) not in VALID_CU


@pytest.mark.parametrize("cu", INVALID_NUMBERS + NON_NUMBERS, ids=_id)
def test_value_outside_spec_is_not_valid(cu):
    assert not is_valid_cu(cu)


# -- fixed sizes -------------------------------------------------------------------------


@pytest.mark.parametrize("cu", SPEC_VALID_CU, ids=_id)
def test_fixed_size_accepted(cu):
    assert validate_size(cu, cu) is None


@pytest.mark.parametrize("plan", PAID_PLANS, ids=lambda p: p.value)
@pytest.mark.parametrize("cu", ABOVE_16, ids=_id)
def test_fixed_size_above_16_accepted_on_paid_plans(cu, plan):
    assert validate_size(cu, cu, plan) is None


@pytest.mark.parametrize("cu", ODD_17_TO_55 + INVALID_NUMBERS + NON_NUMBERS, ids=_id)
def test_fixed_invalid_size_refused_naming_field(cu):
    with pytest.raises(ApiError) as exc:
        validate_size(cu, cu)
    err = exc.value
    assert err.status == 400
    assert err.code == "INVALID_REQUEST"
    assert err.field == MIN_FIELD
    assert MIN_FIELD in err.message


@pytest.mark.parametrize("cu", ODD_17_TO_55 + INVALID_NUMBERS + NON_NUMBERS, ids=_id)
def test_invalid_maximum_refused_naming_max_field(cu):
    with pytest.raises(ApiError) as exc:
        validate_size(0.25, cu)
    assert exc.value.status == 400
    assert exc.value.field == MAX_FIELD
    assert MAX_FIELD in exc.value.message


def test_custom_field_names_appear_in_message():
    with pytest.raises(ApiError) as exc:
        validate_size(1.5, 2, min_field="compute.min", max_field="compute.max")
    assert exc.value.field == "compute.min"
    assert "compute.min" in exc.value.message


# -- autoscaling -------------------------------------------------------------------------

ASC_OK = [(a, b) for a in AUTOSCALING_CU for b in AUTOSCALING_CU if a <= b]
ASC_REVERSED = [(a, b) for a in AUTOSCALING_CU for b in AUTOSCALING_CU if a > b]


@pytest.mark.parametrize(("lo", "hi"), ASC_OK, ids=[f"{a:g}-{b:g}" for a, b in ASC_OK])
def test_autoscaling_range_up_to_16_accepted(lo, hi):
    assert validate_size(lo, hi) is None


@pytest.mark.parametrize(("lo", "hi"), ASC_REVERSED, ids=[f"{a:g}-{b:g}" for a, b in ASC_REVERSED])
def test_autoscaling_min_above_max_refused(lo, hi):
    with pytest.raises(ApiError) as exc:
        validate_size(lo, hi)
    assert exc.value.status == 400
    assert exc.value.field == MIN_FIELD
    assert MIN_FIELD in exc.value.message


def test_min_above_max_refused_for_large_fixed_like_values():
    with pytest.raises(ApiError) as exc:
        validate_size(56, 18)
    assert exc.value.status == 400
    assert exc.value.field == MIN_FIELD


@pytest.mark.parametrize("lo", [0.25, 1, 16], ids=_id)
@pytest.mark.parametrize("hi", ABOVE_16, ids=_id)
def test_autoscaling_above_16_refused(lo, hi):
    with pytest.raises(ApiError) as exc:
        validate_size(lo, hi)
    err = exc.value
    assert err.status == 400
    assert err.code == "INVALID_REQUEST"
    assert err.field == MAX_FIELD
    assert MAX_FIELD in err.message


@pytest.mark.parametrize(("lo", "hi"), [(18, 20), (20, 56), (54, 56)], ids=_id)
def test_autoscaling_between_two_sizes_above_16_refused(lo, hi):
    with pytest.raises(ApiError) as exc:
        validate_size(lo, hi)
    assert exc.value.status == 400
    assert exc.value.field == MAX_FIELD


# -- shared compute, vCPU, RAM, LFC -----------------------------------------------------


def test_shared_compute_is_exactly_quarter_and_half():
    assert {v for v in VALID_CU if is_shared(v)} == {0.25, 0.5}


@pytest.mark.parametrize("cu", VALID_CU, ids=_id)
def test_shared_flag_per_size(cu):
    assert is_shared(cu) is (cu in (0.25, 0.5))


@pytest.mark.parametrize("cu", VALID_CU, ids=_id)
def test_vcpu_equals_cu(cu):
    assert vcpu(cu) == cu


@pytest.mark.parametrize("cu", VALID_CU, ids=_id)
def test_ram_is_four_gb_per_cu(cu):
    assert ram_gb(cu) == 4 * cu


def test_quarter_cu_is_quarter_vcpu_and_one_gb():
    assert vcpu(0.25) == 0.25
    assert ram_gb(0.25) == 1.0


@pytest.mark.parametrize("cu", VALID_CU, ids=_id)
def test_lfc_is_75_percent_of_ram(cu):
    assert lfc_gb(cu) == pytest.approx(0.75 * 4 * cu)
    assert lfc_gb(cu) == pytest.approx(0.75 * ram_gb(cu))


# -- local temporary disk ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("max_cu", "gib"),
    [(0.25, 20), (0.5, 20), (1, 20), (4 / 3, 20), (2, 30), (4, 60), (16, 240), (56, 840)],
    ids=_id,
)
def test_temp_disk_is_larger_of_20_gib_or_15_gib_per_cu(max_cu, gib):
    assert temp_disk_gib(max_cu) == pytest.approx(gib)
    assert temp_disk_bytes(max_cu) == pytest.approx(gib * 1024**3, abs=1)


@pytest.mark.parametrize("cu", VALID_CU, ids=_id)
def test_temp_disk_formula_for_every_size(cu):
    assert temp_disk_gib(cu) == max(20.0, 15.0 * cu)


def test_gib_is_binary():
    assert GIB == 2**30


# -- plans ------------------------------------------------------------------------------


def test_free_plan_matches_2_vcpu_8_gb():
    cap = PLAN_MAX_CU[Plan.FREE]
    assert vcpu(cap) == 2
    assert ram_gb(cap) == 8


@pytest.mark.parametrize(("lo", "hi"), [(2, 2), (0.25, 2), (1, 2), (0.25, 0.25)], ids=_id)
def test_free_plan_allows_up_to_2_cu(lo, hi):
    assert validate_size(lo, hi, Plan.FREE) is None
    assert validate_size(lo, hi, "free") is None


@pytest.mark.parametrize(("lo", "hi"), [(3, 3), (0.25, 3), (2, 4), (56, 56), (16, 16)], ids=_id)
def test_free_plan_refuses_above_2_cu(lo, hi):
    with pytest.raises(ApiError) as exc:
        validate_size(lo, hi, Plan.FREE)
    err = exc.value
    assert err.status == 400
    assert err.code == "PLAN_LIMIT"
    assert err.field == MAX_FIELD
    assert MAX_FIELD in err.message
    assert "free" in err.message


@pytest.mark.parametrize("plan", PAID_PLANS, ids=lambda p: p.value)
def test_paid_plans_allow_56(plan):
    assert PLAN_MAX_CU[plan] == 56
    assert validate_size(56, 56, plan) is None
    assert validate_size(3, 3, plan) is None


def test_every_plan_has_a_cap():
    assert set(PLAN_MAX_CU) == set(Plan)


# -- step_up ----------------------------------------------------------------------------


@pytest.mark.parametrize("cu", VALID_CU, ids=_id)
def test_step_up_keeps_valid_size(cu):
    assert step_up(cu) == cu


@pytest.mark.parametrize(
    ("x", "expected"),
    [
        (0, 0.25),
        (0.1, 0.25),
        (0.3, 0.5),
        (0.51, 1),
        (1.5, 2),
        (15.2, 16),
        (16.01, 18),
        (17, 18),
        (19, 20),
        (55, 56),
    ],
    ids=_id,
)
def test_step_up_goes_to_next_valid_size(x, expected):
    assert step_up(x) == expected


def test_step_up_above_largest_is_largest():
    assert step_up(57) == 56
    assert step_up(1000) == 56


@given(st.floats(min_value=-10, max_value=56, allow_nan=False))
def test_step_up_lands_on_smallest_valid_size_at_or_above(x):
    v = step_up(x)
    assert v in VALID_CU
    assert v >= x - 1e-12
    assert not any(x - 1e-12 <= w < v for w in VALID_CU)

"""the design notes' error table: each helper of sim.rules.errors and its status."""

from __future__ import annotations

import pytest

from sim.rules import errors
from sim.rules.errors import ApiError

CASES = [
    pytest.param(lambda: errors.invalid("endpoint.branch_id", "required"), 400, id="400"),
    pytest.param(lambda: errors.unauthorized(), 401, id="401"),
    pytest.param(lambda: errors.forbidden("project key"), 403, id="403"),
    pytest.param(lambda: errors.not_found("endpoint", "ep-x", "endpoint_id"), 404, id="404"),
    pytest.param(lambda: errors.conflict("endpoint.type", "branch has one"), 409, id="409"),
    pytest.param(lambda: errors.unsupported_state("compute is idle"), 422, id="422"),
    pytest.param(lambda: errors.locked("operation running"), 423, id="423"),
    pytest.param(lambda: errors.rate_limited(2.5), 429, id="429"),
    pytest.param(lambda: errors.unavailable(), 503, id="503"),
]


@pytest.mark.parametrize(("make", "status"), CASES)
def test_helper_status(make, status):
    err = make()
    assert isinstance(err, ApiError)
    assert isinstance(err, Exception)
    assert err.status == status


@pytest.mark.parametrize(("make", "status"), CASES)
def test_body_has_code_and_message(make, status):
    err = make()
    body = err.body()
    assert set(body) >= {"code", "message"}
    assert body["code"] == err.code
    assert body["message"] == err.message == str(err)
    assert body["code"] and body["code"] == body["code"].upper()
    assert body["message"]


def test_codes_are_distinct():
    codes = [p.values[0]().code for p in CASES]
    assert len(set(codes)) == len(codes)


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: errors.invalid("endpoint.branch_id", "required"), "endpoint.branch_id"),
        (lambda: errors.conflict("endpoint.type", "branch has a read_write"), "endpoint.type"),
        (lambda: errors.not_found("endpoint", "ep-x", "endpoint_id"), "endpoint_id"),
        (lambda: errors.unsupported_state("not active", "current_state"), "current_state"),
    ],
    ids=["invalid", "conflict", "not_found", "unsupported_state"],
)
def test_field_recorded(make, field):
    assert make().field == field


@pytest.mark.parametrize(
    "make",
    [lambda: errors.invalid("name", "1 to 255 characters"), lambda: errors.conflict("name", "x")],
    ids=["invalid", "conflict"],
)
def test_message_names_the_field(make):
    err = make()
    assert err.message.startswith("name: ")


def test_invalid_keeps_reason():
    err = errors.invalid("suspend_timeout_seconds", "must be an integer")
    assert err.code == "INVALID_REQUEST"
    assert "must be an integer" in err.message


def test_not_found_names_kind_and_id():
    err = errors.not_found("endpoint", "ep-cool-42")
    assert err.code == "NOT_FOUND"
    assert "endpoint" in err.message and "ep-cool-42" in err.message
    assert err.field is None


def test_rate_limited_carries_retry_after():
    err = errors.rate_limited(2.5)
    assert err.retry_after == 2.5
    assert err.code == "RATE_LIMITED"
    assert "2.5" in err.message


def test_unauthorized_default_message():
    assert "API key" in errors.unauthorized().message


def test_can_be_raised_and_caught():
    with pytest.raises(ApiError) as exc:
        raise errors.locked("busy")
    assert exc.value.status == 423
    assert "423" in repr(exc.value)

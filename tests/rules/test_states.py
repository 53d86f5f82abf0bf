"""the specification, States and transitions: compute current_state and operation status
(with the design notes' operation status flow)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.rules.operations import Action
from sim.rules.states import (
    COMPUTE_TRANSITIONS,
    OPERATION_TRANSITIONS,
    REQUIRES_ACTIVE,
    TERMINAL_STATUSES,
    ComputeState,
    ComputeType,
    OperationStatus,
    Transition,
    can_move_operation,
    check_operation_move,
    compute_transition,
    is_terminal,
)

COMPUTE_STATES = ["init", "idle", "active"]
STATUSES = ["scheduling", "running", "finished", "failed", "cancelling", "cancelled", "skipped"]
TERMINAL = ["finished", "skipped", "cancelled"]
NON_TERMINAL = [s for s in STATUSES if s not in TERMINAL]


# -- compute current_state --------------------------------------------------------------


def test_compute_states_are_exactly_init_idle_active():
    assert [s.value for s in ComputeState] == COMPUTE_STATES


def test_compute_types():
    assert ComputeType.READ_WRITE.value == "read_write"
    assert ComputeType.READ_ONLY.value == "read_only"  # the design notes: replica type
    assert len(ComputeType) == 2


#: the specification's table: (source, trigger, target, operation it produces).
SPEC_COMPUTE_ROWS = [
    pytest.param(None, "create", "init", "start_compute", id="create->init"),
    pytest.param("idle", "connection", "active", "start_compute", id="idle+connection->active"),
    pytest.param("idle", "start", "active", "start_compute", id="idle+start_call->active"),
    pytest.param("active", "inactivity", "idle", "suspend_compute", id="active+inactivity->idle"),
    pytest.param("active", "restart", "active", None, id="active+restart->active"),
]


@pytest.mark.parametrize(("source", "trigger", "target", "operation"), SPEC_COMPUTE_ROWS)
def test_spec_compute_row(source, trigger, target, operation):
    t = compute_transition(source, trigger)
    assert t is not None
    assert t.source == source
    assert t.trigger == trigger
    assert t.target == target
    if operation is not None:
        assert t.also.split(",")[0] == operation


def test_create_gives_init_with_start_compute_exactly():
    assert compute_transition(None, "create") == Transition(None, "create", "init", "start_compute")


def test_inactivity_suspends_exactly():
    t = compute_transition("active", "inactivity")
    assert t == Transition("active", "inactivity", "idle", "suspend_compute")


def test_restart_is_suspend_then_start():
    # the design notes: restart returns a suspend_compute then a start_compute operation
    assert compute_transition("active", "restart").also == "suspend_compute,start_compute"


#: the design notes fill-ins, pinned as well so that a change shows up here.
DESIGN_COMPUTE_ROWS = [
    pytest.param("init", "start_finished", "active", "", id="init+start_finished->active"),
    pytest.param("active", "suspend", "idle", "suspend_compute", id="active+suspend_call->idle"),
    pytest.param(
        "active",
        "resize",
        "active",
        "apply_config,suspend_compute,start_compute",
        id="active+resize->active",
    ),
    pytest.param("active", "autoscale", "active", "", id="active+autoscale->active"),
]


@pytest.mark.parametrize(("source", "trigger", "target", "also"), DESIGN_COMPUTE_ROWS)
def test_design_compute_row(source, trigger, target, also):
    assert compute_transition(source, trigger) == Transition(source, trigger, target, also)


def test_compute_table_has_no_other_rows():
    assert len(COMPUTE_TRANSITIONS) == len(SPEC_COMPUTE_ROWS) + len(DESIGN_COMPUTE_ROWS)
    keys = [(t.source, t.trigger) for t in COMPUTE_TRANSITIONS]
    assert len(set(keys)) == len(keys), "a (state, trigger) pair must be unambiguous"


@pytest.mark.parametrize("t", COMPUTE_TRANSITIONS, ids=lambda t: f"{t.source}+{t.trigger}")
def test_compute_rows_use_known_states_and_actions(t):
    assert t.source is None or t.source in COMPUTE_STATES
    assert t.target in COMPUTE_STATES
    actions = {a.value for a in Action}
    assert all(op in actions for op in t.also.split(",") if op)


def test_restart_requires_active():
    assert "restart" in REQUIRES_ACTIVE
    assert {t.source for t in COMPUTE_TRANSITIONS if t.trigger == "restart"} == {"active"}


@pytest.mark.parametrize("source", [None, "init", "idle"], ids=repr)
def test_restart_not_possible_unless_active(source):
    assert compute_transition(source, "restart") is None


@pytest.mark.parametrize("source", ["init", "active"])
def test_connection_wakes_only_idle(source):
    assert compute_transition(source, "connection") is None


@pytest.mark.parametrize("source", ["init", "idle"])
def test_inactivity_suspends_only_active(source):
    assert compute_transition(source, "inactivity") is None


def test_create_only_from_nothing():
    for s in COMPUTE_STATES:
        assert compute_transition(s, "create") is None


# -- operation status -------------------------------------------------------------------


def test_operation_statuses_are_exactly_the_seven_of_spec():
    assert [s.value for s in OperationStatus] == STATUSES


def test_terminal_statuses():
    assert TERMINAL_STATUSES == frozenset(TERMINAL)


@pytest.mark.parametrize("status", STATUSES)
def test_is_terminal(status):
    assert is_terminal(status) is (status in TERMINAL)


def test_failed_is_not_terminal_and_can_run_again():
    assert not is_terminal("failed")
    assert can_move_operation("failed", "running")
    check_operation_move("failed", "running")


def test_scheduling_to_finished_allowed():
    # the specification's one row: seen when polling a start_compute operation
    assert can_move_operation("scheduling", "finished")
    check_operation_move("scheduling", "finished")


#: the design notes' flow: scheduling -> running -> finished; fault -> failed, retried;
#: cancelling -> cancelled; skipped when superseded.
EXPECTED_MOVES = {
    ("scheduling", "running"),
    ("scheduling", "finished"),
    ("scheduling", "cancelling"),
    ("scheduling", "skipped"),
    ("running", "finished"),
    ("running", "failed"),
    ("running", "cancelling"),
    ("failed", "running"),
    ("failed", "cancelling"),
    ("cancelling", "cancelled"),
}


def test_operation_transition_table():
    assert OPERATION_TRANSITIONS == EXPECTED_MOVES


ALLOWED = sorted(EXPECTED_MOVES)


@pytest.mark.parametrize(("source", "target"), ALLOWED, ids=[f"{a}->{b}" for a, b in ALLOWED])
def test_allowed_move(source, target):
    assert can_move_operation(source, target)
    assert check_operation_move(source, target) is None


FORBIDDEN = [p for p in itertools.product(STATUSES, STATUSES) if p not in EXPECTED_MOVES]


@pytest.mark.parametrize(("source", "target"), FORBIDDEN, ids=[f"{a}->{b}" for a, b in FORBIDDEN])
def test_forbidden_move_raises(source, target):
    assert not can_move_operation(source, target)
    with pytest.raises(RuntimeError):
        check_operation_move(source, target)


@pytest.mark.parametrize("target", STATUSES)
@pytest.mark.parametrize("source", TERMINAL)
def test_no_move_out_of_terminal(source, target):
    with pytest.raises(RuntimeError, match=f"{source} -> {target}"):
        check_operation_move(source, target)


@pytest.mark.parametrize("status", NON_TERMINAL)
def test_every_non_terminal_status_can_move(status):
    assert any(a == status for a, _ in OPERATION_TRANSITIONS)


@pytest.mark.parametrize("status", TERMINAL)
def test_every_terminal_status_is_reachable(status):
    assert any(b == status for _, b in OPERATION_TRANSITIONS)


def _successors(status: str) -> list[str]:
    return sorted(b for a, b in OPERATION_TRANSITIONS if a == status)


@given(
    start=st.sampled_from(STATUSES),
    choices=st.lists(st.integers(min_value=0, max_value=100), max_size=40),
)
def test_random_walk_never_leaves_terminal(start, choices):
    status = start
    seen_terminal = is_terminal(status)
    for c in choices:
        nxt = _successors(status)
        if seen_terminal:
            assert nxt == []
            for target in STATUSES:
                with pytest.raises(RuntimeError):
                    check_operation_move(status, target)
            break
        if not nxt:
            break
        target = nxt[c % len(nxt)]
        check_operation_move(status, target)
        status = target
        assert status in STATUSES
        seen_terminal = is_terminal(status)
    if is_terminal(status):
        assert _successors(status) == []


@pytest.mark.parametrize("source", TERMINAL)
def test_terminal_guard_holds_even_if_table_gained_an_exit(source, monkeypatch):
    from sim.rules import states

    monkeypatch.setattr(
        states, "OPERATION_TRANSITIONS", OPERATION_TRANSITIONS | {(source, "running")}
    )
    assert states.can_move_operation(source, "running")
    with pytest.raises(RuntimeError):
        states.check_operation_move(source, "running")

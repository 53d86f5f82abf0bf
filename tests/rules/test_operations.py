"""the specification, Operation: the 13 actions, console words and status labels."""

from __future__ import annotations

import pytest

from sim.rules.operations import COMPUTE_ACTIONS, STATUS_LABELS, Action, action_words
from sim.rules.states import OperationStatus

SPEC_ACTIONS = [
    "apply_config",
    "apply_storage_config",
    "check_availability",
    "create_branch",
    "create_timeline",
    "delete_tenant",
    "start_compute",
    "suspend_compute",
    "tenant_attach",
    "tenant_detach",
    "tenant_reattach",
    "timeline_archive",
    "timeline_unarchive",
]


def test_actions_are_exactly_the_13_of_spec():
    assert [a.value for a in Action] == SPEC_ACTIONS
    assert len(Action) == 13


@pytest.mark.parametrize("name", SPEC_ACTIONS)
def test_action_exists_by_name(name):
    assert Action(name).value == name
    assert Action[name.upper()] is Action(name)


@pytest.mark.parametrize("bad", ["restart_compute", "create_endpoint", "Start compute", ""])
def test_unknown_action_refused(bad):
    with pytest.raises(ValueError):
        Action(bad)


@pytest.mark.parametrize(
    ("action", "words"),
    [
        ("start_compute", "Start compute"),
        ("suspend_compute", "Suspend compute"),
        ("apply_storage_config", "Apply storage config"),
        ("timeline_unarchive", "Timeline unarchive"),
    ],
)
def test_action_words(action, words):
    assert action_words(action) == words


@pytest.mark.parametrize("action", list(Action), ids=lambda a: a.value)
def test_action_words_for_every_action(action):
    words = action_words(action.value)
    assert "_" not in words
    assert words[0].isupper()
    assert words.lower() == action.value.replace("_", " ")


def test_compute_actions_carry_endpoint_id():
    assert Action.START_COMPUTE in COMPUTE_ACTIONS
    assert Action.SUSPEND_COMPUTE in COMPUTE_ACTIONS
    assert Action.CREATE_BRANCH not in COMPUTE_ACTIONS
    assert COMPUTE_ACTIONS <= set(Action)


@pytest.mark.parametrize(
    ("status", "label"),
    [
        ("finished", "OK"),
        ("scheduling", "Scheduling"),
        ("running", "In progress"),
        ("failed", "Error"),
        ("cancelled", "Cancelled"),  # the design notes
        ("skipped", "Skipped"),  # the design notes
    ],
)
def test_status_label(status, label):
    assert STATUS_LABELS[status] == label


def test_every_status_has_a_label():
    assert set(STATUS_LABELS) == {s.value for s in OperationStatus}

"""A refusal quotes what the client sent, cut short: a 100 KB id is not echoed back whole."""

from __future__ import annotations

from sim.api import SimClient
from sim.rules.errors import SHOWN_CHARS, shown
from tests.api.conftest import make_project


def test_shown_cuts_long_values_and_keeps_short_ones() -> None:
    assert shown("ep-short") == "ep-short"
    assert shown("x" * SHOWN_CHARS) == "x" * SHOWN_CHARS
    assert shown("x" * 100_000) == "x" * SHOWN_CHARS + "…"


def test_a_60_kb_id_is_cut_in_the_404_message(api: SimClient) -> None:
    long_id = "p" * 60_000  # about the longest URL an HTTP client sends
    r = api.get(f"projects/{long_id}")
    assert r.status_code == 404
    message = r.json()["message"]
    assert message == f"project {'p' * SHOWN_CHARS + '…'!r} not found"
    assert len(r.content) < 500


def test_a_100_kb_id_in_a_body_is_cut_too(api: SimClient) -> None:
    made = make_project(api, "echo")
    long_id = "br-" + "b" * 100_000
    r = api.post(f"projects/{made['project']['id']}/endpoints",
                 json={"endpoint": {"branch_id": long_id, "type": "read_only"}})
    assert r.status_code == 404, r.text
    assert len(r.content) < 1_500 and long_id not in r.text


def test_an_unknown_60_kb_route_is_cut_in_its_message(api: SimClient) -> None:
    r = api.get("nothing-here/" + "z" * 60_000)
    assert r.status_code == 404
    assert r.json()["message"].endswith("…") and len(r.content) < 500

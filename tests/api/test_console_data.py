"""The console page's data and text, without a browser (tests/api/test_console.py has one)."""

from __future__ import annotations

from sim.api import SimClient
from sim.api.console_page import PAGE
from tests.api.conftest import make_project


def test_a_running_operation_shows_no_length_until_it_ends(api: SimClient) -> None:
    make_project(api, "shop")
    console = api.get(api.base_url.join("/_sim/console")).json()
    [ops] = [p["operations"] for p in console["projects"] if p["name"] == "shop"]
    running = [op for op in ops if op["status_key"] in ("running", "scheduling")]
    assert running and all(op["duration"] == "" for op in running)  # not "0 ms"
    api.advance(60)
    console = api.get(api.base_url.join("/_sim/console")).json()
    [ops] = [p["operations"] for p in console["projects"] if p["name"] == "shop"]
    assert ops and all(op["status_key"] == "finished" for op in ops)
    assert all(op["duration"].endswith((" ms", " s")) and op["duration"] != "0 ms" for op in ops)


def test_the_no_key_page_names_the_command_as_code_not_markdown() -> None:
    assert "`sim serve`" not in PAGE
    assert 'h("code", {}, "sim serve")' in PAGE

"""`import sim`: a curated, cheap public surface; the CLI lists the planning commands."""

from __future__ import annotations

import subprocess
import sys

import pytest

import sim
from sim.cli import COMMANDS, build_parser
from tests.planning.conftest import ROOT


def test_every_public_name_resolves() -> None:
    assert sim.__all__ == sorted(sim.__all__)
    for name in sim.__all__:
        assert getattr(sim, name) is not None, name
    assert callable(sim.run_sweep) and callable(sim.run_fleet) and callable(sim.load_scenario)
    assert sim.erlang_b(1, 1.0) == 0.5


def test_unknown_names_raise_attribute_error() -> None:
    with pytest.raises(AttributeError):
        sim.no_such_thing  # noqa: B018


def test_import_sim_loads_neither_pandas_nor_dask() -> None:
    code = "import sys, sim; print(sorted(m for m in ('pandas', 'distributed', 'matplotlib') " \
           "if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("command", ["plot", "sweep"])
def test_planning_commands_have_help(command: str) -> None:
    assert command in COMMANDS and COMMANDS[command][1]
    parser = build_parser()
    help_text = parser._subparsers._group_actions[0].choices[command].format_help()  # noqa: SLF001
    assert "usage: sim " + command in help_text


def test_run_has_the_sharding_options() -> None:
    args = build_parser().parse_args(["run", "x.yaml", "--workers", "3",
                                      "--scheduler", "tcp://127.0.0.1:8786"])
    assert (args.workers, args.scheduler) == (3, "tcp://127.0.0.1:8786")

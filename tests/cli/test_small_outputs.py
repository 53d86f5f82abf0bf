"""What a newcomer reads first: durations in words, errors on their first line, a closed
pipe without a traceback, a short help(sim)."""

from __future__ import annotations

import os
import pydoc
import subprocess
import sys
from pathlib import Path

import pytest

import sim
from sim.cli import EXIT_BROKEN_PIPE, main
from sim.recommendation.output import counted

ROOT = Path(__file__).resolve().parents[2]


def test_validate_says_the_simulated_span_in_words(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(ROOT / "scenarios" / "quickstart.yaml")]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().endswith("16 computes, 1 d simulated"), out
    assert "e+" not in out


@pytest.mark.parametrize("args", [
    ["sweep", "scenarios/quickstart.yaml", "--set", "nosuch.key=1,2"],
    ["recommend", "scenarios/quickstart.yaml", "--slo", "refused=1%", "--space", "shop.cu=99"],
])
def test_errors_of_batch_commands_begin_on_the_first_line(
        args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # not --quiet: the progress bar was what left a blank line in front of the error
    monkeypatch.chdir(ROOT)
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("sim: error: ") and captured.err.count("\n") == 1, captured.err


@pytest.mark.parametrize("args", [["limits"], ["validate", "scenarios/quickstart.yaml"]])
def test_a_reader_that_left_gets_no_traceback(args: list[str]) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [
        str(ROOT), os.environ.get("PYTHONPATH")]))}
    read, write = os.pipe()
    os.close(read)  # the reader (`| head -3`) is gone before sim writes a byte
    try:
        done = subprocess.run([sys.executable, "-m", "sim", *args], stdout=write,
                              stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env, timeout=120)
    finally:
        os.close(write)
    assert done.stderr == ""
    assert done.returncode == EXIT_BROKEN_PIPE


def test_counts_have_their_plural() -> None:
    assert [counted(n, "round") for n in (0, 1, 2, 1200)] == [
        "0 rounds", "1 round", "2 rounds", "1,200 rounds"]


def test_help_of_sim_is_the_surface_a_planner_calls() -> None:
    text = pydoc.render_doc(sim, renderer=pydoc.plaintext)
    assert len(text.splitlines()) < 250  # not the inherited methods of models and errors
    for name in sim.__all__:
        value = getattr(sim, name)
        assert callable(value) and value.__doc__, f"sim.{name} has no docstring"
    # the types they return or raise are importable from sim, and listed by dir()
    for name in ("Scenario", "RunResult", "SweepResult", "Recommendation", "ScenarioError",
                 "ScenarioRunError", "SweepError", "RecommendError"):
        assert name in dir(sim) and isinstance(getattr(sim, name), type), name
        assert name in (sim.__doc__ or "")

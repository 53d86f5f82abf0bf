"""Mistakes on the command line get one line naming the problem, and change nothing."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from sim.cli import main
from sim.metrics.io import result_files

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "scenarios" / "quickstart.yaml"


def sim(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`python -m sim ARGS` as a user types it; a server that starts would be a failure,
    so the timeout only ends a test that is failing anyway."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get(
        "PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "sim", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=120)


@pytest.mark.parametrize("port", ["99999", "0", "-1"])
def test_serve_refuses_a_port_out_of_range_before_printing_anything(tmp_path: Path,
                                                                    port: str) -> None:
    state = tmp_path / "state.sqlite"
    done = sim("serve", "--port", port, "--state", str(state), cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"sim: error: --port must be 1..65535, got {port}\n"
    assert not state.exists()  # no state file made, no key saved


@pytest.mark.parametrize("step", ["0", "-3600", "nan"])
def test_serve_refuses_an_advance_step_that_is_not_positive(tmp_path: Path, step: str) -> None:
    state = tmp_path / "state.sqlite"
    done = sim("serve", "--advance-step", step, "--state", str(state), cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == "sim: error: --advance-step must be > 0 (simulated seconds)\n"
    assert not state.exists()


def test_serve_refuses_a_port_in_use_before_printing_anything(tmp_path: Path) -> None:
    state = tmp_path / "state.sqlite"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = sim("serve", "--port", str(port), "--state", str(state), cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == "", done.stdout
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"sim: error: --port {port}: cannot listen on "
                                  f"127.0.0.1:{port} ("), done.stderr
    assert not state.exists()


def test_plot_names_the_one_missing_file(earlier_run: Path, capsys) -> None:
    out = earlier_run
    (out / "summary.json").unlink()
    capsys.readouterr()
    assert main(["plot", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"{out}: no saved results here (summary.json is missing)" in err


def test_plot_of_a_directory_without_results_lists_what_is_missing(tmp_path: Path,
                                                                   capsys) -> None:
    assert main(["plot", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    names = result_files()
    assert err.count("\n") == 1
    assert f"({len(names)} files are missing: {', '.join(names)})" in err
    assert list(tmp_path.iterdir()) == []  # nothing drawn into it


def test_a_key_of_another_section_names_its_full_path(tmp_path: Path, capsys) -> None:
    text = QUICKSTART.read_text(encoding="utf-8")
    scenario = tmp_path / "moved.yaml"
    scenario.write_text(text + "cold_start: {dist: fixed, mean_s: 1}\n", encoding="utf-8")
    assert main(["validate", str(scenario)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"{scenario}: cold_start: unknown key here; it belongs at engine.cold_start" in err


def test_run_whose_results_cannot_be_written_fails_in_one_line(tiny: Path, tmp_path: Path,
                                                               capsys) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory", encoding="utf-8")
    assert main(["run", str(tiny), "--out", str(blocker / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot write the results" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", tiny.name]

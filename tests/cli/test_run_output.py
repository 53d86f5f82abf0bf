"""`sim run` into its results directory: all or nothing, never two runs mixed.

Interrupts go to a child `sim run` that stops after a chosen file (see
interrupted_run.py) and waits for the SIGINT; nothing here depends on timing.
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sim.cli import build_parser, main
from sim.cli.run_text import days
from sim.metrics.charts import chart_files
from sim.metrics.io import read_run, result_files
from sim.metrics.report import REPORT_FILE, SCENARIO_FILE
from sim.metrics.results_dir import PREPARING, file_count, staging_dir, write_run
from tests.cli.conftest import TINY

ROOT = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("interrupted_run.py")

def snapshot(directory: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.iterdir())}


def leftovers(parent: Path, out: Path) -> list[str]:
    """Anything beside the target that a run left behind (staging or replaced copies)."""
    return sorted(p.name for p in parent.iterdir() if p.name.startswith(f".{out.name}."))


def interrupted_run(tmp_path: Path, pause_after: str, *args: str
                    ) -> tuple[int, str, str, list[str]]:
    """Run `sim run ARGS` in a child, SIGINT it once FILE is written; its exit status,
    output, and the files its staging directory held when the signal went."""
    marker = tmp_path / f"paused-after-{pause_after}"
    marker.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get(
        "PYTHONPATH", "")])}
    child = subprocess.Popen([sys.executable, str(CHILD), str(marker), pause_after, *args],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env, cwd=tmp_path)
    try:
        waited = 0
        while not marker.exists():  # waiting for the child to reach the point, not a budget
            assert child.poll() is None, child.communicate()
            assert waited < 1200, "the child never reached the pause point"
            time.sleep(0.1)
            waited += 1
        (staging,) = tmp_path.glob(".*.partial-*")
        staged = sorted(p.name for p in staging.iterdir())
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    return child.returncode, out, err, staged


def test_ctrl_c_while_results_are_written_leaves_no_directory(tiny: Path,
                                                              tmp_path: Path) -> None:
    out = tmp_path / "results"
    code, stdout, err, staged = interrupted_run(tmp_path, chart_files()[1],
                                                "run", str(tiny), "--out", str(out), "--quiet")
    # it stopped half-way: tables, summary and some charts written, the report not
    assert {"summary.json", chart_files()[1]} <= set(staged) and REPORT_FILE not in staged
    assert code == 130
    assert err == f"sim: interrupted; {out} left as it was\n" and stdout == ""
    assert not out.exists() and leftovers(tmp_path, out) == []


def test_ctrl_c_while_replacing_earlier_results_leaves_them_untouched(
        tiny: Path, earlier_run: Path, tmp_path: Path) -> None:
    out = earlier_run
    before = snapshot(out)
    # mid-way (tables there, charts not), and complete but not yet moved into place
    for pause_after in ("summary.json", REPORT_FILE):
        code, _, err, staged = interrupted_run(tmp_path, pause_after, "run", str(tiny),
                                               "--out", str(out), "--quiet", "--seed", "2",
                                               "--force")
        assert pause_after in staged
        assert code == 130 and err.count("\n") == 1 and "interrupted" in err, err
        assert snapshot(out) == before, pause_after
        assert read_run(out)["seed"] == 1
        assert leftovers(tmp_path, out) == []


def test_an_existing_results_directory_is_refused_without_force(tiny: Path, earlier_run: Path,
                                                                capsys) -> None:
    out = earlier_run
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    before = snapshot(out)
    capsys.readouterr()
    assert main(["run", str(tiny), "--out", str(out), "--quiet", "--seed", "2"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert "--force" in captured.err and str(out) in captured.err
    assert snapshot(out) == before


def test_force_replaces_the_directory_whole(tiny: Path, earlier_run: Path,
                                            tmp_path: Path) -> None:
    out = earlier_run
    (out / "notes.txt").write_text("from before", encoding="utf-8")
    assert main(["run", str(tiny), "--out", str(out), "--quiet", "--seed", "2",
                 "--force"]) == 0
    assert not (out / "notes.txt").exists() and read_run(out)["seed"] == 2
    expected = {*result_files(), *chart_files(), SCENARIO_FILE, REPORT_FILE}
    assert {p.name for p in out.iterdir()} == expected
    assert leftovers(tmp_path, out) == []


def test_help_says_what_happens_to_an_existing_directory() -> None:
    text = build_parser()._subparsers._group_actions[0].choices["run"].format_help()
    assert "--force" in text and "replace" in text and "refused" in text


@pytest.mark.parametrize(("duration", "words"), [("6h", "0.25 days"), ("1d", "1 day")])
def test_the_closing_line_reports_simulation_and_writing_separately(
        tmp_path: Path, capsys, duration: str, words: str) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(TINY.format(duration=duration), encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()  # an empty directory is used as it is, without --force
    assert main(["run", str(scenario), "--out", str(out), "--quiet"]) == 0
    last = capsys.readouterr().out.rstrip("\n").splitlines()[-1]
    head, _, tail = last.partition("; results written in ")
    assert head.startswith(f"simulated {words} in ") and head.endswith(" s"), last
    assert tail.endswith(f" s to {out}/ (6 charts, report.html)"), last


def test_days_are_singular_only_for_one() -> None:
    assert [days(s) for s in (86_400, 43_200, 172_800, 0)] == [
        "1 day", "0.5 days", "2 days", "0 days"]


def test_progress_hears_of_every_file_once_tables_first_report_last(tiny: Path, tmp_path: Path) -> None:
    from sim.scenario.loader import load_scenario
    from sim.sweep.fleet import run_fleet

    heard: list[tuple[int, int, str]] = []
    staging = staging_dir(tmp_path / "out", replace=False)
    write_run(run_fleet(tiny), load_scenario(tiny), tiny, staging,
              progress=lambda done, total, name: heard.append((done, total, name)))
    total = file_count()
    assert [h[0] for h in heard] == list(range(1, total + 1))
    assert {h[1] for h in heard} == {total}
    names = [h[2] for h in heard]
    assert names[0] == PREPARING and names[-1] == REPORT_FILE
    assert sorted(names[1:]) == sorted(p.name for p in staging.iterdir())


def test_the_command_shows_progress_while_writing(tiny: Path, tmp_path: Path) -> None:
    """Through the real command, with stderr taken for a terminal (as rich is told by
    FORCE_COLOR): the bar's last frame shows every file written."""
    env = {**os.environ, "FORCE_COLOR": "1", "TTY_INTERACTIVE": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "sim", "run", str(tiny), "--out",
                           str(tmp_path / "out")], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", done.stderr)
    total = file_count()
    assert "simulating tiny" in shown and "writing results" in shown
    assert f"{total}/{total} {REPORT_FILE}" in shown


def test_sim_leaves_its_heap_uncollected_at_exit_once(tiny: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """At exit the objects of a run are frozen out of the collector's last passes, by one
    hook however often `main` runs in a process."""
    import atexit
    import gc

    hooks: list = []
    monkeypatch.setattr(atexit, "register", hooks.append)
    monkeypatch.setattr(atexit, "unregister", lambda f: hooks.remove(f) if f in hooks else None)
    for _ in range(2):
        assert main(["validate", str(tiny)]) == 0
    assert hooks == [gc.freeze]

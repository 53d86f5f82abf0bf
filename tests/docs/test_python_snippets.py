"""Every Python snippet in the docs works as a planner's plain script.

A snippet saved as `script.py` and run with `python script.py` has no
`if __name__ == "__main__":` guard. The documents whose outputs are checked run
their snippets that way (`scripts.shown_outputs`); the others' run here, one
subprocess each, in a fresh directory with `scenarios/` linked in. Their work is
bounded by what the snippet asks (its scenario, its seeds, its replications).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.shown_outputs import DOCUMENTS, ROOT, parse_blocks
from sim.main_guard import GUARD

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
HANG = 1800  # seconds: only a hang reaches this


def _snippets() -> list[tuple[str, int, str]]:
    found = []
    for page in PAGES:
        name = str(page.relative_to(ROOT))
        for block in parse_blocks(page.read_text().splitlines()):
            if block.language == "python":
                found.append((name, block.start + 1, "\n".join(block.lines) + "\n"))
    return found


SNIPPETS = _snippets()
ELSEWHERE = [s for s in SNIPPETS if s[0] not in DOCUMENTS]


def _run_script(tmp_path: Path, text: str, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "scenarios").symlink_to(ROOT / "scenarios")
    (tmp_path / "script.py").write_text(text)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT),
                                                                   os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=HANG)


def test_the_documents_hold_snippets_and_the_checked_ones_run_as_scripts() -> None:
    assert ELSEWHERE and len(ELSEWHERE) < len(SNIPPETS)
    # scripts.shown_outputs writes a python block to a file and runs that file
    from scripts.shown_outputs import plan_steps

    steps, _ = plan_steps(["```python", "print(1)", "```", "", "```text", "1", "```"])
    assert "END_OF_PYTHON" in steps[0].command and ".py\n" in steps[0].command + "\n"
    assert " - <<" not in steps[0].command  # not from stdin, where nothing re-imports it


@pytest.mark.parametrize("snippet", ELSEWHERE, ids=lambda s: f"{s[0]}:{s[1]}")
def test_a_snippet_runs_as_a_plain_script(tmp_path: Path, snippet: tuple[str, int, str]) -> None:
    page, line, text = snippet
    assert GUARD not in text  # the test is of a script without the guard
    done = _run_script(tmp_path, text, "script.py")
    assert done.returncode == 0 and "Traceback" not in done.stderr, \
        f"{page}:{line} as script.py: exit {done.returncode}\n{done.stderr[-3000:]}"
    # at most the one line that says it ran in this process, naming the guard
    assert len(done.stderr.splitlines()) <= 1, done.stderr


SCRIPT = f"""
import sys
from sim.main_guard import in_process_instead


def start(workers=None, scheduler=None, client=None):
    return in_process_instead("sim.recommend", workers, scheduler, client)


print("top level", start())
print("top level, workers=0", start(workers=0))
print("top level, a scheduler", start(scheduler="tcp://127.0.0.1:8786"))
{GUARD}
    print("guarded", start())
"""


def test_an_unguarded_call_runs_in_this_process_and_says_why_in_one_line(tmp_path: Path) -> None:
    done = _run_script(tmp_path, SCRIPT, "script.py")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["top level True", "top level, workers=0 False",
                                        "top level, a scheduler False", "guarded False"]
    [note] = done.stderr.splitlines()
    assert note.startswith("sim: sim.recommend runs in this process") and GUARD in note
    assert "script.py" in note


def test_python_minus_c_and_stdin_re_import_nothing(tmp_path: Path) -> None:
    # no file to import again: worker processes are fine, nothing falls back
    done = _run_script(tmp_path, SCRIPT, "-c", SCRIPT)
    assert done.returncode == 0 and done.stderr == ""
    assert "top level False" in done.stdout.splitlines()

"""Every Python snippet in the docs works as a planner's plain script.

A snippet saved as `script.py` and run with `python script.py` has no
`if __name__ == "__main__":` guard. The documents' snippets run that way, in the
tests that run their commands (`scripts.shown_outputs`); here, that each one is
run so, and how a call outside the guard is told from one inside it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from scripts.shown_outputs import DOCUMENTS, ROOT, parse_blocks, plan_steps
from sim.processes.main_guard import GUARD
from tests.docs.test_every_command_runs import RUN_HERE

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


def _run_script(tmp_path: Path, text: str, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "scenarios").symlink_to(ROOT / "scenarios")
    (tmp_path / "script.py").write_text(text)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT),
                                                                   os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=HANG)


def test_every_snippet_runs_as_a_plain_script_in_a_test() -> None:
    # the documents' commands run in test_shown_outputs.py (outputs compared) or in
    # test_every_command_runs.py (in sequence, exit 0, no traceback)
    assert SNIPPETS
    for page, line, text in SNIPPETS:
        assert page in (*DOCUMENTS, *RUN_HERE), f"{page}:{line}: no test runs this snippet"
        assert GUARD not in text, f"{page}:{line}: a planner's script has no guard"
    assert any(page == "docs/recommend.md" for page, _, _ in SNIPPETS)  # starts dask
    # each is saved as a file and run as `python FILE`, not fed to `python -` on stdin
    steps, _ = plan_steps(["```python", "print(1)", "```", "", "```text", "1", "```"])
    assert steps[0].command.splitlines()[-1].endswith(".py") and " - <<" not in steps[0].command


SCRIPT = f"""
import sys
from sim.processes.main_guard import in_process_instead


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

"""Every command the README and docs/ show runs, in order, as a reader would run it.

The documents with shown outputs run in `test_shown_outputs.py` (a Python block
saved as a script; quickstart.md after the README's first command). The others'
commands run here, in sequence in one shell, and must exit 0 without a
traceback. What is not run is listed below with the reason, so a new command in
a document is run or explained.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

import pytest

from scripts.shown_outputs import DOCUMENTS, ROOT, Block, Session, plan_steps, readme_commands

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COMMAND_FENCE = re.compile(r"^\s*```(bash|console|python)\s*$")
#: documents whose commands show no output: run in sequence here
RUN_HERE = ("docs/recommend.md",)
#: (document, first line of a block) -> why it does not run in a test
NOT_RUN = {
    ("README.md", "pip install -e . && sim run scenarios/quickstart.yaml"):
        "installing is the reader's; its `sim run` runs before docs/quickstart.md",
    ("docs/development.md", 'pip install -e ".[test]" && python -m pytest -n auto'):
        "the whole test suite, this one included",
    ("docs/development.md", "python -m scripts.shown_outputs --write"):
        "rewrites the documents; test_shown_outputs.py runs the check without --write",
    ("docs/api.md", "$ python -m tests.official.fields           # \"up to date\", or the new file"):
        "a developer's command on the repository; tests/official/test_document.py runs its check",
    ("docs/notebooks.md", "pip install jupyterlab"):
        "installing and opening Jupyter is the reader's; tests/planning/test_notebooks.py "
        "runs every notebook from a clean kernel",
    ("docs/notebooks.md",
     "SIM_NOTEBOOK_SMALL=1 jupyter execute notebooks/01_scale_to_zero_timeout.ipynb"):
        "tests/planning/test_notebooks.py runs every notebook so, with nbclient",
    ("docs/reliability.md", "$ sim keys list --state world.db"):
        "needs keys made over HTTP and the server stopped; "
        "tests/reliability/test_state_file_serve.py runs both commands",
}
needs_tools = pytest.mark.skipif(any(shutil.which(t) is None for t in ("bash", "curl", "jq")),
                                 reason="documents run with bash, curl and jq")


def command_blocks() -> list[tuple[str, str]]:
    """(document, first line) of every bash, console and python block, indented ones too."""
    found = []
    for page in PAGES:
        name = str(page.relative_to(ROOT))
        lines = page.read_text().splitlines()
        for i, line in enumerate(lines):
            if COMMAND_FENCE.match(line) and i + 1 < len(lines):
                found.append((name, lines[i + 1].strip()))
    return found


def test_every_command_block_runs_in_a_test_or_says_why_not() -> None:
    readme = (ROOT / "README.md").read_text()
    assert readme_commands() and all(c in readme for c in readme_commands())
    unexplained = [block for block in command_blocks()
                   if block[0] not in (*DOCUMENTS, *RUN_HERE) and block not in NOT_RUN]
    assert not unexplained, f"commands no test runs: {unexplained}"
    # an indented block is not run by the shown-outputs check: it must be explained
    for page, first in command_blocks():
        if page in DOCUMENTS and (page, first) not in NOT_RUN:
            text = (ROOT / page).read_text()
            assert re.search(rf"^```\w+\n{re.escape(first)}", text, re.M), (page, first)
    assert set(NOT_RUN) <= set(command_blocks()), "an explained block is gone: update NOT_RUN"


@pytest.mark.slow  # a recommendation on 1,000 computes, twice (on dask, then in this process)
@needs_tools
@pytest.mark.parametrize("document", RUN_HERE)
def test_the_commands_of_a_document_run_in_sequence(document: str) -> None:
    steps, _ = plan_steps((ROOT / document).read_text().splitlines())
    with tempfile.TemporaryDirectory(prefix="doc-commands-") as tmp:
        workdir = Path(tmp)
        (workdir / "scenarios").symlink_to(ROOT / "scenarios")
        session = Session(workdir)
        try:
            ran = 0
            for step in steps:
                if isinstance(step, Block):
                    (workdir / str(step.file_name)).write_text("\n".join(step.lines) + "\n")
                    continue
                out = session.run(f"{step.command}\necho \"__exit=$?\"")
                assert out and out[-1] == "__exit=0" and "Traceback" not in "\n".join(out), \
                    f"{document}:{step.line}: {step.command.splitlines()[0]}\n" + "\n".join(out)
                ran += 1
        finally:
            session.close()
    assert ran >= 2

"""The README is a front door: two commands first, then links that all go somewhere.

The project states its rules in its own words (docs/model.md), so neither the
README nor docs/ sends a reader to documents that are not in the repository.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]+)(#[^)\s]*)?\)")

FIRST_COMMANDS = [
    "pip install -e . && sim run scenarios/quickstart.yaml",
    'pip install -e ".[test]" && python -m pytest -n auto',
]


def test_readme_begins_with_the_two_commands() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    first_block = lines.index("```bash")
    assert all(not line.strip() or line.startswith("# ") for line in lines[:first_block])
    assert lines[first_block + 1:first_block + 4] == [*FIRST_COMMANDS, "```"]


def test_ci_runs_the_readmes_second_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert FIRST_COMMANDS[1] in ci.replace("pip install -q ", "pip install ")
    # the browser tests need both packages; the README and the CI name both
    for text in (ci, (ROOT / "README.md").read_text()):
        assert "chromium" in text and "chromium-driver" in text


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_page_cites_documents_outside_the_repository(page: Path) -> None:
    text = page.read_text()
    for name in ("spec.md", "DESIGN.md", "STYLE.md", "shared/"):
        assert name not in text, f"{page.name} mentions {name}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_leads_to_a_file(page: Path) -> None:
    text = page.read_text()
    for target, anchor in LINK.findall(text):
        if "://" in target:
            continue
        linked = (page.parent / target).resolve()
        assert linked.exists(), f"{page.name}: link to {target} leads nowhere"
        if anchor and linked.suffix == ".md":
            headings = {_anchor(h) for h in re.findall(r"^#+ (.+)$", linked.read_text(), re.M)}
            assert anchor[1:] in headings, f"{page.name}: {target}{anchor} names no heading"


def _anchor(heading: str) -> str:
    """The anchor a Markdown renderer gives a heading: lower case, punctuation dropped."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_the_model_keeps_a_place_for_billing() -> None:
    headings = re.findall(r"^## (.+)$", (ROOT / "docs" / "model.md").read_text(), re.M)
    assert "Billing" in headings and "Money" in headings and "Assumptions" in headings

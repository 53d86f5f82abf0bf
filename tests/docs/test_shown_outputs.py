"""The outputs the documents show are what the code prints now.

Each document's commands run against a fresh server (or a fresh `sim run`)
with the document's seed; a difference fails with a diff per step and the
one command that rewrites the shown outputs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from scripts.shown_outputs import DOCUMENTS, ROOT, differences, plan_steps, rewrite, run_document

REWRITE = "python -m scripts.shown_outputs --write"
TOOLS = ("bash", "curl", "jq")
needs_tools = pytest.mark.skipif(
    any(shutil.which(t) is None for t in TOOLS),
    reason="the shown outputs are checked with bash, curl and jq (apt-get install -y curl jq)",
)


@needs_tools
@pytest.mark.parametrize("document", DOCUMENTS)
def test_shown_outputs_are_what_the_code_prints(document: str) -> None:
    path = ROOT / document
    _, steps = run_document(path)
    assert steps, f"{document} shows no command"
    found = differences(Path(document), steps)
    assert not found, ("\n\n".join(found)
                       + f"\n\n{document}: shown outputs are stale; rewrite them with `{REWRITE}` "
                       "and review the diff")


# -- the checker itself, on small documents that need no server -------------------------

DOC = r"""# A document

```bash
GREETING=hello
```

```bash
echo "$GREETING"; printf 'no newline at the end'
```

```text
hello
no newline at the end
```

<!-- file: numbers.txt -->
```text
3
1
2
```

```console
$ sort numbers.txt
1
2
3
$ echo "simulated 1 days in 0.3 s"
simulated 1 days in 0.3 s
```

```console
$ sim run --help > /dev/null; printf ' a table: 0.3 s\n1 day simulated in 0.3 s, written in 1,234 ms\n'
 a table: 0.3 s
1 day simulated in 9.9 s, written in 2 ms
```
"""


def _run(tmp_path: Path, text: str):
    doc = tmp_path / "doc.md"
    doc.write_text(text)
    return doc, *run_document(doc)


@needs_tools
def test_a_document_that_matches_has_no_difference(tmp_path: Path) -> None:
    doc, lines, steps = _run(tmp_path, DOC)
    # variables carry from block to block; a file block is written before later steps run
    assert [s.actual for s in steps] == [
        [], ["hello", "no newline at the end"], ["1", "2", "3"], ["simulated 1 days in 0.3 s"],
        [" a table: 0.3 s", "1 day simulated in 0.3 s, written in 1,234 ms"]]
    # wall-clock times that `sim run` prints on its own lines are not compared
    assert differences(doc, steps) == []
    assert rewrite(lines, steps)[-2] == "1 day simulated in 0.3 s, written in 1,234 ms"  # as printed


@needs_tools
def test_a_changed_output_is_found_and_rewritten(tmp_path: Path) -> None:
    stale = (DOC.replace("hello\nno newline", "hullo\nno newline")
             .replace("1\n2\n3\n$", "3\n2\n1\n$")
             .replace("simulated 1 days in 0.3 s\n```", "simulated 1 days in 0.4 s\n```")  # not `sim run`
             .replace(" a table: 0.3 s\n", " a table: 0.4 s\n"))  # an indented line of `sim run`
    doc, lines, steps = _run(tmp_path, stale)
    found = differences(doc, steps)
    assert len(found) == 4
    assert "-hullo" in found[0] and "+hello" in found[0]
    assert "`sort numbers.txt`" in found[1]
    assert "-simulated 1 days in 0.4 s" in found[2] and "- a table: 0.4 s" in found[3]
    fixed = "\n".join(rewrite(lines, steps)) + "\n"
    assert fixed == DOC.replace("9.9 s, written in 2 ms", "0.3 s, written in 1,234 ms")


@needs_tools
def test_output_without_a_shown_block_is_a_difference(tmp_path: Path) -> None:
    doc, _, steps = _run(tmp_path, "```bash\necho surprise\n```\n\nSome prose.\n")
    [found] = differences(doc, steps)
    assert "prints output but the document shows none" in found and "surprise" in found


def test_an_unclosed_block_is_refused() -> None:
    with pytest.raises(ValueError, match="line 2: a fenced block is never closed"):
        plan_steps(["text", "```bash", "echo hi"])

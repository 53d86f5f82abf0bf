"""No wall-clock figure in the docs that no benchmark writes: they go stale with the code and
the machine (a scenario once said "21.5 s" and "about a minute" when it took 5 s).

performance.md holds the benchmarks' figures, with the machine they ran on; the
README's figures are the benchmarks' too. Shown outputs (fenced blocks) are left
out: the shown-outputs check does not compare their wall-clock times.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [p for p in sorted((ROOT / "docs").glob("*.md")) if p.name != "performance.md"]
SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))
FENCED = re.compile(r"^\s*```.*?^\s*```", re.M | re.S)
TIME = r"\d+(?:[.,]\d+)? ?(?:s|ms|min|seconds?|minutes?)\b"
WALL_TIMES = [
    re.compile(rf"{TIME} \({TIME}"),  # "21.5 s (27.2 s)"
    re.compile(r"expect about (?:a|an|\d+) (?:second|minute|hour)", re.I),
    re.compile(rf"(?:wall[- ]time|wall[- ]clock|end to end)\W[^.|]{{0,40}}{TIME}", re.I),
    re.compile(rf"(?:takes|took|runs? in|compil\w*)[^.|]{{0,60}}\babout {TIME}", re.I),
]


def _prose(path: Path) -> str:
    text = FENCED.sub("", path.read_text()) if path.suffix == ".md" else path.read_text()
    return re.sub(r"\s+", " ", text)


@pytest.mark.parametrize("path", PAGES + SCENARIOS, ids=lambda p: p.name)
def test_no_wall_time_a_benchmark_does_not_write(path: Path) -> None:
    text = _prose(path)
    found = [m.group(0) for rx in WALL_TIMES for m in rx.finditer(text)]
    assert not found, f"{path.name}: wall-clock figures no benchmark writes: {found}"


@pytest.mark.parametrize("text", [
    "| 7 days | 21.5 s (27.2 s) |", "# seconds. Expect about a minute, not",
    "wall time* 1.2 s", "compiles the simulator's kernel, about 20 s more",
])
def test_the_patterns_catch_what_went_stale(text: str) -> None:
    assert any(rx.search(text) for rx in WALL_TIMES)

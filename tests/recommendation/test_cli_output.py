"""`sim recommend`: the files it writes, honest failure, and one-line errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from sim.cli import COMMANDS, build_parser, main
from sim.scenario.loader import load_scenario
from tests.recommendation.helpers import poisson_fleet


@pytest.fixture
def scenario_file(tmp_path: Path) -> Path:
    # 30 connections an hour, 20 s sessions, for 6 hours: timeouts from 60 s to an hour
    doc = poisson_fleet(30, 20, count=4, duration="6h", timeout=3600)
    path = tmp_path / "steady.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_recommend_has_help() -> None:
    assert COMMANDS["recommend"][1]
    parser = build_parser()
    help_text = parser._subparsers._group_actions[0].choices["recommend"].format_help()  # noqa: SLF001
    assert "usage: sim recommend" in help_text and "--slo" in help_text


def test_writes_table_json_chart_page_and_scenario(scenario_file: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "rec"
    code, printed, _ = run(["recommend", str(scenario_file), "--slo", "cold_starts_per_1000=200",
                            "--slo", "refused=1%", "--space", "timeout=60,300,3600",
                            "--space", "cu=0.25", "--space", "pooler=false",
                            "--replications", "3", "--workers", "0", "--quiet",
                            "--out", str(out)], capsys)
    assert code == 0
    assert "steady (4 projects): binding: cold starts / 1,000 sessions" in printed
    assert re.search(r"\d+ runs in (1 round|[2-9] rounds), 3 replications each", printed), printed
    data = json.loads((out / "recommendation.json").read_text())
    steady = data["templates"]["steady"]
    # exp(-(30/3600)(60 + 20)) = 513 per 1,000 misses 200; 300 s gives 57: the cheapest that meets
    assert steady["recommended"]["settings"]["suspend_timeout_seconds"] == 300
    assert steady["binding_targets"] == ["cold_starts_per_1000"]
    assert steady["recommended"]["simulated"]["cold_starts_per_1000"]["ci_high"] <= 200
    assert steady["saving"] > 0 and data["met"] is True
    assert len(steady["space"]) == 3
    assert (out / "pareto.png").read_bytes()[:4] == b"\x89PNG"
    page = (out / "report.html").read_text()
    assert 'id="recommendation"' in page and "data:image/png;base64," in page
    written = load_scenario(out / "theory-case.recommended.yaml")
    assert written.projects[0].branches[0].computes[0].suspend_timeout_seconds == 300


def test_nothing_meets_the_targets_says_which_and_by_how_much(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario_file = tmp_path / "short.yaml"
    doc = poisson_fleet(30, 20, count=4, duration="6h", timeout=60)
    scenario_file.write_text(yaml.safe_dump(doc), encoding="utf-8")
    code, printed, _ = run(["recommend", str(scenario_file), "--slo", "cold_starts=0.5",
                            "--space", "timeout=60,300", "--space", "cu=0.25",
                            "--space", "pooler=false", "--replications", "2",
                            "--workers", "0", "--quiet", "--out", str(tmp_path / "no")], capsys)
    assert code == 1
    assert "no setting meets the targets" in printed
    assert "cold starts / 1,000 sessions is" in printed and "over)" in printed
    data = json.loads((tmp_path / "no" / "recommendation.json").read_text())
    assert data["met"] is False and data["templates"]["steady"]["recommended"] is None
    assert data["templates"]["steady"]["closest"]["settings"]["suspend_timeout_seconds"] == 300


@pytest.mark.parametrize(("extra", "words"), [
    (["--slo", "colds=1"], "unknown target 'colds'"),
    (["--slo", "cold_starts=1", "--space", "shop.cu=1"], "no template named 'shop'"),
    (["--slo", "cold_starts=1", "--replications", "1"], "replications must be >= 2"),
])
def test_bad_input_is_one_line(scenario_file: Path, extra: list[str], words: str,
                               capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["recommend", str(scenario_file), *extra, "--workers", "0", "--quiet"],
                        capsys)
    assert code == 2
    assert err.startswith("sim: error:") and words in err and len(err.strip().splitlines()) == 1

"""report.html: self-contained, complete, deterministic; `sim plot` redraws it from disk."""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from sim.cli import main
from sim.metrics.report import CHARTS, fleet_rows, readable_assumption
from sim.metrics.summary import format_value
from sim.scenario.loader import load_scenario
from tests.planning.conftest import QUICKSTART

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def page(quickstart_run: Path) -> str:
    return (quickstart_run / "report.html").read_text(encoding="utf-8")


def test_the_page_fetches_nothing(page: str) -> None:
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"<(script|link|iframe|object|embed)\b", page, re.I)
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page, re.I)
    assert "@import" not in page and "url(" not in page
    sources = re.findall(r'<img [^>]*src="([^"]+)"', page)
    assert len(sources) == len(CHARTS) == 6
    for src in sources:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_page_holds_scenario_summary_and_assumptions(page: str, quickstart_run: Path) -> None:
    import json

    summary = json.loads((quickstart_run / "summary.json").read_text())
    run = json.loads((quickstart_run / "run.json").read_text())
    assert "<h1>quickstart</h1>" in page
    assert "seed 1" in page and "starts Mon 05 Jan 2026, 00:00 UTC" in page
    assert "1 d simulated" in page and "launch plan" in page
    assert "10 projects (shop × 6, blog × 4), 16 computes" in page
    assert "daily cycle 2/h to 600/h, peak at 15:00 UTC" in page
    assert ">blog × 4 (free)<" in page
    assert f">{format_value(summary['cost'], 'money')}<" in page  # a key-figure card
    assert f">{summary['sessions']:,}<" in page  # the summary table
    for key in run["assumptions"]:
        assert f"<td>{key}</td>" in page
    assert "lognormal(mean 0.5 s, sigma 0.8)" in page
    for _, heading, _ in CHARTS:
        assert f"<h3>{heading}</h3>" in page


def test_fleet_rows_describe_every_compute() -> None:
    rows = fleet_rows(load_scenario(QUICKSTART))
    assert [(r["template"], r["compute"], r["connections"]) for r in rows] == [
        ("shop × 6 (launch)", "primary", "pooled"),
        ("", "read replica", "direct"),
        ("blog × 4 (free)", "primary", "direct"),
    ]
    assert rows[1]["workload"] == ("daily cycle 0/h to 60/h, peak at 15:00 UTC; "
                                   "exponential sessions, mean 30 s")


def test_long_assumption_values_read_as_durations() -> None:
    assert readable_assumption("1.2096e+06 s") == "14 d (1,209,600 s)"
    assert readable_assumption("120 s") == "2 min (120 s)"
    assert readable_assumption("5 s") == "5 s"
    assert readable_assumption("90% of max_connections") == "90% of max_connections"


def test_sim_plot_redraws_charts_and_report(quickstart_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "copy"
    shutil.copytree(quickstart_run, out)
    for png in out.glob("*.png"):
        png.unlink()
    (out / "report.html").unlink()
    assert main(["plot", str(out)]) == 0
    assert sorted(p.name for p in out.glob("*.png")) == sorted(c[0] for c in CHARTS)
    # same results, same page: the report holds no wall-clock time
    assert (out / "report.html").read_bytes() == (quickstart_run / "report.html").read_bytes()


def test_sim_plot_without_results_fails_in_one_line(tmp_path: Path, capsys) -> None:
    assert main(["plot", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no saved results here" in err


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="no headless Chromium installed")
def test_report_renders_in_headless_chromium(quickstart_run: Path, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--screenshot={shot}", "--window-size=1400,3000",
         (quickstart_run / "report.html").as_uri()],
        check=True, capture_output=True, timeout=60,
    )
    from matplotlib.image import imread

    pixels = imread(shot)
    assert pixels.shape[:2] == (3000, 1400)
    # a page of text, cards and charts: far from one flat colour, and not blank white
    assert pixels[..., :3].std() > 0.1
    assert (pixels[..., :3].mean(axis=2) < 0.5).mean() > 0.01  # dark ink somewhere

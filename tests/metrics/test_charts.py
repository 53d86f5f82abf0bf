import os
import struct

import pytest
from matplotlib import colormaps

import sim.metrics.charts as charts_module
from sim.engine.records import WakeRecord
from sim.metrics import draw_charts, frames, summary
from sim.metrics.charts import _COLOR_ORDER, _action_colors
from sim.metrics.synthetic import synthetic_result
from sim.rules.operations import Action

from .helpers import compute_row, operation, run

NAMES = ["fleet.png", "cold_starts.png", "cost_by_project.png", "cost_by_template.png",
         "connections.png", "operations.png"]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == PNG_SIGNATURE and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def draw(result, out_dir):
    tables = frames(result)
    return draw_charts(tables, summary(tables, result), out_dir)


@pytest.fixture(scope="module")
def synthetic_charts(tmp_path_factory):
    result = synthetic_result(2, projects=12, duration_s=86_400.0, operation_failure_rate=0.05)
    return draw(result, tmp_path_factory.mktemp("charts"))


def test_every_chart_is_a_1200x600_png(synthetic_charts):
    assert [p.name for p in synthetic_charts] == NAMES
    for path in synthetic_charts:
        assert png_size(path.read_bytes()) == (1200, 600), path.name


def test_charts_are_deterministic(synthetic_charts, tmp_path):
    result = synthetic_result(2, projects=12, duration_s=86_400.0, operation_failure_rate=0.05)
    for first, second in zip(synthetic_charts, draw(result, tmp_path), strict=True):
        assert first.read_bytes() == second.read_bytes(), first.name
        assert b"Software" not in first.read_bytes()


def _drawn_by(out_dir):
    return {path.stem + ".png": int(path.read_text()) for path in out_dir.glob("*.pid")}


@pytest.fixture
def marked_saves(monkeypatch):
    """Each chart file gets a companion naming the process that saved it."""
    save = charts_module.save

    def marked(fig, path):
        path.with_suffix(".pid").write_text(str(os.getpid()))
        return save(fig, path)

    monkeypatch.setattr(charts_module, "save", marked)


def _draw_split(out_dir, heard):
    result = synthetic_result(2, projects=12, duration_s=86_400.0, operation_failure_rate=0.05)
    tables = frames(result)
    return draw_charts(tables, summary(tables, result), out_dir, fork=True,
                       on_saved=lambda path: heard.append(path.name))


def test_charts_drawn_in_two_processes_are_the_same_files(synthetic_charts, tmp_path,
                                                          marked_saves):
    heard = []
    paths = _draw_split(tmp_path, heard)
    assert [p.name for p in paths] == NAMES
    assert sorted(heard) == sorted(NAMES)  # each file heard of once
    for first, second in zip(synthetic_charts, paths, strict=True):
        assert first.read_bytes() == second.read_bytes(), first.name
    here = os.getpid()
    drawn_by = _drawn_by(tmp_path)
    assert {name for name, pid in drawn_by.items() if pid != here} == \
        {"fleet.png", "cost_by_project.png"}
    assert len(set(drawn_by.values())) == 2


def test_charts_a_failed_copy_left_are_drawn_here(synthetic_charts, tmp_path, monkeypatch,
                                                  marked_saves):
    here = os.getpid()
    fleet = charts_module.fleet_chart

    def fails_in_the_copy(tables, totals):
        if os.getpid() != here:
            (tmp_path / "copy-failed").touch()
            raise RuntimeError("the copy fails")
        return fleet(tables, totals)

    monkeypatch.setattr(charts_module, "fleet_chart", fails_in_the_copy)
    heard = []
    paths = _draw_split(tmp_path, heard)
    assert sorted(heard) == sorted(NAMES)
    for first, second in zip(synthetic_charts, paths, strict=True):
        assert first.read_bytes() == second.read_bytes(), first.name
    assert (tmp_path / "copy-failed").exists()  # there was a copy, and it failed
    assert _drawn_by(tmp_path)["fleet.png"] == here


def test_charts_without_a_fork_are_all_drawn_here(synthetic_charts, tmp_path, monkeypatch,
                                                  marked_saves):
    monkeypatch.delattr(os, "fork")
    heard = []
    paths = _draw_split(tmp_path, heard)
    assert [p.name for p in paths] == NAMES
    assert sorted(heard) == sorted(NAMES)
    assert set(_drawn_by(tmp_path).values()) == {os.getpid()}


@pytest.mark.parametrize(
    "result",
    [
        run(duration_s=0.0),  # nothing at all
        run(duration_s=3600.0),  # a run with no computes
        run(  # one compute, one creation (not a cold start), one operation, no limit
            duration_s=90.0,
            computes=[compute_row(max_connections=0, peak_connections=0)],
            wakes=[WakeRecord("ep-a", "p-1", 0.0, "create", 1.0)],
            operations=[operation("start_compute")],
        ),
        run(  # a single cold start and an operation at the very end of a long run
            duration_s=40 * 86_400.0,
            computes=[compute_row(peak_connections=3, cu_s=10.0)],
            wakes=[WakeRecord("ep-a", "p-1", 5.0, "connection", 0.0)],
            operations=[operation("apply_config", "failed", at=40 * 86_400.0 - 1, failures=3)],
        ),
    ],
    ids=["empty", "no-computes", "tiny", "long"],
)
def test_edge_cases_draw_valid_pngs(tmp_path, result):
    paths = draw(result, tmp_path)
    assert [p.name for p in paths] == NAMES
    for path in paths:
        assert png_size(path.read_bytes()) == (1200, 600)


def test_action_colours_are_stable_distinct_and_never_red():
    assert sorted(_COLOR_ORDER) == sorted(Action)
    every = _action_colors([a.value for a in Action])
    assert len(set(every.values())) == len(Action)
    assert _action_colors(["suspend_compute"]) == {"suspend_compute": every["suspend_compute"]}
    red = colormaps["tab10"](3)
    assert red not in every.values()

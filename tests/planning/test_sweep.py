"""Sweeps: overrides of the scenario document, seeds, confidence intervals, the CLI, dask."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sim.cli import main
from sim.sweep import (
    KEY_FIGURES,
    Setting,
    SweepError,
    apply_override,
    grid,
    mean_ci,
    parse_setting,
    replication_seed,
    run_sweep,
    write_sweep,
)
from tests.planning.conftest import QUICKSTART

DOC = {
    "name": "two-templates",
    "duration": "1h",
    "projects": [
        {"name": "a", "count": 2, "branches": [
            {"name": "main", "computes": [{"type": "read_write"}, {"type": "read_only"}]},
            {"name": "dev", "computes": [{"type": "read_write"}]}]},
        {"name": "b", "branches": [{"name": "main", "computes": [{"type": "read_write"}]}]},
    ],
}


def computes(doc: dict) -> list[dict]:
    return [c for p in doc["projects"] for b in p["branches"] for c in b["computes"]]


# ---- --set parsing and overrides -------------------------------------------------------------


def test_values_parse_as_yaml_scalars() -> None:
    s = parse_setting("computes.suspend_timeout_seconds=60,-1,0.5,null,true,5m")
    assert s == Setting("computes.suspend_timeout_seconds", (60, -1, 0.5, None, True, "5m"))
    assert s.name == "suspend_timeout_seconds"


@pytest.mark.parametrize("text", ["novalue", "=1", "a.b=", "a.b=1,,2", "a..b=1", "a[x]=1"])
def test_malformed_set_is_refused(text: str) -> None:
    with pytest.raises(SweepError):
        parse_setting(text)


def test_shorthand_applies_to_every_compute_of_every_template() -> None:
    doc = apply_override(DOC, "computes.suspend_timeout_seconds", 900)
    assert [c["suspend_timeout_seconds"] for c in computes(doc)] == [900] * 4
    assert "suspend_timeout_seconds" not in computes(DOC)[0]  # the original is untouched


def test_fully_qualified_path_applies_to_one_place() -> None:
    doc = apply_override(DOC, "projects[0].branches[1].computes[0].autoscaling.max_cu", 8)
    assert [c.get("autoscaling") for c in computes(doc)] == [None, None, {"max_cu": 8}, None]


def test_top_level_and_list_broadcast() -> None:
    doc = apply_override(DOC, "engine.pool_share", 0.5)
    assert doc["engine"] == {"pool_share": 0.5}
    doc = apply_override(DOC, "projects.count", 3)
    assert [p["count"] for p in doc["projects"]] == [3, 3]
    doc = apply_override(DOC, "projects[*].branches[0].name", "trunk")
    assert [p["branches"][0]["name"] for p in doc["projects"]] == ["trunk", "trunk"]


@pytest.mark.parametrize(("path", "reason"), [
    ("projects[5].count", "projects has 2 item(s), no [5]"),
    ("name[0]", "name is not a list"),
    ("name.first", "name is not a mapping"),
])
def test_override_errors_name_the_path(path: str, reason: str) -> None:
    with pytest.raises(SweepError, match=None) as err:
        apply_override(DOC, path, 1)
    assert str(err.value).startswith(f"--set {path}: ")
    assert reason in str(err.value)


def test_grid_varies_the_first_setting_slowest() -> None:
    points = grid([Setting("a", (1, 2)), Setting("b", ("x", "y"))])
    assert points == [{"a": 1, "b": "x"}, {"a": 1, "b": "y"}, {"a": 2, "b": "x"},
                      {"a": 2, "b": "y"}]


@pytest.mark.parametrize(("value", "where"), [
    ("5", "projects[0].branches[0].computes[0].suspend_timeout_seconds"),
    ("1,2,bogus", "projects[0].branches[0].computes[0].suspend_timeout_seconds"),
])
def test_bad_set_is_one_line_naming_the_path(tiny_file: Path, capsys, value: str,
                                             where: str) -> None:
    code = main(["sweep", str(tiny_file), "--set", f"computes.suspend_timeout_seconds={value}",
                 "--quiet", "--workers", "0", "--out", str(tiny_file.parent / "never")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("sim: error: --set computes.")
    assert where in err
    assert not (tiny_file.parent / "never").exists()  # nothing ran


def test_unknown_key_in_set(tiny_file: Path, capsys) -> None:
    assert main(["sweep", str(tiny_file), "--set", "engine.pool_shares=0.5", "--quiet",
                 "--workers", "0"]) == 2
    err = capsys.readouterr().err
    assert "engine.pool_shares: unknown key (did you mean 'pool_share'?)" in err


# ---- seeds and confidence intervals ----------------------------------------------------------


def test_replication_seeds_are_deterministic_and_distinct() -> None:
    seeds = [replication_seed(5, r) for r in range(50)]
    assert seeds[0] == 5  # replication 0 reproduces `sim run`
    assert seeds == [replication_seed(5, r) for r in range(50)]
    assert len(set(seeds)) == 50 and all(0 <= s < 2**63 for s in seeds)
    assert replication_seed(6, 1) != replication_seed(5, 1)


def test_t_interval_by_hand() -> None:
    mean, low, high = mean_ci(np.array([1.0, 2.0, 3.0]))
    # t(0.975, df=2) = 4.302653; sd = 1; half-width = 4.302653 / sqrt(3)
    assert mean == 2.0
    assert high - mean == pytest.approx(4.302653 / math.sqrt(3), rel=1e-5)
    assert mean - low == pytest.approx(high - mean)
    assert np.isnan(mean_ci(np.array([4.0]))[1:]).all()  # one run: no interval
    assert mean_ci(np.array([4.0, np.nan, 6.0]))[0] == 5.0  # a run without data is left out


# ---- running ---------------------------------------------------------------------------------


def test_sweep_in_process_tables_and_files(tiny_file: Path, tmp_path: Path) -> None:
    result = run_sweep(tiny_file, ["computes.suspend_timeout_seconds=60,-1"], replications=2,
                       workers=0)
    runs, points = result.runs, result.points
    assert list(runs.columns) == ["point", "computes.suspend_timeout_seconds", "label",
                                  "replication", "seed", *KEY_FIGURES]
    assert runs["computes.suspend_timeout_seconds"].tolist() == [60, 60, -1, -1]
    assert runs["seed"].tolist() == [5, replication_seed(5, 1)] * 2
    never = runs[runs["computes.suspend_timeout_seconds"] == -1]
    short = runs[runs["computes.suspend_timeout_seconds"] == 60]
    assert (never["cold_starts"] == 0).all() and (short["cold_starts"] > 0).all()
    assert (short["cost"].to_numpy() < never["cost"].to_numpy()).all()
    assert points["replications"].tolist() == [2, 2]
    assert np.isfinite(points["cost_ci_low"]).all()
    paths = write_sweep(result, tmp_path)
    assert pd.read_parquet(paths["runs"]).equals(runs)
    assert pd.read_parquet(paths["points"]).equals(points)
    assert paths["cost_vs_cold_starts"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "sizing" not in paths  # no size swept
    assert json.loads(paths["sweep"].read_text())["replications"] == 2


def test_the_point_that_matches_the_file_is_sim_run(quickstart_run: Path) -> None:
    result = run_sweep(QUICKSTART, ["engine.pool_share=0.9"], workers=0)
    row = result.runs.iloc[0]
    totals = json.loads((quickstart_run / "summary.json").read_text())
    for key in ("cu_hours", "cost", "cold_starts", "sessions", "wake_p99_s"):
        assert row[key] == totals[key], key
    assert np.isnan(result.points["cost_ci_low"]).all()  # R = 1: no interval


def test_size_sweep_draws_the_sizing_chart(tiny_file: Path, tmp_path: Path) -> None:
    result = run_sweep(tiny_file, {"computes.size.cu": [0.25, 1]}, workers=0)
    assert "sizing" in write_sweep(result, tmp_path)


def test_external_dask_cluster_gives_the_embedded_clusters_tables(
        tiny_file: Path, tmp_path: Path, dask_cluster: str) -> None:
    """The same sweep through `--scheduler` (a real dask scheduler and two workers) and
    through the embedded LocalCluster: identical tables. And `sim run --scheduler`."""
    args = ["sweep", str(tiny_file), "--set", "computes.suspend_timeout_seconds=60,300",
            "--set", "engine.pool_share=0.5,0.9", "--replications", "2", "--quiet"]
    assert main([*args, "--scheduler", dask_cluster, "--out", str(tmp_path / "remote")]) == 0
    assert main([*args, "--workers", "2", "--out", str(tmp_path / "local")]) == 0
    for table in ("runs", "points"):
        remote = pd.read_parquet(tmp_path / "remote" / f"{table}.parquet")
        local = pd.read_parquet(tmp_path / "local" / f"{table}.parquet")
        pd.testing.assert_frame_equal(remote, local)
    assert len(remote) == 4  # points
    assert (tmp_path / "remote" / "runs.parquet").read_bytes() == \
        (tmp_path / "local" / "runs.parquet").read_bytes()
    # a fleet split across the same cluster's workers: the files of a single-process run
    assert main(["run", str(tiny_file), "--quiet", "--scheduler", dask_cluster,
                 "--out", str(tmp_path / "run-remote")]) == 0
    assert main(["run", str(tiny_file), "--quiet", "--out", str(tmp_path / "run-single")]) == 0
    for name in ("intervals.parquet", "wakes.parquet", "operations.parquet", "summary.json"):
        assert (tmp_path / "run-remote" / name).read_bytes() == \
            (tmp_path / "run-single" / name).read_bytes(), name

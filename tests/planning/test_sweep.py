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
    points_table,
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


# ---- TEMPLATE.KEY: the grammar of sim recommend --space --------------------------------------


@pytest.mark.parametrize(("text", "path", "values"), [
    ("a.suspend_timeout_seconds=300,3600,never", "a.suspend_timeout_seconds", (300, 3600, -1)),
    ("a.timeout=60", "a.suspend_timeout_seconds", (60,)),
    ("b.cu=0.5,1", "b.cu", (0.5, 1.0)),
    ("b.autoscaling=0.25-4", "b.autoscaling", ("0.25-4",)),
    ("a.pooler=on,false", "a.pooler_enabled", (True, False)),
    ("timeout=120", "suspend_timeout_seconds", (120,)),  # every template
])
def test_template_paths_parse_as_recommend_space(text: str, path: str, values: tuple) -> None:
    assert parse_setting(text) == Setting(path, values)


@pytest.mark.parametrize(("text", "message"), [
    ("a.timeout=abc", "--set a.timeout=abc: 'abc' is not a whole number of seconds or never"),
    ("a.timeout=7", "--set a.timeout=7: suspend_timeout_seconds: must be"),
    ("b.cu=big", "--set b.cu=big: 'big' is not a size in CU"),
    ("b.autoscaling=1", "--set b.autoscaling=1: '1' is not a range MIN-MAX in CU (e.g. 0.25-4)"),
    ("a.pooler=maybe", "--set a.pooler=maybe: 'maybe' is not true or false"),
])
def test_bad_template_values_are_one_line(text: str, message: str) -> None:
    with pytest.raises(SweepError) as err:
        parse_setting(text)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_template_path_sets_every_compute_of_that_template_only() -> None:
    doc = apply_override(DOC, "a.suspend_timeout_seconds", 300)
    assert [c.get("suspend_timeout_seconds") for c in computes(doc)] == [300, 300, 300, None]
    doc = apply_override(DOC, "b.cu", 0.5)
    assert computes(doc)[3] == {"type": "read_write", "size": {"cu": 0.5}}
    doc = apply_override(DOC, "autoscaling", "0.5-4")  # every template
    assert all(c["autoscaling"] == {"min_cu": 0.5, "max_cu": 4.0} for c in computes(doc))
    assert computes(DOC)[0] == {"type": "read_write"}  # the original is untouched


@pytest.mark.parametrize(("path", "message"), [
    ("hobby.suspend_timeout_seconds",
     "--set hobby.suspend_timeout_seconds: no template named 'hobby' (templates: a, b)"),
    ("a.max_connections",
     "--set a.max_connections: unknown setting 'max_connections' (one of "
     "suspend_timeout_seconds, cu, autoscaling, pooler_enabled)"),
])
def test_bad_template_paths_name_the_template_or_the_key(path: str, message: str) -> None:
    with pytest.raises(SweepError) as err:
        apply_override(DOC, path, 1)
    assert str(err.value) == message


def test_set_and_space_give_the_same_message() -> None:
    from sim.recommendation.space import parse_space
    from sim.recommendation.targets import RecommendError

    for text in ("a.foo=1", "a.timeout=abc", "b.cu=big"):
        with pytest.raises(RecommendError) as space:
            parse_space(text, ["a", "b"])
        with pytest.raises(SweepError) as sweep:
            apply_override(DOC, text.split("=")[0], text.split("=")[1]) if text == "a.foo=1" \
                else parse_setting(text)
        assert str(space.value).replace("--space ", "", 1).split(": ", 1)[1] == \
            str(sweep.value).replace("--set ", "", 1).split(": ", 1)[1]


def test_template_set_on_the_command_line(two_templates_file: Path, capsys) -> None:
    assert main(["sweep", str(two_templates_file), "--set", "nope.timeout=60", "--quiet",
                 "--workers", "0"]) == 2
    err = capsys.readouterr().err
    # named as the path reads in full (`timeout` is short for suspend_timeout_seconds)
    assert err == "sim: error: --set nope.suspend_timeout_seconds: no template named 'nope' " \
                  "(templates: hobby, busy)\n"


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


TWO_TEMPLATES = """\
name: two-tiers
seed: 4
duration: 6h
record_connections: "off"
record_events: "all"
projects:
  - name: hobby
    count: 6
    branches:
      - name: main
        computes:
          - type: read_write
            workload:
              arrivals: {kind: poisson, per_hour: 2}
              session: {dist: exponential, mean_s: 60}
  - name: busy
    count: 2
    branches:
      - name: main
        computes:
          - type: read_write
            size: {cu: 0.5}
            pooler_enabled: true
            workload:
              arrivals: {kind: poisson, per_hour: 200}
              session: {dist: exponential, mean_s: 20}
"""


@pytest.fixture(scope="module")
def two_templates_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("scenarios") / "two.yaml"
    path.write_text(TWO_TEMPLATES, encoding="utf-8")
    return path


def test_sweep_of_one_template_per_template_table(two_templates_file: Path,
                                                  tmp_path: Path) -> None:
    result = run_sweep(two_templates_file, ["hobby.suspend_timeout_seconds=60,3600"],
                       replications=2, workers=0)
    runs, points = result.template_runs, result.template_points
    assert runs is not None and points is not None
    assert list(points["template"]) == ["hobby", "busy", "hobby", "busy"]
    assert list(points["hobby.suspend_timeout_seconds"]) == [60, 60, 3600, 3600]
    assert points["replications"].tolist() == [2] * 4
    hobby = points[points["template"] == "hobby"].set_index("hobby.suspend_timeout_seconds")
    busy = points[points["template"] == "busy"].set_index("hobby.suspend_timeout_seconds")
    # the hobby tier wakes less and costs more with the longer timeout ...
    assert hobby.loc[3600, "cold_starts_per_1000_sessions_mean"] < \
        hobby.loc[60, "cold_starts_per_1000_sessions_mean"]
    assert hobby.loc[3600, "cost_mean"] > hobby.loc[60, "cost_mean"]
    # ... and the busy tier, untouched, does what it did (projects never interact; only the
    # warm-up, which the longest timer sets, moves the window it is counted over)
    for figure in ("cost_mean", "sessions_mean", "mean_active_computes_mean"):
        assert busy.loc[60, figure] == pytest.approx(busy.loc[3600, figure], rel=0.1), figure
    # per run, the templates add up to the fleet's figures
    for key in ("cost", "cold_starts", "sessions"):
        summed = runs.groupby(["point", "replication"], sort=True)[key].sum().to_numpy()
        fleet = result.runs.sort_values(["point", "replication"])[key].to_numpy()
        assert summed == pytest.approx(fleet, rel=1e-12), key
    text = points_table(result)
    fleet_part, _, template_part = text.partition("template")
    assert "cold starts/1k" in fleet_part
    lines = [line.split() for line in template_part.splitlines()]
    assert [line[0] if line[0] in ("hobby", "busy") else line[2] for line in lines
            if "hobby" in line or "busy" in line] == ["hobby", "busy", "hobby", "busy"]
    assert "queue p99" in template_part
    paths = write_sweep(result, tmp_path)
    assert pd.read_parquet(paths["template_points"]).equals(points)
    assert pd.read_parquet(paths["template_runs"]).equals(runs)
    assert paths["cost_vs_cold_starts_by_template"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


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

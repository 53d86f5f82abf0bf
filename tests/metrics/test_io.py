import json

import pyarrow.parquet as pq
import pytest
from pandas.testing import assert_frame_equal

from sim.metrics import frames, read_results, summary, write_results
from sim.metrics.frames import TABLES
from sim.metrics.io import read_run
from sim.metrics.synthetic import synthetic_result

from .helpers import run


def small(seed=11):
    return synthetic_result(seed, projects=6, duration_s=4 * 3600.0, operation_failure_rate=0.1)


def test_same_result_gives_byte_identical_files(tmp_path):
    first = write_results(small(), tmp_path / "one")
    second = write_results(small(), tmp_path / "two")
    assert list(first) == [*TABLES, "summary", "run"]
    for name in first:
        assert first[name].read_bytes() == second[name].read_bytes(), name


def test_a_different_result_gives_different_bytes(tmp_path):
    first = write_results(small(11), tmp_path / "one")
    second = write_results(small(12), tmp_path / "two")
    for name in first:
        assert first[name].read_bytes() != second[name].read_bytes(), name


def test_rewriting_a_directory_replaces_the_files(tmp_path):
    write_results(small(12), tmp_path)
    paths = write_results(small(11), tmp_path)
    again = write_results(small(11), tmp_path / "fresh")
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == sorted(
        p.name for p in paths.values()
    )  # no temporary files left behind
    assert all(paths[n].read_bytes() == again[n].read_bytes() for n in paths)


def test_parquet_carries_no_pandas_metadata(tmp_path):
    paths = write_results(small(), tmp_path)
    for name in TABLES:
        metadata = pq.read_metadata(paths[name]).metadata or {}
        assert b"pandas" not in metadata, name


@pytest.mark.parametrize("result", [small(), run(duration_s=0.0)], ids=["synthetic", "empty"])
def test_round_trip(tmp_path, result):
    tables = frames(result)
    write_results(result, tmp_path, tables=tables)
    read, read_summary = read_results(tmp_path)
    assert list(read) == list(tables)
    for name in tables:
        assert_frame_equal(read[name], tables[name])
    assert read_summary == summary(tables, result)


def test_run_json_of_an_older_run_reads_in_todays_road_names(tmp_path):
    write_results(small(), tmp_path)
    path = tmp_path / "run.json"
    run = json.loads(path.read_text())
    run["roads"] = {"fleet path": 3, "fleet path but for its scripted calls": 1,
                    "engine: handed back by the fleet path": 2}
    path.write_text(json.dumps(run))
    assert read_run(tmp_path)["roads"] == {"kernel": 3, "kernel but for its scripted calls": 1,
                                           "per-session: handed back by the kernel": 2}


def test_run_json_holds_the_scenario(tmp_path):
    result = small()
    result.assumptions = {"cold_start": "lognormal mean 0.5 s", "pool": "0.9 x max"}
    result.roads = {"kernel": 3, "per-session: named by a scripted call": 1}
    paths = write_results(result, tmp_path)
    meta = read_run(tmp_path)
    assert meta == {
        "name": "synthetic",
        "seed": 11,
        "start": "2026-01-05T00:00:00Z",
        "duration_s": 14400.0,
        "price_per_cu_hour": 0.16,
        "assumptions": {"cold_start": "lognormal mean 0.5 s", "pool": "0.9 x max"},
        "roads": {"kernel": 3, "per-session: named by a scripted call": 1},
    }
    text = paths["summary"].read_text()
    assert list(json.loads(text)) == sorted(json.loads(text))  # keys sorted

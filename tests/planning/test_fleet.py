"""Sharded fleet runs: split by project instance, merged in canonical order, equal to one run."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest

from sim.cli import main
from sim.fleet import (
    canonical_result,
    instance_order,
    plan_shards,
    read_source,
    run_fleet,
    run_shard,
    shard_document,
)
from sim.metrics import TABLES, frames
from sim.scenario.loader import parse_scenario
from sim.scenario.runner import run_scenario
from tests.planning.conftest import QUICKSTART

#: scripted calls that tie projects together, and one that names no project
LINKED = {
    "name": "linked",
    "seed": 9,
    "duration": "3h",
    "projects": [
        {"name": "web", "count": 5, "branches": [{"name": "main", "computes": [{
            "type": "read_write",
            "workload": {"arrivals": {"kind": "poisson", "per_hour": 40},
                         "session": {"dist": "exponential", "mean_s": 20}}}]}]},
    ],
    "actions": [
        {"at": "1h", "call": "PATCH /projects/{web[0]}/endpoints/{web[0].main.read_write}",
         "body": {"endpoint": {"autoscaling_limit_max_cu": 4}}},
        # names web[1] in its path and web[3] in its body: both must be in one shard
        {"at": "1h", "call": "POST /projects/{web[1]}/branches",
         "body": {"branch": {"name": "copy-{web[3].main}"}}},
        {"at": "2h", "call": "GET /projects"},
    ],
}

ROW_TABLES = ("computes", "operations", "intervals", "connections", "wakes", "actions")


def run_in_shards(document: dict, parts: int) -> tuple:
    """The sharded path without dask: each shard's task function called in this process."""
    source = read_source(document)
    scenario = source.scenario()
    plan = plan_shards(scenario, parts)
    results = [run_shard(shard_document(source, scenario, s), None, None, s.keys)
               for s in plan]
    merged = canonical_result([(r, s.keys) for r, s in zip(results, plan, strict=True)],
                              instance_order(scenario))
    return plan, merged


def assert_same_rows(a, b) -> None:
    for table in ROW_TABLES:
        assert getattr(a, table) == getattr(b, table), table


def test_linked_instances_share_a_shard_and_calls_run_once() -> None:
    plan, merged = run_in_shards(LINKED, parts=5)
    assert [s.keys for s in plan if "web[1]" in s.keys] == [("web[1]", "web[3]")]
    assert sum(s.unreferenced_actions for s in plan) == 1
    assert len(plan) >= 3  # the other instances are shards of their own
    assert [a.call.split()[0] for a in merged.actions] == ["PATCH", "POST", "GET"]
    assert all(a.status < 400 for a in merged.actions)
    assert_same_rows(merged, run_fleet(LINKED))


@pytest.mark.parametrize("parts", [2, 3, 10])
def test_any_split_of_quickstart_gives_the_single_run(parts: int) -> None:
    _, merged = run_in_shards(read_source(QUICKSTART).document, parts)
    single = run_fleet(QUICKSTART)
    assert_same_rows(merged, single)
    assert len(single.intervals) > 1000 and len(single.wakes) > 100


def test_canonical_order_groups_rows_by_project_in_instance_order() -> None:
    scenario = parse_scenario(read_source(QUICKSTART).document)
    canonical = run_fleet(QUICKSTART)
    # every run returns its rows in canonical order, whichever road computed them
    assert run_scenario(scenario).intervals == canonical.intervals
    assert run_scenario(scenario, fleet_path=False).intervals == canonical.intervals
    position = {row.compute_id: i for i, row in enumerate(canonical.computes)}
    for table, when in (("intervals", "start_s"), ("wakes", "at_s"), ("connections", "arrival_s")):
        keys = [(position[row.compute_id], getattr(row, when)) for row in getattr(canonical, table)]
        assert keys == sorted(keys), table
    projects = [op.project_id for op in canonical.operations]
    first_seen = list(dict.fromkeys(projects))
    for table in ("intervals", "wakes", "connections", "computes"):
        order = list(dict.fromkeys(row.project_id for row in getattr(canonical, table)))
        assert order == [p for p in first_seen if p in order], table
    names = [row.project_name for row in canonical.computes]
    assert names[:2] == ["shop-0", "shop-0"] and names[-1] == "blog-3"


def test_sim_run_with_workers_writes_the_same_files(quickstart_run: Path, tmp_path: Path) -> None:
    """`sim run --workers 2` (an embedded dask LocalCluster) against `sim run`."""
    out = tmp_path / "sharded"
    assert main(["run", str(QUICKSTART), "--out", str(out), "--quiet", "--workers", "2"]) == 0
    for table in TABLES:
        name = f"{table}.parquet"
        assert (out / name).read_bytes() == (quickstart_run / name).read_bytes(), name
    for name in ("summary.json", "run.json", "report.html"):
        assert (out / name).read_bytes() == (quickstart_run / name).read_bytes(), name
    assert json.loads((out / "summary.json").read_text())["sessions"] > 10_000


def test_frames_of_sharded_and_single_runs_are_equal() -> None:
    _, merged = run_in_shards(read_source(QUICKSTART).document, 4)
    single, split = frames(run_fleet(QUICKSTART)), frames(merged)
    for table in TABLES:
        assert single[table].equals(split[table]), table


def test_workers_must_be_positive(capsys) -> None:
    assert main(["run", str(QUICKSTART), "--workers", "0", "--quiet"]) == 2
    assert "--workers must be >= 1" in capsys.readouterr().err


def test_embedded_workers_exit_without_collecting_their_heap() -> None:
    """Closing the embedded cluster does not wait for each worker's last walk of its heap."""
    from sim.fleet import open_client
    from sim.worker_exit import HeapLeftAtExit

    with open_client(1) as client:
        plugins = client.run(lambda dask_worker: sorted(dask_worker.plugins))
    assert [HeapLeftAtExit.name in names for names in plugins.values()] == [True]
    try:
        HeapLeftAtExit().teardown(None)
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_a_cluster_started_early_is_the_one_the_run_uses_and_is_closed_after() -> None:
    """`sim run --workers N` starts its workers before loading the rest: entering waits for
    them, the client runs in the caller's thread, leaving closes the cluster."""
    from sim.cluster import started_client

    started = started_client(1)
    with started as client:
        assert sum(client.nthreads().values()) == 1
        address = client.scheduler.address
        result = run_fleet(QUICKSTART, client=client)
    assert result.roads  # the run happened on that cluster
    assert client.status == "closed"
    never_entered = started_client(1)
    never_entered.close()  # closing one never entered stops its workers too
    assert never_entered._cluster.status.name == "closed"
    assert address.startswith("tcp://127.0.0.1:")



def test_a_small_remainder_joins_the_last_shard() -> None:
    """Equal instances split in parts: a remainder of less than half a share would be one
    more task, run last for little work; it joins the shard before it."""
    doc = {**LINKED, "actions": [], "projects": [{**LINKED["projects"][0], "count": 10}]}
    scenario = parse_scenario(doc)
    for parts in range(2, 8):
        plan = plan_shards(scenario, parts)
        share = sum(s.weight for s in plan) / parts
        assert [k for s in plan for k in s.keys] == [i.key for i in scenario.instances()]
        assert plan[-1].weight >= share / 2, (parts, plan)

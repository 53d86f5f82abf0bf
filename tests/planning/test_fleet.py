"""Sharded fleet runs: split by project instance, merged in canonical order, equal to one run."""

from __future__ import annotations

import gc
import json
import math
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.cli import main
from sim.metrics import TABLES, frames
from sim.scenario.loader import parse_scenario
from sim.scenario.runner import run_scenario
from sim.sweep.fleet import (
    WAKE_COST,
    _instance_weight,
    canonical_result,
    instance_order,
    plan_shards,
    read_source,
    run_fleet,
    run_shard,
    run_tasks,
    shard_document,
    shard_shares,
)
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
    assert run_scenario(scenario, kernel=False).intervals == canonical.intervals
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
    from sim.processes.worker_process import WorkerProcess
    from sim.sweep.fleet import open_client

    with open_client(1) as client:
        plugins = client.run(lambda dask_worker: sorted(dask_worker.plugins))
    assert [WorkerProcess.name in names for names in plugins.values()] == [True]
    try:
        WorkerProcess().teardown(None)
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_a_cluster_started_early_is_the_one_the_run_uses_and_is_closed_after() -> None:
    """`sim run --workers N` starts its workers before loading the rest: entering waits for
    them, the client runs in the caller's thread, leaving closes the cluster."""
    from sim.processes.cluster import started_client

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


@settings(max_examples=200, deadline=None)
@given(parts=st.integers(1, 40), workers=st.integers(1, 12))
def test_shard_shares_halve_the_work_left_round_by_round(parts: int, workers: int) -> None:
    shares = shard_shares(parts, workers)
    assert len(shares) == parts and sum(shares) == pytest.approx(1.0)
    assert all(a >= b - 1e-12 for a, b in zip(shares, shares[1:], strict=False))  # largest first
    if workers == 1 or workers >= parts:
        assert shares == [1.0 / parts] * parts
        return
    # a short round first (when the workers do not divide the parts), as large as the next
    short = parts % workers
    assert shares[:short + 1] == pytest.approx([shares[short]] * (short + 1))
    # then rounds of one shard per worker, each shard of a round taking 1 / (2 workers) of
    # the work left, and the last round all of it
    left = 1.0 - sum(shares[:short])
    rounds = [shares[i:i + workers] for i in range(short, parts, workers)]
    for n, members in enumerate(rounds):
        last = n == len(rounds) - 1
        assert members == pytest.approx([left / workers if last else left / (2 * workers)]
                                        * workers)
        left -= sum(members)
    assert left == pytest.approx(0.0, abs=1e-12)


def test_shards_of_equal_instances_follow_the_shares() -> None:
    doc = {**LINKED, "actions": [], "projects": [{**LINKED["projects"][0], "count": 160}]}
    scenario = parse_scenario(doc)
    plan = plan_shards(scenario, 8, workers=2)
    assert [k for s in plan for k in s.keys] == [i.key for i in scenario.instances()]
    assert [len(s.keys) for s in plan] == [40, 40, 20, 20, 10, 10, 10, 10]


def _template(name: str, timeout: int, per_hour: float, mean_s: float) -> dict:
    return {"name": name, "count": 10, "branches": [{"name": "main", "computes": [{
        "type": "read_write", "suspend_timeout_seconds": timeout,
        "workload": {"arrivals": {"kind": "poisson", "per_hour": per_hour},
                     "session": {"dist": "exponential", "mean_s": mean_s}}}]}]}


def test_a_shard_weighs_the_wakes_it_will_simulate() -> None:
    """Two templates with the same arrivals: one never suspends, the other suspends after
    almost every session, so each arrival is a wake (its suspend, its operations): a
    shard holds fewer instances of the second, by the wake's cost."""
    doc = {"name": "wakes", "seed": 1, "duration": "2d", "projects": [
        _template("steady", -1, 4.0, 10.0), _template("waking", 60, 4.0, 10.0)]}
    scenario = parse_scenario(doc)
    steady, waking = (_instance_weight(scenario, p) for p in scenario.projects)
    arrivals = 4.0 * 48
    assert steady == pytest.approx(1.0 + arrivals)
    woken = math.exp(-4.0 / 3600 * (60 + 10))  # P(an arrival finds it suspended)
    assert waking == pytest.approx(1.0 + arrivals * (1 + WAKE_COST * woken))
    plan = plan_shards(scenario, 2)
    counts = [sum(k.startswith("steady") for k in s.keys) for s in plan]
    assert counts[0] == 10 and len(plan[1].keys) < 10


def _logged_task(path: str, mark: int, topic: str | None, i: int) -> int:
    """A task that logs its start and end to a file the test reads back."""
    with open(path, "a", encoding="utf-8") as log:
        log.write(f"start {mark}\n")
    time.sleep(0.05)
    with open(path, "a", encoding="utf-8") as log:
        log.write(f"end {mark}\n")
    return mark * 10


def test_tasks_go_out_as_workers_free_up_highest_priority_first(tmp_path: Path) -> None:
    """`at_once` keeps the other tasks off the cluster: with one at a time on two workers
    they run one after the other, by priority, and results come back in call order."""
    from sim.sweep.fleet import open_client

    log = tmp_path / "log.txt"
    priority = [1.0, 5.0, 3.0, 4.0, 2.0]
    calls = [((str(log), mark), 1.0) for mark in range(len(priority))]
    with open_client(2) as client:
        results = run_tasks(client, _logged_task, calls, priority=priority, at_once=1)
    assert results == [0, 10, 20, 30, 40]
    by_priority = [1, 3, 2, 4, 0]
    assert log.read_text().split("\n")[:-1] == [
        f"{step} {mark}" for mark in by_priority for step in ("start", "end")]


def test_a_run_plans_its_shards_while_the_cluster_starts(monkeypatch) -> None:
    """Given a started cluster not yet entered, run_fleet plans the shards for its known
    worker count first, then waits for the workers, runs, and closes the cluster."""
    import sim.sweep.fleet as fleet
    from sim.processes.cluster import started_client

    events: list[str] = []
    plan = fleet._plan
    monkeypatch.setattr(fleet, "_plan", lambda *a: events.append("plan") or plan(*a))
    started = started_client(2)
    enter = type(started).__enter__
    monkeypatch.setattr(type(started), "__enter__",
                        lambda self: events.append("enter") or enter(self))
    result = run_fleet(QUICKSTART, cluster=started)
    assert events == ["plan", "enter"]  # planned once, for the 2 workers it was to have
    assert started._cluster.status.name == "closed"
    single, split = frames(run_fleet(QUICKSTART)), frames(result)
    for table in TABLES:
        assert single[table].equals(split[table]), table

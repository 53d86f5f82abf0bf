"""What the counters count: each connection attempt has one outcome, counted once, under its
own name, and the idle clocks run from when a project or branch really went quiet.

Each case runs on both roads, the SimPy engine and the kernel, which must give the
same tables and the figures worked out by hand."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

import sim.scenario.runner as runner
from sim.engine.records import Outcome
from sim.metrics import frames, summary
from sim.scenario.loader import parse_scenario
from tests.engine.support import GIB, control_plane, running_compute

from .test_kernel_equals_engine import canonical

ENDPOINT = "/projects/{p[0]}/endpoints/{p[0].main.read_write}"


def scenario(computes: list[dict] | None = None, *, duration: str = "10m",
             engine: dict | None = None, actions: list[dict] | None = None,
             branches: list[dict] | None = None) -> dict:
    doc: dict[str, Any] = {
        # from the fleet's creation: the cases are told at instants of a new fleet
        "name": "counting", "seed": 1, "duration": duration, "warm_up": 0,
        "record_connections": "all", "record_events": "all",
        "engine": {"detach_after": None, "archive_after": None, **(engine or {})},
        "projects": [{"name": "p", "branches": branches or [{"name": "main",
                                                              "computes": computes}]}],
    }
    if actions:
        doc["actions"] = actions
    return doc


def every(period: str, session_s: float, **load: Any) -> dict:
    """A session every `period`, each of exactly `session_s`."""
    return {"arrivals": {"kind": "periodic", "every": period},
            "session": {"dist": "fixed", "mean_s": session_s}, **load}


def both_roads(doc: dict) -> tuple[dict[str, pd.DataFrame], dict[str, Any]]:
    """The run's tables and summary, after checking that both roads give the same tables
    (and that the kernel ran the compute kernel, where no scripted call names it)."""
    parsed = parse_scenario(doc)
    engine = runner.run_scenario(parsed, kernel=False)
    fleet = runner.run_scenario(parsed)
    if "actions" not in doc:
        assert set(fleet.roads) == {"kernel"}, fleet.roads
    tables = canonical(engine)
    for name, table in canonical(fleet).items():
        pd.testing.assert_frame_equal(table, tables[name], check_exact=True, obj=name)
    return tables, summary(frames(fleet), fleet)


def outcomes(tables: dict[str, pd.DataFrame]) -> dict[str, int]:
    return tables["connections"]["outcome"].value_counts().to_dict()


POOL_OF_ONE = {"type": "read_write", "pooler_enabled": True, "pool_size": 1,
               "suspend_timeout_seconds": -1}


def test_clients_queued_in_the_pooler_add_no_load_for_the_autoscaler() -> None:
    """Defect 1: one server connection, so one session runs at a time (0.8 vCPU: a goal
    of 1 CU); the clients queued behind it must not raise the goal to 2 or 3 CU."""
    doc = scenario([{**POOL_OF_ONE, "autoscaling": {"min_cu": 0.25, "max_cu": 8},
                     "workload": every("10s", 100, cpu_per_session=0.8)}])
    tables, s = both_roads(doc)
    assert s["queued"] > 0  # the queue is there
    assert tables["intervals"]["cu"].max() == 1.0


def test_queued_clients_hold_temporary_disk_only_while_their_session_runs() -> None:
    """Defect 1: pool of one on 1 CU (20 GiB of disk), a session every 30 s of 50 s writing
    15 GiB: on the server the sessions never overlap, so none fails with 53100."""
    temp = {"dist": "fixed", "mean_bytes": "15GiB"}
    doc = scenario([{**POOL_OF_ONE, "size": {"cu": 1},
                     "workload": every("30s", 50, temp_bytes_per_session=temp)}],
                   engine={"pool_queue_timeout": "1h"})
    tables, s = both_roads(doc)
    assert s["disk_full_53100"] == 0 and s["sessions"] == 20 and s["queued"] > 0
    assert outcomes(tables) == {"ok": 20}


def test_a_queued_client_that_finds_the_disk_full_when_it_starts_waited_for_its_turn() -> None:
    """Defect 1: pool of two on 1 CU (20 GiB). A holds 10 GiB for 100 s, B none for 50 s;
    C (15 GiB) queues for B's server connection and fails with 53100 when it gets it, at
    50 s, as A's files are still there; it leaves the connection to D, queued after it."""
    cp = control_plane()
    project, c = running_compute(cp, autoscaling_limit_min_cu=0.25, autoscaling_limit_max_cu=1,
                                 pooler_enabled=True, pool_size=2)
    rt, t = c.runtime, cp.now
    got = [rt.connect(t, d, 0.0, 0.0, gib * GIB) for d, gib in ((100, 10), (50, 0), (10, 15),
                                                                 (10, 0))]
    assert got == [Outcome.OK, Outcome.OK, Outcome.DISK_FULL, Outcome.OK]
    rows = cp.recorder.connections[-4:]
    assert [r.wait_s for r in rows] == [0, 0, 50, 50]  # C failed on the server, not at the door
    assert c.stats.disk_full == 1 and c.stats.queued == 1 and c.stats.sessions == 3
    assert rt.open_connections(t) == 4  # C is a client of the pooler until its turn


def test_a_restart_drops_only_sessions_not_clients_that_timed_out_in_the_queue() -> None:
    """Defect 2: pool of one busy for 1,000 s, so every later client times out in the queue
    (120 s); the restart at 300 s cuts the one session, and nobody else."""
    doc = scenario([{**POOL_OF_ONE, "workload": every("10s", 1000)}], duration="400s",
                   engine={"pool_queue_timeout": "120s"},
                   actions=[{"at": "300s", "call": f"POST {ENDPOINT}/restart"}])
    tables, s = both_roads(doc)
    assert s["queue_timeouts"] > 10
    assert s["dropped"] == 1 == outcomes(tables)["dropped"]


def test_deleting_an_idle_compute_leaves_the_idle_clocks_running() -> None:
    """Defect 3: both computes idle from 62 s (started at 2 s, 60 s timeout), detach and
    archive after 2 h; deleting dev's idle compute at 1 h restarts neither clock."""
    idle = {"type": "read_write", "suspend_timeout_seconds": 60}
    doc = scenario(duration="5h", engine={"detach_after": "2h", "archive_after": "2h"},
                   branches=[{"name": "main", "computes": [idle]},
                             {"name": "dev", "computes": [dict(idle)]}],
                   actions=[{"at": "1h",
                             "call": "DELETE /projects/{p[0]}/endpoints/{p[0].dev.read_write}"}])
    tables, _ = both_roads(doc)
    ops = tables["operations"]
    suspended = ops[ops["action"] == "suspend_compute"]
    detach = ops.loc[ops["action"] == "tenant_detach", "created_s"].tolist()
    archive = ops[ops["action"] == "timeline_archive"]
    dev = archive["branch_id"].iloc[0]
    # the project went quiet when its last compute did, dev when its own did (near 62 s)
    assert detach == pytest.approx([suspended["updated_s"].max() + 7200], abs=1e-5)
    dev_quiet = suspended.loc[suspended["branch_id"] == dev, "updated_s"].tolist()
    assert archive["created_s"].tolist() == pytest.approx([dev_quiet[0] + 7200], abs=1e-5)
    assert max(detach + archive["created_s"].tolist()) < 7300  # not 1 h + 2 h = 10,800 s


def test_a_disk_full_failure_is_a_connection_attempt() -> None:
    """Defect 4: attempts are every connection a client tried, 53100 failures included."""
    temp = {"dist": "fixed", "mean_bytes": "15GiB"}
    doc = scenario([{"type": "read_write", "size": {"cu": 1}, "suspend_timeout_seconds": -1,
                     "workload": every("30s", 50, temp_bytes_per_session=temp)}])
    tables, s = both_roads(doc)
    assert s["disk_full_53100"] == 10 and s["sessions"] == 10
    assert s["connection_attempts"] == 20 == len(tables["connections"])


def test_refused_counts_only_too_many_connections() -> None:
    """Defect 5: a disabled compute's refusals are counted as refused_disabled, not as
    refused (53300), and are attempts all the same."""
    doc = scenario([{"type": "read_write", "suspend_timeout_seconds": -1,
                     "workload": every("30s", 50)}],
                   actions=[{"at": "300s", "call": f"PATCH {ENDPOINT}",
                             "body": {"endpoint": {"disabled": True}}}])
    tables, s = both_roads(doc)
    assert outcomes(tables)["refused_disabled"] == 10 == s["refused_disabled"]
    assert s["refused"] == 0 and s["refused_share"] == 0.0
    assert s["refused_pooler_full"] == 0
    assert s["connection_attempts"] == 20 == len(tables["connections"])


def test_clients_waiting_on_a_compute_that_is_deleted_are_refused_disabled() -> None:
    """Defect 5: clients waiting for a compute's start when its project is deleted."""
    doc = scenario([{"type": "read_write", "suspend_timeout_seconds": -1,
                     "workload": every("30s", 50)}],
                   engine={"cold_start": {"dist": "fixed", "mean_s": 100}},
                   actions=[{"at": "60s", "call": "DELETE /projects/{p[0]}"}])
    tables, s = both_roads(doc)
    assert s["refused"] == 0
    assert s["refused_disabled"] == outcomes(tables)["refused_disabled"] >= 2


def test_refusals_past_the_poolers_clients_have_their_own_count() -> None:
    """Defect 5: 10,000 pooled clients held for an hour; the ones after are refused by the
    pooler (refused_pooler_full), not with 53300."""
    doc = scenario([{"type": "read_write", "pooler_enabled": True,
                     "suspend_timeout_seconds": -1,
                     "workload": {"arrivals": {"kind": "poisson", "per_hour": 90_000},
                                  "session": {"dist": "fixed", "mean_s": 3600}}}],
                   duration="600s", engine={"pool_queue_timeout": "2h"})
    tables, s = both_roads(doc)
    assert s["refused"] == 0
    assert s["refused_pooler_full"] == outcomes(tables)["refused_pooler_full"] > 0

"""The embedded cluster's workers fork from a server that has loaded what they need."""

from __future__ import annotations

import os
import subprocess
import sys
from multiprocessing import forkserver
from pathlib import Path

import dask
import pytest

from sim.metrics import TABLES, frames
from sim.processes.fork_server import (
    fork_server_running,
    own_fork_server,
    start_fork_server,
    stop_fork_server,
    worker_environ,
)
from sim.sweep.fleet import run_fleet
from tests.planning.conftest import QUICKSTART

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="no fork server there")


def _what_a_worker_holds() -> dict:
    """Run on a worker: what it holds (before any shard, or after)."""
    import gc

    from sim.kernel import physics, storage_kernel

    # this module's own imports bring in the engine when dask unpickles this function,
    # but not the API's handlers, which only the fork server's warm-up loads
    return {"api loaded": "sim.api.dispatch" in sys.modules,
            "kernels": [len(physics.advance.signatures), len(storage_kernel.replay.signatures)],
            "frozen": gc.get_freeze_count(),
            "parent": os.getppid()}


def test_workers_start_with_the_simulator_and_its_kernels_loaded() -> None:
    from sim.sweep.fleet import open_client

    with open_client(2) as client:
        held = client.run(_what_a_worker_holds)
        result = run_fleet(QUICKSTART, client=client)
        after = client.run(_what_a_worker_holds)
    assert len(held) == 2
    server = forkserver._forkserver._forkserver_pid
    for worker in held.values():
        assert worker["api loaded"]
        assert min(worker["kernels"]) >= 1  # loaded from the cache before any task
        assert worker["frozen"] > 10_000  # what the server loaded stays out of gc passes
        assert worker["parent"] == server
    for worker, before in zip(after.values(), held.values(), strict=True):
        # and stays so after a shard (less what it freed: frozen objects still die)
        assert worker["frozen"] > 0.9 * before["frozen"]
        assert worker["kernels"] == before["kernels"]  # nothing compiled in the shard
    single, split = frames(run_fleet(QUICKSTART)), frames(result)
    for table in TABLES:  # and the same rows as one process gives
        assert single[table].equals(split[table]), table


def test_the_warm_up_leaves_no_thread_and_no_event_loop_to_fork() -> None:
    """What the fork server holds when it forks: the warm-up's kernels, but no thread
    (a fork copies none of them, and their locks could be held) and no event loop."""
    # Python's own handler before the import, even if this process started with SIGINT
    # ignored (a child inherits that): what the server restores is what it found
    code = ("import signal; signal.signal(signal.SIGINT, signal.default_int_handler);"
            "import sys, threading, sim.processes.worker_boot; d = sys.modules['sim.api.dispatch'];"
            "from sim.kernel import physics, storage_kernel as s;"
            "print(threading.active_count(), d._dispatcher is None,"
            " len(physics.advance.signatures), len(s.replay.signatures),"
            " __import__('os').environ['OMP_NUM_THREADS'],"
            " signal.getsignal(signal.SIGINT) is signal.default_int_handler)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "OMP_NUM_THREADS": "7"})
    threads, no_dispatcher, advance, replay, omp, interrupt = out.stdout.split()
    assert (threads, no_dispatcher) == ("1", "True")
    assert interrupt == "True"  # ignored while it loads, Python's own again after
    assert omp == "7"  # a variable the user set wins, as with the workers dask spawns
    assert int(advance) >= 1 and int(replay) >= 1
    assert out.stderr == ""


def test_worker_environment_is_dasks_without_its_trim_threshold(monkeypatch) -> None:
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "SIM_PROBE"):
        monkeypatch.delenv(name, raising=False)
    environ = worker_environ()
    assert "MALLOC_TRIM_THRESHOLD_" not in environ
    assert environ["OMP_NUM_THREADS"] == environ["OPENBLAS_NUM_THREADS"] == "1"
    with dask.config.set({"distributed.nanny.pre-spawn-environ": {"SIM_PROBE": 3,
                                                                  "OMP_NUM_THREADS": 2}}):
        mine = worker_environ()
    assert mine["SIM_PROBE"] == "3" and mine["OMP_NUM_THREADS"] == "2"
    assert mine["OPENBLAS_NUM_THREADS"] == "1"  # the packaged default under the user's
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    assert worker_environ()["OMP_NUM_THREADS"] == "4"  # the environment's own wins


def test_a_command_stops_its_fork_server_and_waits_for_it() -> None:
    stop_fork_server()
    with own_fork_server() as started:
        pid = forkserver._forkserver._forkserver_pid
        assert started and pid is not None
        os.kill(pid, 0)  # running
    assert not fork_server_running()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped already: its children's CPU time is counted
    assert start_fork_server()  # and a later cluster starts another
    pid = forkserver._forkserver._forkserver_pid
    with own_fork_server():
        pass
    assert forkserver._forkserver._forkserver_pid == pid  # one it did not start, it leaves


def test_sim_run_with_workers_leaves_no_fork_server_behind(tmp_path) -> None:
    from sim.cli import main

    stop_fork_server()
    assert main(["run", str(QUICKSTART), "--workers", "1", "--quiet",
                 "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "summary.json").exists()
    assert not fork_server_running()


WARMED = """
import glob, sys
from sim.processes.preload import warm_up

def loaded():
    return {f"{name}.{attr}": len(value.signatures)
            for name, module in list(sys.modules.items()) if name.startswith("sim.")
            for attr, value in vars(module).items()
            if hasattr(value, "signatures") and hasattr(value, "py_func")}

warm_up()
before = loaded()
from sim.scenario.loader import load_scenario
from sim.scenario.runner import run_scenario
for path in sorted(glob.glob("scenarios/*.yaml")):
    run_scenario(load_scenario(path))
after = loaded()
print(sum(before.values()), sorted(k for k in after if after[k] != before.get(k)))
"""


def test_after_the_warm_up_no_shipped_scenario_loads_another_kernel() -> None:
    """What a forked worker holds covers what every shipped scenario calls: none of them
    makes a worker load or compile a kernel in its first shard."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", WARMED], capture_output=True, text=True,
                         check=True, cwd=root)
    loaded, new = out.stdout.split(" ", 1)
    assert int(loaded) >= 2  # the compute kernel and the storage lane's
    assert new.strip() == "[]"


DECOY = """
import multiprocessing, os, sys
from sim.processes.fork_server import start_fork_server, stop_fork_server
assert start_fork_server()
process = multiprocessing.get_context("forkserver").Process(target=os.getpid)
process.start()
process.join()
stop_fork_server()
print(process.exitcode, sys.modules["sim"].__file__)
"""


def test_the_server_imports_sim_from_where_the_command_does(tmp_path) -> None:
    """Run from a directory holding another `sim`, the command (whose search path does not
    start with that directory) and its fork server import the same one."""
    decoy = tmp_path / "sim"
    decoy.mkdir()
    marker = tmp_path / "decoy imported"
    (decoy / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    out = subprocess.run([sys.executable, "-P", "-c", DECOY], capture_output=True,
                         text=True, check=True, cwd=tmp_path)
    exitcode, imported = out.stdout.split()
    assert exitcode == "0"
    assert Path(imported).parent != decoy  # the command's own
    assert not marker.exists()  # nor did the server import the decoy


def test_a_cluster_started_for_a_run_is_closed_when_the_scenario_is_refused() -> None:
    from sim.processes.cluster import started_client
    from sim.scenario.loader import ScenarioError

    started = started_client(1)
    with pytest.raises(ScenarioError):
        run_fleet({"name": "bad", "duration": "1d", "projects": "none"}, cluster=started)
    assert started._cluster.status.name == "closed"


def test_a_run_keeps_frozen_what_was_frozen_before_it() -> None:
    """A run freezes the objects alive before it out of the collector's passes and thaws
    them after; in a process that froze its own first (a forked worker), it leaves both
    the freeze and the thaw to that process."""
    import gc

    from sim.scenario.loader import load_scenario
    from sim.scenario.runner import run_scenario

    scenario = load_scenario(QUICKSTART)
    assert gc.get_freeze_count() == 0
    run_scenario(scenario)
    assert gc.get_freeze_count() == 0  # its own freeze, thawed
    gc.freeze()
    try:
        before = gc.get_freeze_count()
        run_scenario(scenario)
        assert gc.get_freeze_count() > 0.9 * before
    finally:
        gc.unfreeze()

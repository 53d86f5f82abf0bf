"""Fixtures of the capacity-planning tests: scenarios small enough for seconds, one
quickstart run shared by the report and sharding tests, and a real dask cluster."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "scenarios" / "quickstart.yaml"

#: three projects, six hours: a sweep point runs in a fraction of a second
TINY = """\
name: tiny
seed: 5
duration: 6h
record_connections: "off"
projects:
  - name: app
    count: 3
    branches:
      - name: main
        computes:
          - type: read_write
            size: {cu: 0.25}
            workload:
              arrivals: {kind: poisson, per_hour: 30}
              session: {dist: exponential, mean_s: 30}
"""


@pytest.fixture(scope="session")
def tiny_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("scenarios") / "tiny.yaml"
    path.write_text(TINY, encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def quickstart_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`sim run scenarios/quickstart.yaml` in one process: results, charts, report.html."""
    from sim.cli import main

    out = tmp_path_factory.mktemp("quickstart") / "single"
    assert main(["run", str(QUICKSTART), "--out", str(out), "--quiet"]) == 0
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stop(proc: subprocess.Popen) -> None:
    """End a process this fixture started (its own process group), then reap it."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


@pytest.fixture
def dask_cluster(tmp_path: Path) -> Iterator[str]:
    """A real `dask scheduler` and two `dask worker` processes on 127.0.0.1; yields the
    scheduler's address and always tears the processes down."""
    from distributed import Client

    address = f"tcp://127.0.0.1:{free_port()}"
    log = (tmp_path / "dask.log").open("w")
    common = {"stdout": log, "stderr": subprocess.STDOUT, "start_new_session": True,
              "cwd": tmp_path}
    procs = [subprocess.Popen([sys.executable, "-m", "dask", "scheduler", "--host",
                               "127.0.0.1", "--port", address.rsplit(":", 1)[1],
                               "--no-dashboard", "--dashboard-address", "127.0.0.1:0"], **common)]
    try:
        for _ in range(2):
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "dask", "worker", address, "--host", "127.0.0.1",
                 "--nthreads", "1", "--no-nanny", "--no-dashboard"], **common))
        deadline = time.monotonic() + 60
        while True:  # the scheduler may not listen yet
            try:
                with Client(address, timeout="5s") as client:
                    client.wait_for_workers(2, timeout=max(1.0, deadline - time.monotonic()))
                break
            except OSError:
                if time.monotonic() > deadline or procs[0].poll() is not None:
                    raise
                time.sleep(0.5)
        yield address
    finally:
        for proc in reversed(procs):
            _stop(proc)
        log.close()

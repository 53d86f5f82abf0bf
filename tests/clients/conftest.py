"""The official tools of the real API, run against a real `sim serve`.

`npm_clients` installs the pinned versions of `tests/clients/npm/package.json`
(the CLI `neonctl` and the TypeScript client `@neondatabase/api-client`) from
the npm registry, once, into a cache outside the git tree
(`$SIM_NPM_CACHE`, else `~/.cache/sim/official-clients/<digest of the pins>`);
later runs reuse it. Without npm and node the tests that need them are skipped,
saying why.

`serve(clock)` starts `python -m sim serve` on a free port of 127.0.0.1 with a
manual or a realtime (speed 60) clock, and stops it after the test.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

NPM_DIR = Path(__file__).parent / "npm"
PINS = ("package.json", "package-lock.json")
MIN_NODE = (20, 19)  # what the pinned neonctl declares in its engines field
KEY = "sim_key_official_clients_0123456789"
SPEED = 60.0


# ---- the npm packages ---------------------------------------------------------------------


@dataclass(frozen=True)
class NpmClients:
    node: str
    modules: Path  # node_modules of the install

    @property
    def neonctl(self) -> list[str]:
        return [self.node, str(self.modules / "neonctl" / "bin" / "cli.js")]


def _cache_dir() -> Path:
    if os.environ.get("SIM_NPM_CACHE"):
        return Path(os.environ["SIM_NPM_CACHE"])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "sim" / "official-clients"


def _node_version(node: str) -> tuple[int, ...]:
    out = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout
    return tuple(int(x) for x in out.strip().lstrip("v").split(".")[:2])


@pytest.fixture(scope="session")
def npm_clients() -> NpmClients:
    npm, node = shutil.which("npm"), shutil.which("node")
    if npm is None or node is None:
        pytest.skip("npm and node are not installed: the official neonctl and TypeScript "
                    "client cannot be fetched (apt-get install nodejs npm)")
    if _node_version(node) < MIN_NODE:
        pytest.skip(f"node {'.'.join(map(str, _node_version(node)))} is older than the "
                    f"{'.'.join(map(str, MIN_NODE))} the pinned neonctl needs")
    digest = hashlib.sha256(b"".join((NPM_DIR / f).read_bytes() for f in PINS)).hexdigest()
    target = _cache_dir() / digest[:16]
    target.mkdir(parents=True, exist_ok=True)
    done = target / ".installed"
    with open(target / ".lock", "w") as lock:  # pytest-xdist workers install once
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            for f in PINS:
                shutil.copy(NPM_DIR / f, target / f)
            # no install scripts: nothing the tests use needs one
            run = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"],
                                 cwd=target, capture_output=True, text=True, timeout=900)
            if run.returncode != 0:
                raise RuntimeError(f"npm ci failed in {target}:\n{run.stderr[-3000:]}")
            done.write_text(digest)
    return NpmClients(node, target / "node_modules")


# ---- a real sim serve ---------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Served:
    clock: str
    port: int
    http: httpx.Client  # the personal key on every request

    @property
    def api_host(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v2"

    def api(self, method: str, path: str, **kwargs: Any) -> Any:
        r = self.http.request(method, f"/api/v2/{path}", **kwargs)
        assert r.status_code < 300, (method, path, r.status_code, r.text)
        return r.json()

    def settle(self, project_id: str) -> None:
        """Let the project's operations end, as a client polling them would: a manual
        clock is advanced a minute; a realtime one is polled until they have ended."""
        if self.clock == "manual":
            assert self.http.post("/_sim/advance", json={"seconds": 60}).status_code == 200
            return
        for _ in range(300):
            ops = self.api("GET", f"projects/{project_id}/operations",
                           params={"limit": 50})["operations"]
            if all(o["status"] in ("finished", "skipped", "cancelled") for o in ops):
                return
            time.sleep(0.1)
        raise AssertionError(f"operations of {project_id} did not end: {ops}")

    def in_days(self, days: float) -> str:
        """The simulated instant `days` from now, as the API writes instants."""
        now = self.http.get("/_sim/clock").json()["now"]
        at = datetime.fromisoformat(now.replace("Z", "+00:00")) + timedelta(days=days)
        return at.strftime("%Y-%m-%dT%H:%M:%SZ")

    def let_deletion_end(self) -> None:
        """Let a deleted project's computes stop (seconds of simulated time), so that it
        may be recovered: a manual clock is advanced a minute; a realtime one (speed 60)
        is given a wall second, a simulated minute."""
        if self.clock == "manual":
            assert self.http.post("/_sim/advance", json={"seconds": 60}).status_code == 200
        else:
            time.sleep(1.0)


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[[str], Served]]:
    started: list[tuple[subprocess.Popen, httpx.Client, Any]] = []

    def start(clock: str) -> Served:
        port = _free_port()
        args = [sys.executable, "-m", "sim", "serve", "--host", "127.0.0.1", "--port", str(port),
                "--api-key", KEY, "--clock", clock, "--seed", "5"]
        if clock == "realtime":
            args += ["--speed", str(SPEED)]
        log = open(tmp_path / f"serve-{port}.log", "w")
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30,
                            headers={"authorization": f"Bearer {KEY}"})
        started.append((proc, http, log))
        for _ in range(400):  # waiting for the server to listen
            if proc.poll() is not None:
                raise RuntimeError((tmp_path / f"serve-{port}.log").read_text())
            try:
                if http.get("/_sim/clock").status_code == 200:
                    return Served(clock, port, http)
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise RuntimeError("sim serve did not start")

    yield start
    for proc, http, log in started:
        http.close()
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()

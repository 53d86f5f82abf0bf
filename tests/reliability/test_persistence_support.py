"""Helpers (no tests): `sim serve` in a subprocess on 127.0.0.1, and a full dump of a world.

`Serve` starts `python -m sim serve` with the options given, waits until it
answers, and stops it with SIGKILL (a crash) or SIGTERM (a clean stop).
`dump(client)` lists everything a key reaches through the API (projects,
branches, computes, every operation of every project), in a form two servers
can be compared by: equal dumps, equal worlds as far as the API shows them.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
KEY = "sim_reliability_test_key_0123456789"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Serve:
    """`sim serve --port P --api-key KEY *options` as a child process."""

    def __init__(self, *options: str, log: Path, key: str = KEY, timeout: float = 60.0,
                 key_option: bool = True, env: dict[str, str] | None = None,
                 max_files: int | None = None):
        """`key_option` False: no `--api-key` (give the key in `env` or `options`);
        `max_files`: the server's descriptor limit (ulimit -n)."""
        self.port = free_port()
        self.key = key
        self.log_path = log
        self.base = f"http://127.0.0.1:{self.port}"
        args = [sys.executable, "-m", "sim", "serve", "--port", str(self.port),
                *(("--api-key", key) if key_option else ()), *options]
        environ = {k: v for k, v in os.environ.items() if k != "SIM_API_KEY"}
        self.log = open(log, "ab")  # closed by kill() or stop()
        self.proc = subprocess.Popen(args, cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT,
                                     env={**environ, **(env or {})},
                                     preexec_fn=None if max_files is None else
                                     lambda: _limit_files(max_files))
        self._wait_ready(timeout)

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sim serve exited with {self.proc.returncode}:\n"
                                   f"{self.log_path.read_text(errors='replace')}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"sim serve did not start in {timeout} s:\n"
                           f"{self.log_path.read_text(errors='replace')}")

    def client(self, **kwargs: Any) -> httpx.Client:
        return httpx.Client(base_url=f"{self.base}/api/v2/", timeout=kwargs.pop("timeout", 30),
                            headers={"authorization": f"Bearer {self.key}"}, **kwargs)

    def kill(self) -> None:
        """SIGKILL: no chance to flush or close anything."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        self.log.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log.close()


def _limit_files(n: int) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_NOFILE, (n, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))


def sim_call(client: httpx.Client, method: str, path: str, **kwargs: Any) -> httpx.Response:
    """A /_sim call with a client based on /api/v2/."""
    return client.request(method, client.base_url.join(f"/_sim/{path}"), **kwargs)


def dump(client: httpx.Client) -> dict[str, Any]:
    """Everything the key reaches: projects with their branches, computes and operations."""
    projects = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 400}
        if cursor:
            params["cursor"] = cursor
        page = _ok(client.get("projects", params=params))
        projects += page["projects"]
        if len(page["projects"]) < 400:
            break
        cursor = page["pagination"]["cursor"]
    out: dict[str, Any] = {"clock": _ok(sim_call(client, "GET", "clock")), "projects": {}}
    for p in projects:
        pid = p["id"]
        out["projects"][pid] = {
            "project": _ok(client.get(f"projects/{pid}"))["project"],
            "branches": _ok(client.get(f"projects/{pid}/branches"))["branches"],
            "endpoints": _ok(client.get(f"projects/{pid}/endpoints"))["endpoints"],
            "operations": operations(client, pid),
        }
    return out


def operations(client: httpx.Client, project_id: str) -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 1000}
        if cursor:
            params["cursor"] = cursor
        page = _ok(client.get(f"projects/{project_id}/operations", params=params))
        ops += page["operations"]
        if len(page["operations"]) < 1000:
            return ops
        cursor = page["pagination"]["cursor"]


def _ok(response: httpx.Response) -> Any:
    assert response.status_code == 200, (response.request.url, response.text)
    return response.json()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def open_kept(path: Path, key: str, seed: int, **options: Any) -> tuple[Any, Any]:
    """A served world from the state file at `path` (made when missing), with `key` kept in
    it, and an in-process client on that key."""
    from sim.api import in_process_client
    from sim.api.restore import open_server

    server, _ = open_server(path, seed=seed, **options)
    if not server.saved_keys:
        server.keep_key(server.add_personal_key(key))
    return server, in_process_client(server, api_key=key)

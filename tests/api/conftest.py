"""Fixtures: a server with a personal key, an in-process client, a real uvicorn server."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import uvicorn

from sim.api import SimClient, SimServer, create_app, in_process_client


@pytest.fixture
def server() -> SimServer:
    return SimServer(seed=1)


@pytest.fixture
def key(server: SimServer) -> str:
    return server.add_personal_key().secret


@pytest.fixture
def api(server: SimServer, key: str) -> Iterator[SimClient]:
    with in_process_client(server, api_key=key) as client:
        yield client


def make_project(api: SimClient, name: str = "shop", **fields: Any) -> dict[str, Any]:
    r = api.post("projects", json={"project": {"name": name, **fields}})
    assert r.status_code == 201, r.text
    return r.json()


def wait_finished(api: SimClient, project_id: str, operation_id: str, step: float = 5.0,
                  tries: int = 60) -> dict[str, Any]:
    """Poll an operation as the specification says (about every 5 s), advancing the manual clock."""
    for _ in range(tries):
        op = api.get(f"projects/{project_id}/operations/{operation_id}").json()["operation"]
        if op["status"] == "finished":
            return op
        api.advance(step)
    raise AssertionError(f"operation {operation_id} did not finish: {op}")


@dataclass
class Live:
    server: SimServer
    key: str
    port: int

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def live() -> Iterator[Live]:
    """`sim serve` in a thread on a free port of 127.0.0.1, stopped after the module."""
    server = SimServer(seed=3)
    key = server.add_personal_key().secret
    port = _free_port()
    config = uvicorn.Config(create_app(server), host="127.0.0.1", port=port, log_level="warning",
                            access_log=False, ws="none", lifespan="off")
    uv = uvicorn.Server(config)
    thread = threading.Thread(target=uv.run, name="uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not uv.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield Live(server, key, port)
    finally:
        uv.should_exit = True
        thread.join(10)

"""The in-process client (no sockets) and the `sim serve` command line."""

from __future__ import annotations

import asyncio
import threading

from sim.api import in_process_client
from sim.cli import COMMANDS, build_parser
from sim.engine.control_plane import ControlPlane


def test_client_on_a_bare_control_plane_and_inside_an_event_loop() -> None:
    cp = ControlPlane(seed=4)
    made = cp.create_project("lib")
    api = in_process_client(cp)
    assert api.server.cp is cp
    assert str(api.base_url).endswith("/api/v2/")

    async def in_a_notebook() -> int:  # a running loop on this thread, as in Jupyter
        return api.get(f"projects/{made.project.id}/endpoints").status_code

    assert asyncio.run(in_a_notebook()) == 200
    threads = threading.active_count()
    for _ in range(20):
        api.get("projects")
    # no thread left behind per request: 20 requests leave at most one pool thread more
    # (an idle pool thread may also exit meanwhile, so this is a bound, not an equality)
    assert threading.active_count() <= threads + 1
    assert api.advance(10)["seconds"] == 10 and cp.now == 10


def test_serve_command_line() -> None:
    assert "serve" in COMMANDS
    args = build_parser().parse_args(["serve", "--clock", "realtime", "--speed", "60",
                                      "--seed", "3", "--api-key", "k" * 20])
    assert (args.port, args.host, args.clock, args.speed, args.seed) == (
        8080, "127.0.0.1", "realtime", 60.0, 3)
    assert args.scenario is None

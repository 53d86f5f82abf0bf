"""A stop means stop: SIGTERM ends whatever a request waits for, and the process exits.

- with a 60 s injected latency (the most `/_sim/faults` accepts) and requests waiting it
  out, SIGTERM answers each 503 "not applied" (or closes its connection), writes the
  stop's snapshot and exits 0, with no traceback in the log;
- an advance under way at SIGTERM ends after the step it is in: its client hears where
  the clock stopped, and a restart finds the clock there;
- a request still being handled when the drain (0.5 s) is over has its connection closed
  without an answer, and the log holds no traceback for it.

Each wait for the process is a failure guard far below the 60 s the latency would hold
it, not a budget: the figures (seconds to exit) are printed and kept in
docs/reliability.md.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from sim.rules.errors import STOPPING
from tests.reliability.test_persistence_support import KEY, ROOT, Serve, free_port, sim_call

#: seconds a stopped server may take before the test fails: below the 60 s latency a
#: request waits out, so a stop that waited for it fails (the figure is printed)
GUARD_S = 45
#: seconds a server may take to start listening: a failure guard for a busy machine
START_S = 300


def _in_flight(serve: Serve, count: int, method: str, path: str,
               **kwargs: Any) -> tuple[list[threading.Thread], list[Any], threading.Semaphore]:
    """`count` requests sent on their own connections, each answered into `results` (a
    response, or the exception of a connection closed without an answer)."""
    results: list[Any] = []
    sent = threading.Semaphore(0)

    def one() -> None:
        with serve.client(timeout=120, event_hooks={"request": [lambda _r: sent.release()]}) \
                as client:
            try:
                results.append(client.request(method, path, **kwargs))
            except httpx.TransportError as err:  # closed without an answer
                results.append(err)

    threads = [threading.Thread(target=one) for _ in range(count)]
    for t in threads:
        t.start()
    return threads, results, sent


def _stopped(serve: Serve) -> float:
    """SIGTERM, then the seconds until the process exited with 0 (GUARD_S at most)."""
    started = time.perf_counter()
    serve.proc.send_signal(signal.SIGTERM)
    assert serve.proc.wait(GUARD_S) == 0
    took = time.perf_counter() - started
    serve.log.close()
    return took


def test_sigterm_with_a_60_s_latency_and_requests_in_flight_exits_at_once(
        tmp_path: Path) -> None:
    state = tmp_path / "world.db"
    serve = Serve("--state", str(state), "--rate-limit", "off", log=tmp_path / "serve.log",
                  timeout=START_S)
    with serve.client() as client:
        assert client.post("projects", json={"project": {"name": "kept"}}).status_code == 201
        r = sim_call(client, "POST", "faults", json={"extra_latency_ms": 60_000})
        assert r.status_code == 200 and r.json()["extra_latency_ms"] == 60_000
    reads, read_results, reads_sent = _in_flight(serve, 3, "GET", "projects")
    writes, write_results, writes_sent = _in_flight(serve, 2, "POST", "projects",
                                                    json={"project": {"name": "late"}})
    for _ in range(3):
        assert reads_sent.acquire(timeout=GUARD_S)
    for _ in range(2):
        assert writes_sent.acquire(timeout=GUARD_S)
    time.sleep(0.5)  # the requests reach the server and wait out the latency
    took = _stopped(serve)
    for t in reads + writes:
        t.join(GUARD_S)
    print(f"SIGTERM with a 60 s latency and 5 requests waiting: exit 0 in {took:.2f} s")
    answers = read_results + write_results
    assert len(answers) == 5
    for answer in answers:
        if isinstance(answer, httpx.Response):
            assert answer.status_code == 503, answer.text
            assert answer.json() == {"code": "SERVICE_UNAVAILABLE", "message": STOPPING,
                                     "request_id": answer.json()["request_id"]}
            assert answer.headers["connection"] == "close"
    log = serve.log_path.read_text()
    assert "Traceback" not in log and "CancelledError" not in log, log[-3000:]
    again = Serve("--state", str(state), "--rate-limit", "off", log=tmp_path / "again.log",
                  timeout=START_S)
    try:
        again_log = again.log_path.read_text()
        assert "state: " in again_log and "snapshot after row" in again_log, again_log
        with again.client(timeout=GUARD_S * 4) as client:  # a busy machine's first answer
            assert sim_call(client, "GET", "faults").json()["extra_latency_ms"] == 60_000
            sim_call(client, "POST", "faults", json={"extra_latency_ms": 0})
            # the requests the stop answered were not applied
            names = [p["name"] for p in client.get("projects").json()["projects"]]
            assert names == ["kept"]
    finally:
        again.stop()


def test_an_advance_under_way_at_sigterm_ends_after_its_step(tmp_path: Path) -> None:
    state = tmp_path / "world.db"
    # one simulated second a step: a ten-year advance would take hours
    serve = Serve("--state", str(state), "--rate-limit", "off", "--advance-step", "1",
                  log=tmp_path / "serve.log", timeout=START_S)
    with serve.client() as client:
        assert client.post("projects", json={"project": {"name": "kept"}}).status_code == 201
        threads, results, sent = _in_flight(serve, 1, "POST", f"{serve.base}/_sim/advance",
                                            json={"seconds": 315_360_000})
        assert sent.acquire(timeout=GUARD_S)
        for _ in range(200):  # until the clock moves: the advance is under way
            if sim_call(client, "GET", "clock").json()["seconds"] > 0:
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the advance did not start")
    took = _stopped(serve)
    threads[0].join(GUARD_S)
    print(f"SIGTERM with an advance under way: exit 0 in {took:.2f} s")
    (answer,) = results
    if isinstance(answer, httpx.Response):  # else: closed at the end of the drain
        assert answer.status_code == 503, answer.text
        message = answer.json()["message"]
        assert message.startswith("the server is stopping; the clock was advanced to ")
        stopped_at = float(message.split("(")[1].split(" s)")[0])
        assert 0 < stopped_at < 315_360_000
    assert "Traceback" not in serve.log_path.read_text()
    again = Serve("--state", str(state), log=tmp_path / "again.log", timeout=START_S)
    try:
        with again.client(timeout=GUARD_S * 4) as client:
            seconds = sim_call(client, "GET", "clock").json()["seconds"]
        assert 0 < seconds < 315_360_000
        if isinstance(answer, httpx.Response):
            # every step done was journaled, and only those (the message shows 6 digits)
            assert seconds == pytest.approx(stopped_at, rel=1e-5)
    finally:
        again.stop()


#: `sim serve`'s protocol and drain around a world whose project list takes 3 s (a handler
#: still running when the drain is over): argv[1] the port, argv[2] the key
_SLOW_HANDLER = """
import socket, sys, time
from sim.api.app import create_app
from sim.api.server import SimServer
from sim.api.serving import run

server = SimServer(seed=0)
server.add_personal_key(sys.argv[2])
listed = server.cp.list_projects

def slow(*args, **kwargs):
    print("in the handler", flush=True)
    time.sleep(3)
    return listed(*args, **kwargs)

server.cp.list_projects = slow
listener = socket.socket()
listener.bind(("127.0.0.1", int(sys.argv[1])))
run(create_app(server), listener, log_level="warning", on_stop=server.stop_waiting)
"""


def test_a_request_still_handled_after_the_drain_has_its_connection_closed_quietly(
        tmp_path: Path) -> None:
    port = free_port()
    log_path = tmp_path / "serve.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-c", _SLOW_HANDLER, str(port), KEY],
                                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        try:
            base = f"http://127.0.0.1:{port}"
            headers = {"authorization": f"Bearer {KEY}"}
            for _ in range(START_S * 10):  # until it answers (a bounded count of looks)
                try:
                    if httpx.get(f"{base}/_sim/clock", headers=headers).status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.1)
            results: list[Any] = []

            def list_projects() -> None:
                try:
                    results.append(httpx.get(f"{base}/api/v2/projects", headers=headers,
                                             timeout=GUARD_S))
                except httpx.TransportError as err:
                    results.append(err)

            reader = threading.Thread(target=list_projects)
            reader.start()
            for _ in range(GUARD_S * 20):  # until the request is in its handler
                if "in the handler" in log_path.read_text():
                    break
                time.sleep(0.05)
            proc.send_signal(signal.SIGTERM)  # 3 s before the handler ends
            assert proc.wait(GUARD_S) == 0
            reader.join(GUARD_S)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    (answer,) = results  # closed without an answer: the drain (0.5 s) was over first
    assert isinstance(answer, httpx.RemoteProtocolError), answer
    log = log_path.read_text()
    assert "Traceback" not in log and "CancelledError" not in log, log

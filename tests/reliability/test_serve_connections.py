"""`sim serve` as a process: how it holds connections (sim.api.serving). 127.0.0.1 only, every
load bounded by a count.

- a keep-alive request is not slower than a one-shot one (TCP_NODELAY: no ~40 ms wait for a
  delayed ACK);
- a head that never arrives whole gets 408 and its connection is closed; past
  `--max-connections` a connection gets 503; out of descriptors never logs a traceback;
- a 413 for a large body on a keep-alive connection arrives whole, with its body;
- SIGTERM with a half-sent body answers it 503 and exits without waiting for its timeout;
- a 500 leaves a kept-alive connection usable.
"""

from __future__ import annotations

import logging
import signal
import socket
import statistics
import threading
import time
from pathlib import Path

import httpx
import pytest
import uvicorn

from sim.api import SimServer, create_app
from sim.api.serving import protocol_class
from tests.reliability.test_persistence_support import KEY, Serve

HEAD = (b"GET /api/v2/projects HTTP/1.1\r\nhost: x\r\n"
        b"authorization: Bearer " + KEY.encode() + b"\r\n")


def _answer(s: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    answer = b""
    try:
        while chunk := s.recv(65536):
            answer += chunk
    except ConnectionResetError:
        pass
    s.close()
    return answer


def test_a_keep_alive_request_is_not_slower_than_a_one_shot_one(tmp_path: Path) -> None:
    serve = Serve("--rate-limit", "off", log=tmp_path / "serve.log")
    headers = {"authorization": f"Bearer {KEY}"}
    url = f"{serve.base}/api/v2/projects"
    kept, one_shot = [], []
    try:
        with httpx.Client(headers=headers, timeout=30) as client:
            client.get(url)  # the connection is open; the first request's imports are done
            for _ in range(4):  # alternating blocks: a busy moment of the machine hits both
                for _ in range(10):
                    started = time.perf_counter()
                    assert client.get(url).status_code == 200
                    kept.append(time.perf_counter() - started)
                for _ in range(10):
                    with httpx.Client(headers=headers, timeout=30) as fresh:
                        started = time.perf_counter()
                        assert fresh.get(url).status_code == 200
                        one_shot.append(time.perf_counter() - started)
    finally:
        serve.stop()
    kept_ms, one_ms = statistics.median(kept) * 1e3, statistics.median(one_shot) * 1e3
    print(f"GET projects, median of 40: keep-alive {kept_ms:.1f} ms, one-shot {one_ms:.1f} ms")
    # without TCP_NODELAY a keep-alive answer waits for the delayed ACK: ~48 ms against
    # ~7 ms one-shot on the machine this was written on (ratio ~7); with it, ~0.3-1
    assert kept_ms <= 2 * one_ms, (kept_ms, one_ms)


def test_slow_heads_get_408_connections_past_the_cap_503_and_never_a_traceback(
        tmp_path: Path) -> None:
    # ulimit -n 200: at most 136 connections (200 less the 64 the server keeps for itself)
    serve = Serve("--rate-limit", "off", "--header-timeout", "1", log=tmp_path / "serve.log",
                  max_files=200)
    try:
        idle = socket.create_connection(("127.0.0.1", serve.port), timeout=30)
        slow = []
        for _ in range(160):  # heads that never end
            s = socket.create_connection(("127.0.0.1", serve.port), timeout=30)
            s.sendall(HEAD)
            slow.append(s)
        answers = [_answer(s) for s in slow]
        statuses = [a.split(b" ", 2)[1] if a.startswith(b"HTTP/1.1 ") else a[:40]
                    for a in answers]
        assert set(statuses) <= {b"408", b"503"}, set(statuses)
        assert statuses.count(b"503") >= 160 - 136
        assert statuses.count(b"408") >= 100
        assert all(b"REQUEST_TIMEOUT" in a for a in answers if a.startswith(b"HTTP/1.1 408"))
        assert _answer(idle) == b""  # not a byte sent: closed without an answer
        with httpx.Client(base_url=serve.base, timeout=30,
                          headers={"authorization": f"Bearer {KEY}"}) as client:
            assert client.get("/api/v2/projects").status_code == 200  # served again
    finally:
        serve.stop()
    log = serve.log_path.read_text()
    assert "Traceback" not in log and "EMFILE" not in log, log[-2000:]
    assert "one more refused with 503" in log


def test_a_413_on_a_keep_alive_connection_arrives_with_its_body(tmp_path: Path) -> None:
    serve = Serve("--rate-limit", "off", log=tmp_path / "serve.log")
    big = b"x" * (10 * 1024 * 1024)
    try:
        with httpx.Client(base_url=serve.base, timeout=60,
                          headers={"authorization": f"Bearer {KEY}",
                                   "content-type": "application/json"}) as client:
            for _ in range(10):
                assert client.get("/api/v2/projects").status_code == 200  # kept alive
                r = client.post("/api/v2/projects", content=big)
                assert r.status_code == 413
                assert r.json()["code"] == "PAYLOAD_TOO_LARGE"
                assert r.headers["connection"] == "close"
    finally:
        serve.stop()


def test_sigterm_answers_a_half_sent_body_503_and_exits_without_waiting_for_it(
        tmp_path: Path) -> None:
    state = tmp_path / "world.db"
    serve = Serve("--state", str(state), "--rate-limit", "off", "--body-timeout", "120",
                  "--header-timeout", "120", log=tmp_path / "serve.log")
    with serve.client() as client:
        assert client.post("projects", json={"project": {"name": "kept"}}).status_code == 201
    half = socket.create_connection(("127.0.0.1", serve.port), timeout=60)
    half.sendall(b"POST /api/v2/projects HTTP/1.1\r\nhost: x\r\n"
                 b"authorization: Bearer " + KEY.encode() + b"\r\n"
                 b"content-type: application/json\r\ncontent-length: 100\r\n\r\n"
                 b'{"project"')
    head_only = socket.create_connection(("127.0.0.1", serve.port), timeout=60)
    head_only.sendall(HEAD)
    with serve.client() as client:  # the server has read what came before this
        assert client.get("projects").status_code == 200
    time.sleep(0.2)
    started = time.perf_counter()
    serve.proc.send_signal(signal.SIGTERM)
    assert serve.proc.wait(60) == 0  # the body timeout (120 s) would fail this
    took = time.perf_counter() - started
    serve.log.close()
    print(f"SIGTERM with a half-sent body and a half-sent head: exit 0 in {took:.2f} s")
    answer = _answer(half)
    assert answer.startswith(b"HTTP/1.1 503 "), answer[:200]
    assert b"the server is stopping" in answer
    assert _answer(head_only) == b""
    again = Serve("--state", str(state), log=tmp_path / "again.log")
    try:
        with again.client() as client:  # the half-sent project was not applied
            names = [p["name"] for p in client.get("projects").json()["projects"]]
        assert names == ["kept"]
    finally:
        again.stop()


def test_out_of_descriptors_in_accept_is_one_line_in_the_log(caplog) -> None:  # noqa: ANN001
    import asyncio
    import errno

    from sim.api.serving import _one_line_accept_errors

    loop = asyncio.new_event_loop()
    try:
        with caplog.at_level("WARNING", logger="sim.api.serving"):
            _one_line_accept_errors(loop, {
                "message": "socket.accept() out of system resource",
                "exception": OSError(errno.EMFILE, "Too many open files")})
    finally:
        loop.close()
    [record] = caplog.records
    assert record.getMessage() == ("cannot accept a connection: Too many open files; retrying "
                                   "(lower --max-connections or raise ulimit -n)")
    assert record.exc_info is None


def test_a_500_leaves_a_kept_alive_connection_usable(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """An unexpected failure answers 500 and the connection serves the next request (it
    was closed without a word before: the client's next request met a reset)."""
    server = SimServer(seed=3)
    key = server.add_personal_key().secret
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    config = uvicorn.Config(create_app(server), log_level="warning", access_log=False,
                            ws="none", lifespan="off",
                            http=protocol_class(header_timeout=10, max_connections=100))
    uv = uvicorn.Server(config)
    thread = threading.Thread(target=uv.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    for _ in range(500):  # until it serves (a bounded count of looks)
        if uv.started:
            break
        time.sleep(0.02)
    assert uv.started

    def broken(*_a: object, **_k: object) -> None:
        raise RuntimeError("secret internals")

    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}/api/v2/", timeout=30,
                          headers={"authorization": f"Bearer {key}"}) as client:
            def peer(r: httpx.Response) -> object:  # the client's end of the connection
                return r.extensions["network_stream"].get_extra_info("client_addr")

            first = client.get("projects")
            assert first.status_code == 200
            with monkeypatch.context() as patch, caplog.at_level(logging.ERROR):
                patch.setattr(server.cp, "list_projects", broken)
                failed = client.get("projects")
            assert failed.status_code == 500 and failed.json()["code"] == "INTERNAL_ERROR"
            assert "secret internals" not in failed.text
            for _ in range(3):
                again = client.get("projects")
                assert again.status_code == 200
                assert peer(again) == peer(failed) == peer(first)  # the same connection
    finally:
        uv.should_exit = True
        thread.join(30)
    failures = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(failures) == 1, [r.getMessage() for r in failures]  # logged once, with its cause
    assert "secret internals" in caplog.text
    assert "Exception in ASGI application" not in caplog.text

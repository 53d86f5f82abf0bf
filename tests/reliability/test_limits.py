"""Rate limits (700 a minute per key, bursts of 40 a second per route template) and the
request-body cap (413 before the body is read): sim/api/limits.py, docs/reliability.md."""

from __future__ import annotations

import socket
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from sim.api import SimServer, in_process_client
from sim.api.limits import DEFAULT_MAX_BODY_BYTES, LimitsMiddleware, RateLimit
from sim.cli import build_parser, main
from tests.reliability.test_persistence_support import Serve


class FakeWall:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def limited(rate_limit: RateLimit | None = None, **options: Any):
    wall = FakeWall()
    server = SimServer(seed=1, wall=wall, rate_limit=rate_limit or RateLimit(), **options)
    key = server.add_personal_key().secret
    api = in_process_client(server, api_key=key)
    project_id = api.post("projects", json={"project": {"name": "p"}}).json()["project"]["id"]
    return server, wall, api, project_id


def assert_rate_limited(r: httpx.Response, retry_after: str) -> None:
    assert r.status_code == 429, r.text
    body = r.json()
    assert set(body) == {"code", "message", "request_id"}
    assert body["code"] == "RATE_LIMITED"
    assert body["request_id"] == r.headers["x-request-id"]
    assert r.headers["retry-after"] == retry_after


# ---- parsing and defaults ------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("off", None), ("OFF", None), ("700,40", RateLimit(700, 40)),
    ("700/min,40/s", RateLimit(700, 40)), ("120", RateLimit(120, 40)),
    (" 10 , 2 ", RateLimit(10, 2)),
])
def test_rate_limit_option_parses(text: str, expected: RateLimit | None) -> None:
    assert RateLimit.parse(text) == expected


@pytest.mark.parametrize("text", ["", "fast", "700,", "-1,4", "700;40", "0,0", "5,0"])
def test_bad_rate_limit_option_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        RateLimit.parse(text)


def test_serve_limits_by_default_and_refuses_a_bad_option(capsys) -> None:  # noqa: ANN001
    args = build_parser().parse_args(["serve"])
    assert RateLimit.parse(args.rate_limit) == RateLimit(700, 40)
    assert args.max_body_bytes == DEFAULT_MAX_BODY_BYTES == 1 << 20
    assert main(["serve", "--rate-limit", "lots"]) == 2
    assert "--rate-limit" in capsys.readouterr().err
    assert main(["serve", "--max-body-bytes", "0"]) == 2


def test_in_process_client_and_dispatch_are_not_limited() -> None:
    server = SimServer(seed=1)  # the default: no rate limit
    assert server.limiter is None
    api = in_process_client(server)
    assert {api.get("projects").status_code for _ in range(120)} == {200}


# ---- the windows ---------------------------------------------------------------------------


def test_burst_of_40_a_second_per_route_template_per_key() -> None:
    server, wall, api, project_id = limited()
    other = api.post("projects", json={"project": {"name": "q"}}).json()["project"]["id"]
    for i in range(40):  # two projects, one route template: one budget
        pid = project_id if i % 2 else other
        assert api.get(f"projects/{pid}/endpoints").status_code == 200
    assert_rate_limited(api.get(f"projects/{project_id}/endpoints"), "1")
    assert_rate_limited(api.get(f"projects/{other}/endpoints"), "1")
    assert "40 requests a second on GET /api/v2/projects/{project_id}/endpoints" in \
        api.get(f"projects/{other}/endpoints").json()["message"]
    # another route, another key, and the control calls are not affected
    assert api.get(f"projects/{project_id}/branches").status_code == 200
    second = in_process_client(server, api_key=server.add_personal_key().secret)
    assert second.get(f"projects/{project_id}/endpoints").status_code == 200
    assert api.sim("GET", "clock").status_code == 200
    wall.t += 0.5
    assert api.get(f"projects/{project_id}/endpoints").status_code == 429
    wall.t += 0.5  # a second after the first of the 40: one more fits
    assert api.get(f"projects/{project_id}/endpoints").status_code == 200


def test_700_a_minute_per_key_over_all_routes() -> None:
    _, wall, api, project_id = limited()
    routes = ["projects", f"projects/{project_id}", f"projects/{project_id}/endpoints",
              f"projects/{project_id}/branches", f"projects/{project_id}/operations"]
    # the project's creation counted: 699 more within 50 s, 7 routes a round, under 40/s
    for i in range(699):
        if i % 35 == 0:
            wall.t += 2.5
        assert api.get(routes[i % len(routes)]).status_code == 200, i
    r = api.get(routes[0])
    assert_rate_limited(r, "10")  # now +50 s: the first counted one leaves the window at +60 s
    assert "700 requests a minute per API key" in r.json()["message"]
    wall.t += 9
    assert api.get(routes[1]).status_code == 429
    wall.t += 1
    assert api.get(routes[1]).status_code == 200


def test_refused_requests_do_not_count() -> None:
    _, wall, api, project_id = limited(RateLimit(per_minute=10, burst_per_second=5))
    for _ in range(5):
        assert api.get(f"projects/{project_id}").status_code == 200
    for _ in range(20):
        assert api.get(f"projects/{project_id}").status_code == 429
    wall.t += 1
    for _ in range(4):  # 1 (the creation) + 5 + 4 = 10 a minute: the 20 refused did not count
        assert api.get(f"projects/{project_id}").status_code == 200
    r = api.get(f"projects/{project_id}")
    assert_rate_limited(r, "59")
    assert "10 requests a minute" in r.json()["message"]


def test_realtime_clock_measures_limits_in_simulated_time() -> None:
    wall = FakeWall()
    server = SimServer(seed=1, wall=wall, clock="realtime", speed=60, rate_limit=RateLimit())
    api = in_process_client(server)
    for _ in range(40):
        assert api.get("projects").status_code == 200
    assert_rate_limited(api.get("projects"), "1")  # 1/60 wall s, rounded up to whole seconds
    wall.t += 1 / 60  # one simulated second
    assert api.get("projects").status_code == 200


def test_requests_without_a_valid_key_are_limited_by_address() -> None:
    _, _, api, _ = limited(RateLimit(per_minute=700, burst_per_second=3))
    bad = {"authorization": "Bearer not-a-key"}
    statuses = [api.get("projects", headers=bad).status_code for _ in range(5)]
    assert statuses == [401, 401, 401, 429, 429]


# ---- request bodies ------------------------------------------------------------------------


def test_body_over_the_cap_is_refused_with_413() -> None:
    server = SimServer(seed=1, max_body_bytes=2000)
    api = in_process_client(server)
    padding = "x" * 1500
    r = api.post("projects", json={"project": {"name": "a" * 10}, "pad": padding * 2})
    assert r.status_code == 413
    body = r.json()
    assert body["code"] == "PAYLOAD_TOO_LARGE" and body["request_id"] == r.headers["x-request-id"]
    assert set(body) == {"code", "message", "request_id"}
    r = api.post("projects", json={"project": {"name": padding[:200]}})
    assert r.status_code == 201, r.text
    assert server.cp.list_projects()[0].name == padding[:200]


def test_chunked_body_is_read_only_up_to_the_cap() -> None:
    """The middleware stops reading at the cap: the rest of an endless body is never asked for."""
    import anyio

    server = SimServer(seed=1, max_body_bytes=100_000)
    pulled = 0
    reached_app = False
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal pulled
        pulled += 1
        return {"type": "http.request", "body": b"x" * 16_384, "more_body": True}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def app(scope, receive, send) -> None:  # noqa: ANN001
        nonlocal reached_app
        reached_app = True

    scope = {"type": "http", "method": "POST", "path": "/api/v2/projects", "headers": [
        (b"transfer-encoding", b"chunked")], "state": {"request_id": "req-1"}}
    anyio.run(LimitsMiddleware(app, server), scope, receive, send)
    assert not reached_app
    assert pulled == 7  # 7 x 16 KiB > 100 000 bytes: refused at the seventh chunk
    assert sent[0]["status"] == 413


def test_live_server_limits_by_default(tmp_path: Path) -> None:
    """`sim serve` with its defaults: 429 on the 41st quick call of a route, 413 for a body
    announced as 10 GB (answered at once, nothing read) and for a 4 MiB chunked one."""
    serve = Serve(log=tmp_path / "serve.log")
    try:
        with serve.client() as client, ThreadPoolExecutor(10) as pool:
            answers = list(pool.map(lambda _: client.get("projects"), range(100)))
        statuses = Counter(r.status_code for r in answers)
        assert set(statuses) == {200, 429} and statuses[200] >= 40, statuses
        refused = next(r for r in answers if r.status_code == 429)
        assert refused.json()["code"] == "RATE_LIMITED"
        assert int(refused.headers["retry-after"]) == 1
        status_line, body = _raw_request(serve.port, b"content-length: 10000000000\r\n\r\n{")
        assert status_line.startswith(b"HTTP/1.1 413"), status_line
        assert b'"PAYLOAD_TOO_LARGE"' in body
        chunk = b"x" * 65_536
        chunked = b"".join(b"%x\r\n" % len(chunk) + chunk + b"\r\n" for _ in range(64))
        status_line, body = _raw_request(serve.port, b"transfer-encoding: chunked\r\n\r\n"
                                         + chunked + b"0\r\n\r\n")
        assert status_line.startswith(b"HTTP/1.1 413"), status_line
    finally:
        serve.stop()


def _raw_request(port: int, tail: bytes) -> tuple[bytes, bytes]:
    """POST /api/v2/projects over a bare socket; what comes back before the server closes."""
    head = (b"POST /api/v2/projects HTTP/1.1\r\nhost: 127.0.0.1\r\n"
            b"authorization: Bearer x\r\ncontent-type: application/json\r\n")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        try:
            s.sendall(head + tail)
        except OSError:
            pass  # the server answered and closed while the body was still going out
        data = b""
        while b"\r\n\r\n" not in data or not data.rstrip().endswith(b"}"):
            try:
                got = s.recv(65_536)
            except OSError:
                break
            if not got:
                break
            data += got
    head_part, _, body = data.partition(b"\r\n\r\n")
    return head_part.split(b"\r\n")[0], body


def test_windows_of_quiet_keys_are_forgotten() -> None:
    from sim.api.limits import _PRUNE_EVERY, RateLimiter

    now = [0.0]
    limiter = RateLimiter(RateLimit(), lambda: now[0])
    for i in range(_PRUNE_EVERY - 1):
        assert limiter.check(f"address:10.0.{i // 256}.{i % 256}", "GET /x") is None
    assert len(limiter._minutes) == _PRUNE_EVERY - 1
    now[0] = 61.0  # every window has emptied: the next check sweeps them away
    assert limiter.check("key:a", "GET /x") is None
    assert len(limiter._minutes) == len(limiter._bursts) == 1

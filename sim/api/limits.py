"""Rate limits and the request-body cap of `sim serve` (docs/reliability.md).

Rate limits, as the real API applies them, per API key:

- 700 requests a minute, over all routes of the management API;
- bursts of at most 40 requests a second on any one route template
  (`GET /api/v2/projects/{project_id}/endpoints`: two projects share a budget).

Both are sliding windows (no more than N in any window of W seconds), so a
client that keeps under them is never refused. Beyond either: 429
`RATE_LIMITED` with `Retry-After` (whole wall seconds until the window lets one
more through). Only `/api/v2/...` is limited: the `/_sim` control calls, the
console page and `/docs` are not part of the real API. A request without a
valid key is limited by the client's address instead (it is refused with 401
anyway; the limit keeps key guessing slow).

Windows are measured on the clock the server runs: with a realtime clock in
simulated seconds (speed x wall time), so a client sees the real service's
limits in the world's time; with a manual clock in wall time, because
simulated time stands still between advances and a simulated window would
block a client after 40 calls until someone moved the clock.

Bodies larger than `max_body_bytes` (default 1 MiB) are refused with 413
`PAYLOAD_TOO_LARGE` before they are read: a declared Content-Length is checked
first, and a body without one (chunked) is read only up to the cap. A body
that does not arrive whole within `body_timeout_s` (default 10 s; a client
that declared 100 bytes and sent 10) gets 408 `REQUEST_TIMEOUT` and the
connection is closed: a stalled client cannot hold a connection for ever.

The limiter is a server option, off unless given (`SimServer(rate_limit=...)`):
the in-process client and the scenario `dispatch` are not limited; `sim serve`
turns it on.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
from starlette.responses import JSONResponse
from starlette.routing import get_route_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sim.rules.errors import ApiError

if TYPE_CHECKING:
    from fastapi import FastAPI

    from sim.api.server import SimServer

DEFAULT_MAX_BODY_BYTES = 1 << 20
DEFAULT_BODY_TIMEOUT_S = 10.0
LIMITED_PREFIX = "/api/"
_PRUNE_EVERY = 4096  # checks between sweeps of windows that have emptied


@dataclass(frozen=True)
class RateLimit:
    per_minute: int = 700  # per key, over all routes
    burst_per_second: int = 40  # per key and route template

    def __post_init__(self) -> None:
        if self.per_minute < 1 or self.burst_per_second < 1:
            raise ValueError("rate limits must be >= 1 request")

    @classmethod
    def parse(cls, text: str) -> RateLimit | None:
        """`off`, `700,40`, `700/min,40/s` or `700` (per minute; the burst stays 40)."""
        text = text.strip().lower()
        if text in ("off", "none", "0"):
            return None
        match = re.fullmatch(r"(\d+)(?:/min)?(?:\s*,\s*(\d+)(?:/s)?)?", text)
        if match is None:
            raise ValueError(f"rate limit {text!r}: give off, or PER_MINUTE[,BURST_PER_SECOND] "
                             f"such as 700,40")
        per_minute = int(match[1])
        burst = int(match[2]) if match[2] else cls.burst_per_second
        return cls(per_minute, burst)

    def __str__(self) -> str:
        return f"{self.per_minute}/min per key, bursts of {self.burst_per_second}/s per route"


class Window:
    """At most `limit` requests in any `seconds`-long window: the times of the last ones."""

    __slots__ = ("limit", "seconds", "times")

    def __init__(self, limit: int, seconds: float):
        self.limit = limit
        self.seconds = seconds
        self.times: deque[float] = deque()

    def wait(self, now: float) -> float:
        """0 when one more request fits now, else how long until one does."""
        times = self.times
        horizon = now - self.seconds
        while times and times[0] <= horizon:
            times.popleft()
        if len(times) < self.limit:
            return 0.0
        return times[0] - horizon

    def take(self, now: float) -> None:
        self.times.append(now)


class RateLimiter:
    """The windows of every key (per minute) and of every key and route (per second)."""

    def __init__(self, limit: RateLimit, clock: Callable[[], float]):
        self.limit = limit
        self.clock = clock  # seconds on the clock the limits are measured in
        self._minutes: dict[str, Window] = {}
        self._bursts: dict[tuple[str, str], Window] = {}
        self._lock = threading.Lock()
        self._checks = 0

    def check(self, who: str, route: str) -> tuple[float, str] | None:
        """None, and the request counts; or (seconds to wait, why) and it does not."""
        now = self.clock()
        with self._lock:
            self._checks += 1
            if self._checks % _PRUNE_EVERY == 0:
                self._prune(now)
            minute = self._minutes.get(who)
            if minute is None:
                minute = self._minutes[who] = Window(self.limit.per_minute, 60.0)
            burst = self._bursts.get((who, route))
            if burst is None:
                burst = self._bursts[(who, route)] = Window(self.limit.burst_per_second, 1.0)
            waits = []
            if (w := burst.wait(now)) > 0:
                waits.append((w, f"at most {self.limit.burst_per_second} requests a second "
                                 f"on {route}"))
            if (w := minute.wait(now)) > 0:
                waits.append((w, f"at most {self.limit.per_minute} requests a minute "
                                 f"per API key"))
            if waits:
                return max(waits)
            minute.take(now)
            burst.take(now)
            return None

    def _prune(self, now: float) -> None:
        """Forget windows with nothing left in them (keys and routes gone quiet)."""
        self._minutes = {n: w for n, w in self._minutes.items() if _busy(w, now)}
        self._bursts = {n: w for n, w in self._bursts.items() if _busy(w, now)}


def _busy(window: Window, now: float) -> bool:
    window.wait(now)  # drops the times that left the window
    return bool(window.times)


# ---- the middleware ----------------------------------------------------------------------------


class LimitsMiddleware:
    """413 for bodies over the cap, 429 beyond the rate limits; else the request goes on
    with its body already read (at most the cap) and handed over in one piece."""

    def __init__(self, app: ASGIApp, server: SimServer):
        self.app = app
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        server = self.server
        cap = server.max_body_bytes
        if cap is not None:
            declared = _content_length(scope)
            if declared is not None and declared > cap:
                await _too_large(scope, receive, send, cap)
                return
        limiter = server.limiter
        if limiter is not None and scope["path"].startswith(LIMITED_PREFIX):
            refused = limiter.check(_who(server, scope), route_template(scope))
            if refused is not None:
                wait, why = refused
                await _rate_limited(scope, receive, send, server.wall_seconds(wait), why)
                return
        if cap is not None or server.body_timeout_s is not None:
            try:
                body = await read_body(receive, cap, server.body_timeout_s)
            except TimeoutError:
                await _timed_out(scope, receive, send, server.body_timeout_s or 0.0)
                return
            except ClientGone:
                return
            if body is None:
                await _too_large(scope, receive, send, cap or 0)
                return
            receive = replay_body(body, receive)
        await self.app(scope, receive, send)


def install(app: FastAPI, server: SimServer) -> None:
    app.add_middleware(LimitsMiddleware, server=server)


def route_template(scope: Scope) -> str:
    """`GET /api/v2/projects/{project_id}/endpoints`: the route the router will pick."""
    method = scope["method"]
    path = get_route_path(scope)
    partial = None
    for methods, regex, template in _route_table(scope.get("app")):
        if regex.match(path) is None:
            continue
        if methods is None or method in methods:
            return f"{method} {template}"
        partial = partial or template
    return f"{method} {partial or '(no route)'}"


def allowed_methods(scope: Scope) -> list[str]:
    """Every method some route serves on this path (the `Allow` header of a 405); where
    routes with literals match (`/projects/shared`), only theirs (`shadowed_by_literal`)."""
    path = get_route_path(scope)
    methods: set[str] = set()
    table = _route_table(scope.get("app"))
    for route_methods, regex, template in table:
        if (route_methods and regex.match(path) is not None
                and not _shadowed(table, path, template)):
            methods |= route_methods
    return sorted(methods)


def _literals(template: str) -> int:
    return sum(1 for part in template.split("/") if part and not part.startswith("{"))


def _shadowed(table: list[tuple[frozenset[str] | None, re.Pattern[str], str]], path: str,
              template: str) -> bool:
    own = _literals(template)
    depth = template.count("/")
    return any(t.count("/") == depth and _literals(t) > own and regex.match(path) is not None
               for _methods, regex, t in table)


def shadowed_by_literal(scope: Scope, template: str) -> bool:
    """Route literals before parameters: a path a route with more literal segments also
    matches (`/projects/{id}/branches/count` for `/projects/{id}/branches/{branch_id}`)
    is not this route's, whatever the method (a method the literal route lacks gets 405)."""
    if "{" not in template:
        return False
    return _shadowed(_route_table(scope.get("app")), get_route_path(scope), template)


_TABLES: weakref.WeakKeyDictionary[Any, list[tuple[frozenset[str] | None, re.Pattern[str], str]]]
_TABLES = weakref.WeakKeyDictionary()


def _route_table(app: Any) -> list[tuple[frozenset[str] | None, re.Pattern[str], str]]:
    """(methods, path regex, path template) of every route of `app`, in the router's order."""
    if app is None:
        return []
    table = _TABLES.get(app)
    if table is None:
        try:  # FastAPI >= 0.16x keeps included routers unflattened
            from fastapi.routing import iter_route_contexts
        except ImportError:
            routes: list[Any] = list(app.routes)
        else:
            routes = list(iter_route_contexts(app.routes))
        table = []
        for route in routes:
            regex = getattr(route, "path_regex", None)
            template = getattr(route, "path_format", None) or getattr(route, "path", None)
            if regex is not None and template:
                methods = getattr(route, "methods", None)
                table.append((frozenset(methods) if methods else None, regex, template))
        _TABLES[app] = table
    return table


def _who(server: SimServer, scope: Scope) -> str:
    """The key a request is counted against: its API key, else the client's address."""
    authorization = _header(scope, b"authorization")
    try:
        server.authenticate(authorization)
    except ApiError:
        client = scope.get("client") or ("?", 0)
        return f"address:{client[0]}"
    token = (authorization or "").split(None, 1)[-1].strip()  # well formed: it authenticated
    return "key:" + hashlib.sha256(token.encode()).hexdigest()[:32]


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def _content_length(scope: Scope) -> int | None:
    value = _header(scope, b"content-length")
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None  # the HTTP server refuses a malformed one before we see it


class ClientGone(Exception):
    """The connection ended (the client left, or the server answered it while stopping)
    before the body arrived whole: there is nothing to apply and no one to answer."""


async def read_body(receive: Receive, cap: int | None,
                    timeout: float | None = None) -> bytes | None:
    """The whole request body, or None as soon as it passes `cap` bytes (the rest unread).
    TimeoutError when it has not arrived whole within `timeout` seconds; ClientGone when
    the connection ended first (a truncated body is never handed on as a whole one)."""
    if timeout is None:
        return await _read_body(receive, cap)
    with anyio.fail_after(timeout):
        return await _read_body(receive, cap)


async def _read_body(receive: Receive, cap: int | None) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise ClientGone
        chunk = message.get("body", b"")
        size += len(chunk)
        if cap is not None and size > cap:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def replay_body(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives `body` in one message, then whatever the client sends next."""
    given = False

    async def replay() -> Message:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _request_id(scope: Scope) -> str | None:
    return scope.get("state", {}).get("request_id")


async def _error(scope: Scope, receive: Receive, send: Send, status: int, code: str,
                 message: str, headers: dict[str, str] | None = None) -> None:
    body = {"code": code, "message": message, "request_id": _request_id(scope)}
    await JSONResponse(body, status_code=status, headers=headers)(scope, receive, send)


async def _too_large(scope: Scope, receive: Receive, send: Send, cap: int) -> None:
    await _error(scope, receive, send, 413, "PAYLOAD_TOO_LARGE",
                 f"request body larger than {cap} bytes", {"connection": "close"})


async def _timed_out(scope: Scope, receive: Receive, send: Send, seconds: float) -> None:
    await _error(scope, receive, send, 408, "REQUEST_TIMEOUT",
                 f"the request body did not arrive whole within {seconds:g} s",
                 {"connection": "close"})


async def _rate_limited(scope: Scope, receive: Receive, send: Send, wait: float,
                        why: str) -> None:
    seconds = max(1, math.ceil(wait))
    await _error(scope, receive, send, 429, "RATE_LIMITED",
                 f"rate limit exceeded: {why}; retry after {seconds} s",
                 {"Retry-After": str(seconds)})

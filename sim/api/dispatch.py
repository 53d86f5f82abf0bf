"""Call the management API without HTTP sockets: (method, path, body) -> (status, JSON body).

Scenario `actions:` go through here, so a scripted call meets exactly the
route handlers (parsing, checks, error bodies) of a request to `sim serve`.
The call never moves the clock: it runs at the control plane's current instant,
with an internal key that reaches every project.
"""

from __future__ import annotations

import json
import threading
from typing import Any
from urllib.parse import quote, unquote

from fastapi import FastAPI

from sim.api.app import create_app
from sim.api.client import PerThreadLoops
from sim.api.keys import ApiKey, KeyKind, new_secret
from sim.api.routing import handlers_inline
from sim.api.server import SimServer
from sim.engine.control_plane import ControlPlane
from sim.scenario import call_port

PREFIX = "/api/v2/"


class _Dispatcher:
    """One manual-clock server and its app, with an internal key; the caller's control
    plane is swapped in per call."""

    def __init__(self) -> None:
        self.server = SimServer()
        self.idle = self.server.cp
        secret = new_secret()
        self.server.keys.add(ApiKey(secret, KeyKind.INTERNAL))
        self.headers = [(b"host", b"sim.local"), (b"authorization", f"Bearer {secret}".encode())]
        self.app: FastAPI = create_app(self.server)
        self.loops = PerThreadLoops()

    async def call(self, method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
        """One request through the whole app (middleware, routes, error handlers), as an
        HTTP server would hand it over, without an HTTP client around it."""
        target, _, query = (PREFIX + path.lstrip("/")).partition("?")
        raw_path = quote(target, safe="/:@!$&'()*+,;=~%")
        headers = list(self.headers)
        if body is not None:
            headers += [(b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode())]
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                 "method": method, "headers": headers, "scheme": "http",
                 "path": unquote(raw_path), "raw_path": raw_path.encode(),
                 "query_string": query.encode(), "server": ("sim.local", 80),
                 "client": ("127.0.0.1", 123), "root_path": ""}
        received = False
        status = 500
        parts: list[bytes] = []

        async def receive() -> dict[str, Any]:
            nonlocal received
            if received:
                return {"type": "http.disconnect"}
            received = True
            return {"type": "http.request", "body": body or b"", "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                parts.append(message.get("body", b""))

        try:
            with handlers_inline():  # on this thread: nothing else is served meanwhile
                await self.app(scope, receive, send)
        except Exception:  # noqa: S110  # answered already (a 500 with its error body): the
            pass           # server-error layer raises again after, for a server's log
        return status, b"".join(parts)


_lock = threading.Lock()
_dispatcher: _Dispatcher | None = None


def dispatch(cp: ControlPlane, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """`path` as after the version segment: "/projects/{id}/endpoints/{id}"."""
    global _dispatcher
    content = None if body is None else json.dumps(
        body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
    with _lock:
        if _dispatcher is None:
            _dispatcher = _Dispatcher()
        d = _dispatcher
        d.server.cp = cp
        try:
            status, payload = d.loops.run(lambda: d.call(method.upper(), path, content))
        finally:
            d.server.cp = d.idle  # hold no one's fleet
        return status, json.loads(payload) if payload else None


def reset() -> None:
    """Close the event loops scripted calls ran on and drop the app; the next call builds
    them again. For a process about to fork (the cluster's fork server), which should pass
    on no event loop of its own."""
    global _dispatcher
    with _lock:
        if _dispatcher is not None:
            _dispatcher.loops.close()
            _dispatcher = None


# scripted calls of a scenario reach the control plane through this (sim.scenario.call_port)
call_port.register(dispatch)

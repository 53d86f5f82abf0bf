"""An httpx.Client that talks to the API in the same process, without sockets.

    server = SimServer(seed=1)
    key = server.add_personal_key().secret
    api = in_process_client(server, api_key=key)
    api.post("projects", json={"project": {"name": "shop"}}).json()
    api.advance(360)                 # POST /_sim/advance

httpx ships only an async ASGI transport; `SyncASGITransport` runs it to
completion for each request: on this thread's own event loop when no event loop
runs here (one loop per thread, kept: making a loop costs more than most calls),
otherwise (a notebook) on a short-lived helper thread.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import httpx
from fastapi import FastAPI

from sim.api.app import create_app
from sim.api.server import SimServer
from sim.engine.control_plane import ControlPlane

BASE_URL = "http://sim.local/api/v2/"


class SyncASGITransport(httpx.BaseTransport):
    def __init__(self, app: FastAPI):
        self._transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        self._loops = threading.local()

    def _loop(self) -> asyncio.AbstractEventLoop:
        loop = getattr(self._loops, "loop", None)
        if loop is None:
            loop = self._loops.loop = asyncio.new_event_loop()
            weakref.finalize(self, loop.close)
        return loop

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        content = request.read()

        async def call() -> tuple[int, list[tuple[bytes, bytes]], bytes]:
            inner = httpx.Request(request.method, request.url, headers=request.headers,
                                  content=content)
            response = await self._transport.handle_async_request(inner)
            body = await response.aread()
            return response.status_code, response.headers.raw, body

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            status, headers, body = self._loop().run_until_complete(call())
        else:
            with ThreadPoolExecutor(1) as pool:
                status, headers, body = pool.submit(anyio.run, call).result()
        return httpx.Response(status, headers=headers, content=body, request=request)


class SimClient(httpx.Client):
    """httpx.Client on /api/v2/, plus helpers for the /_sim control calls."""

    def __init__(self, server: SimServer, api_key: str, **kwargs: Any):
        self.server = server
        super().__init__(transport=SyncASGITransport(create_app(server)), base_url=BASE_URL,
                         headers={"authorization": f"Bearer {api_key}"}, **kwargs)

    def sim(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """A call under /_sim (outside the /api/v2/ base): `sim("GET", "clock")`."""
        return self.request(method, self.base_url.join(f"/_sim/{path.lstrip('/')}"), **kwargs)

    def advance(self, seconds: float) -> dict[str, Any]:
        response = self.sim("POST", "advance", json={"seconds": seconds})
        response.raise_for_status()
        return response.json()

    def clock(self) -> dict[str, Any]:
        return self.sim("GET", "clock").json()


def in_process_client(target: SimServer | ControlPlane, api_key: str | None = None,
                      **kwargs: Any) -> SimClient:
    """A client on `target`. Without `api_key`, a personal key is made for it."""
    server = target if isinstance(target, SimServer) else SimServer(control_plane=target)
    if api_key is None:
        api_key = server.add_personal_key().secret
    return SimClient(server, api_key, **kwargs)

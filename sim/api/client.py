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
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from typing import Any, TypeVar

import anyio
import httpx
from fastapi import FastAPI

from sim.api.app import create_app
from sim.api.server import SimServer
from sim.engine.control_plane import ControlPlane

BASE_URL = "http://sim.local/api/v2/"


T = TypeVar("T")


class LoopRunner:
    """An event loop, and one long-lived task on it that awaits every coroutine given to
    `run`, one after another.

    Sync routes run on anyio's worker threads, which stop when the task they were
    started for ends: a task per request would start a thread per request, while one
    task for all of them keeps the workers (the dearest part of a small call). Those
    workers are not daemons, so `close` (which stops them) runs before the interpreter
    waits for its threads at exit, and whenever the owner is closed or collected."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._queue: asyncio.Queue[tuple[Coroutine[Any, Any, Any], asyncio.Future[Any]]] = \
            asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        _RUNNERS.add(self)

    async def _serve(self) -> None:
        while True:
            coro, future = await self._queue.get()
            try:
                result = await coro
            except Exception as err:  # the caller's to handle; the task serves on
                future.set_exception(err)
            else:
                future.set_result(result)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._task is None or self._task.done():  # first use, or interrupted
            self._task = self.loop.create_task(self._serve())
        future: asyncio.Future[T] = self.loop.create_future()
        self._queue.put_nowait((coro, future))
        return self.loop.run_until_complete(future)

    def close(self) -> None:
        """End the task (anyio stops its workers then) and close the loop; from any thread."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            self._close_here()
        else:  # another loop runs on this thread: ours can only run on a thread of its own
            helper = threading.Thread(target=self._close_here)
            helper.start()
            helper.join()

    def _close_here(self) -> None:
        if self.loop.is_closed() or self.loop.is_running():
            return
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with suppress(asyncio.CancelledError):
                self.loop.run_until_complete(self._task)
        self.loop.close()


_RUNNERS: weakref.WeakSet[LoopRunner] = weakref.WeakSet()


def _close_runners() -> None:
    for runner in list(_RUNNERS):
        runner.close()


# before the interpreter joins its non-daemon threads at exit (atexit would come after)
threading._register_atexit(_close_runners)  # type: ignore[attr-defined]


class PerThreadLoops:
    """A `LoopRunner` for each thread that asks; all closed with `close`."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._runners: list[LoopRunner] = []

    def run(self, coro_fn: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """coro_fn() to completion: on this thread's loop, or (an event loop runs here
        already: a notebook) on a short-lived helper thread."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return self._runner().run(coro_fn())
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(anyio.run, coro_fn).result()

    def _runner(self) -> LoopRunner:
        runner = getattr(self._local, "runner", None)
        if runner is None:
            runner = self._local.runner = LoopRunner()
            self._runners.append(runner)
        return runner

    def close(self) -> None:
        for runner in self._runners:
            runner.close()


class SyncASGITransport(httpx.BaseTransport):
    def __init__(self, app: FastAPI):
        self._transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        self._loops = PerThreadLoops()
        weakref.finalize(self, self._loops.close)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        content = request.read()

        async def call() -> tuple[int, list[tuple[bytes, bytes]], bytes]:
            inner = httpx.Request(request.method, request.url, headers=request.headers,
                                  content=content)
            response = await self._transport.handle_async_request(inner)
            body = await response.aread()
            return response.status_code, response.headers.raw, body

        status, headers, body = self._loops.run(call)
        return httpx.Response(status, headers=headers, content=body, request=request)

    def close(self) -> None:
        self._loops.close()


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

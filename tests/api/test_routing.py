"""Route handlers run in a worker thread as under any FastAPI server, and on the calling
thread within `handlers_inline` (scripted calls): the same answers either way."""

from __future__ import annotations

import asyncio
import threading

import httpx
from fastapi import FastAPI

from sim.api.routing import SimRoute, handlers_inline, sim_router


def app_and_threads() -> tuple[FastAPI, list[int]]:
    seen: list[int] = []
    router = sim_router(prefix="/v")

    @router.get("/items/{item_id}")
    def get_item(item_id: int, q: str = "x") -> dict:
        seen.append(threading.get_ident())
        return {"id": item_id, "q": q}

    app = FastAPI()
    app.include_router(router)
    return app, seen


async def ask(app: FastAPI, url: str, inline: bool) -> tuple[int, dict, int]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        if inline:
            with handlers_inline():
                r = await client.get(url)
        else:
            r = await client.get(url)
    return r.status_code, r.json(), threading.get_ident()


def test_a_handler_runs_in_a_worker_thread_unless_inline() -> None:
    app, seen = app_and_threads()
    threaded = asyncio.run(ask(app, "/v/items/3?q=a", inline=False))
    inline = asyncio.run(ask(app, "/v/items/3?q=a", inline=True))
    assert threaded[:2] == inline[:2] == (200, {"id": 3, "q": "a"})
    assert seen[0] != threaded[2]  # a worker thread
    assert seen[1] == inline[2]  # the caller's own
    assert asyncio.run(ask(app, "/v/items/x", inline=True))[0] == 422  # FastAPI's checks


def test_every_route_of_the_api_is_a_sim_route() -> None:
    from sim.api.app import create_app
    from sim.api.server import SimServer

    app = create_app(SimServer())
    paths = app.openapi()["paths"]
    mine = [route for route in _routes(app) if getattr(route, "path", "") in paths]
    assert mine and all(isinstance(route, SimRoute) for route in mine)


def _routes(app: FastAPI) -> list:
    found = []
    for route in app.routes:
        inner = getattr(route, "original_router", None)
        found += list(inner.routes) if inner is not None else [route]
    return found

"""Routes whose handlers run in a worker thread under `sim serve`, and inline for calls
made in process (scenario `actions:`).

The handlers are plain functions: under an HTTP server they run in a worker thread
(the server's lock serialises them), as FastAPI runs any plain function. A scripted
call already runs on the simulation's own thread, at one instant of simulated time,
with nothing else to serve: handing its handler to a worker thread and waiting for
it cost more than the handler itself. `SimRoute` makes each handler awaitable, so
that it runs inline where `handlers_inline()` says so and in a worker thread
everywhere else; parsing, checks, response models and error bodies are FastAPI's
own either way.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from fastapi import APIRouter
from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool
from starlette.routing import Match
from starlette.types import Scope

from sim.api.limits import shadowed_by_literal

_INLINE: ContextVar[bool] = ContextVar("sim_handlers_inline", default=False)


@contextmanager
def handlers_inline() -> Iterator[None]:
    """Within this block (and the tasks it starts), handlers run on the calling thread."""
    token = _INLINE.set(True)
    try:
        yield
    finally:
        _INLINE.reset(token)


def _awaitable(handler: Callable[..., Any]) -> Callable[..., Any]:
    # functools.wraps: FastAPI reads the parameters, and resolves their annotations,
    # from the handler itself (it follows __wrapped__)
    @functools.wraps(handler)
    async def run(*args: Any, **kwargs: Any) -> Any:
        if _INLINE.get():
            return handler(*args, **kwargs)
        return await run_in_threadpool(handler, *args, **kwargs)

    return run


class SimRoute(APIRoute):
    """An API route whose plain-function handler runs as `handlers_inline` says, and
    which leaves to a route with more literal segments the paths both match."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        if not inspect.iscoroutinefunction(endpoint):
            endpoint = _awaitable(endpoint)
        super().__init__(path, endpoint, **kwargs)

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        match, child = super().matches(scope)
        if match is not Match.NONE and shadowed_by_literal(scope, self.path_format):
            return Match.NONE, {}
        return match, child


def sim_router(**kwargs: Any) -> APIRouter:
    """`APIRouter` with `SimRoute` routes."""
    return APIRouter(route_class=SimRoute, **kwargs)


__all__ = ["SimRoute", "handlers_inline", "sim_router"]

"""The one place where a refusal becomes an HTTP response.

Every error leaves as `{"code", "message", "request_id"}` with the design notes'
status codes: an engine ApiError keeps its own; request-validation errors and
malformed JSON are 400 naming the field path (`endpoint.autoscaling_limit_max_cu:
...`); an unknown route is 404; anything unexpected is a 500 with the same
body shape and no traceback (the traceback goes to the server's log, once), and
the connection stays usable: the failure ends here, it does not reach the HTTP
server (which would log it again and drop a kept-alive connection without a word).
Every response carries `x-request-id`; one answered while the server is stopping
carries `connection: close`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sim.api.limits import allowed_methods
from sim.api.schemas import ErrorBody
from sim.rules.errors import SHOWN_CHARS, ApiError, shown

if TYPE_CHECKING:
    from sim.api.server import SimServer

log = logging.getLogger("sim.api")

_CODES = {400: "INVALID_REQUEST", 401: "UNAUTHORIZED", 403: "FORBIDDEN", 404: "NOT_FOUND",
          405: "METHOD_NOT_ALLOWED", 406: "NOT_ACCEPTABLE", 408: "REQUEST_TIMEOUT",
          409: "CONFLICT", 415: "UNSUPPORTED_MEDIA_TYPE",
          422: "UNSUPPORTED_STATE", 423: "LOCKED", 429: "RATE_LIMITED",
          503: "SERVICE_UNAVAILABLE"}
MAX_MESSAGE = 1_000  # characters of an error message, whatever it quotes
_MEANINGS = {
    400: "malformed JSON or an invalid value (the message names the field)",
    401: "missing or invalid API key",
    403: "the key's kind may not do this (a project-scoped key creating a project)",
    404: "unknown resource, or a project outside the key's reach",
    406: "the time range does not fit the granularity (consumption history)",
    409: "conflicts with a rule given the current state (one primary per branch)",
    422: "the resource's state does not allow the action (restart of an idle compute)",
    423: "an operation on the resource has not ended; safe to retry",
    503: "injected outage",
}


def error_docs(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` entries for these error statuses."""
    return {s: {"model": ErrorBody, "description": _MEANINGS[s]} for s in statuses}


#: documented on every route; the state errors only where the engine can raise them
ERRORS = error_docs(400, 401, 404, 503)
STATE_ERRORS = error_docs(409, 422, 423)


class RequestIdMiddleware:
    """Gives every request an id (scope state) and echoes it as `x-request-id`; answers
    what fails unexpectedly with the 500 error body (`internal_error`)."""

    def __init__(self, app: ASGIApp, server: SimServer):
        self.app = app
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = self.server.next_request_id()
        scope.setdefault("state", {})["request_id"] = rid

        started = False

        async def send_with_id(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = [*message.get("headers", []), (b"x-request-id", rid.encode())]
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception as exc:
            if started:  # part of an answer is out: only closing the connection ends it
                raise
            await internal_error(Request(scope), exc)(scope, receive, send_with_id)


def internal_error(request: Request, exc: Exception) -> JSONResponse:
    """The answer to an unexpected failure: its traceback to the log, a 500 to the client."""
    log.error("request %s failed", request_id(request), exc_info=exc)
    return error_response(request, 500, "INTERNAL_ERROR",
                          "internal error; the server log has the details")


def request_id(request: Request) -> str | None:
    return request.scope.get("state", {}).get("request_id")


def error_response(request: Request, status: int, code: str, message: str,
                   headers: dict[str, str] | None = None) -> JSONResponse:
    # a message may quote what the client sent; a lone surrogate in it cannot be UTF-8, and
    # however much was sent, a message quotes a bounded part of it
    message = shown(message.encode("utf-8", "backslashreplace").decode("utf-8"), MAX_MESSAGE)
    body = {"code": code, "message": message, "request_id": request_id(request)}
    return JSONResponse(body, status_code=status, headers=headers)


def _field_path(loc: tuple[Any, ...]) -> str:
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:]
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def validation_message(errors: list[dict[str, Any]]) -> tuple[str, str]:
    """(code, message) for the first problem of a request, naming its field path."""
    first = errors[0]
    if first.get("type") == "json_invalid":
        reason = first.get("ctx", {}).get("error", "JSON decode error")
        return "INVALID_JSON", f"request body is not valid JSON: {reason}"
    path = _field_path(tuple(first.get("loc", ())))
    if not path and isinstance(first.get("input"), bytes | bytearray):
        return "INVALID_REQUEST", ("the request body must be a JSON object, sent with "
                                   "content-type: application/json")
    kind = first.get("type")
    if kind == "documented_field":  # a documented field the model keeps: its own path inside
        inner = first["ctx"]["field"]
        return "INVALID_REQUEST", f"{path + '.' if path else ''}{inner}: {first['ctx']['reason']}"
    if kind == "extra_forbidden":
        reason = "unknown field"
    elif kind == "missing" and not path:
        return "INVALID_REQUEST", "a JSON request body is required"
    else:
        reason = first.get("msg", "invalid value").removeprefix("Value error, ")
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return "INVALID_REQUEST", f"{path or 'body'}: {reason}{more}"


def install(app: FastAPI, server: SimServer) -> None:
    app.add_middleware(RequestIdMiddleware, server=server)

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        headers = {}
        retry_after = getattr(exc, "retry_after", None)
        if retry_after is not None:
            headers["Retry-After"] = f"{max(1, round(retry_after))}"
        if server.stopping.is_set():  # no next request on this connection
            headers["connection"] = "close"
        return error_response(request, exc.status, exc.code, exc.message, headers or None)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        code, message = validation_message(list(exc.errors()))
        return error_response(request, 400, code, message)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        status = exc.status_code
        headers = dict(exc.headers) if exc.headers else None
        path = shown(request.url.path, 2 * SHOWN_CHARS)
        if status == 404:
            message = f"no route {request.method} {path}"
        elif status == 405:
            # the router names the methods of one route; a path may be served by several
            allow = allowed_methods(request.scope)
            headers = {**(headers or {}), "Allow": ", ".join(allow)}
            message = (f"method {request.method} is not allowed on {path} "
                       f"(allowed: {', '.join(allow)})")
        else:
            message = str(exc.detail)
        return error_response(request, status, _CODES.get(status, "ERROR"), message, headers)


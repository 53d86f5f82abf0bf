"""The one exception type every refusal of the control plane raises.

It carries what an HTTP response needs (status, short code, message) and the
field the refusal is about, so the scenario runner, the HTTP layer and the
tests all report the same thing. The helpers below name the statuses of
the design notes' error table once, so a rule never spells a status code itself.
"""

from __future__ import annotations


class ApiError(Exception):
    """A refused request. Raising it must leave every piece of state unchanged."""

    def __init__(self, status: int, code: str, message: str, field: str | None = None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field

    def __repr__(self) -> str:
        return f"ApiError({self.status}, {self.code!r}, {self.message!r})"

    def body(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


def invalid(field: str, reason: str) -> ApiError:
    """400: a value is malformed or out of range."""
    return ApiError(400, "INVALID_REQUEST", f"{field}: {reason}", field)


def unauthorized(reason: str = "missing or invalid API key") -> ApiError:
    return ApiError(401, "UNAUTHORIZED", reason)


def forbidden(reason: str) -> ApiError:
    return ApiError(403, "FORBIDDEN", reason)


#: characters of a client's value a message quotes: a 100 KB id is not echoed back whole
SHOWN_CHARS = 64


def shown(value: str, limit: int = SHOWN_CHARS) -> str:
    """`value` as a message quotes it: cut to `limit` characters, and "…" when cut."""
    return value if len(value) <= limit else value[:limit] + "…"


def not_found(kind: str, ident: str, field: str | None = None) -> ApiError:
    return ApiError(404, "NOT_FOUND", f"{kind} {shown(ident)!r} not found", field)


def conflict(field: str, reason: str) -> ApiError:
    """409: the request contradicts a rule given the current state."""
    return ApiError(409, "CONFLICT", f"{field}: {reason}", field)


def unsupported_state(reason: str, field: str | None = None) -> ApiError:
    """422: the resource is not in a state that allows the action."""
    return ApiError(422, "UNSUPPORTED_STATE", reason, field)


def locked(reason: str) -> ApiError:
    """423: another operation on the resource has not ended; safe to retry."""
    return ApiError(423, "LOCKED", reason)


def rate_limited(retry_after_s: float) -> ApiError:
    err = ApiError(429, "RATE_LIMITED", f"too many requests; retry after {retry_after_s:g} s")
    err.retry_after = retry_after_s  # type: ignore[attr-defined]
    return err


def unavailable(reason: str = "service unavailable (injected outage)") -> ApiError:
    return ApiError(503, "SERVICE_UNAVAILABLE", reason)


#: what a request still waiting when the server is asked to stop hears (with a 503)
STOPPING = ("the server is stopping; the request was not applied (send it again once the "
            "server is back)")

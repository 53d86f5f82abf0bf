"""What every route receives: the server, and the API key of the request (or 401)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel

from sim.api.keys import ApiKey
from sim.api.server import SimServer

_bearer = HTTPBearer(auto_error=False, description="authorization: Bearer <API key>")


async def get_server(request: Request) -> SimServer:
    return request.app.state.server


async def authenticate(
    request: Request,
    server: Annotated[SimServer, Depends(get_server)],
    _credentials: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)] = None,
) -> ApiKey:
    # the raw header, so a malformed one gets a precise 401 message
    return server.authenticate(request.headers.get("authorization"))


Server = Annotated[SimServer, Depends(get_server)]
Key = Annotated[ApiKey, Depends(authenticate)]


def given(model: BaseModel | None, *, include: set[str] | None = None,
          exclude: set[str] | None = None) -> dict[str, Any]:
    """The fields a client sent (null = not sent), as plain JSON values.

    Documented fields kept by a nested model come along inside its value (an
    endpoint's `settings.preload_libraries`); the top model's own are its
    `documented`, for the route to store."""
    if model is None:
        return {}
    sent = model.model_dump(mode="json", exclude_unset=True, exclude_none=True,
                            include=include, exclude=exclude)
    for name, value in sent.items():
        inner = getattr(model, name, None)
        if isinstance(inner, BaseModel) and isinstance(value, dict):
            value.update(getattr(inner, "documented", {}))
    return sent

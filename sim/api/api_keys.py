"""Routes of API keys, shaped as the real API's: list, create, revoke.

    GET    /api/v2/api_keys            the keys accepted now (never their secrets)
    POST   /api/v2/api_keys            {key_name} -> {id, key, name, created_at, created_by}
    DELETE /api/v2/api_keys/{key_id}   revoke -> the key's record with revoked: true

API keys belong to the account: only a personal key manages them (an
organization or project key gets 403). The secret of a new key is in the
answer and nowhere else; the server keeps the SHA-256 of it. With a state
file, a new key and a revocation are committed before the answer: a revoked
key is refused at once, and still after a restart (also when given again with
`--api-key` or by the scenario).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path
from pydantic import BaseModel, Field, StrictStr

from sim.api.deps import Key, Server
from sim.api.errors import ERRORS, error_docs
from sim.api.keys import ApiKey, KeyKind, KeyRecord
from sim.api.routing import sim_router
from sim.api.schemas import Body
from sim.api.start_key import START_KEY_NAME
from sim.rules.errors import forbidden, invalid, not_found

router = sim_router(prefix="/api/v2", tags=["api keys"], responses=ERRORS)
MAX_KEY_NAME = 64  # as the real API


class ApiKeyCreateRequest(Body):
    key_name: Annotated[StrictStr, Field(max_length=MAX_KEY_NAME)]  # "" too, as the document


class ApiKeyCreatorData(BaseModel):
    id: str
    name: str
    image: str


class ApiKeyItem(BaseModel):
    id: int
    name: str
    created_at: str
    created_by: ApiKeyCreatorData
    last_used_at: str | None = None
    last_used_from_addr: str = ""


class ApiKeyCreated(BaseModel):
    id: int
    key: str
    name: str
    created_at: str
    created_by: str


class ApiKeyRevoked(BaseModel):
    id: int
    name: str
    created_at: str
    created_by: str
    last_used_at: str | None = None
    last_used_from_addr: str = ""
    revoked: bool


def _manager(key: ApiKey) -> ApiKey:
    if key.kind is not KeyKind.PERSONAL:
        raise forbidden(f"API keys are managed with a personal API key, not a "
                        f"{key.kind.value} one")
    return key


def _created_at(record: KeyRecord, server: Any) -> str:
    return record.created_at or server.cp.clock.iso(0.0)


@router.get("/api_keys", response_model=list[ApiKeyItem], responses=error_docs(403))
def list_api_keys(server: Server, key: Key):
    """The API keys accepted now; a secret is only ever shown when its key is created."""
    _manager(key)
    return [{"id": r.id, "name": r.name, "created_at": _created_at(r, server),
             "created_by": {"id": r.user_id, "name": r.user_id, "image": ""},
             "last_used_at": server.keys.last_used(r)}
            for r in server.api_key_records() if r.kind is KeyKind.PERSONAL]


@router.post("/api_keys", response_model=ApiKeyCreated, responses=error_docs(403))
def create_api_key(body: ApiKeyCreateRequest, server: Server, key: Key):
    """A new personal API key; `key` is its secret, returned this once."""
    _manager(key)
    if body.key_name == START_KEY_NAME:  # the name marks the key a next start replaces
        raise invalid("key_name", f"{START_KEY_NAME!r} is the name of the key given when "
                                  f"sim serve starts; choose another")
    record, secret = server.create_api_key(body.key_name)
    return {"id": record.id, "key": secret, "name": record.name,
            "created_at": _created_at(record, server), "created_by": record.user_id}


@router.delete("/api_keys/{key_id}", response_model=ApiKeyRevoked, responses=error_docs(403, 404))
def revoke_api_key(key_id: Annotated[int, Path(ge=1, le=2**63 - 1)], server: Server, key: Key):
    """Revoke a key, at once and for good (404: no accepted key has this id)."""
    _manager(key)
    personal = any(r.id == key_id and r.kind is KeyKind.PERSONAL
                   for r in server.api_key_records())
    record = server.revoke_api_key(key_id) if personal else None
    if record is None:
        raise not_found("API key", str(key_id), "key_id")
    return {"id": record.id, "name": record.name, "created_at": _created_at(record, server),
            "created_by": record.user_id, "last_used_at": server.keys.last_used(record),
            "revoked": True}

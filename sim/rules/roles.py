"""Rules of Postgres roles and databases on a branch, and of connection URIs.

A project's default branch starts with one owner role and one database owned
by it; a child branch starts with copies of its parent's. Names are Postgres
identifiers (1 to 63 bytes); names Postgres or the service keeps for
themselves are refused. Passwords are drawn from a seeded stream the caller
passes in: `npg_` and 12 letters or digits.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import numpy as np

from sim.rules.errors import invalid

DEFAULT_ROLE = "neondb_owner"
DEFAULT_DATABASE = "neondb"
NAME_MAX_BYTES = 63  # Postgres truncates identifiers longer than NAMEDATALEN - 1
#: roles the service or Postgres keeps: a client may not create or delete them
RESERVED_ROLES = frozenset({"postgres", "cloud_admin", "neon_superuser", "neon_service",
                            "public", "none", "current_user", "session_user", "current_role"})
RESERVED_ROLE_PREFIXES = ("pg_",)
#: databases Postgres itself uses
RESERVED_DATABASES = frozenset({"postgres", "template0", "template1"})
PASSWORD_PREFIX = "npg_"
PASSWORD_LENGTH = 12
_PASSWORD_ALPHABET = np.frombuffer(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", dtype=np.uint8)
MAX_ANNOTATION_KEYS = 50  # as the real API's annotation value


def check_name(field: str, name: Any) -> str:
    """A Postgres identifier: a string of 1 to 63 bytes, no NUL character."""
    if not isinstance(name, str) or not name:
        raise invalid(field, "must be a non-empty string")
    if len(name.encode("utf-8", "surrogatepass")) > NAME_MAX_BYTES:
        raise invalid(field, f"must be at most {NAME_MAX_BYTES} bytes long")
    if "\x00" in name:
        raise invalid(field, "must not contain a NUL character")
    return name


def check_role_name(field: str, name: Any) -> str:
    check_name(field, name)
    if name.lower() in RESERVED_ROLES or name.lower().startswith(RESERVED_ROLE_PREFIXES):
        raise invalid(field, f"{name!r} is a reserved role name")
    return name


def check_database_name(field: str, name: Any) -> str:
    check_name(field, name)
    if name in RESERVED_DATABASES:
        raise invalid(field, f"{name!r} is a reserved database name")
    return name


def new_password(rng: np.random.Generator) -> str:
    letters = _PASSWORD_ALPHABET[rng.integers(0, len(_PASSWORD_ALPHABET), PASSWORD_LENGTH)]
    return PASSWORD_PREFIX + letters.tobytes().decode()


def pooler_host(host: str, endpoint_id: str) -> str:
    """The pooled host of a compute: its id with `-pooler` appended, the rest unchanged."""
    return host.replace(endpoint_id, f"{endpoint_id}-pooler", 1)


def connection_uri(host: str, role: str, password: str, database: str) -> str:
    """`postgresql://role:password@host/database?sslmode=require`, names percent-encoded."""
    return (f"postgresql://{quote(role, safe='')}:{quote(password, safe='')}@{host}/"
            f"{quote(database, safe='')}?sslmode=require")


def check_annotation(field: str, value: Any) -> dict[str, str]:
    """An annotation value: an object of at most 50 string properties."""
    if not isinstance(value, dict):
        raise invalid(field, "must be an object of strings")
    if len(value) > MAX_ANNOTATION_KEYS:
        raise invalid(field, f"must have at most {MAX_ANNOTATION_KEYS} properties")
    for k, v in value.items():
        if not isinstance(v, str):
            raise invalid(f"{field}.{k}", "must be a string")
    return dict(value)

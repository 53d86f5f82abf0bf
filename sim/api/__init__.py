"""The management API over simulated time: the HTTP face of the control plane.

    from sim.api import SimServer, create_app, in_process_client

Names are imported on first use: `sim serve` does not need the in-process client (httpx),
and starts without it. The dispatcher of scripted calls is `sim.api.dispatch.dispatch`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sim.api.app import create_app
    from sim.api.client import SimClient, in_process_client
    from sim.api.keys import ApiKey, KeyKind, KeyStore
    from sim.api.server import ClockMode, SimServer

#: each name -> the module that defines it
_EXPORTS: dict[str, str] = {
    "ApiKey": "sim.api.keys",
    "ClockMode": "sim.api.server",
    "KeyKind": "sim.api.keys",
    "KeyStore": "sim.api.keys",
    "SimClient": "sim.api.client",
    "SimServer": "sim.api.server",
    "create_app": "sim.api.app",
    "in_process_client": "sim.api.client",
}

__all__ = [  # = sorted(_EXPORTS), spelled out for type checkers
    "ApiKey",
    "ClockMode",
    "KeyKind",
    "KeyStore",
    "SimClient",
    "SimServer",
    "create_app",
    "in_process_client",
]
assert __all__ == sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup is a plain one
    return value

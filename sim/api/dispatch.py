"""Call the management API without HTTP sockets: (method, path, body) -> (status, JSON body).

Scenario `actions:` go through here, so a scripted call meets exactly the
route handlers (parsing, checks, error bodies) of a request to `sim serve`.
The call never moves the clock: it runs at the control plane's current instant,
with an internal key that reaches every project.
"""

from __future__ import annotations

import threading
from typing import Any

from sim.api.client import SimClient
from sim.api.keys import ApiKey, KeyKind, new_secret
from sim.api.server import SimServer
from sim.engine.control_plane import ControlPlane

_lock = threading.Lock()
_client: SimClient | None = None
_idle: ControlPlane | None = None


def _dispatcher() -> SimClient:
    """One manual-clock server; the caller's control plane is swapped in per call."""
    global _client, _idle
    if _client is None:
        server = SimServer()
        _idle = server.cp
        secret = new_secret()
        server.keys.add(ApiKey(secret, KeyKind.INTERNAL))
        _client = SimClient(server, secret)
    return _client


def dispatch(cp: ControlPlane, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """`path` as after the version segment: "/projects/{id}/endpoints/{id}"."""
    with _lock:
        client = _dispatcher()
        client.server.cp = cp
        try:
            kwargs: dict[str, Any] = {} if body is None else {"json": body}
            response = client.request(method.upper(), path.lstrip("/"), **kwargs)
        finally:
            client.server.cp = _idle  # type: ignore[assignment]  # hold no one's fleet
        return response.status_code, response.json() if response.content else None

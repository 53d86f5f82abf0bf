"""Call the management API without HTTP: (method, path, body) -> (status, JSON body).

Scenario `actions:` go through here, so a scripted call meets the same
handlers as a request to `sim serve`. Provisional table of compute routes;
the HTTP layer replaces it with its own route table.
"""

from __future__ import annotations

import re
from typing import Any

from sim.engine.control_plane import ControlPlane
from sim.rules.errors import ApiError, not_found

_ROUTES = [
    ("PATCH", r"/projects/(?P<p>[^/]+)/endpoints/(?P<e>[^/]+)",
     lambda cp, m, body: cp.update_compute(m["p"], m["e"], **(body or {}).get("endpoint", {}))),
    ("DELETE", r"/projects/(?P<p>[^/]+)/endpoints/(?P<e>[^/]+)",
     lambda cp, m, body: cp.delete_compute(m["p"], m["e"])),
    ("POST", r"/projects/(?P<p>[^/]+)/endpoints/(?P<e>[^/]+)/restart",
     lambda cp, m, body: cp.restart_compute(m["p"], m["e"])),
    ("POST", r"/projects/(?P<p>[^/]+)/endpoints/(?P<e>[^/]+)/start",
     lambda cp, m, body: cp.start_compute(m["p"], m["e"])),
    ("POST", r"/projects/(?P<p>[^/]+)/endpoints/(?P<e>[^/]+)/suspend",
     lambda cp, m, body: cp.suspend_compute(m["p"], m["e"])),
]


def dispatch(cp: ControlPlane, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    try:
        for verb, pattern, handler in _ROUTES:
            m = re.fullmatch(pattern, path)
            if verb == method and m:
                handler(cp, m, body)
                return 200, None
        raise not_found("route", f"{method} {path}")
    except ApiError as err:
        return err.status, err.body()

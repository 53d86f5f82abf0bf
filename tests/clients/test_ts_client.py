"""The official TypeScript client: every method whose route `sim serve` serves works.

The methods and their routes are read from the installed client itself, the
served routes from the simulator's OpenAPI document, so a route added to
either side shows up here: a served method the session does not call fails
the test.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

from sim.api import SimServer, create_app
from tests.clients.conftest import KEY, NpmClients, Served

SCRIPT = Path(__file__).parent / "ts_client_session.mjs"
_METHOD = re.compile(r"@request (\w+):(\S+)\s*\n\s*\* @secure\s*\n\s*\*/\s*\n\s*_this\.(\w+) = function")
#: served methods the session leaves out, and why
LEFT_OUT: dict[str, str] = {}


def _shape(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "{}", path)


def client_methods(clients: NpmClients) -> dict[str, tuple[str, str]]:
    """method name -> (HTTP method, path shape) of the installed client."""
    source = (clients.modules / "@neondatabase" / "api-client" / "dist" / "api.gen.js").read_text()
    return {m[3]: (m[1].upper(), _shape(m[2])) for m in _METHOD.finditer(source)}


def served_routes() -> set[tuple[str, str]]:
    doc = create_app(SimServer()).openapi()
    return {(method.upper(), _shape(path.removeprefix("/api/v2")))
            for path, ops in doc["paths"].items() if path.startswith("/api/v2/")
            for method in ops}


def test_every_served_method_of_the_typescript_client(npm_clients: NpmClients,
                                                      serve: Callable[[str], Served]) -> None:
    methods = client_methods(npm_clients)
    assert len(methods) > 100  # the parse found the client's methods
    served = served_routes()
    wanted = {name for name, route in methods.items() if route in served} - set(LEFT_OUT)

    live = serve("manual")
    env = {"SIM_NPM_MODULES": str(npm_clients.modules), "SIM_BASE": f"http://127.0.0.1:{live.port}",
           "SIM_KEY": KEY, "PATH": "/usr/bin:/bin"}
    run = subprocess.run([npm_clients.node, str(SCRIPT)], env=env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    results = json.loads(run.stdout)["results"]
    failed = {name: r["error"] for name, r in results.items() if not r["ok"]}
    assert failed == {}
    assert set(results) == wanted, (sorted(wanted - set(results)), sorted(set(results) - wanted))
    print(f"TypeScript client: {len(results)} of {len(wanted)} served methods pass "
          f"({len(methods)} methods in the client; left out: {sorted(LEFT_OUT)})")

"""The managed-auth state machine over HTTP: `HttpDriver` and `HttpAuthMachine`.

`HttpDriver` has the methods of `sim.testing.auth_machine.EngineDriver` but
makes every call through the API (an in-process client on a manual-clock
`SimServer`), so the machine's model checks the routes, the keys, the JSON
shapes and the error bodies as well as the engine. Each call asserts its exact
success status (201, 200, 204) and the exact keys of its answer; a refusal
must be the one error body `{code, message, request_id}` with the code of its
status, and comes back as the `ApiError` the machine expects, with the field
read from the message (`field: reason`, as 400 and 409 messages begin).

    from sim.testing.auth_http import HttpAuthMachine
    TestAuthOverHttp = HttpAuthMachine.TestCase
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import httpx

from sim.api import SimClient, SimServer, in_process_client
from sim.engine.config import EngineConfig
from sim.rules.errors import ApiError
from sim.testing.auth_machine import SYNC_DELAY_S, USERS_SQL, AuthMachine

INTEGRATION_KEYS = {"auth_provider", "auth_provider_project_id", "pub_client_key",
                    "secret_server_key", "jwks_url", "schema_name", "table_name"}
LIST_ITEM_KEYS = {"auth_provider", "auth_provider_project_id", "branch_id", "db_name",
                  "created_at", "owned_by", "jwks_url"}
ERROR_CODES = {400: "INVALID_REQUEST", 401: "UNAUTHORIZED", 404: "NOT_FOUND", 409: "CONFLICT"}
_NAME = r"[A-Za-z_][A-Za-z0-9_]*(?:\[\d+\])?"
_FIELD = re.compile(rf"({_NAME}(?:\.{_NAME})*): ")


def refusal(response: httpx.Response) -> ApiError:
    """The ApiError an error response stands for, after checking its body."""
    body = response.json()
    status = response.status_code
    assert set(body) == {"code", "message", "request_id"}, body
    assert body["request_id"] == response.headers["x-request-id"], body
    assert body["code"] == ERROR_CODES.get(status, body["code"]), (status, body)
    field = None
    if status in (400, 409):
        match = _FIELD.match(body["message"])
        field = match[1] if match else None
    return ApiError(status, body["code"], body["message"], field)


def new_client(seed: int = 0) -> SimClient:
    """A client on a fresh manual-clock server with the machine's sync delay."""
    server = SimServer(seed=seed, config=EngineConfig(user_sync_delay_s=SYNC_DELAY_S))
    return in_process_client(server)


class HttpDriver:
    """The engine driver's methods, each one HTTP call (see the module docstring).

    It starts with `POST /_sim/reset`, so a client can be reused: FastAPI
    prepares each route of an app on its first request, which costs more than
    the rest of a short example.
    """

    def __init__(self, client: SimClient | None = None):
        self.api = client if client is not None else new_client()
        self.server = self.api.server
        self._call("POST", "reset", 200, sim=True)

    def _call(self, method: str, path: str, status: int, *, sim: bool = False,
              **kwargs: Any) -> Any:
        url = self.api.base_url.join(f"/_sim/{path}") if sim else path
        response = self.api.request(method, url, **kwargs)
        if response.status_code >= 400:
            raise refusal(response)
        assert response.status_code == status, (method, path, response.status_code,
                                                 response.text)
        if status == 204 or (method == "POST" and path.endswith("/auth/domains")):
            assert response.content == b"", response.content
            return None
        return response.json()

    # -- the world ------------------------------------------------------------------------
    def create_project(self) -> tuple[str, str]:
        made = self._call("POST", "projects", 201, json={"project": {}})
        return made["project"]["id"], made["branch"]["id"]

    def advance(self, seconds: float) -> None:
        self._call("POST", "advance", 200, sim=True, json={"seconds": seconds})

    def snapshot(self) -> Any:
        with self.server.lock:
            return self.server.cp.auth.state()

    # -- integrations ---------------------------------------------------------------------
    def create_integration(self, project_id: str, branch_id: str, auth_provider: str) -> dict:
        got = self._call("POST", "projects/auth/create", 201, json={
            "auth_provider": auth_provider, "project_id": project_id, "branch_id": branch_id})
        assert set(got) == INTEGRATION_KEYS, got
        return got

    def list_integrations(self, project_id: str) -> list[dict]:
        got = self._call("GET", f"projects/{project_id}/auth/integrations", 200)
        assert set(got) == {"data"} and all(set(i) == LIST_ITEM_KEYS for i in got["data"]), got
        return got["data"]

    def generate_sdk_keys(self, project_id: str, auth_provider: str) -> dict:
        got = self._call("POST", "projects/auth/keys", 201, json={
            "project_id": project_id, "auth_provider": auth_provider})
        assert set(got) == INTEGRATION_KEYS, got
        return got

    def transfer_ownership(self, project_id: str, auth_provider: str) -> str:
        got = self._call("POST", "projects/auth/transfer_ownership", 200, json={
            "project_id": project_id, "auth_provider": auth_provider})
        assert set(got) == {"url"}, got
        return got["url"]

    def confirm_transfer(self, project_id: str, token: str) -> None:
        got = self._call("POST", "auth/confirm_transfer", 200, sim=True,
                         json={"project_id": project_id, "token": token})
        assert set(got) == LIST_ITEM_KEYS and got["owned_by"] == "user", got

    def delete_integration(self, project_id: str, auth_provider: str, delete_data: bool):
        got = self._call("DELETE", f"projects/{project_id}/auth/integration/{auth_provider}",
                         200, params={"delete_data": "true" if delete_data else "false"})
        assert got == {}, got

    # -- users ----------------------------------------------------------------------------
    def create_user(self, project_id: str, auth_provider: str, email: str, name: str | None):
        body = {"project_id": project_id, "auth_provider": auth_provider, "email": email}
        if name is not None:
            body["name"] = name
        got = self._call("POST", "projects/auth/user", 201, json=body)
        assert set(got) == {"id"}, got
        return got["id"]

    def delete_user(self, project_id: str, auth_user_id: str) -> None:
        self._call("DELETE", f"projects/{project_id}/auth/users/{auth_user_id}", 204)

    # -- OAuth providers ------------------------------------------------------------------
    def list_oauth_providers(self, project_id: str) -> list[dict]:
        got = self._call("GET", f"projects/{project_id}/auth/oauth_providers", 200)
        assert set(got) == {"providers"}, got
        assert all(set(p) == {"id", "type"} for p in got["providers"]), got
        return got["providers"]

    @staticmethod
    def _provider(got: dict) -> dict:
        """Absent credentials (shared keys) as None, the engine driver's shape."""
        own = {"client_id", "client_secret"}
        assert set(got) == {"id", "type"} | (own if got.get("type") == "standard" else set()), got
        return {"client_id": None, "client_secret": None, **got}

    def add_oauth_provider(self, project_id: str, body: dict) -> dict:
        return self._provider(self._call("POST", f"projects/{project_id}/auth/oauth_providers",
                                         200, json=body))

    def update_oauth_provider(self, project_id: str, oauth_provider_id: str, body: dict) -> dict:
        path = f"projects/{project_id}/auth/oauth_providers/{oauth_provider_id}"
        return self._provider(self._call("PATCH", path, 200, json=body))

    def delete_oauth_provider(self, project_id: str, oauth_provider_id: str) -> None:
        self._call("DELETE", f"projects/{project_id}/auth/oauth_providers/{oauth_provider_id}",
                   200)

    # -- redirect whitelist ---------------------------------------------------------------
    def list_redirect_domains(self, project_id: str) -> list[dict]:
        got = self._call("GET", f"projects/{project_id}/auth/domains", 200)
        assert set(got) == {"domains"}, got
        return got["domains"]

    def add_redirect_domain(self, project_id: str, domain: str, auth_provider: str) -> None:
        self._call("POST", f"projects/{project_id}/auth/domains", 201,
                   json={"domain": domain, "auth_provider": auth_provider})

    def delete_redirect_domains(self, project_id: str, auth_provider: str, domains: list):
        got = self._call("DELETE", f"projects/{project_id}/auth/domains", 200,
                         json={"auth_provider": auth_provider, "domains": domains})
        assert got == {}, got

    # -- email server ---------------------------------------------------------------------
    def get_email_server(self, project_id: str) -> dict:
        got = self._call("GET", f"projects/{project_id}/auth/email_server", 200)
        assert "password" not in got, "GET shows the SMTP password"
        return got

    def update_email_server(self, project_id: str, body: dict) -> dict:
        return self._call("PATCH", f"projects/{project_id}/auth/email_server", 200, json=body)

    # -- the synced table -----------------------------------------------------------------
    def synced_users(self, project_id: str) -> list[dict]:
        got = self._call("POST", "auth/query", 200, sim=True,
                         json={"project_id": project_id, "sql": USERS_SQL})
        assert set(got) == {"rows"}, got
        return got["rows"]


class HttpAuthMachine(AuthMachine):
    """The auth machine with every step made over HTTP (one client, reset per example)."""

    client: ClassVar[SimClient | None] = None

    def make_driver(self) -> HttpDriver:
        cls = type(self)
        if cls.client is None:
            cls.client = new_client()
        return HttpDriver(cls.client)

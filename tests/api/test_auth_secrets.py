"""Secrets of managed auth leave only in the answers the specification shows them in (#1, #3, #9, #10, #16).

Never in a listing, a refusal, a log line (captured at DEBUG), the console
page or its data, a /_sim answer, a repr, or the files of a scenario run
(Parquet tables, summary.json, run.json).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from sim.api import SimClient
from sim.engine.auth import ManagedAuth
from sim.metrics.io import write_results
from sim.scenario.loader import parse_scenario
from sim.scenario.runner import run_scenario
from tests.api.conftest import make_project
from tests.api.test_auth import SMTP, integrate

OAUTH_SECRET = "oauth-secret-5b0c1f"
OAUTH_SECRET_2 = "oauth-secret-77e2aa"
SMTP_PASSWORD = "smtp-password-9d41"


def leaks(text: str, secrets: set[str]) -> set[str]:
    return {s for s in secrets if s in text}


def test_secrets_stay_out_of_every_other_channel(api: SimClient, caplog: pytest.LogCaptureFixture
                                                 ) -> None:
    caplog.set_level(logging.DEBUG)
    made = make_project(api, "secrets")
    pid, bid = made["project"]["id"], made["branch"]["id"]
    shown: list[str] = []  # answers that may carry secrets (the specification shows them there)
    secrets: set[str] = {OAUTH_SECRET, OAUTH_SECRET_2, SMTP_PASSWORD}

    first = integrate(api, {"project_id": pid, "branch_id": bid})
    r = api.post("projects/auth/keys", json={"project_id": pid, "auth_provider": "stack"})
    secrets |= {first["secret_server_key"], r.json()["secret_server_key"]}
    shown += [json.dumps(first), r.text]
    base = f"projects/{pid}/auth"
    r = api.post(f"{base}/oauth_providers",
                 json={"id": "google", "client_id": "cid", "client_secret": OAUTH_SECRET})
    shown.append(r.text)
    r = api.patch(f"{base}/oauth_providers/google", json={"client_secret": OAUTH_SECRET_2})
    shown.append(r.text)
    r = api.patch(f"{base}/email_server", json={**SMTP, "password": SMTP_PASSWORD})
    shown.append(r.text)
    assert all(leaks(text, secrets) for text in shown)  # they are there, where the specification says

    seen: list[str] = []  # everything else a client, a log or a file can see
    refused = [  # refusals that carry a secret in the request
        ("PATCH", f"{base}/email_server", {"type": "shared", "password": SMTP_PASSWORD}),
        ("PATCH", f"{base}/email_server", {**SMTP, "password": SMTP_PASSWORD, "pasword": 1}),
        ("PATCH", f"{base}/email_server", {**SMTP, "password": SMTP_PASSWORD, "port": "x"}),
        ("POST", f"{base}/oauth_providers", {"id": "github", "client_secret": OAUTH_SECRET}),
        ("POST", f"{base}/oauth_providers",
         {"id": "facebook", "client_id": "c", "client_secret": OAUTH_SECRET}),
        ("PATCH", f"{base}/oauth_providers/google", {"client_secret": OAUTH_SECRET * 20}),
        ("PATCH", f"{base}/oauth_providers/github", {"client_secret": OAUTH_SECRET}),
    ]
    for method, path, body in refused:
        r = api.request(method, path, json=body)
        assert r.status_code in (400, 404), r.text
        seen.append(r.text)
    for what in ("integrations", "oauth_providers", "domains", "email_server"):
        r = api.get(f"{base}/{what}")
        assert r.status_code == 200
        seen.append(r.text)
    api.advance(10)
    seen.append(api.sim("GET", "console").text)
    seen.append(api.get(api.base_url.join("/")).text)
    for sql in ("SELECT * FROM svc_auth.users_sync", "SELECT * FROM sqlite_master"):
        r = api.sim("POST", "auth/query", json={"project_id": pid, "sql": sql})
        seen.append(r.text)
    url = api.post("projects/auth/transfer_ownership",
                   json={"project_id": pid, "auth_provider": "stack"}).json()["url"]
    seen.append(api.sim("POST", "auth/confirm_transfer",
                        json={"project_id": pid, "url": url}).text)
    seen.append(api.get(f"{base}/integrations").text)
    seen.append(api.get(api.base_url.join("/openapi.json")).text)
    with api.server.lock:
        integ = api.server.cp.auth.integration(pid, "stack")
        seen += [repr(integ), repr(integ.oauth_providers), repr(integ.email_server),
                 repr(api.server.cp.auth.state())]
    seen += [record.getMessage() for record in caplog.records] + [caplog.text]
    assert len(caplog.records) > 10  # the log was captured (httpx logs every request)

    for text in seen:
        assert not leaks(text, secrets), (leaks(text, secrets), text[:300])


SCENARIO: dict[str, Any] = {
    "name": "auth-secrets",
    "seed": 11,
    "duration": "2h",
    "projects": [{
        "name": "shop", "count": 2,
        "branches": [{"name": "main", "computes": [{"type": "read_write"}]}],
        "auth": {"signups": {"per_hour": 30}},
    }],
    "actions": [
        {"at": "10m", "call": "POST /projects/auth/keys",
         "body": {"project_id": "{shop[0]}", "auth_provider": "stack"}},
        {"at": "20m", "call": "POST /projects/{shop[0]}/auth/oauth_providers",
         "body": {"id": "google", "client_id": "cid", "client_secret": OAUTH_SECRET}},
        {"at": "30m", "call": "PATCH /projects/{shop[1]}/auth/email_server",
         "body": {**SMTP, "password": SMTP_PASSWORD}},
        {"at": "40m", "call": "PATCH /projects/{shop[1]}/auth/email_server",
         "body": {"type": "shared", "password": SMTP_PASSWORD}},  # refused: 400
    ],
}


def test_no_secret_in_the_files_of_a_scenario_run(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    drawn: list[str] = []  # every SDK key the run made, secret ones included
    draw = ManagedAuth._draw_keys

    def spy(self: ManagedAuth, rng: Any) -> tuple[str, str]:
        keys = draw(self, rng)
        drawn.extend(keys)
        return keys

    monkeypatch.setattr(ManagedAuth, "_draw_keys", spy)
    result = run_scenario(parse_scenario(SCENARIO))
    assert [(a.call.split()[0], a.status) for a in result.actions] == [
        ("POST", 201), ("POST", 200), ("PATCH", 200), ("PATCH", 400)]
    assert len(drawn) == 6  # two integrations and one rotation, two keys each
    secrets = set(drawn[1::2]) | {OAUTH_SECRET, SMTP_PASSWORD}

    paths = write_results(result, tmp_path / "out")
    texts = [caplog.text, repr(result.actions), json.dumps(result.assumptions)]
    assert any(p.suffix == ".parquet" for p in paths.values())
    for path in paths.values():
        texts.append(path.read_bytes().decode("latin-1"))
        if path.suffix == ".parquet":  # compressed on disk: read the values too
            texts.append(json.dumps(pq.read_table(path).to_pylist(), default=str))
    assert any("/auth/oauth_providers" in t for t in texts)  # the actions are in the files
    for text in texts:
        assert not leaks(text, secrets), leaks(text, secrets)

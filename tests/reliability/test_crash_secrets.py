"""20 SIGKILLs and 5 SIGTERMs during a 16-thread write load with secrets and key revocations.

One state file, 25 lives of `sim serve --state` (in a seeded order of kills and
terms). In each, 16 threads write: projects, OAuth client secrets, SMTP
passwords, SDK keys, API keys created and revoked. Once the cycle's count of
acknowledged writes is reached the server gets its signal while the threads
go on. After each restart:

- lost (goal 0): an acknowledged project missing, an acknowledged API key
  refused, an acknowledged revocation undone, an email server older than the
  last acknowledged change;
- half-applied (goal 0): a project without its branch or compute, an email
  server whose fields are of no write that was sent;
- a SIGTERM exits 0 and leaves no `-wal` behind;
- secrets found (goal 0): every secret written or handed out, searched for in
  the state file, its `-wal` and `.seq`, and the server's DEBUG log, after
  every life.

Bounded by counts: 25 lives, 32 acknowledged writes each before the signal.
"""

from __future__ import annotations

import random
import signal
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.reliability.test_persistence_support import KEY, Serve

SEED = 2026
THREADS = 16
KILLS, TERMS = 20, 5
ACKED_PER_LIFE = 32  # acknowledged writes before the signal is sent
pytestmark = pytest.mark.slow


@dataclass
class Home:
    """A thread's own project, with managed auth: where its secrets are written."""

    project_id: str
    usernames_sent: set[str] = field(default_factory=set)
    acked_username: str | None = None
    in_flight_username: str | None = None


@dataclass
class Ledger:
    """What was acknowledged, what was in flight, and every secret seen."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    acked: int = 0
    projects: dict[str, str] = field(default_factory=dict)  # name -> id, acknowledged
    in_flight_projects: set[str] = field(default_factory=set)  # names
    keys: dict[int, str] = field(default_factory=dict)  # id -> secret, acknowledged, live
    revoked: dict[int, str] = field(default_factory=dict)  # acknowledged revocations
    in_flight_revokes: set[int] = field(default_factory=set)
    revoked_now: set[int] = field(default_factory=set)  # acknowledged in this life
    first_key_id: int = 0  # keys above it were made in this life
    secrets: set[str] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)  # unexpected answers
    homes: dict[int, Home] = field(default_factory=dict)
    enough: threading.Event = field(default_factory=threading.Event)
    target: int = 0

    def ack(self) -> None:
        with self.lock:
            self.acked += 1
            if self.acked >= self.target:
                self.enough.set()


def _secret(rng: random.Random, kind: str) -> str:
    return f"{kind}-{rng.getrandbits(96):024x}"


class Writer(threading.Thread):
    def __init__(self, n: int, life: int, serve: Serve, ledger: Ledger):
        super().__init__(name=f"writer-{n}", daemon=True)
        self.n, self.life, self.serve, self.ledger = n, life, serve, ledger
        self.rng = random.Random(SEED * 1000 + life * 100 + n)
        self.writes = 0

    def run(self) -> None:
        with self.serve.client(timeout=30) as client:
            try:
                while self.writes < 200:  # bounded: the signal comes long before
                    self.write(client)
                    self.writes += 1
            except httpx.TransportError:
                return  # the server died or stopped: this thread's life is over
            except AssertionError as err:  # an answer no write should get
                self.ledger.errors.append(str(err)[:300])

    def write(self, client: httpx.Client) -> None:
        ledger, rng, home = self.ledger, self.rng, self.ledger.homes[self.n]
        pid = home.project_id
        op = rng.choices(["project", "oauth", "email", "key", "revoke", "sdk"],
                         [25, 20, 20, 16, 9, 5])[0]
        if op == "project":
            name = f"l{self.life}-t{self.n}-{self.writes}"
            ledger.in_flight_projects.add(name)
            r = client.post("projects", json={"project": {"name": name}})
            assert r.status_code == 201, r.text
            with ledger.lock:
                ledger.projects[name] = r.json()["project"]["id"]
        elif op == "oauth":
            secret = _secret(rng, "oauth")
            ledger.secrets.add(secret)
            r = client.patch(f"projects/{pid}/auth/oauth_providers/github",
                             json={"client_id": f"id-{self.n}", "client_secret": secret})
            assert r.status_code == 200, r.text
        elif op == "email":
            password, user = _secret(rng, "smtp"), f"u-{self.life}-{self.n}-{self.writes}"
            ledger.secrets.add(password)
            home.usernames_sent.add(user)
            home.in_flight_username = user
            r = client.patch(f"projects/{pid}/auth/email_server", json={
                "type": "standard", "host": "smtp.example.com", "port": 587, "username": user,
                "password": password, "sender_email": "a@example.com", "sender_name": "A"})
            assert r.status_code == 200, r.text
            home.acked_username, home.in_flight_username = user, None
        elif op == "key":
            r = client.post("api_keys", json={"key_name": f"k-{self.n}-{self.writes}"})
            assert r.status_code == 200, r.text
            body = r.json()
            ledger.secrets.add(body["key"])
            with ledger.lock:
                ledger.keys[body["id"]] = body["key"]
        elif op == "revoke":
            with ledger.lock:
                mine = sorted(ledger.keys)
                key_id = mine[rng.randrange(len(mine))] if mine else None
                if key_id is not None:
                    secret = ledger.keys.pop(key_id)
                    ledger.in_flight_revokes.add(key_id)
            if key_id is None:
                return
            r = client.delete(f"api_keys/{key_id}")
            assert r.status_code == 200, r.text
            with ledger.lock:
                ledger.revoked[key_id] = secret
                ledger.revoked_now.add(key_id)
                ledger.in_flight_revokes.discard(key_id)
        else:
            r = client.post("projects/auth/keys", json={"project_id": pid,
                                                        "auth_provider": "stack"})
            assert r.status_code == 201, r.text
            ledger.secrets.add(r.json()["secret_server_key"])
        ledger.ack()


def setup_homes(serve: Serve, ledger: Ledger) -> None:
    with serve.client() as client:
        for n in range(THREADS):
            made = client.post("projects", json={"project": {"name": f"home-{n}"}}).json()
            pid = made["project"]["id"]
            integ = client.post("projects/auth/create", json={
                "auth_provider": "stack", "project_id": pid, "branch_id": made["branch"]["id"]})
            assert integ.status_code == 201, integ.text
            ledger.secrets.add(integ.json()["secret_server_key"])
            assert client.post(f"projects/{pid}/auth/oauth_providers",
                               json={"id": "github"}).status_code == 200
            ledger.homes[n] = Home(pid)


@dataclass
class Tally:
    lost: list[str] = field(default_factory=list)
    half: list[str] = field(default_factory=list)


def check(serve: Serve, ledger: Ledger, tally: Tally, life: int, *, every_key: bool) -> None:
    """After a restart: nothing acknowledged lost, nothing half-applied. Keys: those of
    this life (`every_key`: all of them; each is one request)."""
    with serve.client() as client:
        listed = {p["name"]: p["id"] for p in _all_projects(client)}
        for name, pid in ledger.projects.items():
            if listed.get(name) != pid:
                tally.lost.append(f"project {name}")
        for name in ledger.in_flight_projects - set(ledger.projects):
            if name in listed:  # committed in flight: adopt it, it must be whole
                ledger.projects[name] = listed[name]
        ledger.in_flight_projects.clear()
        for name, pid in listed.items():
            if name.startswith(f"l{life}-"):
                branches = client.get(f"projects/{pid}/branches").json()["branches"]
                endpoints = client.get(f"projects/{pid}/endpoints").json()["endpoints"]
                if len(branches) != 1 or len(endpoints) != 1:
                    tally.half.append(f"project {name}: {len(branches)} branches, "
                                      f"{len(endpoints)} computes")
        for key_id, secret in list(ledger.keys.items()):
            if (every_key or key_id > ledger.first_key_id) and client.get(
                    "projects", params={"limit": 1}, headers=_bearer(secret)).status_code != 200:
                tally.lost.append(f"key {key_id}")
        for key_id, secret in ledger.revoked.items():
            if (every_key or key_id in ledger.revoked_now) and client.get(
                    "projects", params={"limit": 1}, headers=_bearer(secret)).status_code != 401:
                tally.lost.append(f"revocation of key {key_id}")
        ledger.revoked_now.clear()
        ledger.first_key_id = max([*ledger.keys, *ledger.revoked, 0])
        ledger.in_flight_revokes.clear()  # in flight: revoked or not, either is whole
        for n, home in ledger.homes.items():
            server = client.get(f"projects/{home.project_id}/auth/email_server").json()
            user = server.get("username")
            allowed = {home.acked_username, home.in_flight_username}
            if home.acked_username is not None and user not in allowed:
                (tally.half if user not in home.usernames_sent else tally.lost).append(
                    f"email server of thread {n}: {user}")
            if user is not None and user == home.in_flight_username:
                home.acked_username = user  # committed in flight
            home.in_flight_username = None


def _all_projects(client: httpx.Client) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 400, **({"cursor": cursor} if cursor else {})}
        page = client.get("projects", params=params).json()
        out += page["projects"]
        if len(page["projects"]) < 400:
            return out
        cursor = page["pagination"]["cursor"]


def _bearer(secret: str) -> dict[str, str]:
    return {"authorization": f"Bearer {secret}"}


def scan(paths: list[Path], secrets: set[str]) -> list[str]:
    """Every secret found in any of the files, with where."""
    found = []
    for path in paths:
        if not path.exists():
            continue
        data = path.read_bytes()
        found += [f"{path.name}: {s}" for s in secrets if s.encode() in data]
    return found


def test_kills_and_terms_lose_nothing_and_leave_no_secret(tmp_path: Path, figures) -> None:  # noqa: ANN001
    state = tmp_path / "world.db"
    log = tmp_path / "serve.log"
    options = ("--state", str(state), "--rate-limit", "off", "--log-level", "debug")
    signals = [signal.SIGKILL] * KILLS + [signal.SIGTERM] * TERMS
    random.Random(SEED).shuffle(signals)
    ledger, tally = Ledger(), Tally()
    ledger.secrets.add(KEY)
    terms_clean = 0
    serve = Serve(*options, log=log)
    setup_homes(serve, ledger)
    for life, sig in enumerate(signals):
        ledger.enough.clear()
        ledger.target = ledger.acked + ACKED_PER_LIFE
        writers = [Writer(n, life, serve, ledger) for n in range(THREADS)]
        for w in writers:
            w.start()
        assert ledger.enough.wait(120), "the writers stalled"
        serve.proc.send_signal(sig)
        code = serve.proc.wait(60)
        serve.log.close()
        for w in writers:
            w.join(60)
        wal = state.with_name(state.name + "-wal")
        if sig == signal.SIGTERM:
            assert code == 0, log.read_text()[-2000:]
            terms_clean += not wal.exists() or wal.stat().st_size == 0
        companions = [state, wal, state.with_name(state.name + ".seq"), log]
        assert scan(companions, ledger.secrets) == []
        serve = Serve(*options, log=log)
        check(serve, ledger, tally, life, every_key=life % 8 == 7)
    check(serve, ledger, tally, len(signals), every_key=True)
    serve.stop()
    found = scan([state, state.with_name(state.name + "-wal"), log], ledger.secrets)
    assert "DEBUG" in log.read_text()  # the log did run at DEBUG
    figures.notes.append(
        f"crash: {KILLS} SIGKILLs + {TERMS} SIGTERMs, {THREADS} writers: {ledger.acked} "
        f"acknowledged writes, {len(tally.lost)} lost, {len(tally.half)} half-applied, "
        f"{len(ledger.projects)} projects, {len(ledger.keys)} live and {len(ledger.revoked)} "
        f"revoked API keys checked; {terms_clean}/{TERMS} SIGTERMs exit 0 with no -wal left; "
        f"{len(ledger.secrets)} secrets searched in file, -wal, .seq and DEBUG log after each "
        f"life: {len(found)} found")
    print(figures.notes[-1])
    assert tally.lost == [] and tally.half == [] and ledger.errors == []
    assert terms_clean == TERMS and found == []

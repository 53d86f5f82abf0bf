"""Load: 32 concurrent clients x 500 requests on 127.0.0.1 against `sim serve --state FILE`.

Each client owns one compute on one of four shared projects and mixes reads
with writes: renames of its compute, branches of its own name on any shared
project, suspend/start of its compute, clock advances. Checked: no 5xx and no
broken connection; no lost update (each compute carries the name of its
client's last acknowledged rename, each project exactly the branches the
clients were told they created, every acknowledged operation is listed); and
the state file, replayed after a stop, gives the very same listing. p50/p99
latencies are printed (-s), added to the reliability figures and kept in
pytest's cache under reliability/load.

The work is bounded by counts (clients x requests), never by a wall-clock
budget: a busy machine makes the test slower, not failed. Each request has a
generous timeout only so that a server that stopped answering ends the test.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.reliability.test_persistence_support import Serve, dump, percentile

CLIENTS = 32
REQUESTS = 500  # per client, its compute's creation included
PROJECTS = 4
REQUEST_TIMEOUT_S = 120.0  # a server that stopped answering, not a slow one
STARTUP_WAIT_S = 600.0  # a restart replays the whole journal before it listens


@dataclass
class Client:
    index: int
    project_id: str
    branch_id: str
    compute_id: str | None = None
    name: str | None = None  # of the last acknowledged rename
    branches: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    operations: set[str] = field(default_factory=set)
    latencies: list[tuple[str, float]] = field(default_factory=list)  # (read|write, seconds)
    statuses: Counter[int] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    done: int = 0


def run_client(c: Client, base: Any, projects: list[str]) -> None:
    rng = random.Random(1000 + c.index)
    with base() as http:

        def call(kind: str, method: str, url: Any, body: Any = None) -> httpx.Response | None:
            started = time.perf_counter()
            try:
                r = http.request(method, url, **({} if body is None else {"json": body}))
            except httpx.TransportError as err:
                c.errors.append(f"{method} {url}: {err!r}")
                return None
            c.latencies.append((kind, time.perf_counter() - started))
            c.statuses[r.status_code] += 1
            c.done += 1
            if r.status_code >= 500:
                c.errors.append(f"{method} {url}: {r.status_code} {r.text[:200]}")
            if r.status_code < 300 and r.content:
                for op in r.json().get("operations", ()):
                    c.operations.add(op["id"])
            return r

        r = call("write", "POST", f"projects/{c.project_id}/endpoints",
                 {"endpoint": {"branch_id": c.branch_id, "type": "read_only"}})
        if r is None or r.status_code != 201:
            c.errors.append(f"could not create the compute: {r and r.text}")
            return
        c.compute_id = r.json()["endpoint"]["id"]
        own = f"projects/{c.project_id}/endpoints/{c.compute_id}"
        renames = made = 0
        suspend = True
        for _ in range(REQUESTS - 1):
            roll = rng.random()
            shared = rng.choice(projects)
            if roll < 0.45:
                path = rng.choice([f"projects/{shared}/endpoints", own,
                                   f"projects/{shared}/operations?limit=20",
                                   f"projects/{shared}/branches", f"projects/{shared}"])
                call("read", "GET", path)
            elif roll < 0.65:
                renames += 1
                name = f"c{c.index}-{renames}"
                r = call("write", "PATCH", own, {"endpoint": {"name": name}})
                if r is not None and r.status_code == 200:
                    c.name = name
            elif roll < 0.77:
                made += 1
                name = f"c{c.index}-b{made}"
                r = call("write", "POST", f"projects/{shared}/branches", {"branch": {"name": name}})
                if r is not None and r.status_code == 201:
                    c.branches[shared].add(name)
            elif roll < 0.90:
                r = call("write", "POST", f"{own}/{'suspend' if suspend else 'start'}")
                if r is not None and r.status_code == 200:
                    suspend = not suspend
            else:
                call("write", "POST", http.base_url.join("/_sim/advance"), {"seconds": 1})


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["journaled", "in-memory"])
def test_32_clients_500_requests_each(mode: str, tmp_path: Path, figures,  # noqa: ANN001
                                      request) -> None:  # noqa: ANN001
    started = time.monotonic()
    state = tmp_path / "load.db"
    options = ["--state", str(state)] if mode == "journaled" else []
    serve = Serve(*options, "--rate-limit", "off", "--seed", "5", log=tmp_path / "serve.log")
    try:
        with serve.client() as http:
            shared = []
            for i in range(PROJECTS):
                r = http.post("projects", json={"project": {"name": f"shared-{i}"}})
                assert r.status_code == 201, r.text
                shared.append(r.json())
        project_ids = [p["project"]["id"] for p in shared]
        clients = [Client(i, project_ids[i % PROJECTS], shared[i % PROJECTS]["branch"]["id"])
                   for i in range(CLIENTS)]

        def base() -> httpx.Client:
            return serve.client(timeout=REQUEST_TIMEOUT_S)

        threads = [threading.Thread(target=run_client, args=(c, base, project_ids))
                   for c in clients]
        load_started = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()  # each client ends after REQUESTS answers (or a transport error)
        load_s = time.perf_counter() - load_started
        errors = [e for c in clients for e in c.errors]
        assert not errors, errors[:5]
        statuses = sum((c.statuses for c in clients), Counter())
        assert all(s < 500 for s in statuses), statuses
        assert set(statuses) <= {200, 201, 423}, statuses  # 423: the compute was still busy
        assert sum(c.done for c in clients) == CLIENTS * REQUESTS

        with serve.client() as http:
            listing = dump(http)
            check_no_lost_update(listing, clients, shared)
        figures_line = report(clients, statuses, load_s)
        serve.stop()
        replayed = "no state file"
        if mode == "journaled":
            restarted = Serve("--state", str(state), "--rate-limit", "off",
                              log=tmp_path / "serve.log", timeout=STARTUP_WAIT_S)
            try:
                with restarted.client() as http:
                    assert dump(http) == listing  # the concurrent run's journal replays exactly
            finally:
                restarted.stop()
            log = (tmp_path / "serve.log").read_text()
            replayed = [line for line in log.splitlines() if line.startswith("state:")][-1]
            replayed = replayed.replace(str(state), "FILE")
        figures_line["replay"] = replayed
        total = time.monotonic() - started
        figures_line["total_s"] = round(total, 1)
        line = (f"load ({mode}): {figures_line['requests']} requests, {CLIENTS} clients, "
                f"{figures_line['rps']:.0f}/s; latency p50 {figures_line['p50_ms']:.1f} ms, "
                f"p99 {figures_line['p99_ms']:.1f} ms (reads {figures_line['read_p50_ms']:.1f}/"
                f"{figures_line['read_p99_ms']:.1f}, writes {figures_line['write_p50_ms']:.1f}/"
                f"{figures_line['write_p99_ms']:.1f}); statuses {dict(statuses)}; {replayed}; "
                f"whole test {total:.0f} s")
        print("\n" + line)
        figures.notes.append(line)
        cache = getattr(request.config, "cache", None)
        if cache is not None:
            cache.set(f"reliability/load/{mode}", figures_line)
    finally:
        serve.stop()


def check_no_lost_update(listing: dict[str, Any], clients: list[Client],
                         shared: list[dict[str, Any]]) -> None:
    projects = listing["projects"]
    assert set(projects) == {p["project"]["id"] for p in shared}
    for made in shared:
        pid = made["project"]["id"]
        listed = projects[pid]
        # computes: the project's primary and exactly the computes its clients made
        expected = {made["endpoints"][0]["id"]} | {c.compute_id for c in clients
                                                   if c.project_id == pid}
        endpoints = {e["id"]: e for e in listed["endpoints"]}
        assert set(endpoints) == expected
        for c in clients:
            if c.project_id == pid:
                assert endpoints[c.compute_id].get("name") == c.name, c.index
        # branches: main and every branch a client was told it created, nothing more
        names = {b["name"] for b in listed["branches"]}
        told = set().union(*(c.branches[pid] for c in clients))
        assert names == {"main"} | told
    # operations: every one an acknowledged answer listed is there
    all_ops = {op["id"] for p in projects.values() for op in p["operations"]}
    missing = {op for c in clients for op in c.operations} - all_ops
    assert not missing


def report(clients: list[Client], statuses: Counter[int], load_s: float) -> dict[str, Any]:
    every = [s for c in clients for _, s in c.latencies]
    reads = [s for c in clients for k, s in c.latencies if k == "read"]
    writes = [s for c in clients for k, s in c.latencies if k == "write"]
    ms = 1000.0
    return {
        "requests": len(every), "clients": CLIENTS, "seconds": round(load_s, 2),
        "rps": len(every) / load_s,
        "p50_ms": percentile(every, 50) * ms, "p99_ms": percentile(every, 99) * ms,
        "read_p50_ms": percentile(reads, 50) * ms, "read_p99_ms": percentile(reads, 99) * ms,
        "write_p50_ms": percentile(writes, 50) * ms, "write_p99_ms": percentile(writes, 99) * ms,
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "acknowledged_renames": sum(1 for c in clients if c.name),
    }

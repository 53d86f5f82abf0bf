"""Load with crashes: `sim serve --scenario quickstart --state FILE` SIGKILLed under writing clients.

What it does (127.0.0.1 only, bounded by counts, seeded): `--clients` threads send
`--requests` requests each: reads (lists of branches, computes, operations, a project),
branch creates (without a compute, or with a read_write compute) and deletes of the
branches the client was told it created, and a move of the clock by one day now and then
(`POST /_sim/advance {"seconds": 86400}`). `--kills` times, at random points of the run, the
server is SIGKILLed in the middle of whatever is in flight and started again from the file.

What it checks after every restart (before the clients go on), and after a clean stop and
start at the end:
- the restart answers, with the whole file replayed (not held read only at a row it
  cannot apply: `sim.api.held_file`);
- every acknowledged write is there: each branch a client was answered 201 for exists
  unless it was answered 200 for its delete, each branch answered 200 for its delete is
  gone, and no branch exists that no one made (beyond those whose create was in flight at a
  kill: with no answer, either is right); the clock is at or past the last acknowledged
  advance's answer;
- no answer is a 5xx.
What it prints: p50/p99 latency of reads, writes and advances (answered requests), the
seconds from starting a process to its first answer, per restart, with the journal rows it
replayed (from its banner).

    python benchmarks/kill_load.py [--clients 32] [--requests 300] [--kills 5] [--seed 7]

The machine's other load shows in every figure: latencies and restart times are the
machine's, not the server's alone.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
KEY = "sim_bench_kill_load_key_0123456789"
DAY = 86_400
PROJECTS = 4
ADVANCE_SHARE = 0.006  # of requests: about 58 days over 32 x 300 requests
REQUEST_TIMEOUT_S = 600.0  # a server that stopped answering, not a slow one
START_TIMEOUT_S = 900.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`python -m sim serve` on a port, started again on the same file and port."""

    def __init__(self, state: Path, port: int, log: Path):
        self.state, self.port, self.log_path = state, port, log
        self.base = f"http://127.0.0.1:{port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> float:
        """Start it; the seconds from spawning it to its first answer."""
        args = [sys.executable, "-m", "sim", "serve", "--port", str(self.port),
                "--api-key", KEY, "--scenario", str(ROOT / "scenarios" / "quickstart.yaml"),
                "--state", str(self.state), "--rate-limit", "off"]
        env = {k: v for k, v in os.environ.items() if k != "SIM_API_KEY"}
        with open(self.log_path, "ab") as log:
            log.write(f"---- start {time.strftime('%H:%M:%S')}\n".encode())
            log.flush()
            started = time.perf_counter()
            self.proc = subprocess.Popen(args, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                         env=env)
        deadline = started + START_TIMEOUT_S
        with httpx.Client(timeout=5.0, headers={"authorization": f"Bearer {KEY}"}) as http:
            while time.perf_counter() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"sim serve exited with {self.proc.returncode}: see "
                                       f"{self.log_path}")
                try:
                    if http.get(f"{self.base}/_sim/clock").status_code == 200:
                        return time.perf_counter() - started
                except httpx.TransportError:
                    time.sleep(0.05)
        raise RuntimeError(f"sim serve did not answer in {START_TIMEOUT_S} s")

    def kill(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.kill()

    def replayed(self) -> str:
        """The banner's `state:` line of the latest start."""
        text = self.log_path.read_text(errors="replace").rsplit("---- start", 1)[-1]
        found = re.search(r"^state: .*$", text, re.MULTILINE)
        return found[0] if found else "?"


@dataclass
class Ledger:
    """What the clients were told, shared (under `lock`)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    made: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (project, name)
    deleted: set[str] = field(default_factory=set)
    unsure_names: set[str] = field(default_factory=set)  # creates in flight at a kill
    unsure_ids: set[str] = field(default_factory=set)  # deletes in flight at a kill
    clock: float = 0.0  # the latest acknowledged advance's answer
    latencies: dict[str, list[float]] = field(default_factory=lambda: {
        "read": [], "write": [], "advance": []})
    statuses: Counter[int] = field(default_factory=Counter)
    fives: list[str] = field(default_factory=list)
    broken: int = 0  # requests whose answer never came (a kill)
    answered: int = 0


class Gate:
    """Clients pass it before each request; the killer closes it and waits for them all."""

    def __init__(self, clients: int):
        self.cond = threading.Condition()
        self.open = True
        self.parked = 0
        self.running = clients

    def pass_(self) -> None:
        with self.cond:
            if not self.open:
                self.parked += 1
                self.cond.notify_all()
                self.cond.wait_for(lambda: self.open)
                self.parked -= 1

    def done(self) -> None:
        with self.cond:
            self.running -= 1
            self.cond.notify_all()

    def close_and_wait(self) -> None:
        with self.cond:
            self.open = False
            self.cond.wait_for(lambda: self.parked >= self.running)

    def reopen(self) -> None:
        with self.cond:
            self.open = True
            self.cond.notify_all()


def client(index: int, n: int, projects: list[str], server: Server, ledger: Ledger,
           gate: Gate, seed: int, progress: list[int]) -> None:
    rng = random.Random(seed * 1000 + index)
    mine: list[tuple[str, str]] = []  # (project, branch id) acknowledged and not deleted
    made = 0
    http = httpx.Client(base_url=f"{server.base}/api/v2/", timeout=REQUEST_TIMEOUT_S,
                        headers={"authorization": f"Bearer {KEY}"})
    try:
        for _ in range(n):
            gate.pass_()
            project = rng.choice(projects)
            roll = rng.random()
            unsure: tuple[str, str] | None = None
            if roll < ADVANCE_SHARE:
                kind, method, url, body = "advance", "POST", f"{server.base}/_sim/advance", {
                    "seconds": DAY}
            elif roll < 0.5:
                kind, method, body = "read", "GET", None
                url = rng.choice([f"projects/{project}/branches", f"projects/{project}/endpoints",
                                  f"projects/{project}/operations?limit=20",
                                  f"projects/{project}"])
            elif roll < 0.78 or not mine:
                made += 1
                name = f"c{index}-{made}"
                kind, method, url = "write", "POST", f"projects/{project}/branches"
                body = {"branch": {"name": name}}
                if rng.random() < 0.3:
                    body["endpoints"] = [{"type": "read_write"}]
                unsure = ("name", name)
            else:
                project, branch = mine.pop(rng.randrange(len(mine)))
                kind, method, url, body = "write", "DELETE", \
                    f"projects/{project}/branches/{branch}", None
                unsure = ("id", branch)
            started = time.perf_counter()
            try:
                r = http.request(method, url, **({} if body is None else {"json": body}))
            except httpx.TransportError:
                with ledger.lock:
                    ledger.broken += 1
                    if unsure is not None:
                        (ledger.unsure_names if unsure[0] == "name" else
                         ledger.unsure_ids).add(unsure[1])
                http.close()  # a new connection to the restarted server
                http = httpx.Client(base_url=f"{server.base}/api/v2/",
                                    timeout=REQUEST_TIMEOUT_S,
                                    headers={"authorization": f"Bearer {KEY}"})
                continue
            seconds = time.perf_counter() - started
            with ledger.lock:
                ledger.answered += 1
                progress[0] += 1
                ledger.latencies[kind].append(seconds)
                ledger.statuses[r.status_code] += 1
                if r.status_code >= 500:
                    ledger.fives.append(f"{method} {url}: {r.status_code} {r.text[:200]}")
                elif kind == "advance" and r.status_code == 200:
                    ledger.clock = max(ledger.clock, r.json()["seconds"])
                elif method == "POST" and r.status_code == 201:
                    branch = r.json()["branch"]["id"]
                    ledger.made[branch] = (project, body["branch"]["name"])  # type: ignore[index]
                    mine.append((project, branch))
                elif method == "DELETE" and r.status_code == 200:
                    ledger.deleted.add(url.rsplit("/", 1)[1])
    finally:
        http.close()
        gate.done()


def check(server: Server, projects: list[str], ledger: Ledger, defaults: set[str]) -> list[str]:
    """What the served world lacks or has beyond what the clients were told (empty: none)."""
    problems = []
    with httpx.Client(base_url=f"{server.base}/api/v2/", timeout=REQUEST_TIMEOUT_S,
                      headers={"authorization": f"Bearer {KEY}"}) as http:
        clock = http.get(f"{server.base}/_sim/clock").json()["seconds"]
        if clock < ledger.clock:
            problems.append(f"clock {clock} before the acknowledged {ledger.clock}")
        present: dict[str, str] = {}
        for project in projects:
            r = http.get(f"projects/{project}/branches")
            if r.status_code != 200:
                problems.append(f"branches of {project}: {r.status_code}")
                continue
            present |= {b["id"]: b["name"] for b in r.json()["branches"]}
    for branch, (_project, name) in ledger.made.items():
        if branch in ledger.unsure_ids:
            continue
        if branch in ledger.deleted and branch in present:
            problems.append(f"branch {branch} ({name}) deleted (acknowledged) but present")
        if branch not in ledger.deleted and branch not in present:
            problems.append(f"branch {branch} ({name}) created (acknowledged) but missing")
    for branch, name in present.items():
        if branch not in ledger.made and branch not in defaults \
                and name not in ledger.unsure_names:
            problems.append(f"branch {branch} ({name}) present but no one made it")
    return problems


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def run(clients: int, requests: int, kills: int, seed: int, directory: Path,
        echo: Any = print) -> dict[str, Any]:
    """The whole run; its figures (see the module's docstring)."""
    server = Server(directory / "s.db", free_port(), directory / "serve.log")
    first = server.start()
    echo(f"first start (quickstart built, new file): {first:.2f} s")
    projects, defaults = [], set()
    with httpx.Client(base_url=f"{server.base}/api/v2/", timeout=REQUEST_TIMEOUT_S,
                      headers={"authorization": f"Bearer {KEY}"}) as http:
        for i in range(PROJECTS):
            r = http.post("projects", json={"project": {"name": f"load-{i}"}})
            r.raise_for_status()
            projects.append(r.json()["project"]["id"])
            defaults.add(r.json()["branch"]["id"])
    rng = random.Random(seed)
    total = clients * requests
    points = sorted(rng.sample(range(total // 20, total * 19 // 20), kills))
    ledger, gate, progress = Ledger(), Gate(clients), [0]
    threads = [threading.Thread(target=client, args=(i, requests, projects, server, ledger,
                                                     gate, seed, progress), daemon=True)
               for i in range(clients)]
    restarts: list[dict[str, Any]] = []
    problems: list[str] = []
    began = time.perf_counter()
    for t in threads:
        t.start()
    for point in points:
        while progress[0] < point and any(t.is_alive() for t in threads):
            time.sleep(0.01)
        if not any(t.is_alive() for t in threads):
            break
        server.kill()  # whatever is in flight: no answer
        gate.close_and_wait()
        seconds = server.start()
        found = check(server, projects, ledger, defaults)
        restarts.append({"after": progress[0], "seconds": seconds, "banner": server.replayed(),
                         "problems": len(found)})
        echo(f"SIGKILL after {progress[0]} answers: restart answered in {seconds:.2f} s "
             f"({server.replayed()}); {len(found)} problems")
        problems += found
        gate.reopen()
    for t in threads:
        t.join()
    load_s = time.perf_counter() - began
    server.stop()  # a clean stop: a snapshot, then a start from it
    seconds = server.start()
    found = check(server, projects, ledger, defaults)
    echo(f"clean stop and start: answered in {seconds:.2f} s ({server.replayed()}); "
         f"{len(found)} problems")
    problems += found
    server.stop()
    all_ = [s for v in ledger.latencies.values() for s in v]
    figures = {
        "clients": clients, "requests": requests, "kills": len(restarts), "seed": seed,
        "answered": ledger.answered, "broken_by_kills": ledger.broken,
        "load_seconds": round(load_s, 1),
        "statuses": dict(sorted(ledger.statuses.items())), "5xx": len(ledger.fives),
        "branches_acknowledged": len(ledger.made), "deletes_acknowledged": len(ledger.deleted),
        "writes_lost_or_extra": len(problems), "problems": problems[:20],
        "fives": ledger.fives[:10],
        "latency_s": {k: {"n": len(v), "p50": round(percentile(v, 50), 4),
                          "p99": round(percentile(v, 99), 4)}
                      for k, v in {**ledger.latencies, "all": all_}.items()},
        "first_start_s": round(first, 2),
        "restarts_s": [round(r["seconds"], 2) for r in restarts],
        "restart_banners": [r["banner"] for r in restarts],
        "clean_restart_s": round(seconds, 2),
        # a restart that could not replay its file to its end (served read only)
        "restarts_held": sum("HELD" in r["banner"] for r in restarts),
    }
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", help="directory to keep the state file and log in")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kill_load_") as tmp:
        directory = Path(args.keep or tmp)
        directory.mkdir(parents=True, exist_ok=True)
        figures = run(args.clients, args.requests, args.kills, args.seed, directory)
    print(json.dumps(figures, indent=1))
    ok = (figures["5xx"] == 0 and figures["writes_lost_or_extra"] == 0
          and figures["restarts_held"] == 0 and figures["kills"] == args.kills)
    print("PASS" if ok else "FAIL", "(a shared machine: latencies and restart times are its)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""API latency over real HTTP: operation pages that do not slow down with history, and the
cost of the API layer on a plain read.

(a) `GET /api/v2/projects/{p}/operations?limit=100`, median latency for a project
    with 1,000,000 stored operations divided by the same for a project with 1,000
    (goal <= 1.5): the first page, and a page whose cursor points into the middle
    of the history. Both projects live in one control plane behind one server and
    their requests are interleaved, so the only difference is the history size.
(b) `GET /api/v2/projects/{p}/endpoints/{e}` requests per second divided by the
    requests per second of a bare FastAPI route (a sync handler returning a
    constant dict, no middleware), served the same way (goal >= 0.5): the ratio
    is what our middleware, auth, lock and serialisation cost against the floor
    of FastAPI on uvicorn, measured by the same client in alternating blocks.

Servers: real uvicorn processes on 127.0.0.1 (a free port each; `sim serve`'s
uvicorn settings, no rate limit), started by this script as children (the
`--serve` mode below) and stopped after; the client is one httpx.Client with
keep-alive, N sequential requests. The operations are appended directly to the
projects (fields set as ControlPlane.new_operation sets them, created_at one
microsecond apart, status finished): creating a million through the API would
take far longer than the measurement.

    python benchmarks/api_latency.py [--quick] [--ops 1000000] [--requests N]
"""

from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import time
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # run as a script or imported
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import REPO, Report, print_report, python

TARGET = "api_latency"
SMALL = 1_000
LARGE = 1_000_000
PAGE = 100
CONSTANT = {"endpoint": {"id": "ep-constant", "current_state": "idle"}}


# ---- the servers (child processes) ---------------------------------------------------------


def fill_operations(cp, project, n: int, tag: int) -> None:
    """Append `n` finished operations to `project`, as new_operation would, 1 us apart."""
    import uuid

    from sim.engine.model import Operation

    compute_id = project_endpoint(cp, project)
    branch_id = project.default_branch_id
    us = project.last_op_us
    actions = ("start_compute", "suspend_compute")
    ops, index = project.operations, cp.operations
    for i in range(n):
        us += 1
        at = us / 1_000_000
        op = Operation(id=str(uuid.UUID(int=(tag << 64) | i, version=4)),
                       project_id=project.id, branch_id=branch_id, endpoint_id=compute_id,
                       action=actions[i & 1], status="finished", created_us=us,
                       updated_at=at + 0.5, started_at=at, finished_at=at + 0.5)
        ops.append(op)
        index[op.id] = op
    project.last_op_us = us


def project_endpoint(cp, project) -> str:
    return cp.branches[project.default_branch_id].computes[0]


def build_world(sizes: list[int]):
    from sim.api.server import SimServer
    from sim.engine.control_plane import ControlPlane

    cp = ControlPlane(seed=1)
    made = [cp.create_project(f"history-{n}").project for n in sizes]
    cp.advance(600)  # the creation operations finish; the computes scale to zero
    for tag, (project, n) in enumerate(zip(made, sizes, strict=True)):
        fill_operations(cp, project, n - len(project.operations), tag + 1)
    cp.advance(10)  # every operation now lies in the past
    server = SimServer(control_plane=cp)  # no rate limit: sim serve --rate-limit off
    key = server.add_personal_key().secret
    info = {"key": key, "projects": []}
    for project in made:
        ops = project.operations
        middle = ops[len(ops) // 2].created_us
        info["projects"].append({"id": project.id, "operations": len(ops),
                                 "endpoint": project_endpoint(cp, project),
                                 "middle_cursor": cp.clock.iso_us(middle)})
    return server, info


def serve(kind: str, sizes: list[int]) -> None:
    """Child: build the app, print {"port", ...} on one line, serve until stdin closes."""
    import socket
    import threading

    import uvicorn

    if kind == "sim":
        from sim.api.app import create_app

        server, info = build_world(sizes)
        app = create_app(server)
    else:
        from fastapi import FastAPI

        app, info = FastAPI(), {}

        @app.get("/constant")
        def constant():  # sync, like the API's handlers: the same thread-pool hop
            return CONSTANT

    # proto IPPROTO_TCP, as uvicorn's own bind gives: asyncio sets TCP_NODELAY on accepted
    # sockets only then, and without it every response waits ~40 ms for a delayed ACK
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    info["port"] = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", access_log=False, ws="none",
                            lifespan="off")
    web = uvicorn.Server(config)

    def stop_when_parent_leaves() -> None:
        sys.stdin.read()
        web.should_exit = True

    threading.Thread(target=stop_when_parent_leaves, daemon=True).start()
    print(json.dumps(info), flush=True)
    web.run(sockets=[sock])


class Child:
    """A server child process; stopped (stdin closed, then terminate) on exit."""

    def __init__(self, kind: str, sizes: list[int], timeout_s: float = 300.0):
        argv = [python(), str(Path(__file__).resolve()), "--serve", kind,
                "--sizes", ",".join(map(str, sizes))]
        self.proc = subprocess.Popen(argv, cwd=REPO, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout_s)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            self.close()
            raise RuntimeError(f"{kind} server did not start within {timeout_s:g} s")
        self.info = json.loads(line)
        self.base = f"http://127.0.0.1:{self.info['port']}"

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.terminate()
                self.proc.wait(10)

    def __enter__(self) -> Child:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---- the client ------------------------------------------------------------------------------


def timed_get(client, url: str, params: dict | None = None) -> float:
    started = time.perf_counter()
    response = client.get(url, params=params)
    elapsed = time.perf_counter() - started
    if response.status_code != 200:
        raise RuntimeError(f"GET {url}: {response.status_code} {response.text[:200]}")
    return elapsed


def page_latencies(sim: Child, rounds: int) -> dict[tuple[int, str], float]:
    """Median latency of each (history size, first|middle page), requests interleaved."""
    import httpx

    cases = []
    for p in sim.info["projects"]:
        url = f"/api/v2/projects/{p['id']}/operations"
        cases.append(((p["operations"], "first"), url, {"limit": PAGE}))
        cases.append(((p["operations"], "middle"), url,
                      {"limit": PAGE, "cursor": p["middle_cursor"]}))
    samples: dict[tuple[int, str], list[float]] = {case[0]: [] for case in cases}
    headers = {"authorization": f"Bearer {sim.info['key']}"}
    with httpx.Client(base_url=sim.base, headers=headers, timeout=30) as client:
        for _, url, params in cases:  # a full page each, checked once
            body = client.get(url, params=params).json()
            if len(body["operations"]) != PAGE:
                raise RuntimeError(f"{url} {params}: {len(body['operations'])} operations")
        for i in range(rounds + 10):
            for name, url, params in cases:
                elapsed = timed_get(client, url, params)
                if i >= 10:  # warm-up rounds are not counted
                    samples[name].append(elapsed)
    return {name: statistics.median(values) for name, values in samples.items()}


def server_cpu_s(child: Child) -> float:
    """User + system CPU seconds of a server child so far (/proc; 10 ms ticks)."""
    fields = Path(f"/proc/{child.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def requests_per_s(sim: Child, bare: Child, requests: int, blocks: int = 20) -> dict:
    """GET endpoint on the API and GET constant on bare FastAPI, in alternating blocks of
    sequential requests: the median of the blocks' rates per side (a block that a burst of
    other work on the machine slowed down does not move it), and each server's CPU
    seconds per request (what the server itself spent, whatever else ran)."""
    import httpx

    p = sim.info["projects"][0]
    headers = {"authorization": f"Bearer {sim.info['key']}"}
    per_block = max(1, requests // blocks)
    rates: dict[str, list[float]] = {"sim": [], "bare": []}
    cpu = {"sim": 0.0, "bare": 0.0}
    with (httpx.Client(base_url=sim.base, headers=headers, timeout=30) as api,
          httpx.Client(base_url=bare.base, timeout=30) as plain):
        targets = {"sim": (sim, api, f"/api/v2/projects/{p['id']}/endpoints/{p['endpoint']}"),
                   "bare": (bare, plain, "/constant")}
        for _, client, url in targets.values():
            for _ in range(50):
                timed_get(client, url)
        for _ in range(blocks):
            for name, (child, client, url) in targets.items():
                cpu_before, started = server_cpu_s(child), time.perf_counter()
                for _ in range(per_block):
                    timed_get(client, url)
                rates[name].append(per_block / (time.perf_counter() - started))
                cpu[name] += server_cpu_s(child) - cpu_before
    n = per_block * blocks
    return {"api_rps": statistics.median(rates["sim"]),
            "bare_rps": statistics.median(rates["bare"]),
            "api_cpu_ms": cpu["sim"] / n * 1e3, "bare_cpu_ms": cpu["bare"] / n * 1e3,
            "requests": n, "blocks": blocks}


def measure(quick: bool = False, *, ops: int | None = None, requests: int | None = None
            ) -> Report:
    large = ops or (LARGE // 10 if quick else LARGE)
    rounds = 200 if quick else 400
    requests = requests or (1_000 if quick else 4_000)
    report = Report(TARGET, data={"sizes": [SMALL, large]})
    started = time.perf_counter()
    with Child("sim", [SMALL, large]) as sim, Child("bare", []) as bare:
        report.lines.append(f"servers ready in {time.perf_counter() - started:.1f} s "
                            f"(uvicorn on 127.0.0.1, server in a child process)")
        medians = page_latencies(sim, rounds)
        rps = requests_per_s(sim, bare, requests)
    report.data.update(medians={f"{n} {w}": v for (n, w), v in medians.items()}, **rps)
    report.lines.append(f"operations?limit={PAGE}: median ms over {rounds} interleaved requests")
    for where in ("first", "middle"):
        small_ms, large_ms = medians[(SMALL, where)] * 1e3, medians[(large, where)] * 1e3
        report.lines.append(f"  {where:<6} page: {SMALL:,} ops {small_ms:.2f} ms, "
                            f"{large:,} ops {large_ms:.2f} ms")
        ratio = large_ms / small_ms
        report.add(f"{large_ms:.2f} ms at {large:,} ops", f"{small_ms:.2f} ms at {SMALL:,}",
                   ratio, "<= 1.5", ratio <= 1.5, name=f"{TARGET} ops page ({where})")
    api_rps, bare_rps = rps["api_rps"], rps["bare_rps"]
    report.lines.append(
        f"GET endpoint: {api_rps:,.0f}/s; bare FastAPI route: {bare_rps:,.0f}/s (median of "
        f"{rps['blocks']} alternating blocks, {rps['requests']:,} sequential keep-alive "
        f"requests each side)\n"
        f"server CPU per request: API {rps['api_cpu_ms']:.2f} ms, bare {rps['bare_cpu_ms']:.2f} ms "
        f"(CPU-based ratio {rps['bare_cpu_ms'] / rps['api_cpu_ms']:.2f}; less sensitive to a "
        f"busy machine)")
    ratio = api_rps / bare_rps
    report.add(f"{api_rps:,.0f} req/s GET endpoint", f"{bare_rps:,.0f} req/s bare route", ratio,
               ">= 0.5", ratio >= 0.5, name=f"{TARGET} endpoint rps")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100,000 operations, fewer requests")
    parser.add_argument("--ops", type=int, help=f"operations of the large project ({LARGE:,})")
    parser.add_argument("--requests", type=int, help="requests per side for (b)")
    parser.add_argument("--serve", choices=("sim", "bare"), help=argparse.SUPPRESS)
    parser.add_argument("--sizes", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve, [int(s) for s in args.sizes.split(",") if s])
        return 0
    print_report(measure(args.quick, ops=args.ops, requests=args.requests))
    return 0


if __name__ == "__main__":
    sys.exit(main())

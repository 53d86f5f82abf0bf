"""Keep-alive against one-shot latency of `sim serve`: a request on a kept-alive connection
must not pay for the connection's reuse.

Without TCP_NODELAY on the accepted sockets, an answer written in two pieces (head, then
body) waits on a kept-alive connection for the client's delayed ACK (Nagle's algorithm):
~48 ms a request against ~7 ms one-shot. The figure is the median latency of
`GET /api/v2/projects` on one kept-alive httpx.Client divided by the median of the same
request each on a new connection (connect included), in alternating blocks (goal <= 1.5:
reusing a connection costs no more than opening one).

The server is `python -m sim serve` itself (its own listener and connection settings, no
rate limit) on a free port of 127.0.0.1, a child of this script, stopped at the end; the
run is bounded by its number of requests.

    python benchmarks/keepalive_latency.py [--quick] [--requests N]
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # run as a script or imported
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import REPO, Report, print_report, python

TARGET = "keepalive_latency"
KEY = "sim_benchmark_keepalive_0123456789"
BLOCK = 25  # requests per block, alternating keep-alive and one-shot


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """`sim serve` on 127.0.0.1 as a child process, until closed (SIGTERM)."""

    def __init__(self, timeout_s: float = 120.0):
        self.port = free_port()
        self.proc = subprocess.Popen(
            [python(), "-m", "sim", "serve", "--port", str(self.port), "--api-key", KEY,
             "--rate-limit", "off"], cwd=REPO, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sim serve exited with {self.proc.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        self.close()
        raise RuntimeError(f"sim serve did not start within {timeout_s:g} s")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def latencies(port: int, requests: int) -> tuple[list[float], list[float]]:
    """(keep-alive, one-shot) seconds per request, `requests` each, alternating blocks."""
    import httpx

    url = f"http://127.0.0.1:{port}/api/v2/projects"
    headers = {"authorization": f"Bearer {KEY}"}
    kept: list[float] = []
    one_shot: list[float] = []

    def timed(client: httpx.Client, into: list[float]) -> None:
        started = time.perf_counter()
        response = client.get(url)
        into.append(time.perf_counter() - started)
        if response.status_code != 200:
            raise RuntimeError(f"GET {url}: {response.status_code} {response.text[:200]}")

    with httpx.Client(headers=headers, timeout=30) as client:
        for _ in range(20):  # warm-up: imports, the first answers
            client.get(url)
        while len(kept) < requests:
            for _ in range(BLOCK):
                timed(client, kept)
            for _ in range(BLOCK):
                with httpx.Client(headers=headers, timeout=30) as fresh:
                    timed(fresh, one_shot)
    return kept, one_shot


def measure(quick: bool = False, *, requests: int | None = None) -> Report:
    requests = requests or (200 if quick else 1_000)
    report = Report(TARGET)
    served = Served()
    try:
        kept, one_shot = latencies(served.port, requests)
    finally:
        served.close()
    kept_ms = statistics.median(kept) * 1e3
    one_ms = statistics.median(one_shot) * 1e3
    report.data.update(keep_alive_ms=kept_ms, one_shot_ms=one_ms, requests=len(kept))
    report.lines.append(
        f"GET /api/v2/projects on sim serve, {len(kept):,} requests each way in blocks of "
        f"{BLOCK}: keep-alive median {kept_ms:.2f} ms (p90 "
        f"{statistics.quantiles(kept, n=10)[-1] * 1e3:.2f}), one-shot median {one_ms:.2f} ms "
        f"(p90 {statistics.quantiles(one_shot, n=10)[-1] * 1e3:.2f}; connect included)")
    ratio = kept_ms / one_ms
    report.add(f"{kept_ms:.2f} ms keep-alive GET", f"{one_ms:.2f} ms one-shot", ratio,
               "<= 1.5", ratio <= 1.5)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 requests each way")
    parser.add_argument("--requests", type=int, help="requests each way (1,000)")
    args = parser.parse_args(argv)
    print_report(measure(args.quick, requests=args.requests))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Soak of `sim serve --state`: 200 computes served for 30 simulated days, a day a step.

What it measures, on a real `sim serve` process (loopback only) over
benchmarks/soak.yaml (200 computes with Poisson sessions):

- resident memory (RSS, read once no forked copy is writing a snapshot) and the
  state file's size (file + `-wal`) after day 7 and after the last day; goal: the
  last within 10 % of day 7's; and the peak RSS of the whole run;
- the longest stall of a request while snapshots are taken: between two days
  the benchmark sends writes (renames, suspends) and, from a second thread,
  reads, each timed; a periodic snapshot (every `--snapshot-every` rows) falls
  among them. The day steps themselves (POST /_sim/advance of 86,400 s) are
  the world running, not stalls, and are timed apart;
- the restart at the last day: SIGTERM (seconds to exit: goal < 2 s once
  in-flight requests are answered), then a start on the same file (seconds
  until it answers, and the restore's own figure from its banner; goal < 2 s),
  and what it started from: the latest snapshot, or the whole journal when
  none was written (a stop gives its snapshot up after 1.5 s); then, after that
  restart's own clean stop, a second start (from the snapshot that stop wrote,
  when it was written in time: nothing happened since).

    python benchmarks/soak.py [--days 30] [--writes 40] [--snapshot-every 100]
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from tests.reliability.test_persistence_support import Serve  # noqa: E402

SOAK_YAML = HERE / "soak.yaml"
MIB = 1024 * 1024


def status_mib(pid: int, field: str = "VmRSS") -> float:
    """A memory figure of /proc/PID/status (VmRSS: resident now; VmHWM: its peak)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def settled_rss_mib(pid: int, limit_s: float = 30.0) -> float:
    """RSS once no forked copy is writing a snapshot: a copy's bytes pass through the
    server on their way to the file, and are given back once committed."""
    def copies() -> bool:  # a fork is listed under the thread that made it
        return any(p.read_text().split() for p in Path(f"/proc/{pid}/task").glob("*/children"))

    deadline = time.monotonic() + limit_s
    while copies() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)  # the writer commits what arrived
    return status_mib(pid)


def file_mib(path: Path) -> float:
    return sum(p.stat().st_size for p in (path, path.with_name(path.name + "-wal"))
               if p.exists()) / MIB


class Reader(threading.Thread):
    """Reads (GET one project) in a loop while the writes go: the longest one seen."""

    def __init__(self, serve: Serve, project: str):
        super().__init__(daemon=True)
        self.client = serve.client(timeout=60)
        self.project = project
        self.longest = 0.0
        self.running = threading.Event()
        self.idle = threading.Event()
        self.stopped = False

    def run(self) -> None:
        while not self.stopped:
            if not self.running.is_set():
                self.idle.set()  # no read in flight: a day step may begin
                self.running.wait(0.1)
                continue
            self.idle.clear()
            started = time.perf_counter()
            self.client.get(f"projects/{self.project}")
            self.longest = max(self.longest, time.perf_counter() - started)

    def pause(self) -> None:
        """Reads stop; returns once none is in flight (a day step is no stall of theirs)."""
        self.idle.clear()
        self.running.clear()
        self.idle.wait()


def restart(options: tuple[str, ...], log: Path) -> tuple[float, str, str, int]:
    """A start on the state file, then a clean stop: (seconds until it answers, the restore's
    own figure, what it started from: a snapshot or the whole journal, the status of a GET)."""
    started = time.perf_counter()
    again = Serve(*options, log=log, timeout=600)
    seconds = time.perf_counter() - started
    banner = log.read_text().split("sim serve:")[-1]  # this start's
    restored = re.findall(r"replayed in ([0-9.]+) s", banner)
    loaded = re.findall(r"snapshot after row (\d+)", banner)
    with httpx.Client(base_url=again.base, timeout=60) as c:
        ok = c.get("/api/v2/projects", headers={"authorization": f"Bearer {again.key}"})
    again.stop()
    start = f"the snapshot after row {loaded[0]}" if loaded else "no snapshot: the whole journal"
    return seconds, restored[0] if restored else "?", start, ok.status_code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--writes", type=int, default=40, help="writes between two days")
    parser.add_argument("--snapshot-every", type=int, default=100)
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="sim-soak-"))
    state = folder / "soak.db"
    log = folder / "serve.log"
    options = ("--state", str(state), "--scenario", str(SOAK_YAML), "--clock", "manual",
               "--snapshot-every", str(args.snapshot_every))
    serve = Serve(*options, log=log, timeout=600)
    client = serve.client(timeout=600)
    projects = [p["id"] for p in client.get("projects", params={"limit": 400}).json()["projects"]]
    computes = {p: client.get(f"projects/{p}/endpoints").json()["endpoints"][0]["id"]
                for p in projects[: args.writes]}
    reader = Reader(serve, projects[-1])
    reader.start()
    figures: dict[int, tuple[float, float]] = {}
    longest_write = longest_day = 0.0
    print(f"{len(projects)} projects; state file {state}")
    for day in range(1, args.days + 1):
        started = time.perf_counter()
        client.post(client.base_url.join("/_sim/advance"), json={"seconds": 86_400})
        day_s = time.perf_counter() - started
        longest_day = max(longest_day, day_s)
        reader.running.set()
        for n, (p, c) in enumerate(computes.items()):
            started = time.perf_counter()
            if n % 2:
                client.patch(f"projects/{p}", json={"project": {"name": f"d{day}-{n}"}})
            else:
                client.post(f"projects/{p}/endpoints/{c}/suspend")
            longest_write = max(longest_write, time.perf_counter() - started)
        time.sleep(0.5)  # reads go on while a copy may still be writing a snapshot
        reader.pause()
        figures[day] = (settled_rss_mib(serve.proc.pid), file_mib(state))
        print(f"day {day:2d}: RSS {figures[day][0]:7.1f} MiB, state file "
              f"{figures[day][1]:7.1f} MiB; the day step took {day_s:.1f} s")
    reader.stopped = True
    peak = status_mib(serve.proc.pid, "VmHWM")
    started = time.perf_counter()
    serve.stop()
    sigterm_s = time.perf_counter() - started
    restarts = [restart(options, log), restart(options, log)]
    first, last = min(7, args.days), args.days
    growth = [(figures[last][i] / figures[first][i] - 1) * 100 for i in (0, 1)]
    print(f"RSS day {first}: {figures[first][0]:.1f} MiB, day {last}: {figures[last][0]:.1f} MiB "
          f"({growth[0]:+.1f} %; goal within 10 %); peak {peak:.1f} MiB")
    print(f"state file day {first}: {figures[first][1]:.1f} MiB, day {last}: "
          f"{figures[last][1]:.1f} MiB ({growth[1]:+.1f} %; goal within 10 %)")
    print(f"longest write: {longest_write:.3f} s; longest read while writing: "
          f"{reader.longest:.3f} s (snapshots every {args.snapshot_every} rows)")
    print(f"longest day step (the world running 86,400 s): {longest_day:.1f} s")
    print(f"SIGTERM to exit: {sigterm_s:.2f} s")
    for name, (seconds, restore, start, status) in zip(("restart", "second restart"), restarts,
                                                       strict=True):
        print(f"{name} until it answers: {seconds:.2f} s (restore {restore} s from {start}; "
              f"answered {status})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

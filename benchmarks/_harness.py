"""Shared plumbing of the performance harness: the benchmark fleet, child processes, rows.

Every target's `measure(quick)` returns a `Report`: rows of (figure, baseline,
ratio, goal, passed) that `run_all.py` prints as one table, plus free-form
lines (a scaling table, notes) the target's own script prints.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
FLEET_YAML = HERE / "fleet.yaml"
REALISTIC_YAML = HERE / "realistic.yaml"
#: realistic.yaml's templates and their shares of the computes (one compute per project)
REALISTIC_SHARES = (("web", 0.4), ("pooled", 0.5), ("sized", 0.1))
GIB = 1024**3


# ---- the benchmark fleet ----------------------------------------------------------------


def fleet_text(computes: int | None = None, days: float | None = None,
               base: str | None = None) -> str:
    """benchmarks/fleet.yaml with its count and duration replaced (text, not a parsed
    mapping: `record_connections: off` must reach the loader's YAML rules as a string)."""
    text = FLEET_YAML.read_text(encoding="utf-8") if base is None else base
    if computes is not None:
        text = _replace_once(text, r"(?m)^(\s+count:\s*)\S+", rf"\g<1>{int(computes)}")
    if days is not None:
        text = _replace_once(text, r"(?m)^(duration:\s*)\S+", rf"\g<1>{days:g}d")
    return text


def _replace_once(text: str, pattern: str, repl: str) -> str:
    out, n = re.subn(pattern, repl, text)
    if n != 1:
        raise ValueError(f"benchmarks/fleet.yaml: expected one match of {pattern!r}, found {n}")
    return out


def fleet_size(text: str) -> tuple[int, float, float]:
    """(computes, days, expected sessions) of a fleet document shaped like fleet.yaml."""
    from sim.scenario.loader import parse_scenario

    scenario = parse_scenario(text)
    instances = scenario.instances()
    computes = sum(len(b.computes) for inst in instances for b in inst.template.branches)
    sessions = 0.0
    for inst in instances:
        for branch in inst.template.branches:
            for spec in branch.computes:
                process = spec.arrival_process(scenario.start)
                if process is not None:
                    sessions += process.mean_rate_per_s(0.0, scenario.duration) * scenario.duration
    return computes, scenario.duration / 86_400, sessions


def realistic_text(computes: int | None = None, days: float | None = None) -> str:
    """benchmarks/realistic.yaml at `computes` computes (split 40 / 50 / 10 % between its
    templates) and `days` days, with a PATCH of the suspend timeout on 1 % of the
    projects (at least one), spread over the web and pooled templates."""
    text = fleet_text(None, days, base=REALISTIC_YAML.read_text(encoding="utf-8"))
    if computes is None:
        return text
    if computes < 10:
        raise ValueError(f"the realistic fleet needs at least 10 computes, got {computes}")
    counts = {name: round(computes * share) for name, share in REALISTIC_SHARES[:-1]}
    counts[REALISTIC_SHARES[-1][0]] = computes - sum(counts.values())
    for name, count in counts.items():
        text = _replace_once(text, rf"(?m)^(  - name: {name}\n    count:\s*)\S+", rf"\g<1>{count}")
    patched = max(1, round(computes / 100))
    head, _, _ = text.partition("\nactions:\n")
    lines = [head, "actions:"]
    for k in range(patched):
        name = ("web", "pooled")[k % 2]
        index = (k // 2) * counts[name] // max(1, (patched + 1 - k % 2) // 2)
        ref = f"{name}[{index}]"
        lines += ["  - at: 12h",
                  f"    call: PATCH /projects/{{{ref}}}/endpoints/{{{ref}.main.read_write}}",
                  "    body: {endpoint: {suspend_timeout_seconds: 900}}"]
    return "\n".join(lines) + "\n"


def write_fleet(text: str, directory: str | Path, name: str = "fleet.yaml") -> Path:
    path = Path(directory) / name
    path.write_text(text, encoding="utf-8")
    return path


# ---- child processes ----------------------------------------------------------------------


@dataclass
class ChildRun:
    argv: list[str]
    wall_s: float
    maxrss_bytes: int  # the child's own peak resident set (wait4), not the parent's
    cpu_s: float  # the child's user + system CPU: less sensitive than wall to a busy machine
    returncode: int | None
    stdout: str
    stderr: str
    killed: str | None = None  # "timeout" or "memory cap" when we stopped it

    @property
    def ok(self) -> bool:
        return self.killed is None and self.returncode == 0


def run_child(argv: Sequence[str], *, timeout_s: float, mem_cap_bytes: int | None = None,
              cwd: str | Path = REPO, poll_s: float = 0.02,
              env: dict[str, str] | None = None) -> ChildRun:
    """Run `argv`, measuring its wall time and its own peak RSS (os.wait4 gives the rusage
    of exactly this child; RUSAGE_CHILDREN would be the maximum over every child so far).

    The child is killed past `timeout_s`, or when its resident set exceeds
    `mem_cap_bytes` (so a run too big for the machine cannot take it down). `env`: the
    child's environment (default: this process's).
    """
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        proc = subprocess.Popen(list(argv), cwd=cwd, stdout=out, stderr=err, env=env,
                                start_new_session=True)
        killed = None
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if killed is None:
                if time.perf_counter() - started > timeout_s:
                    killed = "timeout"
                elif mem_cap_bytes is not None and _rss_bytes(proc.pid) > mem_cap_bytes:
                    killed = "memory cap"
                if killed is not None:
                    os.killpg(proc.pid, signal.SIGKILL)  # our own child's group, nothing else
            time.sleep(poll_s)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)  # Popen must not wait again
        out.seek(0)
        err.seek(0)
        return ChildRun(list(argv), wall, usage.ru_maxrss * 1024,
                        usage.ru_utime + usage.ru_stime, proc.returncode, out.read(), err.read(),
                        killed)


def _rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def python() -> str:
    return sys.executable


# ---- rows ---------------------------------------------------------------------------------


@dataclass
class Row:
    """One line of the harness table. `ratio` is figure / baseline (None: not measured)."""

    target: str
    figure: str
    baseline: str
    ratio: float | None
    goal: str
    passed: bool | None  # None: could not be decided (not run)


@dataclass
class Report:
    target: str
    rows: list[Row] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # extra tables and notes
    data: dict = field(default_factory=dict)  # raw figures, for --json

    def add(self, figure: str, baseline: str, ratio: float | None, goal: str,
            passed: bool | None, name: str | None = None) -> None:
        self.rows.append(Row(name or self.target, figure, baseline, ratio, goal, passed))

    def as_dict(self) -> dict:
        return {"target": self.target, "rows": [r.__dict__ for r in self.rows],
                "lines": self.lines, "data": self.data}


def table(rows: Sequence[Sequence[object]], header: Sequence[str]) -> str:
    cells = [[str(c) for c in header]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*cells[0]), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*r) for r in cells[1:]]
    return "\n".join(lines)


def verdict(passed: bool | None) -> str:
    return {True: "pass", False: "FAIL", None: "n/a"}[passed]


def rows_table(rows: Sequence[Row]) -> str:
    return table([(r.target, r.figure, r.baseline,
                   "-" if r.ratio is None else f"{r.ratio:.3g}", r.goal, verdict(r.passed))
                  for r in rows], ("target", "figure", "baseline", "ratio", "goal", "result"))


def print_report(report: Report) -> None:
    for line in report.lines:
        print(line)
    print()
    print(rows_table(report.rows))

"""The guard against losing speed or memory: the working tree against a named earlier commit.

Each target of record is measured on both sides, in child processes, alternating
(baseline, working, working, baseline, ...), and the medians of several tries are
compared: the ratio working / baseline is printed for each, and a target more than
5 % above its baseline fails (exit status 1). The baseline commit is named in one
place, benchmarks/baseline.txt; `--against REF` measures against another commit.

The baseline is checked out into a `git worktree` of its own (a temporary folder,
removed at the end unless `--tree DIR` keeps it for the next run) and runs with its
own code: every child starts from the root of its side's tree (`python -c` or
`python -m sim`, with PYTHONPATH set to that root), so the editable install points
nowhere near it. The first run in a fresh tree compiles its kernels (about a minute
each side); a priming run before the measurements takes that cost.

Targets (both sides run the same scenario files, those of the working tree):

- `plain`, `realistic` (default): CPU seconds of `run_scenario` on
  benchmarks/plain-1k-30d.yaml and benchmarks/realistic-1k-30d.yaml, after a warm-up
  of the same scenario cut to one day in the same process; and, each in a process of
  its own, the peak resident set of loading and running it once;
- `scale` (`--targets scale`, about 2-6 minutes a try): `sim run` of
  benchmarks/realistic.yaml at 10,000 computes x 30 days (`_harness.realistic_text`):
  wall time and peak resident set in one process (no `--workers`), wall time with
  `--workers 2`.

    python benchmarks/ab.py                          # plain and realistic, 3 tries
    python benchmarks/ab.py --targets plain --tries 5 --against 057f6a3
    python benchmarks/ab.py --targets scale --tries 1 --tree /tmp/sim-baseline
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # run as a script or imported
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import GIB, HERE, REPO, python, realistic_text, run_child, table

BASELINE_FILE = HERE / "baseline.txt"
#: a target more than this much above its baseline is a loss
TOLERANCE = 1.05
SHAPES = {"plain": HERE / "plain-1k-30d.yaml", "realistic": HERE / "realistic-1k-30d.yaml"}
SCALE = (10_000, 30.0)
TIMEOUT_S = 1_800.0
MEM_CAP = 16 * GIB

#: run in a child from a side's root: CPU seconds of run_scenario after a warm-up
_CPU = """
import json, re, sys, time
import sim
from sim.scenario.loader import parse_scenario
text = open(sys.argv[1], encoding="utf-8").read()
sim.run_scenario(parse_scenario(re.sub(r"(?m)^duration:\\s*\\S+", "duration: 1d", text)))
scenario = parse_scenario(text)
began = time.process_time()
sim.run_scenario(scenario)
print(json.dumps({"cpu_s": time.process_time() - began}))
"""
#: run in a child from a side's root: load and run once (its peak RSS is the figure)
_ONCE = """
import sys
import sim
sim.run_scenario(sim.load_scenario(sys.argv[1]))
"""
#: a short run that compiles (or loads) the side's kernels before anything is measured
_PRIME = """
import re, sys
import sim
from sim.scenario.loader import parse_scenario
text = open(sys.argv[1], encoding="utf-8").read()
sim.run_scenario(parse_scenario(re.sub(r"(?m)^duration:\\s*\\S+", "duration: 1d", text)))
"""


@dataclass
class Side:
    name: str  # "baseline" or "working"
    root: Path

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(self.root)
        return env

    def run(self, argv: list[str]) -> dict[str, float]:
        """One child from this side's root: its wall, CPU and peak RSS, with the CPU
        seconds it printed when it printed them."""
        child = run_child(argv, timeout_s=TIMEOUT_S, mem_cap_bytes=MEM_CAP, cwd=self.root,
                          env=self.env())
        if not child.ok:
            tail = (child.stderr.strip().splitlines() or [""])[-1]
            raise SystemExit(f"{self.name} ({self.root}): {' '.join(argv[1:3])} failed: "
                             f"{child.killed or f'exit {child.returncode}'}: {tail}")
        out = {"wall_s": child.wall_s, "maxrss_gib": child.maxrss_bytes / GIB}
        for line in child.stdout.splitlines()[::-1]:
            if line.startswith("{"):
                out.update(json.loads(line))
                break
        return out


@dataclass
class Figure:
    """One figure of a target, taken from one child's measures."""

    name: str
    unit: str
    key: str


#: target -> (how to run one try on a side, the figures it gives)
Measure = Callable[[Side], dict[str, float]]


def shape_cpu(path: Path) -> Measure:
    return lambda side: side.run([python(), "-c", _CPU, str(path)])


def shape_rss(path: Path) -> Measure:
    return lambda side: side.run([python(), "-c", _ONCE, str(path)])


def scale_run(path: Path, workers: int | None, out: Path) -> Measure:
    """`sim run` of `path`: in one process (`workers` None) or on that many dask workers."""
    def measure(side: Side) -> dict[str, float]:
        argv = [python(), "-m", "sim", "run", str(path), "--quiet", "--force",
                "--out", str(out / side.name)]
        return side.run(argv + (["--workers", str(workers)] if workers else []))
    return measure


def plan(targets: list[str], scratch: Path) -> list[tuple[str, Measure, list[Figure]]]:
    steps: list[tuple[str, Measure, list[Figure]]] = []
    for name in targets:
        if name in SHAPES:
            path = SHAPES[name]
            steps.append((f"{name} cpu", shape_cpu(path),
                          [Figure(f"{name} 1,000 x 30 d: CPU of run_scenario", "s", "cpu_s")]))
            steps.append((f"{name} rss", shape_rss(path),
                          [Figure(f"{name} 1,000 x 30 d: peak RSS", "GiB", "maxrss_gib")]))
        elif name == "scale":
            path = scratch / "realistic-10k-30d.yaml"
            path.write_text(realistic_text(*SCALE), encoding="utf-8")
            steps.append(("scale 1 worker", scale_run(path, None, scratch),
                          [Figure("realistic 10,000 x 30 d, 1 worker: wall", "s", "wall_s"),
                           Figure("realistic 10,000 x 30 d, 1 worker: peak RSS", "GiB",
                                  "maxrss_gib")]))
            steps.append(("scale 2 workers", scale_run(path, 2, scratch),
                          [Figure("realistic 10,000 x 30 d, --workers 2: wall", "s",
                                  "wall_s")]))
        else:
            raise SystemExit(f"--targets: unknown target {name!r} "
                             f"(known: {', '.join([*SHAPES, 'scale'])})")
    return steps


def baseline_commit() -> str:
    for line in BASELINE_FILE.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            return line
    raise SystemExit(f"{BASELINE_FILE}: no commit named")


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, check=True, capture_output=True,
                          text=True).stdout.strip()


def checkout(commit: str, tree: Path | None) -> tuple[Path, bool]:
    """The baseline's own worktree: `tree` when given (reused when it already holds
    `commit`), else a temporary one. Returns (root, whether to remove it at the end)."""
    sha = git("rev-parse", "--verify", f"{commit}^{{commit}}")
    if tree is not None and (tree / ".git").exists():
        have = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tree, capture_output=True,
                              text=True).stdout.strip()
        if have != sha:
            raise SystemExit(f"--tree {tree} holds {have[:9]}, not {sha[:9]}: "
                             "remove it (git worktree remove) or name another folder")
        return tree, False
    root = tree or Path(tempfile.mkdtemp(prefix="sim-baseline-")) / "tree"
    git("worktree", "add", "--detach", str(root), sha)
    return root, tree is None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", metavar="REF",
                        help="the commit to compare with (default: benchmarks/baseline.txt)")
    parser.add_argument("--targets", default="plain,realistic",
                        help="comma-separated: plain, realistic, scale (default plain,realistic)")
    parser.add_argument("--tries", type=int, default=3, help="tries per side (default 3)")
    parser.add_argument("--tree", type=Path,
                        help="keep the baseline's worktree here (reused by the next run)")
    args = parser.parse_args(argv)
    if args.tries < 1:
        parser.error("--tries: at least 1")
    commit = args.against or baseline_commit()
    working = Side("working", REPO)
    with tempfile.TemporaryDirectory(prefix="sim-ab-") as tmp:
        steps = plan([t.strip() for t in args.targets.split(",") if t.strip()], Path(tmp))
        root, remove = checkout(commit, args.tree)
        try:
            baseline = Side("baseline", root)
            for side in (baseline, working):
                side.run([python(), "-c", _PRIME, str(SHAPES["realistic"])])
            rows = []
            failed = False
            for label, measure, figures in steps:
                tries: dict[str, list[dict[str, float]]] = {"baseline": [], "working": []}
                for k in range(args.tries):
                    order = (baseline, working) if k % 2 == 0 else (working, baseline)
                    for side in order:
                        tries[side.name].append(measure(side))
                        print(f"{label}, try {k + 1}, {side.name}: "
                              + ", ".join(f"{f.key} {tries[side.name][-1][f.key]:.3f}"
                                          for f in figures), flush=True)
                for f in figures:
                    base = statistics.median(t[f.key] for t in tries["baseline"])
                    mine = statistics.median(t[f.key] for t in tries["working"])
                    ratio = mine / base
                    failed |= ratio > TOLERANCE
                    rows.append((f.name, f"{base:.3g} {f.unit}", f"{mine:.3g} {f.unit}",
                                 f"{ratio:.3f}", "pass" if ratio <= TOLERANCE else "FAIL"))
        finally:
            if remove:
                git("worktree", "remove", "--force", str(root))
                root.parent.rmdir()
    print()
    print(f"working tree against {commit} (medians of {args.tries} alternating tries; "
          f"a target more than {TOLERANCE - 1:.0%} above its baseline fails)")
    print(table(rows, ("target", "baseline", "working", "working / baseline", "result")))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

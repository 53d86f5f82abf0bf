"""A scenario small enough for a second, and one run of it the tests copy from."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

#: two projects: a run and its results take about a second
TINY = """\
name: tiny
seed: 5
duration: {duration}
record_connections: "off"
projects:
  - name: app
    count: 2
    branches:
      - name: main
        computes:
          - type: read_write
            size: {{cu: 0.25}}
            workload:
              arrivals: {{kind: poisson, per_hour: 30}}
              session: {{dist: exponential, mean_s: 30}}
"""


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY.format(duration="6h"), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def _seed_1_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from sim.cli import main

    where = tmp_path_factory.mktemp("earlier")
    scenario = where / "tiny.yaml"
    scenario.write_text(TINY.format(duration="6h"), encoding="utf-8")
    out = where / "results"
    assert main(["run", str(scenario), "--out", str(out), "--quiet", "--seed", "1"]) == 0
    return out


@pytest.fixture
def earlier_run(_seed_1_run: Path, tmp_path: Path) -> Path:
    """`tmp_path/results`: the complete results of a run of the tiny scenario with seed 1."""
    out = tmp_path / "results"
    shutil.copytree(_seed_1_run, out)
    return out

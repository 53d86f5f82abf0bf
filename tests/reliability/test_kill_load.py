"""`benchmarks/kill_load.py` made small: writing clients, one SIGKILL, every acknowledged
write checked after the restart and after a clean stop and start.

6 clients x 40 requests on the quickstart served with a state file: branch creates (some
with a compute) and deletes, reads, a day's advance now and then; the server SIGKILLed once
at a seeded point and started again from the file. No 5xx, no acknowledged branch missing,
no acknowledged delete undone, nothing no one made, the clock at or past the last
acknowledged advance. The full run (32 x 300, 5 SIGKILLs) is the benchmark's own.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

from kill_load import run  # noqa: E402


@pytest.mark.slow
def test_a_sigkill_under_writing_clients_loses_no_acknowledged_write(tmp_path: Path) -> None:
    figures = run(clients=6, requests=40, kills=1, seed=3, directory=tmp_path,
                  echo=lambda line: None)
    assert figures["kills"] == 1
    assert figures["5xx"] == 0, figures["fives"]
    assert figures["writes_lost_or_extra"] == 0, figures["problems"]
    assert figures["branches_acknowledged"] > 20 and figures["deletes_acknowledged"] > 5
    assert figures["answered"] + figures["broken_by_kills"] == 6 * 40
    assert figures["restarts_held"] == 0, figures["restart_banners"]

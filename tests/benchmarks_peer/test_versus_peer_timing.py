"""How versus_peer times the two sides of a ratio: in turns, each the best of its tries."""

from __future__ import annotations

import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

from versus_peer import _timed  # noqa: E402


def _recording(log: list[str], name: str):
    def run() -> str:
        log.append(name)
        return f"{name} {log.count(name)}"
    return run


def test_the_two_sides_take_turns() -> None:
    log: list[str] = []
    (peer, peer_cpu), (engine, engine_cpu) = _timed(
        _recording(log, "peer"), _recording(log, "engine"), repeat_below_s=1e9, repeats=4)
    assert log == ["peer", "engine"] * 4  # never two tries of one side in a row
    assert peer.startswith("peer ") and engine.startswith("engine ")
    assert 0 <= peer_cpu and 0 <= engine_cpu


def test_a_side_that_took_long_enough_is_not_tried_again() -> None:
    log: list[str] = []
    _timed(_recording(log, "peer"), _recording(log, "engine"), repeat_below_s=0.0, repeats=5)
    assert log == ["peer", "engine"]

"""A served world gives the memory its daily fold freed back to the system, once a fold."""

from __future__ import annotations

import sys

import pytest

from sim.api import SimServer, freed_memory


def test_the_server_gives_memory_back_after_each_fold_and_only_then(monkeypatch) -> None:  # noqa: ANN001
    calls = []
    monkeypatch.setattr(freed_memory, "give_back", lambda: calls.append(1) or True)
    server = SimServer(seed=5)
    fold = server.cp.history_fold
    server.run_until(3_600.0)  # no midnight crossed
    assert fold.folds == 0 and calls == []
    server.run_until(3 * 86_400 + 60.0)  # three midnights in one move: one give-back
    assert fold.folds == 3 and len(calls) == 1
    server.run_until(4 * 86_400 + 60.0)
    assert fold.folds == 4 and len(calls) == 2


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_give_back_reaches_the_c_library_on_linux() -> None:
    trim = freed_memory._trim()
    assert trim is not None and trim.__name__ == "malloc_trim"
    assert freed_memory.give_back() is True

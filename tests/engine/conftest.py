"""Fixtures shared by the engine's tests."""

from __future__ import annotations

import pytest

import sim.scenario.runner as runner


@pytest.fixture
def fallbacks(monkeypatch):
    """Why each project the kernel handed back to the engine was handed back."""
    seen: list[str] = []
    real = runner.run_kernel

    def spy(*args, **kwargs):
        handed_back = real(*args, **kwargs)
        seen.extend(handed_back.values())
        return handed_back

    monkeypatch.setattr(runner, "run_kernel", spy)
    return seen

"""A scripted call that meets an unexpected error gets the API's 500 answer, as a client
of `sim serve` would, instead of stopping the run."""

from __future__ import annotations

from sim.api.dispatch import dispatch
from sim.engine.config import EngineConfig
from sim.engine.control_plane import ControlPlane


def test_an_unexpected_error_in_a_route_is_a_500_with_the_error_body(monkeypatch) -> None:
    cp = ControlPlane(EngineConfig(), seed=1)
    cp.create_project("shop")
    project = next(iter(cp.projects.values()))

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(ControlPlane, "get_project", broken)
    status, body = dispatch(cp, "GET", f"/projects/{project.id}")
    assert status == 500
    assert body["code"] == "INTERNAL_ERROR"
    monkeypatch.undo()
    status, body = dispatch(cp, "GET", f"/projects/{project.id}")  # and the next call is served
    assert status == 200 and body["project"]["id"] == project.id

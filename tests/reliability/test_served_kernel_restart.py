"""`sim serve --scenario --state` with the kernel: SIGKILL in the middle of an advance.

The advance moves the clock a simulated hour a step (--advance-step), journaling each
step, and the engine holds every project between steps (snapshots see a plain engine
world). Killed after a day of a three-day advance, the server comes back at a step's
instant with every acknowledged write, and answers as a world run by the engine alone
through the same calls.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx

from sim.api import SimServer, in_process_client
from tests.api.test_served_kernel import FLEET, answer
from tests.reliability.test_persistence_support import Serve

DAY = 86_400.0


def test_sigkill_in_an_advance_replays_to_the_engine_worlds_answers(tmp_path: Path) -> None:
    text = FLEET.format(days=4, web=2, pooled=2, sized=1, seed=5)
    scenario_file = tmp_path / "fleet.yaml"
    scenario_file.write_text(text, encoding="utf-8")
    state = tmp_path / "world.db"
    options = ("--scenario", str(scenario_file), "--state", str(state), "--rate-limit", "off",
               "--snapshot-every", "3", "--advance-step", "3600")
    serve = Serve(*options, log=tmp_path / "first.log", timeout=180)
    writes = []
    with serve.client() as client:
        sim = httpx.Client(base_url=f"{serve.base}/_sim/", timeout=120,
                           headers=dict(client.headers))
        start = sim.get("clock").json()["seconds"]
        project = client.get("projects", params={"limit": 400}).json()["projects"][0]["id"]
        endpoint = client.get(f"projects/{project}/endpoints").json()["endpoints"][0]["id"]
        writes.append(("PATCH", f"projects/{project}/endpoints/{endpoint}",
                       {"endpoint": {"suspend_timeout_seconds": 900}}))
        writes.append(("SIM", "connections", {"project_id": project, "endpoint_id": endpoint,
                                              "count": 12, "duration_seconds": 700.5}))
        for method, path, body in writes:
            r = (sim.post(path, json=body) if method == "SIM"
                 else client.request(method, path, json=body))
            assert r.status_code < 300, r.text
        def advance() -> None:
            try:
                sim.post("advance", json={"seconds": 3 * DAY})
            except httpx.HTTPError:
                pass  # killed before it answered: nothing acknowledged

        advancing = threading.Thread(target=advance, daemon=True)
        advancing.start()
        deadline = time.monotonic() + 120
        while sim.get("clock").json()["seconds"] < start + DAY:  # a read between steps
            assert time.monotonic() < deadline, "the advance never let a read in"
            time.sleep(0.05)
        serve.kill()  # SIGKILL in the middle of the advance
        advancing.join(30)
        sim.close()
    serve = Serve(*options, log=tmp_path / "second.log", timeout=180)
    try:
        with serve.client() as client:
            sim = httpx.Client(base_url=f"{serve.base}/_sim/", timeout=120,
                               headers=dict(client.headers))
            now = sim.get("clock").json()["seconds"]
            sim.close()
            assert start + DAY <= now < start + 3 * DAY  # a step's end, not the whole advance
            engine = SimServer(scenario=_scenario(text), kernel=False)
            alone = in_process_client(engine)
            for method, path, body in writes:
                assert answer(alone, (method, path, body))[0] < 300
            engine.advance(now - engine.cp.now)
            projects = [p["id"] for p in alone.get("projects?limit=400").json()["projects"]]
            paths = ["projects?limit=400"] + [
                f"projects/{pid}/{what}" for pid in projects
                for what in ("endpoints", "branches", "operations?limit=400")]
            for path in paths:
                r = client.get(path)
                got = r.json()
                got.pop("request_id", None)
                assert (r.status_code, got) == answer(alone, ("GET", path, None)), path
            patched = client.get(f"projects/{projects[0]}/endpoints").json()["endpoints"]
            assert 900 in {e["suspend_timeout_seconds"] for e in patched}  # the write kept
    finally:
        serve.stop()


def _scenario(text: str):  # noqa: ANN202 - the loader's type
    from sim.scenario.loader import parse_scenario

    return parse_scenario(text)

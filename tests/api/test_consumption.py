"""The consumption history: a served world's usage per hour, day and month, equal to the
run's own CU-hours."""

from __future__ import annotations

from sim.api import SimServer, in_process_client
from sim.engine.usage import KEEP_HOURS, PRUNE_EVERY_HOURS, UsageLedger, whole_seconds
from sim.scenario.loader import parse_scenario
from sim.scenario.runner import run_scenario

WEEK = {
    "name": "week", "seed": 3, "duration": "7d", "start": "2026-01-05T00:00:00Z",
    "projects": [{"name": "shop", "count": 2, "branches": [
        {"name": "main", "computes": [
            {"type": "read_write", "autoscaling": {"min_cu": 0.25, "max_cu": 2},
             "workload": {"arrivals": {"kind": "diurnal", "peak_per_hour": 120,
                                       "trough_per_hour": 1, "peak_hour": 15},
                          "session": {"dist": "exponential", "mean_s": 60},
                          "cpu_per_session": 0.3}}]},
        {"name": "dev", "computes": [
            {"type": "read_write", "workload": {"arrivals": {"kind": "poisson", "per_hour": 2},
                                                "session": {"dist": "exponential",
                                                            "mean_s": 30}}}]}]}],
}
SPAN = {"from": "2026-01-05T00:00:00Z", "to": "2026-01-12T00:00:00Z"}


def _per_project(api, granularity: str) -> dict[str, tuple[int, int]]:
    """Project id -> (compute seconds, active seconds) over the week."""
    r = api.get("consumption_history/projects", params={**SPAN, "granularity": granularity,
                                                          "limit": 100})
    assert r.status_code == 200, r.text
    out = {}
    for p in r.json()["projects"]:
        frames = p["periods"][0]["consumption"]
        assert all(f["written_data_bytes"] == 0 for f in frames)  # not modelled
        out[p["project_id"]] = (sum(f["compute_time_seconds"] for f in frames),
                                sum(f["active_time_seconds"] for f in frames))
    return out


def _per_branch(api, project_ids: list[str], granularity: str) -> dict[str, int]:
    r = api.get("consumption_history/v2/branches", params={
        **SPAN, "granularity": granularity, "org_id": "org-1",
        "project_ids": ",".join(project_ids), "metrics": "compute_unit_seconds"})
    assert r.status_code == 200, r.text
    return {b["branch_id"]: sum(m["value"] for f in b["periods"][0]["consumption"]
                                for m in f["metrics"]) for b in r.json()["branches"]}


def _rounded_sums(rows, by: str, what: str) -> dict[str, int]:
    sums: dict[str, float] = {}
    for row in rows:
        sums[getattr(row, by)] = sums.get(getattr(row, by), 0.0) + getattr(row, what)
    return {k: round(v) for k, v in sums.items()}


def test_a_served_week_bills_the_runs_cu_hours_at_every_granularity() -> None:
    scenario = parse_scenario(WEEK)
    server = SimServer(scenario=scenario)
    key = server.add_personal_key().secret
    with in_process_client(server, api_key=key) as api:
        api.advance(7 * 86_400)  # the scenario's week, after its warm-up
        projects = {g: _per_project(api, g) for g in ("hourly", "daily", "monthly")}
        branches = {g: _per_branch(api, list(projects["daily"]), g)
                    for g in ("hourly", "daily", "monthly")}
    run = run_scenario(scenario)  # what `sim run` reports for the same scenario
    assert projects["hourly"] == projects["daily"] == projects["monthly"]
    assert branches["hourly"] == branches["daily"] == branches["monthly"]
    cu = {pid: seconds[0] for pid, seconds in projects["hourly"].items()}
    assert cu == _rounded_sums(run.computes, "project_id", "cu_s")  # to the CU-second
    assert {pid: s[1] for pid, s in projects["hourly"].items()} == _rounded_sums(
        run.computes, "project_id", "active_s")
    assert branches["hourly"] == _rounded_sums(run.computes, "branch_id", "cu_s")
    assert sum(cu.values()) > 2 * 86_400  # the week did keep computes busy
    # the total, rounded per project, is the run's CU-hours to one CU-second a project
    assert abs(sum(cu.values()) - sum(row.cu_s for row in run.computes)) <= len(cu) / 2


def test_frames_of_any_width_add_up_to_the_rounded_total() -> None:
    ledger = UsageLedger(offset_s=0.0)
    ledger.add("c", 0.25, 10.4, 3 * 3600 + 0.3)
    ledger.add("c", 1.5, 5 * 3600 + 0.2, 5 * 3600 + 0.9)
    hours = ledger.hours([], 0.0)
    assert hours == {}
    cells = ledger.computes["c"]
    hourly = whole_seconds(cells, 0, [(h, h + 1) for h in range(6)])
    whole = whole_seconds(cells, 0, [(0, 6)])
    assert sum(hourly) == whole[0] == round(0.25 * (3 * 3600 + 0.3 - 10.4) + 1.5 * 0.7)


def test_refusals_name_the_field(api) -> None:
    api.post("projects", json={"project": {"name": "a"}})
    api.advance(3600)
    base = {"from": "2026-01-05T00:00:00Z", "to": "2026-01-06T00:00:00Z"}
    old = api.get("consumption_history/projects",
                  params={"from": "2025-01-01T00:00:00Z", "to": base["to"],
                          "granularity": "hourly"})
    assert old.status_code == 406 and "168 hours" in old.json()["message"]
    bad = api.get("consumption_history/v2/projects",
                  params={**base, "granularity": "daily", "org_id": "org-1", "metrics": "cpu"})
    assert bad.status_code == 400 and bad.json()["message"].startswith("metrics:")
    backwards = api.get("consumption_history/projects",
                        params={"from": base["to"], "to": base["from"], "granularity": "daily"})
    assert backwards.status_code == 406 and backwards.json()["message"].startswith("to:")
    other_org = api.get("consumption_history/v2/projects",
                        params={**base, "granularity": "daily", "org_id": "org-nope",
                                "metrics": "compute_unit_seconds"})
    assert other_org.status_code == 404


def test_the_ledger_stays_bounded_and_keeps_its_total() -> None:
    ledger = UsageLedger(offset_s=0.0)
    for day in range(2 * 365):  # two years of one compute on an hour a day, at 0.5 CU
        ledger.add("c", 0.5, day * 86_400.0, day * 86_400.0 + 3600)
    cells = ledger.computes["c"]
    assert len(cells) <= (KEEP_HOURS + PRUNE_EVERY_HOURS) // 24 + 2
    last = max(cells)
    assert whole_seconds(cells, 0, [(min(cells), last + 1)]) == [2 * 365 * 1800]
    # the last year is still there hour by hour
    assert sum(1 for h in cells if h > last - 365 * 24) == 365


def test_the_compute_kernel_fills_the_ledger_as_the_engine_does(monkeypatch) -> None:
    """A world advanced by the compiled kernel folds the same intervals into the ledger."""
    from sim.engine.control_plane import ControlPlane

    made: list[ControlPlane] = []
    original = ControlPlane.__init__

    def keeping(self, *args, **kwargs) -> None:
        original(self, *args, **kwargs)
        self.keep_usage()
        made.append(self)

    monkeypatch.setattr(ControlPlane, "__init__", keeping)
    run = run_scenario(parse_scenario(WEEK), kernel=True)
    (cp,) = made
    assert all(c.runtime is not None and c.runtime.external for c in cp.computes.values())
    for row in run.computes:
        cells = cp.usage.computes[row.compute_id]
        assert abs(sum(cell[0] for cell in cells.values()) - row.cu_s) < 1e-6
        assert abs(sum(cell[1] for cell in cells.values()) - row.active_s) < 1e-6


def test_a_metrics_filter_keeps_the_frames_required_metrics(api) -> None:
    """The document's v1 time frame always has its four metrics: `metrics` adds, never drops."""
    api.post("projects", json={"project": {"name": "a"}})
    api.advance(3 * 3600)
    base = {"from": "2026-01-05T00:00:00Z", "to": "2026-01-06T00:00:00Z", "granularity": "hourly"}
    every = api.get("consumption_history/projects", params=base)
    picked = api.get("consumption_history/projects",
                     params={**base, "metrics": "compute_time_seconds,logical_size_bytes"})
    assert every.status_code == picked.status_code == 200, picked.text
    frames = picked.json()["projects"][0]["periods"][0]["consumption"]
    required = ("active_time_seconds", "compute_time_seconds", "written_data_bytes",
                "synthetic_storage_size_bytes")
    assert all(all(m in f for m in required) and f["logical_size_bytes"] == 0 for f in frames)
    assert ([f["compute_time_seconds"] for f in frames]
            == [f["compute_time_seconds"] for f in every.json()["projects"][0]["periods"][0]["consumption"]])

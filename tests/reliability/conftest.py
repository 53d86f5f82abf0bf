"""Reliability tests: a seeded world to aim at, hypothesis profiles, and figures to report.

`build_world(server)` gives a server's control plane a project with two
branches, computes in every state a route cares about (active, idle, still
starting), operations, and managed auth with a user, an OAuth provider and a
redirect domain. It calls the engine's verbs directly (an HTTP round trip in
process costs ~10 ms; the fuzzer rebuilds the world before every case), and
it is deterministic: the same seed gives the same ids every time, so a
generated case can name real resources and still replay.

Profiles: HYPOTHESIS_PROFILE=quick (default) or thorough (CI), from tests/conftest.py.

Figures (cases fuzzed per route, refusals checked) are printed at the end of
the run and kept in pytest's cache under `reliability/`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pytest

from sim.api.keys import ORG_ID
from sim.api.orgs import MEMBER_ID
from sim.api.server import SimServer
from tests.conftest import THOROUGH as THOROUGH  # re-exported for the tests here

SEED = 11


# ---- the world -------------------------------------------------------------------------------


@dataclass(frozen=True)
class World:
    project_id: str
    main_branch_id: str
    dev_branch_id: str
    primary_id: str  # read_write on main, active
    idle_id: str  # read_write on dev, suspended: restart answers 422
    starting_id: str  # read_only on main, its start_compute still running: 423
    operation_ids: tuple[str, ...]
    auth_user_id: str
    oauth_provider_id: str = "github"
    auth_provider: str = "stack"
    domain: str = "https://app.example.com"
    snapshot_id: str = ""  # a snapshot of main

    @property
    def endpoint_ids(self) -> tuple[str, ...]:
        return (self.primary_id, self.idle_id, self.starting_id)

    @property
    def branch_ids(self) -> tuple[str, ...]:
        return (self.main_branch_id, self.dev_branch_id)

    def real_ids(self) -> dict[str, tuple[str, ...]]:
        """Real values by the name a path parameter or body field gives them."""
        return {
            "project_id": (self.project_id,),
            "branch_id": self.branch_ids,
            "parent_id": self.branch_ids,
            "endpoint_id": self.endpoint_ids,
            "operation_id": self.operation_ids,
            "auth_user_id": (self.auth_user_id,),
            "oauth_provider_id": (self.oauth_provider_id, "google"),
            "auth_provider": (self.auth_provider,),
            "id": (self.oauth_provider_id, "google"),
            "role_name": ("neondb_owner",),
            "database_name": ("neondb",),
            "owner_name": ("neondb_owner",),
            "key_id": ("1",),  # the API key of the world's first client
            "snapshot_id": (self.snapshot_id,),
            "org_id": (ORG_ID,),
            "destination_org_id": (ORG_ID,),
            "member_id": (MEMBER_ID,),
            "region_id": ("aws-us-east-2",),
            "permission_id": ("no-such-grant",),  # the world shares its project with no one
        }


def build_world(server: SimServer) -> World:
    """A fresh control plane for `server` (same seed, clock at 0), populated."""
    server.reset()
    with server.lock:
        cp = server.cp
        made = cp.create_project("fuzz", key="fuzz")
        project, main = made.project, made.branch
        primary = made.computes[0]
        made_dev = cp.create_branch(project.id, "dev", None, [{"type": "read_write"}])
        dev, idle = made_dev.branch, made_dev.computes[0]
        cp.auth.create_integration(project.id, main.id, "stack")
        user = cp.auth.create_user(project.id, "stack", "ada@example.com", "Ada")
        cp.auth.add_oauth_provider(project.id, "github")
        cp.auth.add_redirect_domain(project.id, "https://app.example.com", "stack")
        cp.advance(60)
        cp.suspend_compute(project.id, idle.id)
        cp.advance(30)
        starting, _ = cp.create_compute(project.id, main.id, "read_only")
        ops = tuple(op.id for op in project.operations)
        snapshot, _ = cp.create_snapshot(project.id, main.id)
    assert primary.current_state == "active" and idle.current_state == "idle"
    assert starting.pending_state == "active"
    return World(project.id, main.id, dev.id, primary.id, idle.id, starting.id, ops, user,
                 snapshot_id=snapshot.id)


# ---- figures for the report ------------------------------------------------------------------


@dataclass
class Figures:
    fuzzed: Counter[str] = field(default_factory=Counter)  # cases per route
    fuzzed_ok: Counter[str] = field(default_factory=Counter)  # of which answered 2xx
    refusals: Counter[str] = field(default_factory=Counter)  # refusals whose digest held
    notes: list[str] = field(default_factory=list)


_FIGURES = Figures()


@pytest.fixture(scope="session")
def figures() -> Figures:
    return _FIGURES


def pytest_terminal_summary(terminalreporter, config):  # noqa: ANN001 - pytest's hook
    f = _FIGURES
    if not (f.fuzzed or f.refusals or f.notes):
        return
    tr = terminalreporter
    tr.section("reliability figures")
    if f.fuzzed:
        tr.write_line(f"fuzzed: {sum(f.fuzzed.values())} cases over {len(f.fuzzed)} routes; "
                      f"fewest {min(f.fuzzed.values())}, most {max(f.fuzzed.values())}")
        tr.write_line("   cases    2xx  route")
        for route, n in sorted(f.fuzzed.items()):
            tr.write_line(f"  {n:>6} {f.fuzzed_ok[route]:>6}  {route}")
    if f.refusals:
        tr.write_line(f"refusals checked (digest before == after): {sum(f.refusals.values())}")
        for status, n in sorted(f.refusals.items()):
            tr.write_line(f"  {n:>6}  {status}")
    for note in f.notes:
        tr.write_line(note)
    if getattr(config, "cache", None) is not None:
        config.cache.set("reliability/fuzzed", dict(f.fuzzed))
        config.cache.set("reliability/refusals", dict(f.refusals))

"""A served world folds the history no API call reads; periodic snapshots come from a copy.

- after simulated days of a served fleet, the recorder holds no ended state
  interval, no wake, no connection row, and no spent detach/archive timer;
  the computes' use per hour adds up to their counters (active seconds,
  CU-seconds), and every answer equals that of the same world folded on another
  day (the fold changes nothing the API shows);
- a periodic snapshot written by a forked copy lands at the row it was taken
  after: a start from the file (no snapshot at the stop) loads it and replays
  only the rows after it, to the same world.
"""

from __future__ import annotations

import heapq
import threading
import time
from pathlib import Path

from sim.api import SimServer, in_process_client
from sim.engine.history_fold import HistoryFold
from sim.scenario.loader import load_scenario
from tests.reliability.test_persistence import KEY, ROOT, Kept, digest, ok

SEED = 13


def _served(days: float) -> SimServer:
    server = SimServer(scenario=load_scenario(ROOT / "scenarios" / "dev-branches.yaml"))
    server.cp.advance(days * 86_400)
    return server


def _unfolded() -> SimServer:
    """The same served world with its fold event taken off the heap: it never folds."""
    server = SimServer(scenario=load_scenario(ROOT / "scenarios" / "dev-branches.yaml"))
    fold = server.cp.history_fold
    queue = server.cp.env._queue
    queue[:] = [item for item in queue
                if not (item[3].callbacks
                        and getattr(item[3].callbacks[0], "__self__", None) is fold)]
    heapq.heapify(queue)
    return server


def _quiet_timers(cp) -> int:  # noqa: ANN001
    return sum(1 for _t, _p, _i, ev in cp.env._queue
               if ev.callbacks and getattr(ev.callbacks[0], "__qualname__", "")
               == "Lifecycle._after.<locals>.<lambda>")


def test_a_served_world_folds_what_no_call_reads() -> None:
    server = _served(3)
    cp = server.cp
    fold: HistoryFold = cp.history_fold
    assert fold.folds == 3
    rec = cp.recorder
    last_fold = 3 * 86_400
    # a served scenario keeps no connection row (no call reads one; the counters count)
    assert rec.connections == [] and rec.connection_blocks == []
    # what is left is what came after the last fold (midnight): less than a day's worth
    assert all(r.end_s > last_fold for r in rec.intervals)
    assert all(w.at_s >= last_fold for w in rec.wakes)
    # every quiet timer left can still act: its project or branch has stayed quiet
    unfolded = _unfolded()
    unfolded.cp.advance(3 * 86_400)
    assert _quiet_timers(cp) < _quiet_timers(unfolded.cp)
    # the usage ledger (consumption per hour) and the counters are the unfolded world's
    assert cp.usage == unfolded.cp.usage
    def counters(server_cp) -> list[tuple[float, ...]]:  # noqa: ANN001
        return [(c.stats.active_s, c.stats.cu_s, c.stats.sessions, c.stats.cold_starts)
                for c in server_cp.computes.values()]

    assert counters(cp) == counters(unfolded.cp)


def test_the_fold_changes_no_answer() -> None:
    """The same world with and without folding answers every listing alike, after the same
    days, and the same calls after."""
    folded = _served(2)
    unfolded = _unfolded()
    unfolded.cp.advance(2 * 86_400)
    apis = []
    for server in (folded, unfolded):
        server.add_personal_key(KEY)
        apis.append(in_process_client(server, api_key=KEY))
    projects = ok(apis[0].get("projects"))["projects"]
    assert projects == ok(apis[1].get("projects"))["projects"]
    for p in projects:
        for path in (f"projects/{p['id']}", f"projects/{p['id']}/endpoints",
                     f"projects/{p['id']}/branches", f"projects/{p['id']}/operations"):
            assert ok(apis[0].get(path)) == ok(apis[1].get(path)), path
    for api in apis:
        api.close()


def test_a_periodic_snapshot_from_a_copy_is_what_a_start_loads(tmp_path: Path) -> None:
    kept = Kept(tmp_path / "s.db", {"seed": SEED, "snapshot_every": 6})
    for n in range(8):
        ok(kept.api.post("projects", json={"project": {"name": f"p{n}"}}), 201)
        kept.api.advance(30)
    journal = kept.server.journal
    assert journal is not None
    deadline = time.monotonic() + 60  # the copy's bytes arrive, the writer commits them
    while journal._deferred is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    ok(kept.api.get("projects"))  # a section that waits for what is committed
    before = digest(kept.server.cp)
    kept.api.close()
    journal.close()  # no snapshot at the stop: the periodic one is the latest
    kept.open()
    # 16 rows (8 projects, 8 clock moves); where the latest periodic snapshot fell among
    # them depends on how fast its copy wrote: a start replays exactly the rows after it
    assert 0 < kept.restored.snapshot_after <= 16
    assert kept.restored.snapshot_after + kept.restored.entries == 16
    assert digest(kept.server.cp) == before
    kept.close()


class _SlowCopy:
    """A forked copy's snapshot that lands when someone waits for it (as a slow copy does
    once the wait has lasted long enough)."""

    def __init__(self, data: bytes, poke) -> None:  # noqa: ANN001
        self.data, self.poke, self.landed = data, poke, threading.Event()
        self.waited = False

    def done(self) -> bool:
        return self.landed.is_set()

    def result(self, timeout: float | None = None) -> bytes | None:
        if not self.landed.is_set() and (timeout is None or timeout > 0):
            self.waited = True
            self.landed.set()
            self.poke()
        return self.data if self.landed.is_set() else None

    def stop(self) -> None:
        pass


def test_a_snapshot_due_while_a_copy_still_writes_waits_for_it(tmp_path: Path,
                                                               monkeypatch) -> None:  # noqa: ANN001
    """One taken then would replace the one being written before it lands: a world whose
    snapshots take longer to write than the rows between them would never have one. So the
    copy still writing lands first: never two at once, and a start after a crash replays
    fewer than twice `snapshot_every` rows."""
    from sim.api import snapshot_fork
    from sim.api import snapshot

    copies: list[_SlowCopy] = []

    def capture(world, poke):  # noqa: ANN001, ANN202
        assert all(c.landed.is_set() for c in copies)  # the last one landed first
        copies.append(_SlowCopy(snapshot.dumps(world), poke))
        return copies[-1]

    monkeypatch.setattr(snapshot_fork, "capture", capture)  # the server reads it at a snapshot
    every = 3
    kept = Kept(tmp_path / "s.db", {"seed": SEED, "snapshot_every": every})
    for n in range(13):
        ok(kept.api.post("projects", json={"project": {"name": f"p{n}"}}), 201)
    assert len(copies) == 4 and all(c.waited for c in copies[:3])  # each waited for
    before = digest(kept.server.cp)
    kept.api.close()
    kept.server.journal.close(0.0)  # as a crash: the last copy has not landed
    kept.open()
    assert kept.restored.snapshot_after == 3 * every  # the last that landed
    assert 0 < kept.restored.entries < 2 * every and digest(kept.server.cp) == before
    kept.close()

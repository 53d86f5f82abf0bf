"""Restoring the world of a state file of `sim serve --state` (`open_server`).

The file is opened and checked by `sim.api.state_file`; a good one is restored
here: its latest snapshot is loaded, and the journal rows after it are replayed
through the same route handlers. The world comes from the snapshot alone: a
scenario's fleet is built (and run through its warm-up) only when no snapshot
loads (none yet, or one of another version of sim), on a control plane of the
saved seed and scenario, before the whole journal is replayed. A row that
cannot be applied (its replay raises, or a request does not succeed as it did
the first time: the journal and this version of `sim` disagree) stops the
replay there: the world is built again up to the row before it and served read
only, the file left as it is (`sim.api.held_file`). This module sits above the app and
the routes (it replays through them) and above the state file, the journal and
sealing (it reads through them).
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import hmac
import json
import logging
import secrets
import sqlite3
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sim.api import snapshot
from sim.api.held_file import Unapplied, one_line
from sim.api.journal import FORMAT, Journal, StateError, wall_now
from sim.api.keys import ApiKey, KeyKind
from sim.api.sealing import CHECK, SealError
from sim.api.state_file import SNAPSHOT_EVERY, open_journal
from sim.api.world_bounds import check_world
from sim.rules.errors import unauthorized

if TYPE_CHECKING:
    from sim.api.limits import RateLimit
    from sim.api.server import SimServer

log = logging.getLogger("sim.api.state_file")


@dataclass
class Restored:
    created: bool
    entries: int = 0  # journal rows replayed
    requests: int = 0  # of which API requests
    seconds: float = 0.0  # wall time the restore took (the build included, when there was one)
    keys: int = 0  # saved keys restored (revoked ones not counted)
    snapshot_after: int = 0  # the journal row the snapshot loaded was taken after (0: none)
    #: the world was built from the seed and scenario (no snapshot loaded): a scenario's
    #: whole fleet, run through its warm-up; a snapshot that loads makes a build needless
    built: bool = False
    #: the row the replay could not apply: the world is served up to the row before it,
    #: read only, and the file is left as it is (None: every row applied)
    held: Unapplied | None = None


class RowNotApplied(Exception):
    """A journal row the replay cannot apply."""

    def __init__(self, unapplied: Unapplied):
        super().__init__(unapplied.line())
        self.unapplied = unapplied


def open_server(
    path: str | Path, *, seed: int | None = None, clock: str = "manual", speed: float = 1.0,
    scenario_path: str | Path | None = None, rate_limit: RateLimit | None = None,
    max_body_bytes: int | None = None, snapshot_every: int | None = SNAPSHOT_EVERY,
    **server_options: Any,
) -> tuple[SimServer, Restored]:
    """A server kept in `path`: a new one (the file is created), or the saved one restored.

    The seed and scenario of an existing file are its own; giving others is a
    StateError. Clock mode and speed may change between runs: the journal holds
    simulated instants, and a realtime clock resumes where the world stopped.
    `snapshot_every` journal rows a snapshot is taken (None: only at a clean stop).
    """
    from sim.api.server import ClockMode, SimServer

    journal, meta, created = open_journal(path)
    try:
        scenario, scenario_meta = _scenario(meta, scenario_path, journal.path)
        if created:
            seed = seed if seed is not None else (scenario.seed if scenario else 0)
            journal.write_meta({"format": str(FORMAT), "file_id": secrets.token_hex(16),
                                "seed": str(seed), "created": wall_now(),
                                "key_check": journal.seal.seal(CHECK, CHECK).hex(),
                                "commits": "0", "rows": "0", "open": "0", **scenario_meta})
        else:
            saved = int(meta["seed"])
            if seed is not None and seed != saved:
                raise StateError(f"{journal.path} was created with seed {saved}, not {seed}")
            seed = saved

        def restored_world(before: int | None) -> tuple[SimServer, Restored]:
            server = SimServer(seed=seed, clock=ClockMode.MANUAL, speed=speed,
                               scenario=scenario, max_body_bytes=None, build=False,
                               **server_options)
            restored = Restored(created=created)
            started = time.perf_counter()
            after = _load_snapshot(journal, server)
            if after is None:  # no snapshot that loads: the world from its seed (and scenario)
                server.build_world()
                restored.built = True
            restored.snapshot_after = after or 0
            restored.entries, restored.requests = replay(journal, server,
                                                         restored.snapshot_after, before)
            restored.seconds = time.perf_counter() - started
            return server, restored

        try:
            server, restored = restored_world(None)
        except RowNotApplied as stop:
            held = stop.unapplied
            log.warning("%s", held.line())
            # the row may have changed part of the world before it failed: the world is
            # made again, up to the row before it (the rows before it applied the first time)
            try:
                server, restored = restored_world(held.seq)
            except RowNotApplied as again:
                raise StateError(f"{journal.path}: replaying up to row {held.seq} met "
                                 f"{again.unapplied.row} ({again.unapplied.reason}), which "
                                 f"had applied before; nothing is served") from None
            restored.held = held
            server.keys.restore(journal.key_records())
            restored.keys = len(server.keys.hashed)
            server.configure(clock="manual", speed=speed, rate_limit=rate_limit,
                             max_body_bytes=max_body_bytes)
            server.held = held  # served read only; the file is closed and left as it is
            journal.close()
            return server, restored
        server.keys.restore(journal.key_records())
        restored.keys = len(server.keys.hashed)
        server.configure(clock=clock, speed=speed, rate_limit=rate_limit,
                         max_body_bytes=max_body_bytes)
        server.snapshot_every = snapshot_every
        # the rows a start after a crash would replay now: counted from the snapshot as the
        # file holds it, not from 0, or repeated crashes would replay ever more of them
        journal.since_snapshot = restored.entries
        journal.start(server.cp.now)
        server.attach_journal(journal)
        if snapshot_every is not None and journal.since_snapshot >= snapshot_every:
            server.take_snapshot()  # now, written whole before the first request is served
    except BaseException:
        journal.close()
        raise
    return server, restored


def _load_snapshot(journal: Journal, server: SimServer) -> int | None:
    """The file's latest snapshot restored into `server`: the journal row it was taken after;
    None when there is none, or it was written by another version of sim (`Stale`)."""
    try:
        found = journal.latest_snapshot()
    except SealError as err:
        raise StateError(f"{journal.path}: its snapshot cannot be opened ({err})") from None
    if found is None:
        return None
    after, _t, data = found
    try:
        with _collector_paused():
            world = snapshot.loads(data)
            check_world(world)
    except snapshot.Stale as err:  # made by another version of sim: the journal has it all
        log.warning("%s: its snapshot was written by another version of sim (%s); replaying "
                    "the whole journal", journal.path, err)
        return None
    except snapshot.Refused as err:  # authenticated, yet not data sim writes: refuse
        raise StateError(f"{journal.path}: its snapshot is not a world sim wrote ({err}); "
                         f"nothing of it was run") from None
    server.restore_world(world)
    return after


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector off meanwhile. Decoding a world makes hundreds of thousands
    of objects and no garbage; the collector would walk them all again each time its oldest
    generation filled up: nearly as long as the decoding itself (0.6-0.9 s of 1.7-2.0 s for
    the soak's 200 computes after 3 days)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _scenario(meta: dict[str, str], given: str | Path | None, state: Path):
    """The scenario of the file (loaded from its saved path) and what to save about it; one
    that does not load is refused as the file is (a StateError: one line)."""
    saved_path, saved_sha = meta.get("scenario_path"), meta.get("scenario_sha256")
    if given is None and saved_path is None:
        return None, {}
    if meta and saved_path is None:
        raise StateError(f"{state} was created without a scenario; start it without --scenario")
    source = Path(given if given is not None else saved_path or "")
    try:
        digest = hashlib.sha256(source.read_bytes()).hexdigest()
    except OSError as err:
        raise StateError(f"{state}: scenario {source}: {err.strerror or err}") from None
    if meta and not hmac.compare_digest(digest, saved_sha or ""):
        raise StateError(f"{state} was created with scenario {saved_path} (sha256 "
                         f"{(saved_sha or '')[:12]}...); {source} is not that file as it was")
    from sim.scenario.loader import ScenarioError, load_scenario  # a served scenario's

    try:
        scenario = load_scenario(source)
    except ScenarioError as err:
        raise StateError(str(err)) from None
    return scenario, {"scenario_path": str(source.resolve()), "scenario_sha256": digest}


def replay(journal: Journal, server: SimServer, after: int = 0,
           before: int | None = None) -> tuple[int, int]:
    """Apply the journal rows after `after` (and before `before`, if given) to `server`
    (manual clock). (rows, requests). `RowNotApplied` for a row that cannot be applied."""
    import anyio
    import httpx

    from sim.api.app import create_app
    from sim.api.deps import authenticate

    rows = journal.entries(after)
    if before is not None:
        rows = [row for row in rows if row["seq"] < before]
    if not rows:
        return 0, 0
    app = create_app(server)
    acting: list[ApiKey | None] = [None]

    def replay_key() -> ApiKey:
        if acting[0] is None:
            raise unauthorized("journaled request without a key")
        return acting[0]

    app.dependency_overrides[authenticate] = replay_key
    requests = 0

    def run_to(row: sqlite3.Row) -> None:
        with server.lock:
            if server.cp.now > row["t"]:
                raise StateError(f"it is at {row['t']} s but the replayed world is already "
                                 f"at {server.cp.now} s")
            server.run_until(row["t"])

    async def apply(client: Any, row: sqlite3.Row) -> None:
        nonlocal requests
        kind = row["kind"]
        if kind == "reset":
            server.reset()
            return
        run_to(row)
        if kind == "faults":
            args = json.loads(row["args"])
            if args.get("outage") is not None:
                args["outage"] = tuple(args["outage"])
            server.set_faults(**args)
        elif kind == "request":
            requests += 1
            acting[0] = _key_of(row["key"])
            await _replay_request(client, journal, row)

    async def run() -> None:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://replay") as client:
            for n, row in enumerate(rows):
                try:
                    await apply(client, row)
                except SealError:
                    raise
                except Exception as err:  # noqa: BLE001 - any failure: the row is not applied
                    raise RowNotApplied(_unapplied(journal, row, err,
                                                   rows[n - 1]["seq"] if n else after)) from None

    server.replaying = True
    try:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            anyio.run(run)
        else:  # called from async code (a notebook): replay on a helper thread
            with ThreadPoolExecutor(1) as pool:
                pool.submit(anyio.run, run).result()
    except SealError as err:
        raise StateError(f"{journal.path}: a journal row cannot be opened ({err})") from None
    finally:
        server.replaying = False
    return len(rows), requests


def _unapplied(journal: Journal, row: sqlite3.Row, err: Exception,
               applied_through: int) -> Unapplied:
    """What a start says of a row it could not apply (`err`: why)."""
    later = journal.entries(row["seq"])
    reason = str(err) if isinstance(err, StateError) else f"{type(err).__name__}: {err}"
    return Unapplied(file=str(journal.path), seq=row["seq"], kind=row["kind"],
                     method=row["method"], path=row["path"], t=float(row["t"]),
                     reason=one_line(reason), applied_through=applied_through,
                     not_applied=1 + len(later))


async def _replay_request(client: Any, journal: Journal, row: sqlite3.Row) -> None:
    url = row["path"] + (f"?{row['query']}" if row["query"] else "")
    headers = {"content-type": row["content_type"]} if row["content_type"] else {}
    response = await client.request(row["method"], url, content=journal.body(row),
                                    headers=headers)
    failed_before = row["outcome"] == "error"  # it failed unexpectedly: it fails again
    if (response.status_code >= 400) != failed_before:
        raise StateError(
            f"it answered {response.status_code} where it had "
            f"{'failed' if failed_before else 'succeeded'} ({_said(response)}); the "
            f"journal and this version of sim disagree")


def _said(response: Any) -> str:
    """What an answer says: its error's message (not the replay's request id), or its
    first characters."""
    try:
        message = response.json().get("message")
    except (ValueError, AttributeError):
        message = None
    return message if isinstance(message, str) else response.text[:200]


def _key_of(identity: str | None) -> ApiKey | None:
    if identity is None:
        return None
    d = json.loads(identity)
    return ApiKey("", KeyKind(d["kind"]), d["user_id"], d.get("org_id"), d.get("project_id"))


__all__ = ["Restored", "RowNotApplied", "StateError", "open_server", "replay"]

"""`digest(cp)`: one stable hash of everything a control plane holds.

A refused request must leave the world exactly as it found it (sim.rules.errors:
"Raising it must leave every piece of state unchanged"). Comparing two
listings over HTTP misses what no listing shows: a runtime queue, a drawn
random number, an id marked as issued, an event put on SimPy's heap. This
module reads all of it:

- the clock (simulated now, start instant) and SimPy's pending events;
- projects, branches, computes (every field, their statistics and the runtime's
  connection queues and timers), operations (every field; a served world's past
  operations as the bytes of their columns), the executor's lanes;
- issued ids, and every random stream that has drawn since it was made (a
  refusal that draws changes the future of the run, even if nothing shows);
- managed auth, through `cp.auth.state()`, and the recorder's record counts.

`describe(cp)` is the same state as plain data, for a readable diff when
two digests differ.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from sim.engine.row_table import Parts

if TYPE_CHECKING:
    from sim.engine.control_plane import ControlPlane
    from sim.engine.runtime import ComputeRuntime

__all__ = ["describe", "digest", "digest_of"]

#: ComputeRuntime slots that are references to other objects, not state of their own
_RUNTIME_REFS = frozenset({"cp", "env", "c", "config", "recorder", "feed", "batch",
                           "sample_rng", "record_mode"})


def digest(cp: ControlPlane) -> str:
    """A hex SHA-256 of `describe(cp)`: equal iff the two states are equal."""
    return digest_of(describe(cp))


def digest_of(description: dict[str, Any]) -> str:
    """The digest of a `describe()` already taken (keep one to show a diff, hash it too)."""
    text = json.dumps(description, sort_keys=True, default=_plain, allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()


def describe(cp: ControlPlane) -> dict[str, Any]:
    """The whole state as JSON-able data (keys sorted by the caller's dumps)."""
    return {
        "clock": {"now": cp.now, "start": cp.clock.start.isoformat()},
        "events": _events(cp),
        "release": cp.release,
        "plan": str(cp.plan),
        "region_id": cp.region_id,
        "projects": {pid: _project(p) for pid, p in cp.projects.items()},
        "branches": {bid: _fields(b) for bid, b in cp.branches.items()},
        "computes": {cid: _compute(c) for cid, c in cp.computes.items()},
        "operations": {oid: _fields(op) for oid, op in cp.operations.items()},
        "lanes": {lane: [t.op.id for t in queue]
                  for lane, queue in sorted(cp.executor._lanes.items())},
        "tasks": sorted(cp.executor._tasks),
        "failure_rate": cp.executor.failure_rate,
        "checked_branches": sorted(cp.checked_branches.items()),
        "issued_ids": sorted(cp.ids._issued),
        "streams": _streams(cp),
        "auth": cp.auth.state(),
        "records": _records(cp.recorder),
        "snapshots": {sid: _fields(snap) for sid, snap in cp.snapshots.items()},
        "snapshot_schedules": _plain(cp.snapshot_schedules),
        "schedule_generations": _plain(cp.schedule_generations),
        "usage": _plain(cp.usage),
        "other": _other_attributes(cp),
    }


# ---- pieces ----------------------------------------------------------------------------------


def _fields(obj: Any, skip: frozenset[str] = frozenset()) -> dict[str, Any]:
    return {f.name: _plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)
            if f.name not in skip}


def _project(p: Any) -> dict[str, Any]:
    out = _fields(p, frozenset({"operations"}))
    out["operations"] = [op.id for op in p.operations]  # the order pages are read in
    return out


def _compute(c: Any) -> dict[str, Any]:
    out = _fields(c, frozenset({"runtime"}))
    out["runtime"] = None if c.runtime is None else _runtime(c.runtime)
    return out


def _runtime(rt: ComputeRuntime) -> dict[str, Any]:
    state = {name: _plain(getattr(rt, name)) for name in type(rt).__slots__
             if name not in _RUNTIME_REFS}
    state["has_feed"] = rt.feed is not None
    return state


def _records(recorder: Any) -> dict[str, Any]:
    """How much the recorder holds: a count per list, a content hash per array, else the value."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(recorder):
        value = getattr(recorder, f.name)
        if isinstance(value, (list, tuple, Parts)):
            out[f.name] = len(value)
        else:
            out[f.name] = _opaque(value)
    return out


def _opaque(value: Any) -> Any:
    """Arrays (and dicts of them) by dtype, shape and a hash of their bytes."""
    if isinstance(value, dict):
        return {str(k): _opaque(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if hasattr(value, "tobytes") and hasattr(value, "dtype"):
        return [str(value.dtype), list(value.shape),
                hashlib.sha256(value.tobytes()).hexdigest()]
    return _plain(value)


def _events(cp: ControlPlane) -> list[tuple[float, int]]:
    """(time, priority) of every event SimPy has scheduled and not yet processed."""
    return sorted((t, prio) for t, prio, _eid, _event in cp.env._queue)


def _streams(cp: ControlPlane) -> dict[str, Any]:
    """Random streams that have drawn since they were made (making one draws nothing)."""
    streams = cp.streams
    moved = {}
    for name, rng in sorted(streams._cache.items()):
        state = rng.bit_generator.state
        if state != streams.fresh(name).bit_generator.state:
            moved[name] = state
    return moved


def _other_attributes(cp: ControlPlane) -> dict[str, Any]:
    """Plain scalar attributes of the control plane not covered above (counters, flags)."""
    return {name: value for name, value in sorted(vars(cp).items())
            if isinstance(value, (int, float, str, bool, type(None)))}


def _plain(value: Any) -> Any:
    """JSON-able, deterministic: sets sorted, dataclasses and tuples opened, floats exact."""
    if isinstance(value, float):
        return value.hex() if math.isfinite(value) else repr(value)
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (set, frozenset)):
        return sorted(_plain(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _fields(value)
    if isinstance(value, np.ndarray) and not value.dtype.hasobject:  # past operations
        return [value.dtype.str, list(value.shape),
                hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()]
    if hasattr(value, "value") and isinstance(value.value, (str, int)):  # enums
        return value.value
    raise TypeError(f"digest: no plain form for {type(value).__name__}")

"""Turn a workload (arrival process + session model) into batches a compute runtime reads.

Arrivals and session properties come from two streams of their own, so that
the instants a seed gives do not depend on how sessions are drawn.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from sim.engine.runtime import SessionArrays
from sim.workload.arrivals import ArrivalProcess, chunks
from sim.workload.sessions import SessionBatch, SessionModel


def session_feed(
    arrivals: ArrivalProcess,
    sessions: SessionModel,
    arrival_rng: np.random.Generator,
    session_rng: np.random.Generator,
    t0: float,
    t1: float,
) -> Iterator[SessionArrays]:
    return SessionFeed(arrivals, sessions, arrival_rng, session_rng, t0, t1)


def drawn_sessions(
    arrivals: ArrivalProcess,
    sessions: SessionModel,
    arrival_rng: np.random.Generator,
    session_rng: np.random.Generator,
    t0: float,
    t1: float,
) -> Iterator[tuple[np.ndarray, SessionBatch]]:
    """A workload's arrivals window by window, with their sessions: how every road draws it
    (the engine's feed here, the compute kernel's columns in `sim.scenario.kernel_run`)."""
    for times in chunks(arrivals, arrival_rng, t0, t1):
        if len(times):
            yield times, sessions.sample(session_rng, len(times))


def all_sessions(
    arrivals: ArrivalProcess,
    sessions: SessionModel,
    arrival_rng: np.random.Generator,
    session_rng: np.random.Generator,
    t0: float,
    t1: float,
) -> tuple[np.ndarray, SessionBatch]:
    """What `drawn_sessions` gives, joined: a workload's arrivals and sessions at once.

    A model that draws only durations (no temporary files) draws them for every arrival
    in one call: numpy draws n values and then m exactly as it draws n + m, so the
    numbers are those of the windows. With temporary files the draws of two columns
    interleave window by window, and the windows are drawn as they are."""
    if sessions.temp_bytes is None:
        times = arrivals.times(arrival_rng, t0, t1)
        return times, sessions.sample(session_rng, len(times))
    parts = list(drawn_sessions(arrivals, sessions, arrival_rng, session_rng, t0, t1))
    if not parts:
        return np.empty(0), sessions.sample(session_rng, 0)
    return np.concatenate([times for times, _ in parts]), SessionBatch(
        *(np.concatenate([getattr(batch, name) for _, batch in parts])
          for name in SessionBatch._fields))


def _batches(
    arrivals: ArrivalProcess,
    sessions: SessionModel,
    arrival_rng: np.random.Generator,
    session_rng: np.random.Generator,
    t0: float,
    t1: float,
) -> Iterator[SessionArrays]:
    for times, batch in drawn_sessions(arrivals, sessions, arrival_rng, session_rng, t0, t1):
        yield SessionArrays(
            times.tolist(),
            batch.duration_s.tolist(),
            batch.cpu.tolist(),
            batch.memory_gb.tolist(),
            batch.temp_bytes.tolist(),
        )


class SessionFeed:
    """The batches of one compute's workload, drawn lazily; and kept as data.

    A generator cannot be written down, and a snapshot of the world (sim serve
    --state) holds every compute's feed (as its `__getstate__`). So the feed keeps
    what made it (the workload, the streams' states when it began) and how many
    batches it was asked for; restored, it draws again from the start, with the same streams put
    back to those states, and skips what was given: the same draws, so the
    streams end where they were (checked) and the next batch is the same.
    """

    def __init__(self, arrivals: ArrivalProcess, sessions: SessionModel,
                 arrival_rng: np.random.Generator, session_rng: np.random.Generator,
                 t0: float, t1: float):
        self._args = (arrivals, sessions, arrival_rng, session_rng, t0, t1)
        self._initial = (arrival_rng.bit_generator.state, session_rng.bit_generator.state)
        self._given = 0
        self._batches = _batches(*self._args)

    def __iter__(self) -> SessionFeed:
        return self

    def __next__(self) -> SessionArrays:
        self._given += 1  # counted also when it ends: the last call draws too
        return next(self._batches)

    def __getstate__(self) -> dict[str, Any]:
        return {"args": self._args, "initial": self._initial, "given": self._given}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._args, self._initial, self._given = state["args"], state["initial"], state["given"]
        arrival_rng, session_rng = self._args[2], self._args[3]
        reached = (arrival_rng.bit_generator.state, session_rng.bit_generator.state)
        arrival_rng.bit_generator.state, session_rng.bit_generator.state = self._initial
        self._batches = _batches(*self._args)
        for _ in range(self._given):
            next(self._batches, None)
        now = (arrival_rng.bit_generator.state, session_rng.bit_generator.state)
        if repr(now) != repr(reached):
            raise RuntimeError("a session feed drew differently when restored")

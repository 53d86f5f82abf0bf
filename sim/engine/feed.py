"""Turn a workload (arrival process + session model) into batches a compute runtime reads.

Arrivals and session properties come from two streams of their own, so that
the instants a seed gives do not depend on how sessions are drawn.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from sim.engine.runtime import SessionArrays
from sim.workload.arrivals import ArrivalProcess, chunks
from sim.workload.sessions import SessionModel


def session_feed(
    arrivals: ArrivalProcess,
    sessions: SessionModel,
    arrival_rng: np.random.Generator,
    session_rng: np.random.Generator,
    t0: float,
    t1: float,
) -> Iterator[SessionArrays]:
    for times in chunks(arrivals, arrival_rng, t0, t1):
        n = len(times)
        if n == 0:
            continue
        batch = sessions.sample(session_rng, n)
        yield SessionArrays(
            times.tolist(),
            batch.duration_s.tolist(),
            batch.cpu.tolist(),
            batch.memory_gb.tolist(),
            batch.temp_bytes.tolist(),
        )

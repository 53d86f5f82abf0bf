"""One simulated run of a slate of choices, measured per template (one dask task).

A slate sets one choice for each of some templates; the run's computes are
grouped by the template their project was made from, and each group gives
the figures the targets bound: cost, cold starts per 1,000 sessions, the
cold-start wait p99, the refused share and the pooler's queue wait p99.

The queue wait p99 is read from the recorded connections (a sample, on
large fleets) when at least MIN_SAMPLE of them went through a pool. With
fewer, it is estimated from the run's totals with the Erlang-C tail shape:
a share q of connections waited, for m seconds on average, so
P(W > t) = q exp(-t / m) and p99 = m ln(100 q) when q > 1 %.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from sim.engine.config import EngineConfig
from sim.engine.records import Outcome
from sim.metrics import frames
from sim.metrics.frames import ATTEMPT_OUTCOMES
from sim.scenario.durations import parse_duration
from sim.sweep.fleet import Source, progress_reporter, run_fleet

MIN_SAMPLE = 200  # pooled connections needed to read a p99 off the records
QUANTILE = 0.99
#: what each replication reports per template (None: the run had nothing to measure)
FIGURES = ("cost", "cu_hours", "sessions", "cold_starts", "cold_starts_per_1000",
           "wake_p99_s", "refused_share", "queue_wait_p99_s")


def run_slate(document: dict[str, Any], base_dir: str | None, seed: int,
              topic: str | None = None, task: int = 0) -> dict[str, dict[str, float | None]]:
    """Run the scenario document with one seed; per template, its figures."""
    source = Source(document, base_dir, str(document.get("name", "<scenario>")))
    result = run_fleet(source, seed=seed, progress=progress_reporter(topic, task))
    computes = frames(result)["computes"]
    timeout = _queue_timeout(document)
    waits_by_compute = _wake_waits(result)
    pooled_waits = _pooled_waits(result, set(computes.loc[computes["pooler_enabled"],
                                                          "compute_id"]), timeout)
    out: dict[str, dict[str, float | None]] = {}
    for name, group in computes.groupby("template", sort=True):
        sessions = int(group["sessions"].sum())
        attempts = _attempts(group)
        cold = int(group["cold_starts"].sum())
        ids = list(group["compute_id"])
        waits = [waits_by_compute[i] for i in ids if i in waits_by_compute]
        all_waits = np.concatenate(waits) if waits else np.empty(0)
        pooled = group[group["pooler_enabled"]]
        out[str(name)] = {
            "cost": float(group["cost"].sum()),
            "cu_hours": float(group["cu_hours"].sum()),
            "sessions": float(sessions),
            "cold_starts": float(cold),
            "cold_starts_per_1000": 1000.0 * cold / sessions if sessions else None,
            "wake_p99_s": float(np.quantile(all_waits, QUANTILE)) if len(all_waits) else None,
            "refused_share": int(group["refused"].sum()) / attempts if attempts else None,
            "queue_wait_p99_s": (None if pooled.empty else
                                 _queue_p99(pooled, [pooled_waits.get(i) for i in
                                                     pooled["compute_id"]])),
        }
    return out


def _attempts(computes: Any) -> int:
    """Every connection the clients of these computes tried (see ATTEMPT_OUTCOMES)."""
    return int(sum(computes[column].sum() for column in ATTEMPT_OUTCOMES))


def _queue_timeout(document: Mapping[str, Any]) -> float:
    value = (document.get("engine") or {}).get("pool_queue_timeout")
    return EngineConfig().pool_queue_timeout_s if value is None else parse_duration(value)


def _wake_waits(result: Any) -> dict[str, np.ndarray]:
    if result.wake_waits is not None:
        return dict(result.wake_waits)
    from sim.metrics.frames import cold_start_waits

    wakes = cold_start_waits(frames(result)["wakes"])
    return {str(k): g["wait_s"].to_numpy() for k, g in wakes.groupby("compute_id")}


def _pooled_waits(result: Any, pooled: set[str], timeout: float) -> dict[str, np.ndarray]:
    """Queue waits of recorded connections to pooled computes (cold ones wait for the start
    as well, so they are left out; a queue timeout waited the whole timeout)."""
    found: dict[str, list[float]] = {}
    for row in result.connections:
        if row.compute_id not in pooled or row.cold:
            continue
        if row.outcome == Outcome.OK:
            found.setdefault(row.compute_id, []).append(row.wait_s)
        elif row.outcome == Outcome.QUEUE_TIMEOUT:
            found.setdefault(row.compute_id, []).append(timeout)
    return {k: np.asarray(v) for k, v in found.items()}


def _queue_p99(pooled: Any, samples: list[np.ndarray | None]) -> float:
    recorded = [s for s in samples if s is not None]
    values = np.concatenate(recorded) if recorded else np.empty(0)
    if len(values) >= MIN_SAMPLE:
        return float(np.quantile(values, QUANTILE))
    waited = int(pooled["queued"].sum()) + int(pooled["queue_timeouts"].sum())
    attempts = _attempts(pooled)
    if not attempts or not waited:
        return 0.0
    share = waited / attempts
    mean_wait = float(pooled["queue_wait_s"].sum()) / waited
    return mean_wait * math.log(share / (1.0 - QUANTILE)) if share > 1.0 - QUANTILE else 0.0


def recording(document: Mapping[str, Any], queue_target: bool) -> dict[str, Any]:
    """The document with what these runs need recorded, and no more: no event rows; a
    sample of connections only when a queue-wait target needs them."""
    doc = dict(document)
    doc["record_events"] = "off"
    doc["record_connections"] = "sampled" if queue_target else "off"
    return doc

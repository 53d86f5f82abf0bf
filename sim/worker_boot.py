"""What a worker of the embedded cluster needs before its first shard, loaded once for all.

The embedded cluster's workers are forked from multiprocessing's fork server
(`sim.cluster`), which imports this module before it forks any: dask, the
simulator, the API's route handlers (scripted calls go through them), and a run of
a one-compute day with every feature whose code loads on first use, which brings
the compiled kernels in from their on-disk cache. Each worker is a copy of that
process and starts its first shard with all of it in memory.

Spawned afresh instead, each worker spent 2 to 4 s of its first shard on the same
loading: the same seconds on every worker, so a serial part of every sharded run,
and on two CPUs done beside the client's own start-up.
"""

from __future__ import annotations

import gc
import os

from sim.fork_server import worker_environ

os.environ.update(worker_environ())  # before numpy loads: its threads are counted then

import distributed  # noqa: E402, F401  (what the worker process itself runs on)

#: one compute for three hours: the fleet path with autoscaling and the pooler, hourly
#: availability checks and operation failures (the storage lane's kernel), and a
#: scripted call (the API's handlers)
WARM_UP = """
name: worker-warm-up
seed: 1
duration: 3h
record_connections: off
record_events: off
engine: {check_availability_every: 1h}
faults: {operation_failure_rate: 0.01}
projects:
  - name: p
    branches:
      - name: main
        computes:
          - type: read_write
            autoscaling: {min_cu: 0.25, max_cu: 4}
            pooler_enabled: true
            workload:
              arrivals: {kind: poisson, per_hour: 60}
              session: {dist: exponential, mean_s: 30}
              cpu_per_session: 0.1
actions:
  - at: 1h
    call: PATCH /projects/{p[0]}/endpoints/{p[0].main.read_write}
    body: {endpoint: {suspend_timeout_seconds: 120}}
"""


def warm_up() -> None:
    """Run WARM_UP, then close the event loop its scripted call ran on: a process that
    forks passes on no loop of its own."""
    from sim.api.dispatch import reset
    from sim.scenario.loader import parse_scenario
    from sim.scenario.runner import run_scenario

    try:
        run_scenario(parse_scenario(WARM_UP, source="worker warm-up"))
    finally:
        reset()


try:
    warm_up()
except Exception:  # noqa: S110 - only a head start: a worker loads what it lacks on first use,
    pass           # while an error here would stop the fork server and every worker with it
# what is loaded now lives as long as the workers: the collector of each need not walk it,
# and leaving it out of the collector's passes keeps its pages shared with the server
gc.collect()
gc.freeze()

"""A small run that loads what runs load on first use, before anything is timed or forked.

One day of one project whose run takes every road a shipped scenario may take:
the kernel with autoscaling and the pooler, a storage lifecycle (detach,
archive and the waits they cause), hourly availability checks and operation
failures (the storage lane's kernel), and a scripted call (the API's handlers).
Running it imports those modules and brings both compiled kernels in from their
on-disk cache. The fork server of the embedded cluster runs it before it forks
any worker (`sim.processes.worker_boot`), and the benchmarks run it before they time one.
"""

from __future__ import annotations

WARM_UP = """
name: warm-up
seed: 1
duration: 1d
engine: {detach_after: 1h, archive_after: 1h, check_availability_every: 1h}
faults: {operation_failure_rate: 0.01}
projects:
  - name: p
    branches:
      - name: main
        computes:
          - type: read_write
            autoscaling: {min_cu: 0.25, max_cu: 4}
            pooler_enabled: true
            suspend_timeout_seconds: 60
            workload:
              arrivals: {kind: bursty, on_per_hour: 60, off_per_hour: 0, mean_on: 20m,
                         mean_off: 3h}
              session: {dist: exponential, mean_s: 30}
              cpu_per_session: 0.1
      - name: dev
        computes:
          - type: read_write
            suspend_timeout_seconds: 60
            workload:
              arrivals: {kind: poisson, per_hour: 2}
              session: {dist: exponential, mean_s: 30}
actions:
  - at: 12h
    call: PATCH /projects/{p[0]}/endpoints/{p[0].main.read_write}
    body: {endpoint: {suspend_timeout_seconds: 120}}
"""


def warm_up() -> None:
    """Run WARM_UP, then close the event loop its scripted call ran on (a process about to
    fork passes on no loop of its own; the next call makes a new one)."""
    from sim.api.dispatch import reset
    from sim.scenario.loader import parse_scenario
    from sim.scenario.runner import run_scenario

    try:
        run_scenario(parse_scenario(WARM_UP, source="warm-up"))
    finally:
        reset()

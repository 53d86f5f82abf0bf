"""A dask worker plugin for the embedded cluster: its workers' process settings.

- On start, a worker keeps the memory it frees for its next arrays
  (`sim.processes.allocator`): a shard allocates and frees arrays all along, and fresh pages
  for each cost a tenth of its CPU time. (A worker forked from the fork server has
  the settings from it already; this is for one spawned instead.)
- On exit, a worker leaves its heap without a last collection. At exit Python's
  cycle collector walks every object still alive (numba's types, pandas, what the
  shards left behind): for a worker of a 10,000-compute fleet a second of CPU,
  during which closing the cluster (and so `sim run`) waits. The objects die with
  the process anyway, so a closing worker freezes them out of those passes.
"""

from __future__ import annotations

import gc

from distributed import WorkerPlugin

from sim.processes.allocator import keep_freed_memory


class WorkerProcess(WorkerPlugin):
    name = "sim-worker-process"

    def setup(self, worker: object) -> None:
        keep_freed_memory()

    def teardown(self, worker: object) -> None:
        gc.freeze()

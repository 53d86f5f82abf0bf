"""A dask worker plugin for the embedded cluster: its workers exit without a last
collection of their heap.

At exit Python's cycle collector walks every object still alive (numba's types,
pandas, what the shards left behind): for a worker of a 10,000-compute fleet a second
of CPU, during which closing the cluster (and so `sim run`) waits. The objects die
with the process anyway, so a closing worker freezes them out of those passes.
"""

from __future__ import annotations

import gc

from distributed import WorkerPlugin


class HeapLeftAtExit(WorkerPlugin):
    name = "sim-heap-left-at-exit"

    def teardown(self, worker: object) -> None:
        gc.freeze()

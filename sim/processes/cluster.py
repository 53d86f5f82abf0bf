"""dask clusters for fleet runs, sweeps and searches: the embedded one, or one at an address.

`open_client` gives a client for the run's duration. `started_client` starts the
same on a thread and hands it over when asked: `sim run --workers N` starts
its workers first, so that they boot while the command itself loads the modules
it needs for the run. This module imports nothing heavy at the top, for that reason.

The embedded cluster's workers are forked from a fork server that has loaded what
every worker needs (`sim.processes.fork_server`); where there is none (Windows) they are
spawned and load it on their first task.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any


def default_workers() -> int:
    return max(1, os.cpu_count() or 1)


@contextmanager
def open_client(workers: int | None = None, scheduler: str | None = None) -> Iterator[Any]:
    """A dask client: on the cluster at `scheduler`, or on an embedded LocalCluster of
    `workers` single-threaded processes (default: one per CPU) on 127.0.0.1.

    `workers=0` yields None: the functions that take a client then run in this process.
    """
    from distributed import Client

    if scheduler is None and workers == 0:
        yield None
        return
    if scheduler is not None:
        with Client(scheduler, timeout="20s") as client:
            yield client
        return
    with local_cluster(workers) as cluster, Client(cluster) as client:
        yield client


def local_cluster(workers: int | None) -> Any:
    """The embedded LocalCluster of `workers` single-threaded processes (default: one per
    CPU) on 127.0.0.1, started; a context manager that closes it."""
    import logging

    from distributed import LocalCluster

    from sim.processes.fork_server import start_fork_server
    from sim.processes.worker_process import WorkerProcess

    # dashboard off; the scheduler's small HTTP server (health, metrics) takes any free
    # port instead of 8787, which another cluster on this machine may hold
    with _cluster_settings(forked=start_fork_server()):
        return LocalCluster(n_workers=workers or default_workers(), threads_per_worker=1,
                            processes=True, host="127.0.0.1", dashboard_address=None,
                            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
                            silence_logs=logging.ERROR, plugins={WorkerProcess()})


def _cluster_settings(forked: bool) -> Any:
    """dask's settings for the embedded cluster, while it starts (its workers take them
    along): the workers' environment (`worker_environ`), forked from the fork server
    when it runs; and dask's own timers slowed down. Each of the scheduler, the nannies
    and the workers checks its event loop's latency every 20 ms, the memory of its
    process every 100 ms and the machine's every 500 ms: on two CPUs shared by two
    workers, the client's share of that took a second of a run's time from them."""
    import dask

    from sim.processes.fork_server import worker_environ

    settings: dict[str, Any] = {
        "distributed.nanny.pre-spawn-environ": worker_environ(),
        "distributed.admin.tick.interval": "500ms",
        "distributed.worker.memory.monitor-interval": "500ms",
        "distributed.admin.system-monitor.interval": "2s",
    }
    if forked:
        settings["distributed.worker.multiprocessing-method"] = "forkserver"
    return dask.config.set(settings)


def worker_count(client: Any) -> int:
    return max(1, sum(client.nthreads().values()))


class started_client:  # noqa: N801 - used like `open_client`, as a context manager
    """`open_client(workers, scheduler)` whose embedded cluster starts on a thread from
    construction on; entering waits for it (raising what starting raised) and connects
    the client, in the caller's thread (a dask client is bound to the thread that made
    it); leaving closes both. A scheduler's address is simply connected to on entering."""

    def __init__(self, workers: int | None = None, scheduler: str | None = None):
        #: the workers it will have: known ahead for the embedded cluster, not at an address
        self.workers = None if scheduler is not None else workers or default_workers()
        self._scheduler = scheduler
        self._stack = ExitStack()
        self._cluster: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._start, args=(workers,),
                                        name="sim-cluster-start", daemon=True)
        if scheduler is None:
            self._thread.start()

    def _start(self, workers: int | None) -> None:
        try:
            self._cluster = self._stack.enter_context(local_cluster(workers))
        except BaseException as err:  # handed to the caller by __enter__
            self._error = err

    def __enter__(self) -> Any:
        if self._scheduler is not None:
            return self._stack.enter_context(open_client(scheduler=self._scheduler))
        self._thread.join()
        if self._error is not None:
            raise self._error
        from distributed import Client

        return self._stack.enter_context(Client(self._cluster))

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close what was started (also when it was never entered)."""
        if self._thread.is_alive():
            self._thread.join()
        self._stack.close()

"""The fork server that the embedded cluster's workers are forked from.

With multiprocessing's `forkserver` start method, a server process started once
imports the modules it is told to preload, then forks every new process from
itself. Here it preloads `sim.worker_boot` (dask, the simulator, the compiled
kernels), so each worker starts its first shard with all of that in memory. The
loading is done once, by one process, while the command that starts the cluster
does its own start-up beside it.

A command that starts the server stops it when it is done (`own_fork_server`), so
it leaves no process behind, and the CPU time of its workers (the server reaps
them) counts as the command's own children's, which is what `time` and the
benchmarks read. A library caller keeps the server for the life of its process,
and the workers of its next cluster fork from it at once.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing import forkserver
from pathlib import Path
from typing import Any

#: the module the fork server loads before it forks a worker
WORKER_BOOT = "sim.worker_boot"


def start_fork_server() -> bool:
    """Start the fork server with `sim.worker_boot` preloaded. Returns False where this
    platform has no fork server (Windows), and the workers are then spawned.

    Returns at once: the server loads while the caller goes on. A second call finds it
    running. So does a call in a process whose fork server someone else started, whose
    workers then load what they need on their first task."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return False
    forkserver.set_forkserver_preload([WORKER_BOOT])  # read only when the server starts
    forkserver.ensure_running()
    return True


def stop_fork_server() -> None:
    """Stop the fork server and wait for it to exit, along with the workers it reaped."""
    stop = getattr(forkserver._forkserver, "_stop", None)  # multiprocessing's own, for tests
    if stop is not None:
        stop()


def fork_server_running() -> bool:
    return getattr(forkserver._forkserver, "_forkserver_pid", None) is not None


@contextmanager
def own_fork_server() -> Iterator[bool]:
    """The fork server for one command: started on entering and, unless it was running
    already (someone else's), stopped on leaving, once the command's cluster is closed.
    Yields whether there is one."""
    running = fork_server_running()
    started = start_fork_server()
    try:
        yield started
    finally:
        if started and not running:
            stop_fork_server()


def worker_environ() -> dict[str, str]:
    """The variables a worker of the embedded cluster starts with. They are dask's (its
    setting distributed.nanny.pre-spawn-environ: one thread for numerical libraries),
    minus MALLOC_TRIM_THRESHOLD_; one already set in the environment keeps its value.

    dask sets MALLOC_TRIM_THRESHOLD_ so that freed memory goes back to the system early.
    Setting it also fixes glibc's threshold for mapping large blocks at 128 KiB, so
    every array a run allocates and frees costs fresh pages: 15 % more CPU for a shard.
    The workers keep glibc's own, adaptive thresholds instead.

    The fork server sets these before it loads numpy, and so before dask's configuration
    is complete (distributed adds its defaults when imported). So they are read from
    distributed's packaged defaults, overlaid with what the user's configuration sets."""
    import dask.config

    environ = dict(_distributed_defaults().get("nanny", {}).get("pre-spawn-environ") or {})
    environ.update(dask.config.get("distributed.nanny.pre-spawn-environ", default=None) or {})
    environ.pop("MALLOC_TRIM_THRESHOLD_", None)
    # as dask does: a variable already set in the environment keeps its value
    return {name: os.environ.get(name, str(value)) for name, value in environ.items()
            if value is not None}


def _distributed_defaults() -> dict[str, Any]:
    """distributed's packaged configuration (its `distributed` section), as distributed
    registers it with dask when imported."""
    import importlib.util

    import yaml

    spec = importlib.util.find_spec("distributed")
    if spec is None or spec.origin is None:
        return {}
    try:
        text = Path(spec.origin).with_name("distributed.yaml").read_text(encoding="utf-8")
    except OSError:  # laid out otherwise: importing it registers the defaults with dask
        import distributed  # noqa: F401

        return {}
    return dict((yaml.safe_load(text) or {}).get("distributed") or {})

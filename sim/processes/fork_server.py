"""The fork server that the embedded cluster's workers are forked from.

With multiprocessing's `forkserver` start method, a server process started once
imports the modules it is told to preload, then forks every new process from
itself. Here it preloads `sim.processes.worker_boot` (dask, the simulator, the compiled
kernels), so each worker starts its first shard with all of that in memory. The
loading is done once, by one process, while the command that starts the cluster
does its own start-up beside it.

A command that starts the server stops it when it is done (`own_fork_server`), so
it leaves no process behind, and the CPU time of its workers (the server reaps
them) counts as the command's own children's, which is what `time` and the
benchmarks read. A library caller keeps the server for the life of its process,
and the workers of its next cluster fork from it at once. It is the process's
own fork server: whatever else in that process starts processes that way forks
them from it too.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from multiprocessing import forkserver
from pathlib import Path
from typing import Any

#: the module the fork server loads before it forks a worker
WORKER_BOOT = "sim.processes.worker_boot"


def start_fork_server() -> bool:
    """Start the fork server with `sim.processes.worker_boot` preloaded. Returns False where this
    platform has no fork server (Windows), and the workers are then spawned.

    Returns at once: the server loads while the caller goes on. A second call finds it
    running. So does a call in a process whose fork server someone else started, whose
    workers then load what they need on their first task."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return False
    if fork_server_running():
        return True
    forkserver.set_forkserver_preload([WORKER_BOOT])  # read only when the server starts
    try:
        with _this_import_path():
            forkserver.ensure_running()
    except OSError:  # no server: the workers are spawned
        return False
    return True


@contextmanager
def _this_import_path() -> Iterator[None]:
    """The server imports `sim` from where this process does. multiprocessing hands it this
    process's search path, which Python 3.11's fork server leaves unused; and as a
    `python -c` it would search the current directory first, where another `sim` may
    be. So it starts with this process's search path, and without the current directory
    in front; both only in the environment it starts with."""
    saved = {name: os.environ.get(name) for name in ("PYTHONPATH", "PYTHONSAFEPATH")}
    os.environ["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p or os.curdir) for p in sys.path)
    os.environ["PYTHONSAFEPATH"] = "1"
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def stop_fork_server() -> None:
    """Stop the fork server and wait for it to exit, along with the workers it reaped.

    Stopped, not asked: a server still loading (a command that failed on its file) would
    finish loading first, and one whose worker lingers would wait for it."""
    server = forkserver._forkserver
    pid = getattr(server, "_forkserver_pid", None)
    stop = getattr(server, "_stop", None)  # multiprocessing's own (its tests use it)
    if pid is None or stop is None:
        return
    with suppress(OSError):
        os.kill(pid, signal.SIGTERM)
    with suppress(OSError):  # gone already: there is nothing left to stop
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
    The workers keep freed memory instead (`sim.processes.worker_process`).

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

"""What a worker of the embedded cluster needs before its first shard, loaded once for all.

The embedded cluster's workers are forked from multiprocessing's fork server
(`sim.processes.cluster`), which imports this module before it forks any: dask, the
simulator, the API's route handlers (scripted calls go through them), and a small
run with every feature whose code loads on first use (`sim.processes.preload`), which brings
the compiled kernels in from their on-disk cache. Each worker is a copy of that
process and starts its first shard with all of it in memory.

Spawned afresh instead, each worker spent 2 to 4 s of its first shard on the same
loading: the same seconds on every worker, so a serial part of every sharded run,
and on two CPUs done beside the client's own start-up.
"""

from __future__ import annotations

import gc
import os
import signal

# a Ctrl-C in the terminal while this loads is the command's to handle: the server only
# ignores it once loaded, and would print a traceback; its workers get the handler back
_interrupt = signal.signal(signal.SIGINT, signal.SIG_IGN)

from sim.processes.allocator import keep_freed_memory  # noqa: E402

keep_freed_memory()  # while this process has one thread: its workers' threads share one arena

from sim.processes.fork_server import worker_environ  # noqa: E402

os.environ.update(worker_environ())  # before numpy loads: its threads are counted then

import distributed  # noqa: E402, F401  (what the worker process itself runs on)

from sim.processes.preload import warm_up  # noqa: E402

try:
    warm_up()
except Exception:  # noqa: S110 - only a head start: a worker loads what it lacks on first use,
    pass           # while an error here would stop the fork server and every worker with it
# what is loaded now lives as long as the workers: the collector of each need not walk it,
# and leaving it out of the collector's passes keeps its pages shared with the server
gc.collect()
gc.freeze()
signal.signal(signal.SIGINT, _interrupt)

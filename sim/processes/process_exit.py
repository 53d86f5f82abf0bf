"""`sim` exits without a last collection of its heap.

At exit Python's cycle collector walks every object still alive: after a run of a
big fleet (its rows, frames, pandas, matplotlib, numba) 0.4 s that `sim` spends
after its last line, on objects that die with the process anyway. They are frozen
out of those passes once the interpreter exits (our files are closed by then: the
collector would have nothing of ours to finalize). The embedded cluster's workers
do the same (`sim.processes.worker_process`).
"""

from __future__ import annotations

import atexit
import gc


def exit_without_collecting() -> None:
    """Freeze the heap out of the collector at exit; once, however often it is called."""
    atexit.unregister(gc.freeze)
    atexit.register(gc.freeze)


__all__ = ["exit_without_collecting"]

"""`sim` in a child process that stops after a chosen result file and waits for Ctrl-C.

    python interrupted_run.py MARKER FILE sim-arguments...

The real command line runs; when the results writer reports FILE written (into
its staging directory), this creates MARKER and waits. The test sends SIGINT
once MARKER exists, so the interrupt lands at that point and nowhere else.
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

import sim.metrics.results_dir
from sim.cli import main

marker, pause_after, argv = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
write_run = sim.metrics.results_dir.write_run


def paused_write_run(*args, progress=None, **kwargs):
    def step(done: int, total: int, name: str) -> None:
        if progress is not None:
            progress(done, total, name)
        if name == pause_after:
            marker.write_text(f"{done}/{total}\n", encoding="utf-8")
            time.sleep(600)  # until the test's SIGINT

    return write_run(*args, progress=step, **kwargs)


sim.metrics.results_dir.write_run = paused_write_run
# as a terminal's Ctrl-C: the default handler, even if this process started with SIGINT ignored
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.exit(main(argv))

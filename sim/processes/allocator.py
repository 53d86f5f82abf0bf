"""`sim` keeps memory it frees for the arrays it allocates next.

A run allocates and frees numpy arrays all along (a compute's sessions, its rows, a
project's tables). glibc's allocator hands the free memory at the top of its heap
back to the system as soon as there is a little of it, and maps each block above a
threshold (128 KiB at first) on its own, unmapped again when freed. Either way the
next arrays cost fresh pages: each one a page fault, zeroed by the kernel.

`keep_freed_memory` sets three of its parameters:
- a top pad of 256 MiB: the heap keeps that much free memory when it trims;
- a mapping threshold of 32 MiB (the ceiling of glibc's own adaptive threshold):
  blocks below it come from the heap;
- one arena for every thread. glibc gives threads other than the first heaps of
  their own, and those it never trims nor gives back with a pad larger than one
  of them (64 MiB): a dask worker, which runs its shards on a thread, would keep
  the peak of its largest shard for good. In the one arena, what is kept is at
  most the pad. Threads that allocated before the call keep their own arenas, so
  `sim` sets it first thing in a process.

Setting the pad or the threshold fixes the other where it stands, so they go
together. On the realistic fleet (10,000 computes x 30 days):
- one process: the pad alone took the run from 1.7 M page faults and 6.5 s of
  system time to 0.65 M and 2.8 s; with the threshold too, 0.25 M and 1.8 s;
- the embedded cluster's workers, which had been left with glibc's adaptive
  thresholds (0.63 M page faults and 2.4 s of system time each, for half of the fleet
  each on two workers): 0.06 M and 0.6 s, with 10 % less user time besides; peak
  memory 0.35 GB each against 0.36 GB.

`sim` sets them in its own process (called by the command line, so `sim serve` too)
and in the embedded cluster's fork server before it forks any worker
(`sim.processes.worker_boot`); a worker spawned instead sets them on start
(`sim.processes.worker_process`), by when dask's threads have arenas of their own. A library
caller's process is left as it is; elsewhere than glibc (macOS, musl) nothing is set.
"""

from __future__ import annotations

import ctypes
import sys

TOP_PAD = 256 << 20  # bytes the heap keeps beyond what is in use, when it grows or trims
MMAP_THRESHOLD = 32 << 20  # blocks from this size up are mapped on their own

# mallopt's parameter numbers (malloc.h)
_M_TOP_PAD = -2
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8


def keep_freed_memory() -> bool:
    """Set the three in this process; True when glibc took them."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # a C library without mallopt
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    if mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) != 1:  # (refused on 32-bit systems)
        return False  # the pad alone would leave every block above 128 KiB mapped anew
    arenas = mallopt(_M_ARENA_MAX, 1) == 1
    return mallopt(_M_TOP_PAD, TOP_PAD) == 1 and arenas


__all__ = ["keep_freed_memory"]

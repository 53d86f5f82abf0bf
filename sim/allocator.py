"""`sim` keeps memory it frees for the arrays it allocates next.

A run allocates and frees numpy arrays all along (a compute's sessions, its rows, a
project's tables). glibc's allocator hands the free memory at the top of its heap
back to the system as soon as there is a little of it, and the next arrays then cost
fresh pages: each one a page fault, zeroed by the kernel. With a top pad of 256 MiB
it keeps that much when it trims. On the realistic fleet (10,000 computes x 30 days,
one process) that took the run from 1.7 M page faults and 6.5 s of system time to
0.65 M and 2.8 s, the run 4 to 15 % shorter in four pairs of runs, its peak memory
4 % higher.

`sim` sets the pad in its own process (`keep_freed_memory`, called by the command
line, so `sim serve` too). Not in the workers of the cluster it embeds: there
glibc's adaptive thresholds (setting the pad fixes them) did better, 0.6-0.8 M page
faults for the same fleet on one worker against 1.8 M with the pad; they only need
dask's trimming threshold taken away (`sim.cluster`). A library caller's process is
left as it is; elsewhere than glibc (macOS, musl) nothing is set.
"""

from __future__ import annotations

import ctypes
import sys

TOP_PAD = 256 << 20  # bytes the heap keeps beyond what is in use, when it grows or trims

_M_TOP_PAD = -2  # mallopt's parameter number (malloc.h)


def keep_freed_memory() -> bool:
    """Set the pad in this process; True when glibc took it."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # a C library without mallopt
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return mallopt(_M_TOP_PAD, TOP_PAD) == 1


__all__ = ["keep_freed_memory"]

"""Memory a served world has freed, given back to the system: after its daily fold, and
after the journal commits a snapshot's bytes.

Each simulated day a served world moves its ended operations into columns that
grow by a day's worth and drops a day's objects (`sim.engine.history_fold`).
CPython frees them, but glibc keeps the freed pages of its heap for the process:
the holes the growing columns leave are too small to reuse, so the resident
size crept up by some 4 MiB a simulated day for 200 computes while the live
state stayed flat. `malloc_trim(0)` hands those pages back (about 1 ms); where
there is no glibc it does nothing. A snapshot's bytes (tens of MB through the pipe,
sealed, committed) would otherwise stay in the heap too, a snapshot's worth each time.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from functools import cache


@cache
def _trim():  # noqa: ANN202 - a C function or None
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        return None


def give_back() -> bool:
    """Return the heap's free pages to the system; False where that cannot be done."""
    trim = _trim()
    if trim is None:
        return False
    trim(0)
    return True

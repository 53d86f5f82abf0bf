"""A branch's history: the points in time (and log sequence numbers) one can branch or
restore from, and when a branch may be set to expire.

The simulator writes no WAL, so a log sequence number (LSN) is a position derived
from time: `WAL_BYTES_PER_S` bytes of WAL a second since the project was created,
from `FIRST_LSN`. Both directions are exact, so an LSN the API shows (a branch's
`parent_lsn`) names the same instant when sent back.
"""

from __future__ import annotations

import re

FIRST_LSN = 0x1_6B_37_48  # where a new timeline's WAL starts (as the real service's do)
WAL_BYTES_PER_S = 1024  # of the simulated WAL: a position per ~1 ms
MAX_EXPIRY_S = 30 * 86_400  # expires_at: at most 30 days ahead (the real service's limit)
_LSN = re.compile(r"^([0-9A-Fa-f]{1,8})/([0-9A-Fa-f]{1,8})$")


def lsn_text(position: int) -> str:
    return f"{position >> 32:X}/{position & 0xFFFFFFFF:X}"


def lsn_at(project_created_s: float, t: float) -> str:
    """The LSN of instant `t` on a project created at `project_created_s`."""
    return lsn_text(FIRST_LSN + int(round((t - project_created_s) * WAL_BYTES_PER_S)))


def time_of_lsn(project_created_s: float, text: str) -> float | None:
    """The instant an LSN names (None: not an LSN)."""
    m = _LSN.match(text)
    if m is None:
        return None
    position = (int(m.group(1), 16) << 32) | int(m.group(2), 16)
    return project_created_s + (position - FIRST_LSN) / WAL_BYTES_PER_S

"""The compute kernel's layout: what its codes mean and where each piece of its state sits.

The kernel (`sim.kernel.physics`) works on plain arrays: a float and an integer state
vector, a parameter vector and output arrays. These are the positions in them and the
codes it writes, shared by the kernel and by the code that fills and reads its arrays
(`sim.kernel.physics_run`).
"""

from __future__ import annotations

# what a compute lane runs
START, SUSPEND, CHECK = 0, 1, 2
# operation status while simulated (mapped to the API's words after)
SCHEDULING, RUNNING, FAILED, FINISHED = 0, 1, 2, 3
# connection outcomes
OK, REFUSED_TOO_MANY, REFUSED_POOLER_FULL, QUEUE_TIMEOUT, DISK_FULL = 0, 1, 2, 3, 4
# wake causes
BY_CONNECTION, BY_CHECK = 0, 1
# compute state
IDLE, ACTIVE, NONE = 0, 1, -1
# distribution kinds of operation durations
ZERO, FIXED, EXPONENTIAL, LOGNORMAL = 0, 1, 2, 3

# float state
(NOW, CU, CPU_LOAD, MEM_LOAD, BUSY_UNTIL, QUIET_SINCE, ARMED_AT, FIRE_T, RESIZE_AT,
 WAKE_AT, IV_CU, IV_START, ACTIVE_S, CU_S, QUEUE_WAIT_S, OP_EVT_T, TICK_T,
 FIRE_SCHED, OP_SCHED, TICK_SCHED, STALE_T, STALE_SCHED, CUR_SCHED, COUNT_FROM) = range(24)
N_FLOATS = 24
# integer state
(CUR, PENDING, IV_STATE, NEXT_ARR, WAKE_CAUSE, SESSIONS, REFUSED, QUEUED, QUEUE_TIMEOUTS,
 DISK_FULLS, COLD_STARTS, SUSPENDS, PEAK, N_REC, N_OPS, N_IV, N_WAKE, LANE_HEAD, LANE_TAIL,
 OP_EVT_KIND, N_SPAN, ON, TIE, WAITING, N_OPEN, N_SERVER, N_CLIENT, N_TEMP, N_LOAD,
 N_LOAD_START, N_LEAVE, GATE_NEXT, POOLER_FULLS) = range(33)
N_INTS = 33
# what the compute lane's pending event is (i[OP_EVT_KIND])
NO_EVENT, ATTEMPT_DONE, RETRY, GATE_OPEN = 0, 1, 2, 3
# the heaps: rows of H, each item a row of three floats compared as Python compares tuples
# (open, server and client ends are (end, 0, 0); temporary files (end, bytes, start); load
# (end, cpu, memory); load of queued sessions (start, cpu, memory); pooled clients that
# leave without a session (when, 0, 0)); the item count of heap h is i[N_OPEN + h]
OPEN_H, SERVER_H, CLIENT_H, TEMP_H, LOAD_H, LOAD_START_H, LEAVE_H = range(7)
N_HEAPS = 7
# parameters
(P_A0, P_UNTIL, P_TIMEOUT, P_MAX_CONN, P_POOLED, P_POOL_SIZE, P_QUEUE_TIMEOUT, P_DISK,
 P_MIN_CU, P_MAX_CU, P_FIXED, P_TCPU, P_RAM_TMEM, P_DELAY, P_FAIL_RATE, P_BACKOFF,
 P_POOLER_MAX, P_EVERY, P_TICK0, P_RESUME, P_OPEN_END) = range(21)
N_PARAMS = 21


class Out:
    """The kernel's output: what it returns, in order; a tuple names the rows of one
    array that holds several outputs of one length and kind."""

    RETURNED: tuple[str | tuple[str, ...], ...] = (
        "f", "i", "rec_idx", "rec_wait", "rec_outcome", "rec_cold",
        ("op_created", "op_updated", "op_finished", "op_sched", "wk_at", "wk_wait", "sp_start",
         "sp_end"),
        ("op_action", "op_status", "wk_cause"), "op_failures",
        ("iv_cu", "iv_start", "iv_end"), "iv_state",
        "open_f", "server_f", "client_f", "temp_f", "load_f", "load_start_f", "leave_f")

    @staticmethod
    def named(returned: tuple) -> dict:
        """Every output by name (a packed one as a view of its row)."""
        out = {}
        for names, value in zip(Out.RETURNED, returned, strict=True):
            if isinstance(names, str):
                out[names] = value
            else:
                out.update(zip(names, value, strict=True))
        return out

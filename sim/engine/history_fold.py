"""A served world keeps what the API can be asked about, and folds the run report's history.

`sim run` reads the recorder's rows at the end (state intervals, wakes, connection
rows) to write its report. A world served by `sim serve` is never asked for them:
the API answers from the computes' counters (active seconds, CU-seconds, cold
starts...) and the operations. Kept as rows they would grow with every simulated
day, and so would memory, snapshots and restarts. So a served world folds them
once a simulated day (a SimPy event of its own, so the original, a restored and a
replayed world fold at the same instants and stay equal):

- state intervals that have ended go: their CU-seconds and active seconds per hour
  are in the usage ledger already (`sim.engine.usage`, fed as each interval closes);
- wakes go (each compute counts its cold starts);
- connection rows of sessions that have ended go (those still open stay: a cut
  rewrites its row); kept when the compute kernel has added row blocks after them;
- timers that can no longer do anything (a detach or archive timer of a project or
  branch that has been active since it was set: it would find `idle_since` changed
  and return) are taken off the event heap. The rest keep their place, so events
  fire in the same order as they would have;
- operations that have ended move to columns of their project (`sim.engine.past_operations`),
  where they are still listed and read as before, for a week (`KEPT_S`) from their
  creation; older ones go, but for those that made a branch;
- the usage ledger's hours older than `HOURLY_S` (8 days) become one cell a UTC day
  (the consumption history reaches back 168 hours by the hour, further only by the
  day or month, which add the same seconds).

The computes' counters stay.
"""

from __future__ import annotations

import heapq
import math
from typing import TYPE_CHECKING, Any

from sim.engine.clock import to_us
from sim.engine.past_operations import KEPT_S, PastOperations
from sim.engine.usage import HOURLY_S

if TYPE_CHECKING:
    from sim.engine.control_plane import ControlPlane
    from sim.engine.model import Project

DAY_S = 86_400.0
#: the timers a quiet project or branch sets, by the qualified name of their code
_TIMER = "Lifecycle._after.<locals>.<lambda>"
_QUIET = {"Lifecycle.project_went_quiet.<locals>.<lambda>": "project",
          "Lifecycle.branch_went_quiet.<locals>.<lambda>": "branch"}


class HistoryFold:
    """The daily fold of one served control plane (`start` it once, when it is built)."""

    def __init__(self, cp: ControlPlane, every_s: float = DAY_S):
        self.cp = cp
        self.every_s = float(every_s)
        self.folds = 0
        self.last_at: float | None = None  # the instant of the latest fold

    def start(self) -> None:
        self.cp.history_fold = self
        self._arm()

    def _arm(self) -> None:
        env = self.cp.env
        due = (math.floor(env.now / self.every_s) + 1) * self.every_s
        env.timeout(due - env.now).callbacks.append(self.due)

    def due(self, _event: Any) -> None:
        self.fold()
        self._arm()

    def fold(self) -> None:
        cp = self.cp
        rec = cp.recorder
        rec.intervals = type(rec.intervals)(rec.intervals.row_type)
        rec.wakes = type(rec.wakes)(rec.wakes.row_type)
        if not rec.connection_blocks:
            self._fold_connections()
        self._drop_spent_timers()
        self._fold_operations()
        if cp.usage is not None:
            cp.usage.fold_days(cp.env.now - HOURLY_S)
        self.folds += 1

    def check_restored(self) -> None:
        """From a snapshot (a file): a fold's own figures, and what each project keeps of its
        past operations (a value of another kind would fail the first call that reads it)."""
        if not (type(self.folds) is int and type(self.every_s) is float and self.every_s > 0
                and (self.last_at is None
                     or (type(self.last_at) is float and math.isfinite(self.last_at)))):
            raise ValueError("a history fold of no instant")
        for p in self.cp.projects.values():
            past = p.past_operations
            if past is None:
                continue
            if type(past) is not PastOperations:
                raise ValueError("a project whose past operations are not past operations")
            if len(past) and p.operations and past.created_us[-1] >= p.operations[0].created_us:
                raise ValueError("a project whose past operations are not its oldest")

    def _fold_operations(self) -> None:
        self.last_at = float(self.cp.env.now)
        for project in self.cp.projects.values():
            self.fold_operations(project)

    def fold_operations(self, project: Project) -> None:
        """The project's operations that had ended by the latest fold, oldest first up to one
        that had not, become past operations (columns); those created more than
        `KEPT_S` before the fold go (`sim.engine.past_operations`).

        Also called when the compute kernel gives a project back (`sim.api.kernel_advance`):
        the operations it made before a fold it ran past are filed only then, and go where
        that fold would have put them (those that had ended by its instant), so where the
        clock stopped changes nothing."""
        if self.last_at is None:
            return
        ops = project.operations
        at = self.last_at
        n = 0
        # ended by the fold's instant (`updated_at`: when it ended), as the fold itself saw it
        while n < len(ops) and ops[n].done and ops[n].updated_at <= at:
            n += 1
        past = project.past_operations
        if n:
            if past is None:
                past = project.past_operations = PastOperations()
            past.add(ops[:n])
            index = self.cp.operations
            for op in ops[:n]:
                index.pop(op.id, None)
            del ops[:n]
        if past is not None:
            past.drop_before(to_us(self.last_at - KEPT_S))

    def _fold_connections(self) -> None:
        cp = self.cp
        runtimes = [c.runtime for c in cp.computes.values() if c.runtime is not None]
        rows, now = cp.recorder.connections, cp.env.now
        for rt in runtimes:  # a cut rewrites only the rows of sessions still open
            rt.open_records = [i for i in rt.open_records
                               if rows[i].arrival_s + rows[i].wait_s + rows[i].duration_s > now]
        keep = sorted({i for rt in runtimes for i in rt.open_records})
        at = {old: new for new, old in enumerate(keep)}
        cp.recorder.connections = [rows[i] for i in keep]
        for rt in runtimes:
            rt.open_records = [at[i] for i in rt.open_records]

    def _drop_spent_timers(self) -> None:
        queue = self.cp.env._queue  # noqa: SLF001 - SimPy keeps its heap there
        held = self.cp.kernel_storage
        kept = [item for item in queue if not _spent(item[3], held)]
        if len(kept) != len(queue):
            heapq.heapify(kept)  # (time, priority, event id): the same order as before
            queue[:] = kept


def _cells(fn: Any) -> dict[str, Any]:
    return dict(zip(fn.__code__.co_freevars, (c.cell_contents for c in fn.__closure__ or ()),
                    strict=True))


def _spent(event: Any, held: set[str]) -> bool:
    """A detach or archive timer whose project or branch has been active since it was set.
    Not one of a project the kernel holds (`held`): its idle clocks read None while it does
    (the kernel's replay keeps them), and the engine needs the timer when it takes the
    project back."""
    callbacks = event.callbacks
    if not callbacks or len(callbacks) != 1:
        return False
    timer = callbacks[0]
    if getattr(timer, "__qualname__", None) != _TIMER:
        return False
    fn = _cells(timer).get("fn")
    what = _QUIET.get(getattr(fn, "__qualname__", ""))
    if what is None:
        return False
    cells = _cells(fn)
    target, since = cells.get(what), cells.get("now")
    if target is None:
        return False
    project_id = target.id if what == "project" else target.project_id
    return project_id not in held and target.idle_since != since

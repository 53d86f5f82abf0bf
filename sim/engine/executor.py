"""Operations: created, queued in a lane, run for a drawn duration, failed and retried.

A lane is the resource an operation works on (a compute, or a project's
storage). Operations of one lane run one after another; an operation may also
wait for operations of other lanes (`after`), as a compute's first start waits
for its project's timeline. Status moves only along the table in
`sim.rules.states` (checked on every move).

Scheduling uses SimPy timeouts with callbacks rather than one generator process
per operation: starting an operation must be visible synchronously, because
the API answers the request that created it at the same simulated instant.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import simpy

from sim.engine.config import EngineConfig
from sim.engine.model import Operation
from sim.engine.streams import Streams
from sim.rules.operations import Action
from sim.rules.states import OperationStatus, check_operation_move

Hook = Callable[[Operation], None]

S = OperationStatus


@dataclass(slots=True, eq=False)
class Task:
    op: Operation
    lane: str
    rng_name: str
    after: list[Operation]
    on_start: Hook | None = None
    on_finish: Hook | None = None
    #: overrides the configured duration (e.g. a start that also reattaches storage)
    duration_s: float | None = None
    #: shown as running while it still waits for `after` (a compute's start at its creation)
    running_while_waiting: bool = False
    waiters: list[Task] = field(default_factory=list)


class Executor:
    def __init__(self, env: simpy.Environment, config: EngineConfig, streams: Streams):
        self.env = env
        self.config = config
        self.streams = streams
        self._lanes: dict[str, deque[Task]] = {}
        self._tasks: dict[str, Task] = {}  # op id -> task, while not terminal
        self.failure_rate = config.operation_failure_rate
        self.retry_backoff_s = config.retry_backoff_s

    # -- queries -----------------------------------------------------------
    def lane_busy(self, lane: str) -> bool:
        return bool(self._lanes.get(lane))

    def pending(self, lane: str) -> list[Operation]:
        return [t.op for t in self._lanes.get(lane, ())]

    # -- submitting --------------------------------------------------------
    def submit(
        self,
        op: Operation,
        lane: str,
        rng_name: str,
        *,
        after: Iterable[Operation] = (),
        on_start: Hook | None = None,
        on_finish: Hook | None = None,
        duration_s: float | None = None,
        running_while_waiting: bool = False,
    ) -> Operation:
        task = Task(op, lane, rng_name, [a for a in after if not a.done], on_start, on_finish,
                    duration_s, running_while_waiting)
        self._tasks[op.id] = task
        queue = self._lanes.setdefault(lane, deque())
        queue.append(task)
        if len(queue) == 1:
            self._try_start(task)
        return op

    def _move(self, op: Operation, status: S) -> None:
        check_operation_move(op.status, status.value)
        op.status = status.value
        op.updated_at = self.env.now

    def _try_start(self, task: Task) -> None:
        pending = [a for a in task.after if not a.done]
        if pending and not task.running_while_waiting:
            self._tasks[pending[0].id].waiters.append(task)
            return
        op = task.op
        if op.status == S.SCHEDULING.value:
            self._move(op, S.RUNNING)
            op.started_at = self.env.now
            if task.on_start is not None:
                task.on_start(op)
        if pending:  # running already; its work begins when the last prerequisite ends
            self._tasks[pending[0].id].waiters.append(task)
            return
        self._attempt(task)

    def _duration(self, task: Task) -> float:
        if task.duration_s is not None:
            return task.duration_s
        dist = self.config.duration_of(Action(task.op.action))
        return dist.sample_one(self.streams.get(task.rng_name)) if not dist.is_zero else 0.0

    def _attempt(self, task: Task) -> None:
        ev = self.env.timeout(self._duration(task))
        ev.callbacks.append(lambda _ev: self._attempt_done(task))

    def _attempt_done(self, task: Task) -> None:
        op = task.op
        if op.done:  # cancelled meanwhile
            return
        if self.failure_rate > 0 and self.streams.get(task.rng_name).random() < self.failure_rate:
            self._move(op, S.FAILED)
            op.failures_count += 1
            op.error = f"{op.action} attempt {op.failures_count} failed (injected fault)"
            op.retry_at = self.env.now + self.retry_backoff_s
            ev = self.env.timeout(self.retry_backoff_s)
            ev.callbacks.append(lambda _ev: self._retry(task))
            return
        self._move(op, S.FINISHED)
        op.finished_at = self.env.now
        op.retry_at = None
        self._finish(task)
        if task.on_finish is not None:
            task.on_finish(op)

    def _retry(self, task: Task) -> None:
        if task.op.done:
            return
        self._move(task.op, S.RUNNING)
        task.op.retry_at = None
        self._attempt(task)

    def _finish(self, task: Task) -> None:
        """Free the lane and start whatever was waiting on this operation."""
        self._tasks.pop(task.op.id, None)
        queue = self._lanes[task.lane]
        was_head = bool(queue) and queue[0] is task
        if was_head:
            queue.popleft()
        elif task in queue:
            queue.remove(task)  # skipped while queued: the head runs on untouched
        if not queue:
            del self._lanes[task.lane]
        elif was_head:
            self._try_start(queue[0])
        for waiter in task.waiters:
            if self._lanes.get(waiter.lane) and self._lanes[waiter.lane][0] is waiter:
                self._try_start(waiter)

    # -- ending early ------------------------------------------------------
    def cancel(self, op: Operation) -> None:
        """cancelling -> cancelled, for an operation that has not ended."""
        task = self._tasks.get(op.id)
        if task is None or op.done:
            return
        self._move(op, S.CANCELLING)
        self._move(op, S.CANCELLED)
        op.finished_at = self.env.now
        self._finish(task)

    def skip(self, op: Operation) -> bool:
        """A still-scheduled operation that something newer made pointless."""
        task = self._tasks.get(op.id)
        if task is None or op.status != S.SCHEDULING.value:
            return False
        self._move(op, S.SKIPPED)
        op.finished_at = self.env.now
        self._finish(task)
        return True

    def cancel_lane(self, lane: str) -> None:
        for task in list(self._lanes.get(lane, ())):
            self.cancel(task.op)

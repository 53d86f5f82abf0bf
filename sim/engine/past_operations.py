"""A served world's finished operations of past days, as columns, kept for a week.

A compute that wakes and sleeps makes two operations a cycle: the 200 computes
of a busy fleet make about 33,000 a day. As objects (some 450 bytes each, and
an entry each in a snapshot) they made a served world grow by a dozen MiB a
day, and its snapshots and restarts with it. So once a simulated day (the
world's history fold, `sim.engine.history_fold`) each project's operations that
have ended (finished, skipped, cancelled) move here, from the oldest on up to
the first one still underway, as columns (about 70 bytes an operation, and one
array each in a snapshot); and those created more than `KEPT_S` ago are dropped,
but for those that made a branch (create_timeline, create_branch: one a branch,
and a branch's answer reads when its creation ended).

The API reads them as it reads the rest (`ControlPlane.list_operations`,
`get_operation`): the same fields, the same pages, built into an `Operation`
only when asked. An operation that has ended never changes again, so a copy
answers as the original would. Two fields no answer shows are not kept:
`started_at` and `retry_at` (a retry instant means nothing once it has ended).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from sim.rules.operations import Action
from sim.rules.states import OperationStatus, is_terminal

if TYPE_CHECKING:
    from sim.engine.model import Operation

DAY_S = 86_400.0
#: how long a served world keeps an operation that has ended (from its creation)
KEPT_S = 7 * DAY_S
#: the codes of actions and statuses in the columns: this module's own table, so a code in
#: a snapshot means what it meant when written (a changed table is a changed module, whose
#: snapshots are read as another version's); a new action is added at the end
_ACTIONS = ("apply_config", "apply_storage_config", "check_availability", "create_branch",
            "create_timeline", "delete_tenant", "start_compute", "suspend_compute",
            "tenant_attach", "tenant_detach", "tenant_reattach", "timeline_archive",
            "timeline_unarchive")
_STATUSES = ("finished", "skipped", "cancelled")  # the statuses an ended operation has
assert set(_ACTIONS) == {a.value for a in Action}, "every action needs a code here"
assert set(_STATUSES) == {s.value for s in OperationStatus if is_terminal(s.value)}
#: the characters of an operation id (a UUID)
_ID_BYTES = np.frombuffer(b"0123456789abcdef-", np.uint8)
#: stamps a clock can print (the years 1970 to 2200)
_MAX_US = 7_258_118_400 * 1_000_000
_ACTION_CODE = {name: code for code, name in enumerate(_ACTIONS)}
_STATUS_CODE = {name: code for code, name in enumerate(_STATUSES)}
_NONE = -1  # no branch, no compute
_MAKES_A_BRANCH = np.array([_ACTION_CODE[Action.CREATE_TIMELINE.value],
                            _ACTION_CODE[Action.CREATE_BRANCH.value]], "u1")


def _empty(dtype: str) -> np.ndarray:
    return np.empty(0, dtype)


@dataclass(eq=False)
class PastOperations:
    """One project's ended operations, oldest first (creation stamps strictly increasing)."""

    ids: np.ndarray = field(default_factory=lambda: _empty("S36"))
    branch: np.ndarray = field(default_factory=lambda: _empty("i4"))  # index in `names`
    endpoint: np.ndarray = field(default_factory=lambda: _empty("i4"))  # index in `names`
    action: np.ndarray = field(default_factory=lambda: _empty("u1"))
    status: np.ndarray = field(default_factory=lambda: _empty("u1"))
    failures: np.ndarray = field(default_factory=lambda: _empty("i4"))
    created_us: np.ndarray = field(default_factory=lambda: _empty("i8"))
    updated_at: np.ndarray = field(default_factory=lambda: _empty("f8"))
    finished_at: np.ndarray = field(default_factory=lambda: _empty("f8"))  # NaN: none
    #: the branch and compute ids its operations name, each once
    names: list[str] = field(default_factory=list)
    #: creation stamp -> error text, for the few that failed before they ended
    errors: dict[int, str] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.created_us)

    # -- writing (the history fold)
    def add(self, ops: list[Operation]) -> None:
        """Append ended operations, in creation order, all newer than those held."""
        if not ops:
            return
        at = {name: k for k, name in enumerate(self.names)}

        def code(name: str | None) -> int:
            if name is None:
                return _NONE
            k = at.get(name)
            if k is None:
                k = at[name] = len(self.names)
                self.names.append(name)
            return k

        n = len(ops)
        columns = {
            "ids": np.array([op.id for op in ops], "S36"),
            "branch": np.fromiter((code(op.branch_id) for op in ops), "i4", n),
            "endpoint": np.fromiter((code(op.endpoint_id) for op in ops), "i4", n),
            "action": np.fromiter((_ACTION_CODE[op.action] for op in ops), "u1", n),
            "status": np.fromiter((_STATUS_CODE[op.status] for op in ops), "u1", n),
            "failures": np.fromiter((op.failures_count for op in ops), "i4", n),
            "created_us": np.fromiter((op.created_us for op in ops), "i8", n),
            "updated_at": np.fromiter((op.updated_at for op in ops), "f8", n),
            "finished_at": np.fromiter((np.nan if op.finished_at is None else op.finished_at
                                        for op in ops), "f8", n),
        }
        for name, column in columns.items():
            setattr(self, name, np.concatenate((getattr(self, name), column)))
        self.errors.update((op.created_us, op.error) for op in ops if op.error is not None)

    def drop_before(self, us: int) -> int:
        """Drop the operations created before stamp `us`, but for those that made a branch
        (a branch's answer reads when its creation ended); how many went."""
        cut = int(np.searchsorted(self.created_us, us))
        gone = np.ones(len(self), bool)
        gone[cut:] = False
        gone &= ~np.isin(self.action, _MAKES_A_BRANCH)
        dropped = int(gone.sum())
        if dropped:
            kept = ~gone
            for name in ("ids", "branch", "endpoint", "action", "status", "failures",
                         "created_us", "updated_at", "finished_at"):
                setattr(self, name, getattr(self, name)[kept])
            if self.errors:
                stamps = set(self.created_us.tolist())
                self.errors = {k: v for k, v in self.errors.items() if k in stamps}
        return dropped

    # -- reading (the API)
    def count_before(self, us: int) -> int:
        """How many were created before stamp `us` (a page's end)."""
        return int(np.searchsorted(self.created_us, us))

    def find(self, operation_id: str) -> int | None:
        if len(operation_id) != 36 or not operation_id.isascii():
            return None
        hit = np.flatnonzero(self.ids == operation_id.encode("ascii"))
        return int(hit[0]) if len(hit) else None

    def operation(self, k: int, project_id: str) -> Operation:
        """Operation k, built as it was (but for `started_at` and `retry_at`)."""
        from sim.engine.model import Operation  # the model names this class for its type only

        names = self.names
        branch, endpoint = int(self.branch[k]), int(self.endpoint[k])
        finished = float(self.finished_at[k])
        created_us = int(self.created_us[k])
        return Operation(
            id=self.ids[k].decode("ascii"), project_id=project_id,
            branch_id=None if branch == _NONE else names[branch],
            endpoint_id=None if endpoint == _NONE else names[endpoint],
            action=_ACTIONS[int(self.action[k])], status=_STATUSES[int(self.status[k])],
            created_us=created_us, updated_at=float(self.updated_at[k]),
            failures_count=int(self.failures[k]), error=self.errors.get(created_us),
            finished_at=None if finished != finished else finished)

    def operations(self, project_id: str, start: int = 0, end: int | None = None
                   ) -> list[Operation]:
        end = len(self) if end is None else end
        return [self.operation(k, project_id) for k in range(start, end)]

    def check_restored(self) -> None:
        """Refuse columns a snapshot could not have held (read from a file)."""
        n = len(self.created_us)
        dtypes = {"ids": "S36", "branch": "i4", "endpoint": "i4", "action": "u1",
                  "status": "u1", "failures": "i4", "created_us": "i8", "updated_at": "f8",
                  "finished_at": "f8"}
        for name, dtype in dtypes.items():
            column = getattr(self, name)
            if type(column) is not np.ndarray or column.dtype != np.dtype(dtype) \
                    or column.shape != (n,):
                raise ValueError(f"past operations whose {name} is not a column")
        if not all(type(x) is str for x in self.names):
            raise ValueError("past operations naming a branch by no id")
        for column in (self.branch, self.endpoint):
            if n and not (column.min() >= _NONE and column.max() < len(self.names)):
                raise ValueError("past operations naming a branch it does not have")
        if n and (self.action.max() >= len(_ACTIONS) or self.status.max() >= len(_STATUSES)):
            raise ValueError("past operations of unknown actions or not ended")
        if n > 1 and not bool(np.all(np.diff(self.created_us) > 0)):
            raise ValueError("past operations out of order")
        if n and not (0 <= int(self.created_us[0]) and int(self.created_us[-1]) < _MAX_US):
            raise ValueError("past operations created at no instant a clock shows")
        if not (bool(np.all(np.isfinite(self.updated_at)))
                and not bool(np.any(np.isinf(self.finished_at)))):
            raise ValueError("past operations updated at no instant")
        if not bool(np.all(np.isin(self.ids.view(np.uint8), _ID_BYTES))):
            raise ValueError("past operations whose ids are not UUIDs")
        if not all(type(k) is int and type(v) is str for k, v in self.errors.items()):
            raise ValueError("past operations with errors of no operation")

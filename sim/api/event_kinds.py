"""The closed list of what a snapshot may hold that the world later calls.

The engine schedules its SimPy events with callbacks, and keeps hooks on its
operations (what to do when one starts, when it finishes). A snapshot keeps
each of them as one of the kinds below, with its fields (the values its code
closes over, and its defaults) typed: ids, numbers, flags, the world's own
objects of a named class, or another handler of this list. Anything else a
snapshot names (a function of sim not listed, a method outside `METHODS`, a
dunder, a handler given fields of other types) is refused before the world is
served: the file can choose which of these events happen and with which ids and
numbers, never which code runs.

A kind is `module:qualified.name#k` (`sim.api.world_codec` names code that
way: k counts same-named lambdas of a function in source order). A new
callback in the engine that a snapshot meets is refused when the snapshot is
written, naming it: add it here with the types of its fields.

Field types: a class as "module:QualName" (an instance of exactly it); "id"
(a str); "number" (an int or a finite float); "int"; "bool"; "handler" (a
function or bound method of this list); "row" (a dict of str keys: values the
auth schema checks); "?" before a type: or None.
"""

from __future__ import annotations

_CP = "sim.engine.control_plane:ControlPlane"
_COMPUTE = "sim.engine.model:Compute"
_BRANCH = "sim.engine.model:Branch"
_PROJECT = "sim.engine.model:Project"

#: closures and lambdas the world holds, by kind: the types of their fields
EVENT_KINDS: dict[str, dict[str, str]] = {
    # the control plane's own events
    "sim.engine.executor:Executor._attempt.<locals>.<lambda>#0":
        {"self": "sim.engine.executor:Executor", "task": "sim.engine.executor:Task"},
    "sim.engine.executor:Executor._attempt_done.<locals>.<lambda>#0":
        {"self": "sim.engine.executor:Executor", "task": "sim.engine.executor:Task"},
    "sim.engine.control_plane:ControlPlane.submit_compute_op.<locals>.finished#0":
        {"c": _COMPUTE, "on_finish": "?handler"},
    "sim.engine.lifecycle:Lifecycle._after.<locals>.<lambda>#0": {"fn": "handler"},
    "sim.engine.lifecycle:Lifecycle._maybe_archive.<locals>.archiving#0": {"branch": _BRANCH},
    "sim.engine.lifecycle:Lifecycle._maybe_detach.<locals>.detaching#0": {"project": _PROJECT},
    "sim.engine.lifecycle:Lifecycle.branch_went_quiet.<locals>.<lambda>#0":
        {"self": _CP, "branch": _BRANCH, "now": "number"},
    "sim.engine.lifecycle:Lifecycle.project_went_quiet.<locals>.<lambda>#0":
        {"self": _CP, "project": _PROJECT, "now": "number"},
    "sim.engine.lifecycle:Lifecycle.suspend.<locals>.<lambda>#0": {"self": _CP, "c": _COMPUTE},
    "sim.engine.lifecycle:Lifecycle.suspend.<locals>.<lambda>#1": {"self": _CP, "c": _COMPUTE},
    "sim.engine.lifecycle:Lifecycle.wake.<locals>.<lambda>#0": {"self": _CP, "project": _PROJECT},
    "sim.engine.lifecycle:Lifecycle.wake.<locals>.<lambda>#1": {"self": _CP, "branch": _BRANCH},
    "sim.engine.lifecycle:Lifecycle.wake.<locals>.<lambda>#2": {"self": _CP, "c": _COMPUTE},
    "sim.engine.lifecycle:Lifecycle.wake.<locals>.<lambda>#3": {"self": _CP, "c": _COMPUTE},
    "sim.engine.runtime:ComputeRuntime.arm.<locals>.<lambda>#0":
        {"self": "sim.engine.runtime:ComputeRuntime", "at": "number"},
    "sim.engine.auth:ManagedAuth._sync_later.<locals>.sync#0":
        {"self": "sim.engine.auth:ManagedAuth", "integ": "sim.engine.auth_model:Integration",
         "key": "id_pair", "apply": "handler"},
    "sim.engine.auth:ManagedAuth.create_user.<locals>.<lambda>#0": {"row": "row"},
    "sim.engine.auth:ManagedAuth.delete_user.<locals>.<lambda>#0": {"auth_user_id": "id"},
    # the kernel's hand-over of a compute to the engine
    "sim.kernel.handover:give_to_engine.<locals>.<lambda>#0":
        {"rt": "sim.engine.runtime:ComputeRuntime", "at": "number"},
    # a scenario's fleet: its scripted calls, releases and idle clocks around the kernel
    "sim.scenario.handover:schedule_calls.<locals>.<lambda>#0":
        {"cp": _CP, "as_rows": "bool", "back": "dict", "taken": "dict", "workloads": "dict",
         "pid": "id", "first": "bool"},
    "sim.scenario.handover:give_segment.<locals>.<lambda>#0": {"call": "handler"},
    "sim.scenario.handover:idle_timers.<locals>.<lambda>#0":
        {"check": "handler", "target": "project_or_branch", "since": "number"},
    "sim.scenario.runner:schedule_actions.<locals>.<lambda>#0":
        {"run": "handler", "a": "sim.scenario.schema:ActionSpec"},
    "sim.scenario.runner:schedule_actions.<locals>.run#0":
        {"cp": _CP, "dispatch": "handler", "fleet": "sim.scenario.runner:Fleet", "log": "list",
         "named": "?list"},
    "sim.scenario.runner:schedule_releases.<locals>.<lambda>#0": {"cp": _CP, "v": "id"},
}

#: bound methods the world holds: the class of their object -> the methods' names
METHODS: dict[str, frozenset[str]] = {
    _CP: frozenset({"_maybe_archive", "_maybe_detach"}),
    "sim.engine.lifecycle:AvailabilityRound": frozenset({"first", "due"}),
    "sim.engine.history_fold:HistoryFold": frozenset({"due"}),
    "sim.engine.timers:Timer": frozenset({"fire"}),
}

#: functions of a module the world holds as values (a scenario's calls reach the HTTP
#: layer's handlers through this one)
FUNCTIONS: frozenset[str] = frozenset({"sim.api.dispatch:dispatch"})

"""Operation actions of the specification, with the words the console shows."""

from __future__ import annotations

from enum import StrEnum


class Action(StrEnum):
    APPLY_CONFIG = "apply_config"
    APPLY_STORAGE_CONFIG = "apply_storage_config"
    CHECK_AVAILABILITY = "check_availability"
    CREATE_BRANCH = "create_branch"
    CREATE_TIMELINE = "create_timeline"
    DELETE_TENANT = "delete_tenant"
    START_COMPUTE = "start_compute"
    SUSPEND_COMPUTE = "suspend_compute"
    TENANT_ATTACH = "tenant_attach"
    TENANT_DETACH = "tenant_detach"
    TENANT_REATTACH = "tenant_reattach"
    TIMELINE_ARCHIVE = "timeline_archive"
    TIMELINE_UNARCHIVE = "timeline_unarchive"


#: Actions about one compute: their operations carry endpoint_id.
COMPUTE_ACTIONS = frozenset(
    {Action.START_COMPUTE, Action.SUSPEND_COMPUTE, Action.APPLY_CONFIG, Action.CHECK_AVAILABILITY}
)


def action_words(action: str) -> str:
    """Console label of an action: `start_compute` -> `Start compute`."""
    return action.replace("_", " ").capitalize()


#: Console labels of operation statuses (the specification: OK, Scheduling, In progress, Error).
STATUS_LABELS: dict[str, str] = {
    "finished": "OK",
    "scheduling": "Scheduling",
    "running": "In progress",
    "failed": "Error",
    "cancelling": "Cancelling",
    "cancelled": "Cancelled",
    "skipped": "Skipped",
}

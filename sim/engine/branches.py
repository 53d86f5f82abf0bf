"""Branch verbs beyond create and delete: rename, protect, make default, list a page.

None of these touches a compute, so none starts an operation (the real API
answers them with an empty `operations` list too).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sim.engine.lifecycle import is_on
from sim.engine.model import Branch, Operation
from sim.rules.errors import conflict, invalid

if TYPE_CHECKING:
    from sim.engine.control_plane import ControlPlane

NAME_MAX = 256  # project and branch names
BRANCH_SORT_KEYS = ("updated_at", "created_at", "name")
SORT_ORDERS = ("desc", "asc")


def check_name(field: str, name: Any) -> None:
    """A project or branch name."""
    if not isinstance(name, str) or not 1 <= len(name) <= NAME_MAX:
        raise invalid(field, f"must be a string of 1 to {NAME_MAX} characters")


class BranchVerbs:
    def check_branch_name(self: ControlPlane, project_id: str, field: str, name: Any,
                          renaming: Branch | None = None) -> None:
        """A name of 1 to 256 characters that no other branch of the project has."""
        check_name(field, name)
        for b in self.get_project(project_id).branches:
            if self.branches[b].name == name and self.branches[b] is not renaming:
                raise conflict(field, f"project already has a branch named {name!r}")

    def update_branch(self: ControlPlane, project_id: str, branch_id: str, *,
                      name: str | None = None, protected: bool | None = None
                      ) -> tuple[Branch, list[Operation]]:
        branch = self.get_branch(project_id, branch_id)
        if name is not None:
            self.check_branch_name(project_id, "branch.name", name, renaming=branch)
        if protected is not None and not isinstance(protected, bool):
            raise invalid("branch.protected", "must be true or false")
        changed = False
        if name is not None and name != branch.name:
            branch.name, changed = name, True
        if protected is not None and protected != branch.protected:
            branch.protected, changed = protected, True
        if changed:
            branch.updated_at = self.env.now
        return branch, []

    def set_default_branch(self: ControlPlane, project_id: str, branch_id: str
                           ) -> tuple[Branch, list[Operation]]:
        """The branch becomes the project's default; the former default an ordinary one
        (which may now be archived when idle: the default branch never is)."""
        branch = self.get_branch(project_id, branch_id)
        project = self.projects[project_id]
        if branch.default:
            return branch, []
        now = self.env.now
        former = self.branches[project.default_branch_id]
        former.default = False
        former.updated_at = now
        branch.default = True
        branch.updated_at = now
        project.default_branch_id = branch.id
        project.updated_at = now
        if not any(is_on(self.computes[i]) for i in former.computes):
            self.branch_went_quiet(former)
        return branch, []

    def page_branches(self: ControlPlane, project_id: str, *, search: str | None = None,
                      sort_by: str = "updated_at", sort_order: str = "desc",
                      limit: int | None = None, cursor: str | None = None,
                      include_deleted: bool = False) -> tuple[list[Branch], str | None]:
        """A page of the project's branches, and the cursor of the next page (None: last).

        The cursor is the id of the last branch of the page; ties of the sort key are
        broken by id, so paging yields every branch exactly once."""
        if sort_by not in BRANCH_SORT_KEYS:
            raise invalid("sort_by", f"must be one of {', '.join(BRANCH_SORT_KEYS)}")
        if sort_order not in SORT_ORDERS:
            raise invalid("sort_order", f"must be one of {', '.join(SORT_ORDERS)}")
        items = self.list_branches(project_id)
        if include_deleted:  # the deleted ones that may still be recovered
            items += self.recoverable_branches(self.get_project(project_id))
        if search:
            wanted = search.lower()
            items = [b for b in items if wanted in b.name.lower() or wanted in b.id.lower()]
        items.sort(key=lambda b: (getattr(b, sort_by), b.id), reverse=sort_order == "desc")
        if cursor:
            ids = [b.id for b in items]
            if cursor not in ids:
                raise invalid("cursor", "must be pagination.next of a previous page")
            items = items[ids.index(cursor) + 1:]
        if limit is None or len(items) <= limit:
            return items, None
        page = items[:limit]
        return page, page[-1].id

"""Rules that need the whole scenario: sizes under the plan, names, references, instants.

Runs after the field-by-field validation of `sim.scenario.schema` and
returns every problem with its field path, so a planner fixes a file in one
pass. Sizes and the one-primary rule are asked of `sim.rules`, never
re-implemented here: the same functions refuse the same requests over HTTP.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from sim.rules.errors import ApiError
from sim.rules.sizes import Plan, validate_size
from sim.rules.topology import check_one_primary
from sim.scenario.durations import format_duration
from sim.scenario.references import Reference, body_references, parse_call, parse_reference
from sim.scenario.schema import ProjectSpec, ReplaySpec, Scenario, api_reason


class Problem(NamedTuple):
    path: str  # "projects[0].branches[0].computes[1].autoscaling.max_cu"; "" for the whole file
    message: str


def problems(scenario: Scenario, base_dir: Path | None = None) -> list[Problem]:
    """Every cross-field problem of a scenario; [] when it may run.

    Also resolves replay paths against `base_dir` (the scenario file's
    directory) and reads each trace once, so a bad trace fails here, not mid-run.
    """
    found: list[Problem] = []
    seen: dict[str, int] = {}
    for i, project in enumerate(scenario.projects):
        where = f"projects[{i}]"
        if project.name in seen:
            found.append(Problem(f"{where}.name", f"{project.name!r} is already the name of "
                                 f"projects[{seen[project.name]}]"))
        seen.setdefault(project.name, i)
        found += _project(scenario, project, where, base_dir)
    found += _instants(scenario)
    found += _keys(scenario)
    for i, action in enumerate(scenario.actions):
        for ref in parse_call(action.call)[2]:
            found += _reference(scenario, ref, f"actions[{i}].call")
        for path, text in body_references(action.body, f"actions[{i}].body"):
            try:
                ref = parse_reference(text)
            except ValueError as err:
                found.append(Problem(path, str(err)))
                continue
            found += _reference(scenario, ref, path)
    return found


def _project(
    scenario: Scenario, project: ProjectSpec, where: str, base_dir: Path | None
) -> list[Problem]:
    found: list[Problem] = []
    plan = scenario.plan_of(project)
    names: list[str] = []
    for j, branch in enumerate(project.branches):
        at = f"{where}.branches[{j}]"
        if branch.name in names:
            found.append(Problem(f"{at}.name", f"branch {branch.name!r} is declared twice"))
        if j == 0 and branch.parent is not None:
            found.append(Problem(f"{at}.parent", "the first branch is the default branch and "
                                 "has no parent"))
        elif branch.parent is not None and branch.parent not in names:
            found.append(Problem(f"{at}.parent", f"{branch.parent!r} is not a branch declared "
                                 f"before this one (declared: {', '.join(names) or 'none'})"))
        names.append(branch.name)
        for k, compute in enumerate(branch.computes):
            c = f"{at}.computes[{k}]"
            try:
                # as the engine would see it: each compute created after those before it
                if compute.type == "read_write":
                    check_one_primary(x.type for x in branch.computes[: k + 1])
            except ApiError as err:
                found.append(Problem(f"{c}.type", api_reason(err)))
            if compute.size is not None:
                found += _size(compute.size.cu, compute.size.cu, plan, f"{c}.size", "cu", "cu")
            elif compute.autoscaling is not None:
                a = compute.autoscaling
                found += _size(a.min_cu, a.max_cu, plan, f"{c}.autoscaling", "min_cu", "max_cu")
            arrivals = compute.workload.arrivals if compute.workload else None
            if isinstance(arrivals, ReplaySpec):
                path = arrivals.resolve(base_dir)
                try:
                    arrivals.to_process(scenario.start)
                except (OSError, ValueError) as err:
                    reason = err.strerror if isinstance(err, OSError) and err.strerror else err
                    found.append(Problem(f"{c}.workload.arrivals.path", f"{str(path)!r}: {reason}"))
    return found


def _size(
    min_cu: float, max_cu: float, plan: Plan, where: str, min_field: str, max_field: str
) -> list[Problem]:
    try:
        validate_size(min_cu, max_cu, plan, min_field=min_field, max_field=max_field)
    except ApiError as err:
        return [Problem(f"{where}.{err.field}", api_reason(err))]
    return []


def _instants(scenario: Scenario) -> list[Problem]:
    end = scenario.duration
    timed = [(f"actions[{i}].at", a.at) for i, a in enumerate(scenario.actions)]
    timed += [(f"releases[{i}].at", r.at) for i, r in enumerate(scenario.releases)]
    timed += [(f"faults.outages[{i}].at", o.at) for i, o in enumerate(scenario.faults.outages)]
    return [
        Problem(path, f"{format_duration(at)} is not before the end of the run "
                f"(duration {format_duration(end)})")
        for path, at in timed
        if at >= end
    ]


def _keys(scenario: Scenario) -> list[Problem]:
    found: list[Problem] = []
    seen: set[str] = set()
    for i, key in enumerate(scenario.keys):
        if key.key in seen:
            found.append(Problem(f"keys[{i}].key", "the same key is declared twice"))
        seen.add(key.key)
        if key.project is None:
            continue
        text = key.project if "[" in key.project else f"{key.project}[0]"
        try:
            ref = parse_reference(text)
        except ValueError:
            found.append(Problem(f"keys[{i}].project", f"{key.project!r} is not a template "
                                 "name or template[i]"))
            continue
        if ref.branch is not None:
            found.append(Problem(f"keys[{i}].project", "a project key names a project, "
                                 "not a branch or compute"))
            continue
        found += _reference(scenario, ref, f"keys[{i}].project")
    return found


def _reference(scenario: Scenario, ref: Reference, where: str) -> list[Problem]:
    """Does {ref} name a declared template instance, branch and compute?"""
    template = scenario.template(ref.template)
    declared = ", ".join(p.name for p in scenario.projects)
    if template is None:
        return [Problem(where, f"{{{ref.text}}}: no project template {ref.template!r} "
                        f"(declared: {declared})")]
    if ref.index >= template.count:
        return [Problem(where, f"{{{ref.text}}}: {ref.template} has count {template.count}, "
                        f"so its indexes go 0 to {template.count - 1}")]
    if ref.branch is None:
        return []
    branch = template.branch(ref.branch)
    if branch is None:
        names = ", ".join(b.name for b in template.branches)
        return [Problem(where, f"{{{ref.text}}}: {ref.template} has no branch {ref.branch!r} "
                        f"(declared: {names})")]
    if ref.compute_type is None:
        return []
    n = len(branch.computes_of(ref.compute_type))
    if ref.compute_index >= n:
        return [Problem(where, f"{{{ref.text}}}: branch {ref.branch} of {ref.template} has "
                        f"{n} {ref.compute_type} compute(s)")]
    return []

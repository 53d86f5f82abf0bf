"""The settings a recommendation chooses among, per project template.

A *choice* is one value of each knob a planner turns for a template: the
scale-to-zero timeout, the size (fixed, or an autoscaling range) and the
pooler. A choice applies to every compute of the template, so that a
template stays one kind of tenant.

Default space per template (every value checked against the plan's sizes):

- suspend timeout: 60 s, 2, 5, 10, 15, 30 min, 1 h, 4 h, and never (-1);
- size: a fixed template tries the valid sizes from 0.25 CU up to twice its
  current size; an autoscaling one tries minimums 0.25, 0.5 and 1 CU with
  half, the same and twice its current maximum (autoscaling stops at 16 CU);
- pooler: off and on.

The current choice is always part of the space. `--space [TEMPLATE.]KEY=V1,V2`
replaces one knob's values, for one template or for all:
`suspend_timeout_seconds` (or `timeout`; `never` = -1), `cu` (fixed sizes),
`autoscaling` (ranges written MIN-MAX, e.g. 0.25-4) and `pooler_enabled`
(or `pooler`). Giving `cu` or `autoscaling` replaces the sizes; giving both
tries both kinds.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sim.recommendation.targets import RecommendError
from sim.rules.errors import ApiError
from sim.rules.sizes import MAX_AUTOSCALING_CU, PLAN_MAX_CU, VALID_CU, Plan, validate_size
from sim.rules.timeouts import (
    DEFAULT_SUSPEND_TIMEOUT_S,
    NEVER,
    effective_suspend_timeout,
)
from sim.scenario.schema import ComputeSpec, ProjectSpec, Scenario
from sim.scenario.template_settings import (
    TemplateSetting,
    TemplateSettingError,
    parse_template_setting,
)

DEFAULT_TIMEOUTS: tuple[int, ...] = (60, 120, 300, 600, 900, 1800, 3600, 14_400, NEVER)
DEFAULT_MINIMUMS: tuple[float, ...] = (0.25, 0.5, 1.0)


@dataclass(frozen=True, order=True)
class Choice:
    """One template's settings. Equal min and max CU is a fixed size."""

    suspend_timeout_seconds: int
    min_cu: float
    max_cu: float
    pooler_enabled: bool

    @property
    def fixed(self) -> bool:
        return self.min_cu == self.max_cu

    @property
    def timeout_s(self) -> float | None:
        """The timeout in seconds; None when the compute never suspends."""
        return effective_suspend_timeout(self.suspend_timeout_seconds)

    def size_text(self) -> str:
        return f"{self.min_cu:g} CU" if self.fixed else f"{self.min_cu:g}-{self.max_cu:g} CU"

    def timeout_text(self) -> str:
        t = self.suspend_timeout_seconds
        if t == NEVER:
            return "never"
        seconds = DEFAULT_SUSPEND_TIMEOUT_S if t == 0 else t
        for unit, length in (("h", 3600), ("min", 60)):
            if seconds >= length and seconds % length == 0:
                return f"{seconds // length} {unit}"
        return f"{seconds} s"

    def label(self) -> str:
        pooler = "pooled" if self.pooler_enabled else "direct"
        return f"timeout {self.timeout_text()}, {self.size_text()}, {pooler}"

    def as_dict(self) -> dict[str, Any]:
        size: dict[str, Any] = ({"size": {"cu": self.min_cu}} if self.fixed else
                                {"autoscaling": {"min_cu": self.min_cu, "max_cu": self.max_cu}})
        return {"suspend_timeout_seconds": self.suspend_timeout_seconds, **size,
                "pooler_enabled": self.pooler_enabled}

    def apply(self, compute: dict[str, Any]) -> dict[str, Any]:
        """A copy of a compute's document with this choice written into it."""
        out = copy.deepcopy(compute)
        out.pop("size", None)
        out.pop("autoscaling", None)
        out.update(copy.deepcopy(self.as_dict()))
        if not self.pooler_enabled:
            out.pop("pool_size", None)  # a pool size means nothing without the pooler
        return out


def current_choice(template: ProjectSpec) -> Choice:
    """What the template runs today: the settings of its first compute."""
    c = first_compute(template)
    return Choice(c.suspend_timeout_seconds, c.min_cu, c.max_cu, c.pooler_enabled)


def first_compute(template: ProjectSpec) -> ComputeSpec:
    for branch in template.branches:
        for compute in branch.computes:
            return compute
    raise RecommendError(f"template {template.name!r} has no compute: nothing to recommend")


@dataclass
class Knobs:
    """The values each knob may take for one template."""

    timeouts: list[int]
    sizes: list[tuple[float, float]]
    poolers: list[bool]
    given: set[str] = field(default_factory=set)

    def choices(self, current: Choice) -> list[Choice]:
        out = {Choice(t, lo, hi, p) for t, (lo, hi), p in
               itertools.product(self.timeouts, self.sizes, self.poolers)}
        out.add(current)
        return sorted(out)


def default_sizes(current: Choice, plan: Plan) -> list[tuple[float, float]]:
    cap = PLAN_MAX_CU[plan]
    if current.fixed:
        top = min(cap, 2 * current.max_cu)
        return [(cu, cu) for cu in VALID_CU if cu <= top]
    maxima = {current.max_cu / 2, current.max_cu, current.max_cu * 2}
    maxima = {m for m in maxima if m in VALID_CU and m <= min(cap, MAX_AUTOSCALING_CU)}
    return sorted({(lo, hi) for lo in DEFAULT_MINIMUMS for hi in maxima if lo < hi}
                  | {(current.min_cu, current.max_cu)})


def default_knobs(template: ProjectSpec, plan: Plan) -> Knobs:
    current = current_choice(template)
    return Knobs(list(DEFAULT_TIMEOUTS), default_sizes(current, plan), [False, True])


# ---- --space [TEMPLATE.]KEY=V1,V2 -----------------------------------------------------------

#: one knob's values for one template (None: every template); the grammar is `sim sweep
#: --set`'s too (sim.scenario.template_settings)
SpaceOverride = TemplateSetting


def parse_space(text: str, templates: Sequence[str]) -> SpaceOverride:
    """`[TEMPLATE.]KEY=V1,V2,...` -> SpaceOverride; raises RecommendError naming the value."""
    try:
        return parse_template_setting(text, templates, "--space")
    except TemplateSettingError as err:
        raise RecommendError(str(err)) from None


def template_knobs(scenario: Scenario, overrides: Sequence[SpaceOverride]
                   ) -> dict[str, Knobs]:
    """Per template, the knobs' values: defaults, then the overrides in order."""
    out = {}
    for t in scenario.projects:
        plan = scenario.plan_of(t)
        knobs = default_knobs(t, plan)
        sizes_given: list[tuple[float, float]] = []
        for o in overrides:
            if o.template not in (None, t.name):
                continue
            if o.knob == "suspend_timeout_seconds":
                knobs.timeouts = list(dict.fromkeys(o.values))
            elif o.knob == "pooler_enabled":
                knobs.poolers = list(dict.fromkeys(o.values))
            else:
                sizes_given += list(o.values)
        if sizes_given:
            knobs.sizes = list(dict.fromkeys(sizes_given))
        for lo, hi in knobs.sizes:
            try:
                validate_size(lo, hi, plan)
            except ApiError as err:
                raise RecommendError(f"--space: template {t.name!r}: {err.message}") from None
        out[t.name] = knobs
    return out


def space_of(scenario: Scenario, overrides: Sequence[SpaceOverride] = ()
             ) -> dict[str, list[Choice]]:
    """Per template, every choice of its space (the current one included), sorted."""
    knobs = template_knobs(scenario, overrides)
    return {t.name: knobs[t.name].choices(current_choice(t)) for t in scenario.projects}


def apply_choices(document: Mapping[str, Any], choices: Mapping[str, Choice],
                  keep_others: bool = True) -> dict[str, Any]:
    """The scenario document with each named template's computes set to its choice.

    keep_others=False drops the templates not named: projects never interact,
    so a template's figures do not depend on which others run beside it.
    """
    doc = copy.deepcopy(dict(document))
    projects = []
    for project in doc["projects"]:
        choice = choices.get(project["name"])
        if choice is None:
            if keep_others:
                projects.append(project)
            continue
        for branch in project.get("branches", []):
            branch["computes"] = [choice.apply(c) for c in branch.get("computes", [])]
        projects.append(project)
    doc["projects"] = projects
    return doc

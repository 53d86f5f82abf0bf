"""`[TEMPLATE.]KEY=V1,V2,...`: the settings a planner turns per template, one grammar for
`sim sweep --set` and `sim recommend --space`.

KEY is one of the knobs below (with its short name); TEMPLATE names one of the
scenario's templates (`projects[].name`), and without it the setting is for
every template. A value applies to every compute of the template:

    suspend_timeout_seconds (timeout)   whole seconds; 0 the default, -1 or never: never
    cu                                  a fixed size in CU
    autoscaling                         a range MIN-MAX in CU (e.g. 0.25-4)
    pooler_enabled (pooler)             true/false (or on/off)

Errors are one line, starting with the flag and the text given
(`--set hobby.foo=1: unknown setting 'foo' (one of ...)`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sim.rules.errors import ApiError
from sim.rules.timeouts import NEVER, validate_suspend_timeout

KNOBS = ("suspend_timeout_seconds", "cu", "autoscaling", "pooler_enabled")
ALIASES = {"timeout": "suspend_timeout_seconds", "pooler": "pooler_enabled"}


class TemplateSettingError(ValueError):
    """A template setting that cannot be read; str() is one line naming the text."""


@dataclass(frozen=True)
class TemplateSetting:
    template: str | None  # None: every template
    knob: str
    values: tuple[Any, ...]

    @property
    def path(self) -> str:
        """`hobby.suspend_timeout_seconds`: the canonical spelling of what it sets."""
        return f"{self.template}.{self.knob}" if self.template else self.knob


def knob_of(name: str) -> str | None:
    """The knob a key names (its short name too); None for any other key."""
    knob = ALIASES.get(name, name)
    return knob if knob in KNOBS else None


def split_template_path(path: str, flag: str, text: str) -> tuple[str | None, str]:
    """`hobby.timeout` -> ("hobby", "suspend_timeout_seconds"); `cu` -> (None, "cu")."""
    template, _, key = path.strip().rpartition(".")
    knob = knob_of(key)
    if knob is None:
        raise TemplateSettingError(f"{flag} {text}: unknown setting {key!r} "
                                   f"(one of {', '.join(KNOBS)})")
    return template or None, knob


def check_template(template: str | None, templates: Sequence[str], flag: str,
                   text: str) -> None:
    if template is not None and template not in templates:
        raise TemplateSettingError(f"{flag} {text}: no template named {template!r} "
                                   f"(templates: {', '.join(templates)})")


def parse_template_setting(text: str, templates: Sequence[str] | None, flag: str,
                           example: str = "suspend_timeout_seconds=60,300,never"
                           ) -> TemplateSetting:
    """`[TEMPLATE.]KEY=V1,V2,...` -> TemplateSetting. `templates`: the scenario's template
    names, checked when given. Raises TemplateSettingError."""
    path, sep, raw = text.partition("=")
    path = path.strip()
    if not sep or not path or not raw.strip():
        raise TemplateSettingError(f"{flag} {text}: write [TEMPLATE.]KEY=V1,V2,... "
                                   f"(e.g. {example})")
    template, knob = split_template_path(path, flag, text)
    if templates is not None:
        check_template(template, templates, flag, text)
    parts = [p.strip() for p in raw.split(",")]
    if any(not p for p in parts):
        raise TemplateSettingError(f"{flag} {text}: an empty value")
    return TemplateSetting(template, knob,
                           tuple(knob_value(knob, p, f"{flag} {text}") for p in parts))


def knob_value(knob: str, text: str, where: str) -> Any:
    """One value of a knob: an int (timeout), a bool (pooler), (min, max) CU (sizes)."""
    what = f"{where}: {text!r}"
    if knob == "pooler_enabled":
        if text not in ("true", "false", "on", "off"):
            raise TemplateSettingError(f"{what} is not true or false")
        return text in ("true", "on")
    if knob == "suspend_timeout_seconds":
        if text == "never":
            return NEVER
        try:
            value = int(text)
        except ValueError:
            raise TemplateSettingError(
                f"{what} is not a whole number of seconds or never") from None
        try:
            validate_suspend_timeout(value)
        except ApiError as err:
            raise TemplateSettingError(f"{where}: {err.message}") from None
        return value
    try:
        if knob == "cu":
            return (float(text), float(text))
        lo, dash, hi = text.partition("-")
        if not dash:
            raise ValueError
        return (float(lo), float(hi))
    except ValueError:
        shape = "a size in CU" if knob == "cu" else "a range MIN-MAX in CU (e.g. 0.25-4)"
        raise TemplateSettingError(f"{what} is not {shape}") from None


def value_text(knob: str, value: Any) -> str:
    """A knob's value as written on the command line: 300, never, 0.5, 0.25-4, true."""
    if knob == "pooler_enabled":
        return "true" if value else "false"
    if knob == "suspend_timeout_seconds":
        return "never" if value == NEVER else str(int(value))
    lo, hi = value
    return f"{lo:g}" if knob == "cu" else f"{lo:g}-{hi:g}"


def set_knob(compute: dict[str, Any], knob: str, value: Any) -> dict[str, Any]:
    """A copy of a compute's document with one knob set (a size replaces the other kind)."""
    out = copy.deepcopy(compute)
    if knob == "suspend_timeout_seconds":
        out[knob] = int(value)
    elif knob == "pooler_enabled":
        out[knob] = bool(value)
        if not value:
            out.pop("pool_size", None)  # a pool size means nothing without the pooler
    else:
        lo, hi = value
        out.pop("size", None)
        out.pop("autoscaling", None)
        if knob == "cu":
            out["size"] = {"cu": lo}
        else:
            out["autoscaling"] = {"min_cu": lo, "max_cu": hi}
    return out


def apply_template_setting(document: dict[str, Any], template: str | None, knob: str,
                           value: Any) -> int:
    """Set a knob on every compute of a template (of all, for None) of a scenario document,
    in place; returns how many computes it set."""
    n = 0
    for project in document.get("projects") or []:
        if not isinstance(project, dict) or template not in (None, project.get("name")):
            continue
        for branch in project.get("branches") or []:
            if not isinstance(branch, dict):
                continue
            computes = branch.get("computes") or []
            branch["computes"] = [set_knob(c, knob, value) if isinstance(c, dict) else c
                                  for c in computes]
            n += len(computes)
    return n


# ---- TEMPLATE.KEY inside a longer grammar (sim sweep --set) ---------------------------------


def template_target(path: str, sections: frozenset[str]) -> tuple[str | None, str] | None:
    """(template, key) when `path` is shaped `TEMPLATE.KEY`, or is a bare knob; None for a
    path into the scenario: one that starts with one of `sections`, indexes, or is deeper."""
    if "[" in path:
        return None
    segments = path.split(".")
    if len(segments) == 1:
        name = segments[0]
        return (None, name) if name not in sections and knob_of(name) else None
    if len(segments) == 2 and segments[0] not in sections:
        return segments[0], segments[1]
    return None


def shown_value(knob: str, value: Any) -> Any:
    """A knob's value as a table holds it: a number, a bool, or a range's text (0.25-4)."""
    if knob == "cu":
        return value[0]
    if knob == "autoscaling":
        return value_text(knob, value)
    return value


def set_on_template(document: Mapping[str, Any], path: str, template: str | None, value: str,
                    flag: str) -> dict[str, Any]:
    """A copy of a scenario document with the knob of `path` (`TEMPLATE.KEY`) set to `value`
    (as written) on every compute of the template. Raises TemplateSettingError."""
    names = [str(p.get("name")) for p in document.get("projects") or [] if isinstance(p, dict)]
    check_template(template, names, flag, path)
    _, knob = split_template_path(path, flag, path)
    arg = knob_value(knob, value, f"{flag} {path}={value}")
    doc = copy.deepcopy(dict(document))
    if apply_template_setting(doc, template, knob, arg) == 0:
        raise TemplateSettingError(f"{flag} {path}: matches nothing in this scenario "
                                   "(no computes)")
    return doc

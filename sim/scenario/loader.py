"""Read a scenario file, validate it whole, and report problems one line each.

    scenarios/x.yaml: projects[0].branches[0].computes[1].autoscaling.max_cu: 32 CU is not ...

Nothing runs before a scenario has passed both the field checks of the
schema and the whole-document checks of `sim.scenario.checks`; a planner
sees every problem at once and never a traceback.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

from sim.scenario import schema
from sim.scenario.checks import Problem, problems
from sim.scenario.schema import ARRIVAL_KINDS, Scenario


class ScenarioError(Exception):
    """A scenario that may not run; `str()` gives one `source: path: reason` line per problem."""

    def __init__(self, source: str, found: list[Problem]):
        self.source = source
        self.problems = [Problem(_printable(p.path), _one_line(p.message)) for p in found]
        super().__init__(str(self))

    def __str__(self) -> str:
        return "\n".join(
            f"{self.source}: {p.path}: {p.message}" if p.path else f"{self.source}: {p.message}"
            for p in self.problems
        )


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file. Raises ScenarioError."""
    path = Path(path)
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError(source, [Problem("", "no such file")]) from None
    except UnicodeDecodeError:
        raise ScenarioError(source, [Problem("", "not a UTF-8 text file")]) from None
    except OSError as err:
        raise ScenarioError(source, [Problem("", err.strerror or str(err))]) from None
    return parse_scenario(text, source=source, base_dir=path.parent)


def parse_scenario(
    text_or_dict: str | Mapping[str, Any],
    source: str = "<string>",
    base_dir: str | Path | None = None,
) -> Scenario:
    """Validate a scenario given as YAML text or as an already-parsed mapping.

    `base_dir` is where relative replay paths are read from (default: the
    current directory). Raises ScenarioError.
    """
    data: object = text_or_dict
    if isinstance(text_or_dict, str):
        data = _parse_yaml(text_or_dict, source)
    if data is None:
        raise ScenarioError(source, [Problem("", "the document is empty")])
    if not isinstance(data, Mapping):
        raise ScenarioError(source, [Problem("", f"the document must be a mapping of keys "
                                    f"(name, duration, projects, ...), got {_kind(data)}")])
    try:
        scenario = Scenario.model_validate(dict(data))
    except ValidationError as err:
        raise ScenarioError(source, [_problem(e) for e in err.errors()]) from None
    found = problems(scenario, Path(base_dir) if base_dir is not None else None)
    if found:
        raise ScenarioError(source, found)
    return scenario


# ---- YAML ------------------------------------------------------------------------------------


class _Loader(yaml.SafeLoader):
    """Safe YAML with two YAML 1.1 traps closed.

    `off`, `on`, `yes`, `no` stay strings (YAML 1.2 booleans are only true and
    false), so `record_connections: off` means "off"; and a key given twice is
    an error instead of a silent overwrite.
    """

    yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
            if not isinstance(key, (str, int, float, bool)):
                continue  # unhashable or odd keys are left to the schema to refuse
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} is given twice", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool",
    re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"),
)


def _parse_yaml(text: str, source: str) -> object:
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - _Loader is a SafeLoader
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        reason = err.problem or err.context or "syntax error"
        raise ScenarioError(source, [Problem("", f"{where}invalid YAML: {reason}")]) from None
    except yaml.YAMLError as err:
        raise ScenarioError(source, [Problem("", f"invalid YAML: {err}")]) from None
    except RecursionError:
        raise ScenarioError(source, [Problem("", "invalid YAML: nested too deeply")]) from None


# ---- pydantic errors -> one line each --------------------------------------------------------


def _field_names() -> list[str]:
    names: set[str] = set()
    for obj in vars(schema).values():
        if isinstance(obj, type) and issubclass(obj, BaseModel):
            names.update(obj.model_fields)
    return sorted(names)


_FIELD_NAMES = _field_names()


def _models_in(annotation: Any) -> list[tuple[type[BaseModel], str]]:
    """The models a field holds, each with what its path adds on the way ([*] for items)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [(annotation, "")]
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is list:
        return [(m, "[*]" + tail) for m, tail in _models_in(args[0])]
    if origin is dict:
        return [(m, ".<name>" + tail) for m, tail in _models_in(args[1])]
    return [found for arg in args for found in _models_in(arg)]  # Annotated, unions, Optional


def _key_paths(model: type[BaseModel] = Scenario, prefix: str = "",
               into: dict[str, list[str]] | None = None) -> dict[str, list[str]]:
    """Every key of the file format -> the full paths where it is allowed."""
    into = {} if into is None else into
    for name, field in model.model_fields.items():
        path = f"{prefix}.{name}" if prefix else name
        if path not in into.setdefault(name, []):
            into[name].append(path)
        for sub, tail in _models_in(field.annotation):
            _key_paths(sub, path + tail, into)
    return into


_KEY_PATHS = _key_paths()


def _unknown_key_reason(key: str) -> str:
    """A key that belongs elsewhere names where; a near miss names the likely key."""
    homes = _KEY_PATHS.get(key)
    if homes:
        where = homes[0] if len(homes) == 1 else "one of " + ", ".join(homes[:3])
        return f"unknown key here; it belongs at {where}"
    near = difflib.get_close_matches(key, _FIELD_NAMES, n=1, cutoff=0.75)
    return f"unknown key (did you mean {near[0]!r}?)" if near else "unknown key"


def _path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for i, seg in enumerate(loc):
        if isinstance(seg, int):
            out += f"[{seg}]"
        elif seg == "[key]":
            continue  # pydantic's marker for "the key itself", already in the path
        elif i > 0 and loc[i - 1] == "arrivals" and seg in ARRIVAL_KINDS:
            continue  # the tag of the `kind` union, not a key of the file
        else:
            out += f".{seg}" if out else str(seg)
    return out


def _problem(err: Any) -> Problem:
    kind, msg, loc = err["type"], err["msg"], tuple(err["loc"])
    if kind == "missing":
        return Problem(_path(loc), "required")
    if kind == "extra_forbidden":
        return Problem(_path(loc), _unknown_key_reason(str(loc[-1]) if loc else ""))
    kinds = ", ".join(sorted(ARRIVAL_KINDS))
    if kind == "union_tag_not_found":
        return Problem(_path(loc + ("kind",)), f"required (one of {kinds})")
    if kind == "union_tag_invalid":
        tag = err.get("ctx", {}).get("tag")
        return Problem(_path(loc + ("kind",)), f"should be one of {kinds}, got {tag!r}")
    for prefix in ("Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            return _deeper(Problem(_path(loc), msg[len(prefix):]))
    ctx = err.get("ctx") or {}
    if kind in ("too_short", "too_long"):
        bound = ctx.get("min_length") if kind == "too_short" else ctx.get("max_length")
        most = "least" if kind == "too_short" else "most"
        got = ctx.get("actual_length")
        return Problem(_path(loc), f"should have at {most} {bound} item(s), got {got}")
    if kind == "string_pattern_mismatch":
        msg = f"should match {ctx.get('pattern')}"
    elif msg.startswith("Input should be"):
        msg = "should be" + msg[len("Input should be"):]
    elif msg.startswith("String should"):
        msg = "should" + msg[len("String should"):]
    else:
        msg = msg[:1].lower() + msg[1:]
    if "input" in err and not isinstance(err["input"], (dict, list)):
        msg += f", got {_short(err['input'])}"
    elif "input" in err:
        msg += f", got {_kind(err['input'])}"
    return Problem(_path(loc), msg)


_LEADING_FIELD = re.compile(r"([a-z_]+(?:\.[a-z_]+)*): (.*)", re.DOTALL)


def _deeper(problem: Problem) -> Problem:
    """A whole-object check that names a field inside it ("auth.branch: ...") reports that
    field's full path: `projects[0].auth.branch: ...`, not `projects[0]: auth.branch: ...`."""
    match = _LEADING_FIELD.fullmatch(problem.message)
    if match is None or not all(part in _FIELD_NAMES for part in match[1].split(".")):
        return problem
    path = f"{problem.path}.{match[1]}" if problem.path else match[1]
    return Problem(path, match[2])


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _kind(value: object) -> str:
    names = {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean"}
    return names.get(type(value), type(value).__name__)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _printable(path: str) -> str:
    """A field path on one line: a key holding a newline is shown escaped, not split."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in str(path))

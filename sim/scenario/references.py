"""References to simulated resources inside scripted API calls: `{shop[0].main.read_write}`.

A scenario does not know the ids the control plane will hand out, so its
`actions:` name resources by position instead:

    {shop[0]}                      project id of instance 0 of template shop
    {shop[0].main}                 branch id of branch main in that project
    {shop[0].main.read_write}      the branch's read_write compute id
    {shop[0].main.read_only[1]}    its second read_only compute (declaration order)

`read_write` and `read_only` without an index mean index 0. In a call's path
every `{...}` must be a reference; in a body only string values whose braces
start like one (`{name[`) are, so other braces pass through untouched.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

TEMPLATE_NAME = r"[a-z0-9][a-z0-9-]*"
BRANCH_NAME = r"[A-Za-z0-9_][A-Za-z0-9_/-]*"

_REF = re.compile(
    rf"(?P<template>{TEMPLATE_NAME})\[(?P<index>\d+)\]"
    rf"(?:\.(?P<branch>{BRANCH_NAME})"
    r"(?:\.(?P<type>read_write|read_only)(?:\[(?P<cindex>\d+)\])?)?)?"
)
_BRACES = re.compile(r"\{([^{}]*)\}")
_BODY_REF = re.compile(rf"\{{({TEMPLATE_NAME}\[[^{{}}]*)\}}")
METHODS = ("GET", "POST", "PATCH", "DELETE")


@dataclass(frozen=True)
class Reference:
    text: str  # as written, without braces
    template: str
    index: int
    branch: str | None = None
    compute_type: str | None = None  # read_write | read_only
    compute_index: int = 0

    @property
    def instance_key(self) -> str:
        """The `ProjectInstance.key` this reference belongs to."""
        return f"{self.template}[{self.index}]"

    @property
    def kind(self) -> str:
        """What the reference resolves to: project, branch or compute."""
        if self.compute_type is not None:
            return "compute"
        return "branch" if self.branch is not None else "project"


def parse_reference(text: str) -> Reference:
    match = _REF.fullmatch(text.strip())
    if match is None:
        raise ValueError(
            f"bad reference {{{text}}}: write {{template[i]}}, {{template[i].branch}} or "
            f"{{template[i].branch.read_write}} / {{template[i].branch.read_only[k]}}"
        )
    return Reference(
        text=text,
        template=match["template"],
        index=int(match["index"]),
        branch=match["branch"],
        compute_type=match["type"],
        compute_index=int(match["cindex"] or 0),
    )


def parse_call(call: str) -> tuple[str, str, list[Reference]]:
    """Split "METHOD /path" and parse the references in the path. Raises ValueError."""
    parts = call.split()
    if len(parts) != 2:
        raise ValueError(f'a call is "METHOD /path", got {call!r}')
    method, path = parts
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if not path.startswith("/"):
        raise ValueError(f"the path must start with /, got {path!r}")
    if "{" in _BRACES.sub("", path) or "}" in _BRACES.sub("", path):
        raise ValueError(f"unbalanced braces in {path!r}")
    return method, path, [parse_reference(m) for m in _BRACES.findall(path)]


def body_references(body: Any, where: str = "body") -> Iterator[tuple[str, str]]:
    """(field path, reference text) of each reference in the string values of a body."""
    if isinstance(body, dict):
        for key, value in body.items():
            yield from body_references(value, f"{where}.{key}")
    elif isinstance(body, list):
        for i, value in enumerate(body):
            yield from body_references(value, f"{where}[{i}]")
    elif isinstance(body, str):
        for text in _BODY_REF.findall(body):
            yield where, text


def render_path(path: str, resolve: Callable[[Reference], str]) -> str:
    return _BRACES.sub(lambda m: resolve(parse_reference(m.group(1))), path)


def render_body(body: Any, resolve: Callable[[Reference], str]) -> Any:
    """A copy of the body with every reference replaced by what `resolve` returns."""
    if isinstance(body, dict):
        return {k: render_body(v, resolve) for k, v in body.items()}
    if isinstance(body, list):
        return [render_body(v, resolve) for v in body]
    if isinstance(body, str):
        return _BODY_REF.sub(lambda m: resolve(parse_reference(m.group(1))), body)
    return body

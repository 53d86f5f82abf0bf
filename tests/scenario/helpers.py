"""A small valid scenario and a way to edit it by dotted path, for the schema tests."""

from __future__ import annotations

import copy
from typing import Any

import yaml

from sim.scenario import ScenarioError, parse_scenario

BASE_YAML = """
name: t
duration: 2d
projects:
  - name: shop
    count: 2
    branches:
      - name: main
        computes:
          - type: read_write
            autoscaling: {min_cu: 0.25, max_cu: 4}
            workload:
              arrivals: {kind: poisson, per_hour: 10}
              session: {dist: exponential, mean_s: 30}
          - type: read_only
      - name: dev
        computes:
          - type: read_write
actions:
  - at: 1d
    call: PATCH /projects/{shop[1]}/endpoints/{shop[1].main.read_write}
    body: {endpoint: {autoscaling_limit_max_cu: 8}}
"""
BASE: dict[str, Any] = yaml.safe_load(BASE_YAML)
DELETE = object()
COMPUTE0 = "projects.0.branches.0.computes.0"


def edited(changes: dict[str, Any], base: dict[str, Any] | None = None) -> dict[str, Any]:
    """A deep copy of the base document with `a.0.b`-style paths set (or deleted)."""
    doc = copy.deepcopy(BASE if base is None else base)
    for dotted, value in changes.items():
        *parents, last = dotted.split(".")
        node: Any = doc
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        key: Any = int(last) if isinstance(node, list) else last
        if value is DELETE:
            del node[key]
        else:
            node[key] = value
    return doc


def problem_lines(doc: dict[str, Any], source: str = "t.yaml") -> list[str]:
    """The lines of the ScenarioError a document raises (via YAML text, as from a file)."""
    try:
        parse_scenario(yaml.safe_dump(doc, sort_keys=False), source=source)
    except ScenarioError as err:
        return str(err).split("\n")
    raise AssertionError("the document was accepted")

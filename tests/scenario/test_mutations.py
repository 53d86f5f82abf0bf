"""Whatever a planner gets wrong, loading either succeeds or says what is wrong, one line each."""

from __future__ import annotations

import copy
import math
from typing import Any

import yaml
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from sim.scenario import Scenario, ScenarioError, parse_scenario

from .helpers import BASE

#: a richer valid document than helpers.BASE, so mutations reach every section
RICH: dict[str, Any] = copy.deepcopy(BASE) | {
    "seed": 3,
    "start": "2026-01-05T06:00:00Z",
    "plan": "scale",
    "engine": {
        "cold_start": {"dist": "lognormal", "mean_s": 0.5, "sigma": 0.8},
        "operation_durations": {"apply_config": {"dist": "fixed", "mean_s": 1}},
        "autoscaler": {"reaction_delay": "10s"},
        "check_availability_every": "6h",
        "detach_after": None,
    },
    "faults": {"operation_failure_rate": 0.01, "outages": [{"at": "1h", "duration": "5m"}]},
    "keys": [{"key": "k" * 20, "kind": "project", "project": "shop[1]"}],
    "releases": [{"at": "12h", "version": "v2"}],
}
RICH["projects"][0]["branches"][0]["computes"][1] |= {
    "size": {"cu": 4},
    "pooler_enabled": True,
    "pool_size": 50,
    "workload": {
        "arrivals": {"kind": "diurnal", "peak_per_hour": 10, "trough_per_hour": 1, "peak_hour": 9},
        "session": {"dist": "lognormal", "mean_s": 20, "sigma": 1.0},
        "temp_bytes_per_session": {"dist": "exponential", "mean_bytes": "1GiB"},
    },
}
RICH["projects"][0]["branches"][1]["computes"][0]["workload"] = {
    "arrivals": {"kind": "periodic", "every": "1h", "jitter": "5m"},
    "session": {"dist": "fixed", "mean_s": 60},
}


def paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in the document a value sits (containers included)."""
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            out += paths(value, prefix + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += paths(value, prefix + (i,))
    return out


PATHS = sorted(paths(RICH), key=repr)

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["7d", "1h30m", "-5s", "1m1h", "", "0", "500ms", "ms", "1e999", "2 days"]),
    st.sampled_from([0, 0.1, 0.25, 0.5, 3, 16, 17, 18, 56, 58, 1e9, -1, -0.25]),
    st.sampled_from(["read_write", "read_only", "poisson", "replay", "free", "{shop[0]}",
                     "GET /x/{shop[1].main.read_only[3]}", "PATCH /{nope[0]}", "shop[9]"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.one_of(st.text(max_size=8), st.sampled_from(["kind", "cu", "at"])),
                        inner, max_size=3),
    ),
    max_leaves=6,
)


@st.composite
def mutation(draw: st.DrawFn) -> tuple[str, tuple[Any, ...], Any]:
    path = draw(st.sampled_from(PATHS))
    op = draw(st.sampled_from(["replace", "replace", "delete", "add_key"]))
    return op, path, draw(VALUES) if op != "delete" else None


def apply(doc: dict[str, Any], op: str, path: tuple[Any, ...], value: Any) -> None:
    node: Any = doc
    for part in path[:-1]:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return  # an earlier mutation removed or replaced this branch
    last = path[-1]
    if not isinstance(node, (dict, list)):
        return
    if isinstance(node, list) and not (isinstance(last, int) and last < len(node)):
        return
    if isinstance(node, dict) and last not in node:
        return
    if op == "delete":
        del node[last]
    elif op == "replace":
        node[last] = value
    elif isinstance(node[last], dict):  # add_key: a key no schema knows
        node[last]["unexpected_" + str(len(node[last]))] = value


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(muts=st.lists(mutation(), min_size=1, max_size=3), as_text=st.booleans())
def test_load_succeeds_or_raises_scenario_error_one_line_per_problem(
    muts: list[tuple[str, tuple[Any, ...], Any]], as_text: bool
) -> None:
    doc = copy.deepcopy(RICH)
    for op, path, value in muts:
        apply(doc, op, path, value)
    note(repr(doc))
    source: Any = doc
    if as_text:
        source = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
    try:
        scenario = parse_scenario(source, source="m.yaml")
    except ScenarioError as err:
        lines = str(err).split("\n")
        assert len(lines) == len(err.problems) >= 1
        for line in lines:
            assert line.startswith("m.yaml: ") and line.strip() == line and len(line) > 10
            assert "pydantic" not in line and "Traceback" not in line
        return
    assert isinstance(scenario, Scenario)
    assert scenario.duration > 0 and math.isfinite(scenario.duration)
    scenario.engine_config()  # a valid scenario always makes an engine config
    for inst in scenario.instances()[:2]:
        for branch in inst.template.branches:
            for compute in branch.computes:
                compute.arrival_process(scenario.start)
                compute.session_model()


def test_the_rich_document_is_valid() -> None:
    s = parse_scenario(RICH)
    assert s.engine_config().detach_after_s is None
    assert len(PATHS) > 60

"""Scenario files: the typed schema, its validation with field paths, and the loader.

    from sim.scenario import load_scenario
    scenario = load_scenario("scenarios/quickstart.yaml")   # raises ScenarioError
    scenario.instances(), scenario.engine_config()
"""

from sim.scenario.checks import Problem
from sim.scenario.durations import format_duration, parse_bytes, parse_duration
from sim.scenario.loader import ScenarioError, load_scenario, parse_scenario
from sim.scenario.references import Reference, parse_reference, render_body, render_path
from sim.scenario.schema import (
    ActionSpec,
    BranchSpec,
    ComputeSpec,
    EngineSpec,
    FaultsSpec,
    KeySpec,
    ProjectInstance,
    ProjectSpec,
    ReleaseSpec,
    Scenario,
    WorkloadSpec,
)

__all__ = [
    "ActionSpec",
    "BranchSpec",
    "ComputeSpec",
    "EngineSpec",
    "FaultsSpec",
    "KeySpec",
    "Problem",
    "ProjectInstance",
    "ProjectSpec",
    "Reference",
    "ReleaseSpec",
    "Scenario",
    "ScenarioError",
    "WorkloadSpec",
    "format_duration",
    "load_scenario",
    "parse_bytes",
    "parse_duration",
    "parse_reference",
    "parse_scenario",
    "render_body",
    "render_path",
]

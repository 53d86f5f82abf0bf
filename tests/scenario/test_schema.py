"""The scenario schema: shipped files load, broken ones name the exact field on one line."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from sim.engine.config import ConnectionRecording, EngineConfig
from sim.rules.connections import AutoscalingConnections
from sim.rules.operations import Action
from sim.scenario import (
    ScenarioError,
    load_scenario,
    parse_scenario,
    render_body,
    render_path,
)
from sim.workload import Bursty, Diurnal, Periodic, Poisson, Replay

from .helpers import BASE, BASE_YAML, COMPUTE0, DELETE, edited, problem_lines

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / "scenarios").glob("*.yaml"))
ARR = f"{COMPUTE0}.workload.arrivals"
C0 = "projects[0].branches[0].computes[0]"


# ---- shipped files -----------------------------------------------------------------------------


def test_the_four_scenarios_are_shipped() -> None:
    names = {p.stem for p in SHIPPED}
    assert {"quickstart", "saas-diurnal", "dev-branches", "analytics-replicas"} <= names


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_scenario_loads(path: Path) -> None:
    scenario = load_scenario(path)
    assert scenario.instances()
    assert isinstance(scenario.engine_config(), EngineConfig)
    for inst in scenario.instances()[:3]:
        for branch in inst.template.branches:
            for compute in branch.computes:
                if compute.workload is not None:
                    assert compute.arrival_process(scenario.start) is not None
                    assert compute.session_model() is not None


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_counts_are_those_of_the_instances(path: Path) -> None:
    scenario = load_scenario(path)
    instances = scenario.instances()
    assert scenario.project_count() == len(instances)
    assert scenario.compute_count() == sum(
        len(b.computes) for inst in instances for b in inst.template.branches)


def expected_sessions(path: Path) -> float:
    s = load_scenario(path)
    total = 0.0
    for inst in s.instances():
        for branch in inst.template.branches:
            for compute in branch.computes:
                process = compute.arrival_process(s.start)
                if process is not None:
                    total += process.mean_rate_per_s(0, s.duration) * s.duration
    return total


def test_quickstart_is_small_and_short() -> None:
    path = ROOT / "scenarios" / "quickstart.yaml"
    s = load_scenario(path)
    assert s.duration == 86_400 and len(s.projects) == 2 and len(s.instances()) <= 12
    assert 5_000 < expected_sessions(path) < 100_000


def test_dev_branches_lifecycle_happens_inside_the_run() -> None:
    s = load_scenario(ROOT / "scenarios" / "dev-branches.yaml")
    cfg = s.engine_config()
    assert cfg.check_availability_every_s is not None
    assert cfg.archive_after_s is not None and cfg.archive_after_s < s.duration
    assert cfg.detach_after_s is not None and cfg.detach_after_s < s.duration
    kinds = {type(c.arrival_process(s.start)) for b in s.projects[0].branches for c in b.computes}
    assert Periodic in kinds and Bursty in kinds


def test_analytics_has_a_large_fixed_primary_and_a_nightly_batch() -> None:
    s = load_scenario(ROOT / "scenarios" / "analytics-replicas.yaml")
    main = s.projects[0].branches[0]
    primary = main.computes_of("read_write")[0]
    assert primary.size is not None and primary.size.cu > 16
    assert isinstance(primary.arrival_process(s.start), Periodic)
    model = primary.session_model()
    assert model is not None and model.temp_bytes is not None
    assert len(main.computes_of("read_only")) >= 2


# ---- broken documents: the exact path, one line each -------------------------------------------

CASES: list[tuple[dict[str, Any], str, str]] = [
    ({f"{COMPUTE0}.autoscaling.max_cu": 17}, f"{C0}.autoscaling.max_cu",
     "17 CU is not a valid size (0.25, 0.5, 1 to 16, or an even number 18 to 56)"),
    ({f"{COMPUTE0}.autoscaling.max_cu": 32}, f"{C0}.autoscaling.max_cu",
     "autoscaling goes up to 16 CU"),
    ({f"{COMPUTE0}.autoscaling.min_cu": 8}, f"{C0}.autoscaling.min_cu",
     "minimum 8 CU is above the maximum 4 CU"),
    ({f"{COMPUTE0}.autoscaling": DELETE, f"{COMPUTE0}.size": {"cu": 3}, "plan": "free"},
     f"{C0}.size.cu", "the free plan allows up to 2 CU, got 3"),
    ({f"{COMPUTE0}.autoscaling.max_cu": 4, "projects.0.plan": "free"},
     f"{C0}.autoscaling.max_cu", "the free plan allows up to 2 CU, got 4"),
    ({f"{COMPUTE0}.size": {"cu": 2}}, C0, "give size (fixed) or autoscaling, not both"),
    ({f"{COMPUTE0}.suspend_timeout_seconds": 30}, f"{C0}.suspend_timeout_seconds",
     "must be 0 (default, 300 s), -1 (never) or 60..604800, got 30"),
    ({f"{COMPUTE0}.suspend_timeout_seconds": 60.0}, f"{C0}.suspend_timeout_seconds",
     "should be a valid integer, got 60.0"),
    ({f"{COMPUTE0}.pool_size": 10}, C0, "pool_size needs pooler_enabled: true"),
    ({f"{COMPUTE0}.pooler_enabled": "yes"}, f"{C0}.pooler_enabled",
     "should be a valid boolean, got 'yes'"),
    ({"projects.0.count": True}, "projects[0].count", "should be a valid integer, got True"),
    ({"projects.0.count": 0}, "projects[0].count", "greater than or equal to 1"),
    ({f"{ARR}.per_hour": True}, f"{C0}.workload.arrivals.per_hour",
     "should be a valid number, got True"),
    ({f"{ARR}.per_hour": "10"}, f"{C0}.workload.arrivals.per_hour",
     "should be a valid number, got '10'"),
    ({"colour": "blue"}, "colour", "unknown key"),
    ({f"{COMPUTE0}.autoscalng": {"min_cu": 1, "max_cu": 2}}, f"{C0}.autoscalng",
     "unknown key (did you mean 'autoscaling'?)"),
    # a key of another section names where it belongs, not itself as a near miss
    ({"cold_start": {"dist": "fixed", "mean_s": 1}}, "cold_start",
     "unknown key here; it belongs at engine.cold_start"),
    ({f"{COMPUTE0}.cpu_per_session": 0.1}, f"{C0}.cpu_per_session",
     "unknown key here; it belongs at projects[*].branches[*].computes[*].workload."
     "cpu_per_session"),
    ({"duration": "2 days"}, "duration", "bad duration '2 days'"),
    ({"duration": "0s"}, "duration", "must be a duration > 0"),
    # a bare number is a run of seconds to the parser and of days to a planner: refused
    ({"duration": 30}, "duration", '30 has no unit: write the run\'s length with one, e.g. '
     '"30d", "30h", "30m" or "30s"'),
    ({"duration": "30"}, "duration", "30 has no unit"),
    ({"duration": 1.5}, "duration", '"1.5d"'),
    ({"name": DELETE}, "name", "required"),
    ({"projects": []}, "projects", "should have at least 1 item(s), got 0"),
    ({"projects.0.name": "Shop"}, "projects[0].name", "should match"),
    ({"projects.0.branches.0.computes.1.type": "read_write"},
     "projects[0].branches[0].computes[1].type", "at most one read_write compute"),
    ({"projects.0.branches.1.parent": "nope"}, "projects[0].branches[1].parent",
     "'nope' is not a branch declared before this one (declared: main)"),
    ({"projects.0.branches.0.parent": "dev"}, "projects[0].branches[0].parent",
     "the first branch is the default branch"),
    ({"projects.0.branches.1.name": "main"}, "projects[0].branches[1].name",
     "branch 'main' is declared twice"),
    ({"actions.0.call": "PATCH /projects/{shop[2]}"}, "actions[0].call",
     "{shop[2]}: shop has count 2, so its indexes go 0 to 1"),
    ({"actions.0.call": "GET /projects/{blog[0]}"}, "actions[0].call",
     "{blog[0]}: no project template 'blog' (declared: shop)"),
    ({"actions.0.call": "GET /x/{shop[0].qa}"}, "actions[0].call",
     "{shop[0].qa}: shop has no branch 'qa' (declared: main, dev)"),
    ({"actions.0.call": "GET /x/{shop[0].main.read_only[1]}"}, "actions[0].call",
     "branch main of shop has 1 read_only compute(s)"),
    ({"actions.0.call": "GET /x/{shop[0].dev.read_only}"}, "actions[0].call",
     "branch dev of shop has 0 read_only compute(s)"),
    ({"actions.0.call": "GET /x/{shop}"}, "actions[0].call", "bad reference {shop}"),
    ({"actions.0.call": "GET /x/{shop[0]"}, "actions[0].call", "unbalanced braces"),
    ({"actions.0.call": "PUT /x"}, "actions[0].call", "method must be one of"),
    ({"actions.0.call": "GET projects"}, "actions[0].call", "the path must start with /"),
    ({"actions.0.body": {"endpoint": {"branch_id": "{shop[0].qa}"}}},
     "actions[0].body.endpoint.branch_id", "shop has no branch 'qa'"),
    ({"actions.0.at": "3d"}, "actions[0].at", "3d is not before the end of the run (duration 2d)"),
    ({"releases": [{"at": "2d", "version": "v1"}]}, "releases[0].at", "not before the end"),
    ({"releases": [{"at": "1d"}]}, "releases[0].version", "required"),
    ({"faults": {"outages": [{"at": "1d", "duration": "0s"}]}}, "faults.outages[0].duration",
     "must be a duration > 0"),
    ({"faults": {"operation_failure_rate": 1}}, "faults.operation_failure_rate", "less than 1"),
    ({f"{ARR}.kind": "poison"}, f"{C0}.workload.arrivals.kind",
     "should be one of bursty, diurnal, periodic, poisson, replay, got 'poison'"),
    ({f"{ARR}.kind": DELETE}, f"{C0}.workload.arrivals.kind", "required"),
    ({f"{ARR}": {"kind": "diurnal", "peak_per_hour": 10, "trough_per_hour": 1, "peak_hour": 14,
                 "hourly": [1] * 24}}, f"{C0}.workload.arrivals", "give hourly"),
    ({f"{ARR}": {"kind": "diurnal", "hourly": [1] * 23}}, f"{C0}.workload.arrivals.hourly",
     "should have at least 24 item(s), got 23"),
    ({f"{ARR}": {"kind": "diurnal", "peak_per_hour": 10, "trough_per_hour": 1, "peak_hour": 24}},
     f"{C0}.workload.arrivals.peak_hour", "less than 24"),
    ({f"{ARR}": {"kind": "periodic", "every": 0}}, f"{C0}.workload.arrivals.every", "> 0"),
    ({f"{ARR}": {"kind": "bursty", "on_per_hour": 1, "off_per_hour": 0, "mean_on": "1h"}},
     f"{C0}.workload.arrivals.mean_off", "required"),
    ({f"{ARR}": {"kind": "replay", "path": "no/such/trace.csv"}},
     f"{C0}.workload.arrivals.path", "No such file or directory"),
    ({f"{COMPUTE0}.workload.session.sigma": 1.0}, f"{C0}.workload.session",
     "sigma applies to dist: lognormal only, not exponential"),
    ({f"{COMPUTE0}.workload.session.mean_s": -1}, f"{C0}.workload.session.mean_s",
     "greater than or equal to 0"),
    ({f"{COMPUTE0}.workload.temp_bytes_per_session": {"dist": "fixed", "mean_bytes": "2 gigs"}},
     f"{C0}.workload.temp_bytes_per_session.mean_bytes", "bad size '2 gigs'"),
    ({"keys": [{"key": "short", "kind": "personal"}]}, "keys[0].key", "at least 16 characters"),
    ({"keys": [{"key": "k" * 16, "kind": "project"}]}, "keys[0]", "iff kind is project"),
    ({"keys": [{"key": "k" * 16, "kind": "project", "project": "shop[5]"}]}, "keys[0].project",
     "shop has count 2"),
    ({"keys": [{"key": "k" * 16, "kind": "personal"}, {"key": "k" * 16, "kind": "organization"}]},
     "keys[1].key", "the same key is declared twice"),
    ({"record_connections": "sometimes"}, "record_connections",
     "should be 'all', 'sampled' or 'off', got 'sometimes'"),
    ({"connection_sample_rate": 0}, "connection_sample_rate", "greater than 0"),
    ({"seed": -1}, "seed", "greater than or equal to 0"),
    ({"seed": 1.5}, "seed", "should be a valid integer"),
    ({"start": "yesterday"}, "start", "not an ISO 8601 instant: 'yesterday'"),
    ({"start": "9999-12-31T23:00:00-05:00"}, "start", "out of range in UTC"),
    ({"projects.0.count": 10**7}, "projects[0].count", "less than or equal to 1000000"),
    ({"engine": {"operation_durations": {"start_compute": {"dist": "fixed", "mean_s": 1}}}},
     "engine.operation_durations", "start_compute takes its duration from engine.cold_start"),
    ({"engine": {"operation_durations": {"reboot": {"dist": "fixed", "mean_s": 1}}}},
     "engine.operation_durations", "unknown action 'reboot'"),
    ({"engine": {"pool_share": 0}}, "engine.pool_share", "greater than 0"),
    ({"engine": {"detach_after": "soon"}}, "engine.detach_after", "bad duration 'soon'"),
    ({"engine": {"autoscaler": {"target_cpu_utilisation": 1.5}}},
     "engine.autoscaler.target_cpu_utilisation", "less than or equal to 1"),
    ({"engine": {"cold_start": {"dist": "gamma", "mean_s": 1}}}, "engine.cold_start.dist",
     "should be 'fixed', 'exponential' or 'lognormal'"),
]


@pytest.mark.parametrize(
    ("changes", "path", "reason"), CASES, ids=[c[1] + ":" + c[2][:24] for c in CASES]
)
def test_a_broken_document_names_the_field_on_one_line(
    changes: dict[str, Any], path: str, reason: str
) -> None:
    lines = problem_lines(edited(changes))
    hits = [line for line in lines if line.startswith(f"t.yaml: {path}: ")]
    assert hits, lines
    assert any(reason in line for line in hits), lines
    assert not any("pydantic" in line or "For further information" in line for line in lines)


def test_the_headline_message_is_exactly_one_line() -> None:
    lines = problem_lines(edited({f"{COMPUTE0}.autoscaling.max_cu": 17}), "scenarios/x.yaml")
    assert lines == [
        "scenarios/x.yaml: projects[0].branches[0].computes[0].autoscaling.max_cu: 17 CU is not "
        "a valid size (0.25, 0.5, 1 to 16, or an even number 18 to 56)"
    ]


def test_every_problem_is_reported_at_once() -> None:
    lines = problem_lines(edited({
        f"{COMPUTE0}.autoscaling.max_cu": 17,
        "projects.0.branches.1.parent": "nope",
        "actions.0.call": "GET /{shop[9]}",
    }))
    assert len(lines) == 3


def test_errors_carry_their_problems() -> None:
    with pytest.raises(ScenarioError) as err:
        parse_scenario(edited({"duration": 0, "colour": 1}), source="s.yaml")
    assert [p.path for p in err.value.problems] == ["duration", "colour"]
    assert err.value.source == "s.yaml"


# ---- the loader --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("name: t\nduration: [1d\n", "s.yaml: line 3, column 1: invalid YAML: "),
        ("name: t\n  duration: 1d\n", "s.yaml: line 2, column 11: invalid YAML: "),
        ("name: t\nname: u\n", "s.yaml: line 2, column 1: invalid YAML: key 'name' is given twice"),
        ("name: t\n\tduration: 1d\n", "s.yaml: line 2, column 1: invalid YAML: "),
        ("- a\n- b\n", "s.yaml: the document must be a mapping of keys (name, duration, projects, "
                       "...), got a list"),
        ("just words\n", "s.yaml: the document must be a mapping"),
        ("", "s.yaml: the document is empty"),
        ("# only a comment\n", "s.yaml: the document is empty"),
    ],
)
def test_yaml_problems_are_one_line_with_the_line_number(text: str, line: str) -> None:
    with pytest.raises(ScenarioError) as err:
        parse_scenario(text, source="s.yaml")
    assert "\n" not in str(err.value)
    assert str(err.value).startswith(line)


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match=r"^.*nope\.yaml: no such file$"):
        load_scenario(tmp_path / "nope.yaml")


def test_yaml_1_1_booleans_stay_words() -> None:
    # YAML 1.1 reads `off` as false; the loader keeps it the word the schema expects
    assert parse_scenario("record_connections: off\n" + BASE_YAML).record_connections == "off"
    with pytest.raises(ScenarioError, match="pooler_enabled: should be a valid boolean, got 'on'"):
        on = "type: read_only\n            pooler_enabled: on"
        parse_scenario(BASE_YAML.replace("type: read_only", on))


@pytest.mark.parametrize("word", ["off", "no", "Off", "NO"])
def test_yaml_1_1_loaders_false_is_the_word_off(word: str) -> None:
    # yaml.safe_load reads these as False; the library takes what it made of them, as
    # `sim run` takes the word itself
    text = f"record_connections: {word}\nrecord_events: {word}\n" + BASE_YAML
    doc = yaml.safe_load(text)
    assert doc["record_connections"] is False and doc["record_events"] is False
    scenario = parse_scenario(doc)
    assert (scenario.record_connections, scenario.record_events) == ("off", "off")
    if word == "off":  # the scenario's loader keeps the word, which is the setting
        scenario = parse_scenario(text)
        assert (scenario.record_connections, scenario.record_events) == ("off", "off")
    # True names no setting: refused in one line, as any other value
    with pytest.raises(ScenarioError, match="record_connections") as err:
        parse_scenario(yaml.safe_load("record_connections: on\n" + BASE_YAML))
    assert "\n" not in str(err.value)


# ---- what a valid scenario turns into ----------------------------------------------------------


def test_defaults_are_filled() -> None:
    s = parse_scenario(BASE)
    assert s.seed == 0 and s.plan == "launch" and s.price_per_cu_hour == 0.16
    assert s.start == datetime(2026, 1, 5, tzinfo=UTC)
    assert s.duration == 2 * 86_400
    assert s.region_id == "aws-us-east-2"
    replica = s.projects[0].branches[0].computes[1]
    assert (replica.min_cu, replica.max_cu) == (0.25, 2.0)
    assert replica.suspend_timeout_seconds == 0 and replica.pooler_enabled is False
    assert s.projects[0].history_retention == 86_400
    assert s.projects[0].parent_of(s.projects[0].branches[1]) == "main"


@pytest.mark.parametrize(
    ("start", "expected"),
    [
        ("2026-03-01T06:30:00", datetime(2026, 3, 1, 6, 30, tzinfo=UTC)),  # naive: UTC
        ("2026-03-01T08:30:00+02:00", datetime(2026, 3, 1, 6, 30, tzinfo=UTC)),
        (datetime(2026, 3, 1, 6, 30), datetime(2026, 3, 1, 6, 30, tzinfo=UTC)),
    ],
)
def test_start_is_utc(start: object, expected: datetime) -> None:
    s = parse_scenario(edited({"start": start}))
    assert s.start == expected and s.start.tzinfo == UTC


def test_engine_config_maps_every_section() -> None:
    s = parse_scenario(edited({
        "record_connections": "sampled",
        "connection_sample_rate": 0.05,
        "engine": {
            "cold_start": {"dist": "fixed", "mean_s": 2},
            "operation_durations": {"apply_config": {"dist": "exponential", "mean_s": 3}},
            "pool_share": 0.5,
            "pool_queue_timeout": "2m",
            "autoscaling_connections": "min",
            "autoscaler": {"reaction_delay": "30s", "target_cpu_utilisation": 0.6},
            "check_availability_every": "6h",
            "detach_after": None,
            "user_sync_delay": "500ms",
        },
        "faults": {"operation_failure_rate": 0.1, "retry_backoff": "1m"},
    }))
    cfg = s.engine_config()
    defaults = EngineConfig()
    assert cfg.cold_start.mean_s == 2 and cfg.cold_start.dist.value == "fixed"
    assert cfg.operation_durations[Action.APPLY_CONFIG].mean_s == 3
    assert cfg.operation_durations[Action.TENANT_ATTACH] == defaults.operation_durations[
        Action.TENANT_ATTACH]
    assert cfg.pool_share == 0.5 and cfg.pool_queue_timeout_s == 120
    assert cfg.autoscaling_connections is AutoscalingConnections.MIN
    assert cfg.autoscaler.reaction_delay_s == 30 and cfg.autoscaler.target_cpu_utilisation == 0.6
    assert cfg.autoscaler.target_memory_utilisation == defaults.autoscaler.target_memory_utilisation
    assert cfg.check_availability_every_s == 6 * 3600
    assert cfg.detach_after_s is None  # null turns it off
    assert cfg.archive_after_s == defaults.archive_after_s  # omitted keeps the default
    assert cfg.user_sync_delay_s == 0.5
    assert cfg.operation_failure_rate == 0.1 and cfg.retry_backoff_s == 60
    assert cfg.record_connections is ConnectionRecording.SAMPLED
    assert cfg.connection_sample_rate == 0.05


def test_an_empty_engine_section_gives_the_engine_defaults() -> None:
    assert parse_scenario(BASE).engine_config() == EngineConfig()


@pytest.mark.parametrize(
    ("arrivals", "kind"),
    [
        ({"kind": "poisson", "per_hour": 10}, Poisson),
        ({"kind": "diurnal", "peak_per_hour": 10, "trough_per_hour": 1, "peak_hour": 14}, Diurnal),
        ({"kind": "diurnal", "hourly": list(range(24))}, Diurnal),
        ({"kind": "bursty", "on_per_hour": 60, "off_per_hour": 0, "mean_on": "10m",
          "mean_off": "1h"}, Bursty),
        ({"kind": "periodic", "every": "1h", "offset": "5m", "jitter": "30s"}, Periodic),
    ],
)
def test_workloads_become_workload_objects(arrivals: dict[str, Any], kind: type) -> None:
    s = parse_scenario(edited({ARR: arrivals, "start": "2026-01-05T06:00:00Z"}))
    process = s.projects[0].branches[0].computes[0].arrival_process(s.start)
    assert isinstance(process, kind)
    if isinstance(process, Diurnal):
        assert process.start_hour_offset_s == 6 * 3600
    if isinstance(process, Bursty):
        assert (process.mean_on_s, process.mean_off_s) == (600, 3600)
    if isinstance(process, Periodic):
        assert (process.every_s, process.offset_s, process.jitter_s) == (3600, 300, 30)


def test_session_model_carries_loads_and_temp_bytes() -> None:
    s = parse_scenario(edited({
        f"{COMPUTE0}.workload.cpu_per_session": 0.5,
        f"{COMPUTE0}.workload.memory_gb_per_session": 2,
        f"{COMPUTE0}.workload.temp_bytes_per_session": {"dist": "lognormal", "mean_bytes": "1GiB"},
    }))
    compute = s.projects[0].branches[0].computes[0]
    model = compute.session_model()
    assert model is not None and model.temp_bytes is not None
    assert (model.cpu_per_session, model.memory_gb_per_session) == (0.5, 2.0)
    assert model.duration.mean_s == 30 and model.temp_bytes.mean_s == 1024**3
    assert model.temp_bytes.sigma == 1.0
    assert s.projects[0].branches[0].computes[1].session_model() is None


def test_replay_paths_are_read_from_the_scenario_directory(tmp_path: Path) -> None:
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "t.csv").write_text("minute,count\n0,5\n10,7\n")
    doc = edited({ARR: {"kind": "replay", "path": "traces/t.csv", "format": "per_minute"}})
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(doc))
    s = load_scenario(tmp_path / "s.yaml")
    process = s.projects[0].branches[0].computes[0].arrival_process(s.start)
    assert isinstance(process, Replay)
    assert process.times(np.random.default_rng(0), 0, 3600).size == 12


def test_instances_are_in_template_then_index_order() -> None:
    doc = edited({})
    doc["projects"].append({"name": "blog", "count": 1, "branches": [{"name": "main"}]})
    s = parse_scenario(doc)
    assert [i.key for i in s.instances()] == ["shop[0]", "shop[1]", "blog[0]"]
    assert [i.index for i in s.instances()] == [0, 1, 0]
    assert s.instances()[2].template.name == "blog"


def test_actions_render_with_the_ids_the_run_hands_out() -> None:
    doc = edited({"actions.0.body": {"endpoint": {"branch_id": "{shop[1].dev}", "x": "{not}"}}})
    action = parse_scenario(doc).actions[0]
    ids = {"shop[1]": "p-1", "shop[1].dev": "br-9", "shop[1].main.read_write": "ep-3"}

    def resolve(ref) -> str:
        suffix = "" if ref.branch is None else f".{ref.branch}"
        suffix += "" if ref.compute_type is None else f".{ref.compute_type}"
        return ids[ref.instance_key + suffix]

    assert action.method == "PATCH"
    assert render_path(action.path, resolve) == "/projects/p-1/endpoints/ep-3"
    assert render_body(action.body, resolve) == {"endpoint": {"branch_id": "br-9", "x": "{not}"}}
    assert [r.kind for r in action.references()] == ["project", "compute"]

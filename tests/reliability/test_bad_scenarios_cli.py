"""Broken scenario files through the real CLI: one line per problem, never a traceback.

Hypothesis breaks a valid scenario one way at a time: a wrong type at any field,
an unknown key in any mapping, a size off the CU table, a malformed duration, a
reference to nothing, YAML that does not parse. `sim validate FILE` and `sim run
FILE --out DIR` must each exit non-zero with `sim: error: FILE: <field path>:
<reason>` on stderr (the path when the problem has one, the line for YAML
syntax), print no traceback, and `sim run` must write nothing.

The many run in process (`sim.cli.main`, output captured); a fixed sample also
through `python -m sim` in a subprocess.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, note, settings
from hypothesis import strategies as st

from sim.cli import main
from tests.reliability.conftest import THOROUGH

ROOT = Path(__file__).resolve().parents[2]

BASE: dict[str, Any] = {
    "name": "broken",
    "seed": 5,
    "start": "2026-01-05T00:00:00Z",
    "duration": "10m",
    "plan": "launch",
    "price_per_cu_hour": 0.16,
    "engine": {"cold_start": {"dist": "lognormal", "mean_s": 0.6, "sigma": 0.8},
               "pool_queue_timeout": "60s", "autoscaler": {"reaction_delay": "15s"}},
    "faults": {"operation_failure_rate": 0.01, "retry_backoff": "5s",
               "outages": [{"at": "2m", "duration": "1m"}]},
    "keys": [{"key": "sim_personal_key_0123456789", "kind": "personal"},
             {"key": "sim_project_key_0123456789ab", "kind": "project", "project": "shop"}],
    "releases": [{"at": "5m", "version": "2026.01"}],
    "projects": [{
        "name": "shop",
        "count": 2,
        "auth": {"provider": "stack", "signups": {"per_hour": 2}},
        "branches": [
            {"name": "main", "computes": [
                {"type": "read_write", "autoscaling": {"min_cu": 0.25, "max_cu": 2},
                 "suspend_timeout_seconds": 300, "pooler_enabled": True, "pool_size": 20,
                 "workload": {"arrivals": {"kind": "poisson", "per_hour": 6},
                              "session": {"dist": "exponential", "mean_s": 30},
                              "cpu_per_session": 0.05}},
                {"type": "read_only", "size": {"cu": 1},
                 "workload": {"arrivals": {"kind": "diurnal", "peak_per_hour": 10,
                                           "trough_per_hour": 1, "peak_hour": 14},
                              "session": {"dist": "lognormal", "mean_s": 20, "sigma": 1.0}}},
            ]},
            {"name": "dev", "parent": "main", "computes": [{"type": "read_write"}]},
        ],
    }],
    "actions": [{"at": "3m", "call": "PATCH /projects/{shop[0]}/endpoints/{shop[0].main.read_write}",
                 "body": {"endpoint": {"autoscaling_limit_max_cu": 4}}}],
}


@dataclass(frozen=True)
class Broken:
    text: str  # the file
    what: str  # how it was broken, for the failure message
    path: str | None  # the field path the error must name; None: no path (the document itself)
    words: str | None = None  # or these words (YAML syntax: "line")


# ---- walking the document --------------------------------------------------------------------------

Path_ = tuple[str | int, ...]


def _leaves(doc: Any, at: Path_ = ()) -> list[tuple[Path_, Any]]:
    """Every field of the document (mappings and lists too), outside free-form action bodies."""
    out: list[tuple[Path_, Any]] = []
    if at and at[-1] == "body":
        return out
    if at:
        out.append((at, doc))
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _leaves(v, (*at, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _leaves(v, (*at, i))
    return out


def _mappings(doc: Any, at: Path_ = ()) -> list[Path_]:
    if at and at[-1] == "body":
        return []
    out: list[Path_] = []
    if isinstance(doc, dict):
        out.append(at)
        for k, v in doc.items():
            out += _mappings(v, (*at, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _mappings(v, (*at, i))
    return out


def _text(path: Path_) -> str:
    out = ""
    for seg in path:
        out += f"[{seg}]" if isinstance(seg, int) else (f".{seg}" if out else str(seg))
    return out


def _set(doc: Any, path: Path_, value: Any) -> Any:
    doc = copy.deepcopy(doc)
    target = doc
    for seg in path[:-1]:
        target = target[seg]
    target[path[-1]] = value
    return doc


def _dump(doc: Any) -> str:
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)


LEAVES = _leaves(BASE)
MAPPINGS = _mappings(BASE)


def _wrong_for(value: Any) -> list[Any]:
    """Values of a type the field never takes."""
    if isinstance(value, bool):
        return ["maybe", [True], {"on": 1}]
    if isinstance(value, (int, float)):
        return [[1, 2], {"n": 1}, True, "lots"]
    if isinstance(value, str):
        return [[value], {"v": value}]
    if isinstance(value, list):
        return ["a string", 5, {"k": 1}]
    return ["a string", 5, [1]]


# ---- ways to break it ------------------------------------------------------------------------------


@st.composite
def wrong_types(draw: st.DrawFn) -> Broken:
    path, value = draw(st.sampled_from(LEAVES), label="field")
    wrong = draw(st.sampled_from(_wrong_for(value)), label="wrong value")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and wrong == "lots":
        if path[-1] in ("duration", "at", "pool_queue_timeout", "reaction_delay", "retry_backoff"):
            wrong = [1]  # durations take strings: "lots" would be a malformed one (also caught)
    if path in ((("seed",)),) and wrong is True:
        wrong = "seven"
    return Broken(_dump(_set(BASE, path, wrong)), f"{_text(path)} = {wrong!r}", _text(path))


@st.composite
def unknown_keys(draw: st.DrawFn) -> Broken:
    at = draw(st.sampled_from(MAPPINGS), label="mapping")
    key = draw(st.sampled_from(["bogus", "autoscalling", "Name", "count_", "per-hour"]))
    target = BASE
    for seg in at:
        target = target[seg]
    if key in target:
        key += "_x"
    doc = _set(BASE, (*at, key), 1) if at else {**BASE, key: 1}
    return Broken(_dump(doc), f"unknown key {_text((*at, key))}", _text((*at, key)))


COMPUTE = ("projects", 0, "branches", 0, "computes")
SIZES: list[tuple[Path_, Any]] = [
    ((*COMPUTE, 1, "size", "cu"), v) for v in (0, 0.3, 3.5, 17, 57, 1000, -1)
] + [
    ((*COMPUTE, 0, "autoscaling", "max_cu"), v) for v in (0.1, 17, 18, 56, 64)
] + [
    ((*COMPUTE, 0, "autoscaling"), {"min_cu": 2, "max_cu": 1}),
    ((*COMPUTE, 0, "suspend_timeout_seconds"), 5),
    ((*COMPUTE, 0, "suspend_timeout_seconds"), 604_801),
    ((*COMPUTE, 0, "pool_size"), 0),
    (("projects", 0, "count"), 0),
    (("projects", 0, "count"), 10**7),
    (("faults", "operation_failure_rate"), 1.0),
    (("price_per_cu_hour"), -1),
    (("seed",), -3),
]


@st.composite
def out_of_range(draw: st.DrawFn) -> Broken:
    path, value = draw(st.sampled_from(SIZES), label="size")
    path = path if isinstance(path, tuple) else (path,)
    return Broken(_dump(_set(BASE, path, value)), f"{_text(path)} = {value!r}", _text(path))


DURATIONS: list[Any] = ["1 fortnight", "-5m", "1h30", "", "h", "10x", "1e999s", "--1s", "0",
                        "1h-30m", "⏰", "1.5.2h", "P1D", "nan", "inf", "1e999", 10**400, -1,
                        float("inf"), "30m30m", "1m1h", 4000 * 86_400]
DURATION_FIELDS: list[Path_] = [("duration",), ("faults", "retry_backoff"),
                                ("faults", "outages", 0, "duration"), ("releases", 0, "at"),
                                ("actions", 0, "at"), ("engine", "pool_queue_timeout"),
                                ("faults", "outages", 0, "at")]


@st.composite
def bad_durations(draw: st.DrawFn) -> Broken:
    path = draw(st.sampled_from(DURATION_FIELDS), label="field")
    text = draw(st.sampled_from(DURATIONS), label="duration")
    if text == "0" and path not in (("duration",), ("faults", "outages", 0, "duration")):
        text = "-0.5s"  # zero is a fine instant or backoff; a run or a window of 0 is not
    return Broken(_dump(_set(BASE, path, text)), f"{_text(path)} = {text!r}", _text(path))


REFERENCES: list[tuple[Path_, Any, str]] = [
    (("actions", 0, "call"), "PATCH /projects/{nope[0]}", "actions[0].call"),
    (("actions", 0, "call"), "PATCH /projects/{shop[9]}", "actions[0].call"),
    (("actions", 0, "call"), "GET /projects/{shop[0].nobranch}", "actions[0].call"),
    (("actions", 0, "call"), "GET /projects/{shop[0].dev.read_only}", "actions[0].call"),
    (("actions", 0, "call"), "PATCH /projects/{shop[0", "actions[0].call"),
    (("actions", 0, "call"), "FETCH /projects", "actions[0].call"),
    (("actions", 0, "call"), "GET projects", "actions[0].call"),
    (("actions", 0, "body"), {"endpoint": {"branch_id": "{shop[0].ghost}"}}, "actions[0]"),
    (("keys", 1, "project"), "nope", "keys[1]"),
    (("projects", 0, "branches", 1, "parent"), "ghost", "projects[0].branches[1].parent"),
    (("projects", 0, "auth", "branch"), "ghost", "projects[0].auth.branch"),
    (("actions", 0, "at"), "1h", "actions[0].at"),  # after the run's end
    (("releases", 0, "at"), "2h", "releases[0].at"),
    (("faults", "outages", 0, "at"), "20m", "faults.outages[0]"),
]


@st.composite
def bad_references(draw: st.DrawFn) -> Broken:
    path, value, named = draw(st.sampled_from(REFERENCES), label="reference")
    return Broken(_dump(_set(BASE, path, value)), f"{_text(path)} = {value!r}", named)


YAML_BREAKS = [
    lambda t: t.replace("projects:\n", "projects: [\n", 1),
    lambda t: t.replace("name: broken", "name: 'broken", 1),
    lambda t: t.replace("  count: 2", "\tcount: 2", 1),
    lambda t: t.replace("seed: 5", "seed: 5\nseed: 6", 1),
    lambda t: t.replace("plan: launch", "plan: launch: free", 1),
    lambda t: t.replace("duration: 10m", "duration: {10m", 1),
    lambda t: "- a list item before a mapping\n" + t,
    lambda t: t.replace("engine:", "engine: &a\n  <<: *b", 1),
    lambda t: "%YAML 9.9\n---\n" + t,
    lambda t: t.replace("keys:", "keys: !!python/object:os.system", 1),
]


@st.composite
def yaml_errors(draw: st.DrawFn) -> Broken:
    i = draw(st.integers(0, len(YAML_BREAKS) - 1), label="break")
    text = YAML_BREAKS[i](_dump(BASE))
    assert text != _dump(BASE)
    return Broken(text, f"YAML break #{i}", None, words="YAML")


WHOLE = [Broken("", "empty file", None, "empty"), Broken("[1, 2]\n", "a list", None, "mapping"),
         Broken("just text\n", "a scalar", None, "mapping"),
         Broken("\xff\xfe bad bytes", "not UTF-8", None, None),
         Broken(_dump({k: v for k, v in BASE.items() if k != "projects"}), "no projects",
                "projects")]

BROKEN = st.one_of(wrong_types(), unknown_keys(), out_of_range(), bad_durations(),
                   bad_references(), yaml_errors(), st.sampled_from(WHOLE))


# ---- the checks ---------------------------------------------------------------------------------


def write(tmp: Path, broken: Broken) -> Path:
    f = tmp / "scenario.yaml"
    if broken.what == "not UTF-8":
        f.write_bytes(b"name: \xff\xfe\n")
    else:
        f.write_text(broken.text, encoding="utf-8")
    return f


def check_refusal(broken: Broken, file: Path, code: int, out: str, err: str) -> None:
    assert code != 0, (broken.what, out, err)
    assert "Traceback" not in out + err, (broken.what, err)
    lines = err.rstrip("\n").split("\n")
    assert lines and lines[0].startswith(f"sim: error: {file}: "), (broken.what, err)
    assert all(line.startswith((f"sim: error: {file}: ", f"{file}: ")) for line in lines), err
    if broken.path is not None:
        assert f"{file}: {broken.path}" in err, (broken.what, broken.path, err)
    if broken.words is not None:
        assert broken.words in err, (broken.what, broken.words, err)


def test_the_base_scenario_is_valid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "ok.yaml"
    f.write_text(_dump(BASE), encoding="utf-8")
    assert main(["validate", str(f)]) == 0, capsys.readouterr().err


@settings(max_examples=400 if THOROUGH else 120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(broken=BROKEN)
@example(broken=WHOLE[0])
@example(broken=Broken(_dump(_set(BASE, ("duration",), 10**400)), "a 400-digit duration",
                       "duration"))  # was an OverflowError traceback
@example(broken=Broken(_dump(_set(BASE, (*COMPUTE, 0, "workload", "temp_bytes_per_session"),
                                  {"dist": "fixed", "mean_bytes": 10**400})),
                       "a 400-digit size", f"{_text(COMPUTE)}[0].workload.temp_bytes_per_session"))
def test_broken_scenarios_in_process(broken: Broken, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    note(broken.what)
    capsys.readouterr()
    case = tmp_path / f"case-{abs(hash(broken.text)) % 10**8}"
    case.mkdir(exist_ok=True)
    file = write(case, broken)
    code = main(["validate", str(file)])
    captured = capsys.readouterr()
    check_refusal(broken, file, code, captured.out, captured.err)
    out_dir = case / "results"
    code = main(["run", str(file), "--out", str(out_dir), "--quiet"])
    captured = capsys.readouterr()
    check_refusal(broken, file, code, captured.out, captured.err)
    assert not out_dir.exists() or not any(out_dir.iterdir()), broken.what


SAMPLE = [
    Broken(_dump(_set(BASE, (*COMPUTE, 1, "size", "cu"), 3.5)), "size 3.5",
           "projects[0].branches[0].computes[1].size.cu"),
    Broken(_dump(_set(BASE, ("duration",), "1 fortnight")), "duration", "duration"),
    Broken(_dump(_set(BASE, ("projects", 0, "branches", 0, "computes", 0, "autoscalling"),
                      {"min_cu": 1})), "typo", "projects[0].branches[0].computes[0].autoscalling"),
    Broken(_dump(_set(BASE, ("actions", 0, "call"), "PATCH /projects/{nope[0]}")), "reference",
           "actions[0].call"),
    Broken(_dump(BASE).replace("projects:\n", "projects: [\n", 1), "YAML", None, "line"),
    Broken(_dump(_set(BASE, ("faults", "operation_failure_rate"), "often")), "wrong type",
           "faults.operation_failure_rate"),
]


def test_broken_scenarios_through_python_m_sim(tmp_path: Path) -> None:
    """The sample through `python -m sim validate` and `run --out`, all processes at once."""
    running = []
    for i, broken in enumerate(SAMPLE):
        case = tmp_path / f"case{i}"
        case.mkdir()
        file = write(case, broken)
        for args in (["validate", str(file)], ["run", str(file), "--out", str(case / "out")]):
            process = subprocess.Popen([sys.executable, "-m", "sim", *args], cwd=ROOT, text=True,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            running.append((broken, file, case, process))
    for broken, file, case, process in running:
        out, err = process.communicate(timeout=120)
        check_refusal(broken, file, process.returncode, out, err)
        assert not (case / "out").exists() or not any((case / "out").iterdir())

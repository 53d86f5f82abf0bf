"""Parameter sweeps: a grid of overrides of a scenario, R seeds per point, run on dask.

    result = run_sweep("scenarios/quickstart.yaml",
                   {"computes.suspend_timeout_seconds": [60, 300, 900, -1]}, replications=5)
    result.runs      # one row per run: the grid values, seed and the summary's key figures
    result.points    # one row per grid point: means and 95% confidence intervals
    write_sweep(result, "results/sweep")   # runs.parquet, points.parquet, charts

An override applies to the scenario *document* (the YAML mapping) and the
result goes through the scenario loader again, so a swept value meets every
rule a value written in the file meets. Paths:

    engine.pool_share                                   a top-level section's key
    projects[0].branches[0].computes[0].size.cu         one place, fully qualified
    projects.count                                      a list without [i]: every element
    computes.suspend_timeout_seconds                    short for projects.branches.computes...
    branches.computes.pooler_enabled                    short for projects.branches...
    hobby.suspend_timeout_seconds                       every compute of template `hobby`

A path `TEMPLATE.KEY` (or a bare `KEY`: every template) is the grammar of
`sim recommend --space`, read by the same parser (`sim.scenario.template_settings`):
KEY is suspend_timeout_seconds (timeout; never = -1), cu, autoscaling
(MIN-MAX) or pooler_enabled (pooler).

Replication r runs with seed `replication_seed(scenario seed, r)` at every
point (common random numbers: differences between points are not drowned
in seed noise); replication 0 uses the scenario's own seed, so the point
that matches the file reproduces `sim run` exactly.
"""

from __future__ import annotations

import copy
import functools
import itertools
import json
import math
import re
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sim.metrics import frames, summary
from sim.metrics.theory import t_quantile_two_sided
from sim.processes.main_guard import in_process_instead
from sim.scenario.loader import ScenarioError, parse_scenario
from sim.scenario.schema import Scenario
from sim.scenario.template_settings import (
    TemplateSettingError,
    knob_of,
    parse_template_setting,
    set_on_template,
    shown_value,
    template_target,
)
from sim.sweep.fleet import (
    BatchProgress,
    Source,
    open_client,
    progress_reporter,
    read_source,
    run_fleet,
    run_local,
    run_tasks,
)

#: the summary's figures kept per run, and their dtype in runs.parquet
KEY_FIGURES: dict[str, str] = {
    "cu_hours": "float64",
    "cost": "float64",
    "mean_active_computes": "float64",
    "peak_active_computes": "int64",
    "mean_total_cu": "float64",
    "peak_total_cu": "float64",  # at one instant
    "sessions": "int64",
    "connection_attempts": "int64",
    "cold_starts": "int64",
    "cold_starts_per_1000_sessions": "float64",
    "wake_p50_s": "float64",
    "wake_p99_s": "float64",
    "refused": "int64",
    "refused_share": "float64",
    "queued": "int64",
    "queued_share": "float64",  # (queued + queue_timeouts) / attempts
    "queue_timeouts": "int64",
}
CONFIDENCE = 0.95
#: where a path may start without `projects.`
SHORTHANDS = {"computes": ("projects", "branches"), "branches": ("projects",)}
_SEGMENT = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_-]*)(?:\[(?P<index>\d+|\*)\])?")
#: a swept path ending in one of these is a size: the sizing chart is drawn against it
SIZE_KEYS = ("cu", "max_cu", "min_cu")


class SweepError(ValueError):
    """A --set that cannot apply; str() is one line naming the path."""


@dataclass(frozen=True)
class Setting:
    path: str
    values: tuple[Any, ...]

    @property
    def name(self) -> str:
        """The last key of the path: what a chart's label shows."""
        return self.path.rsplit(".", 1)[-1].split("[", 1)[0]

    @property
    def is_size(self) -> bool:
        return self.name in SIZE_KEYS


# ---- --set PATH=V1,V2 ------------------------------------------------------------------------


def parse_setting(text: str) -> Setting:
    """`PATH=V1,V2,...` -> Setting; values are YAML-like scalars (60, 0.5, -1, null, true, 5m),
    or for a template's knob (`TEMPLATE.KEY`) as `sim recommend --space` reads them."""
    path, sep, values = text.partition("=")
    path = path.strip()
    if not sep or not path:
        raise SweepError(f"--set {text}: write PATH=V1,V2,... (e.g. engine.pool_share=0.5,0.9)")
    if _knob_path(path):
        try:
            parsed = parse_template_setting(text, None, "--set",
                                            "hobby.suspend_timeout_seconds=300,3600")
        except TemplateSettingError as err:
            raise SweepError(str(err)) from None
        return Setting(parsed.path, tuple(shown_value(parsed.knob, v) for v in parsed.values))
    parts = [v.strip() for v in values.split(",")]
    if not values.strip() or any(not p for p in parts):
        raise SweepError(f"--set {text}: an empty value")
    split_path(path)  # refuse a malformed path before anything runs
    return Setting(path, tuple(parse_value(p) for p in parts))


def parse_value(text: str) -> Any:
    if text in ("null", "~"):
        return None
    if text in ("true", "false"):
        return text == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def as_settings(settings: Sequence[Setting | str] | Mapping[str, Sequence[Any]]) -> list[Setting]:
    if isinstance(settings, Mapping):
        return [parse_setting(f"{path}={','.join(_text(v) for v in values)}")
                if _knob_path(str(path)) else Setting(str(path), tuple(values))
                for path, values in settings.items()]
    return [s if isinstance(s, Setting) else parse_setting(s) for s in settings]


# ---- TEMPLATE.KEY: a template's knob (sim.scenario.template_settings) -----------------------

#: what a path into the scenario starts with (its sections, and the shorthands)
_SECTIONS = frozenset(Scenario.model_fields) | frozenset(SHORTHANDS)


def _knob_path(path: str) -> bool:
    target = template_target(path, _SECTIONS)
    return target is not None and knob_of(target[1]) is not None


def _apply_knob(document: Mapping[str, Any], path: str, value: Any, template: str | None
                ) -> dict[str, Any]:
    try:
        return set_on_template(document, path, template, _text(value), "--set")
    except TemplateSettingError as err:
        raise SweepError(str(err)) from None


def split_path(path: str) -> list[tuple[str, int | None | str]]:
    """`a.b[2].c[*]` -> [(a, None), (b, 2), (c, "*")], shorthands expanded."""
    out: list[tuple[str, int | None | str]] = []
    for text in path.split("."):
        match = _SEGMENT.fullmatch(text)
        if match is None:
            raise SweepError(f"--set {path}: {text!r} is not a key (write key or key[i])")
        index = match["index"]
        out.append((match["name"], None if index is None else "*" if index == "*" else int(index)))
    if out[0][0] in SHORTHANDS and out[0][0] not in Scenario.model_fields:
        out = [(name, None) for name in SHORTHANDS[out[0][0]]] + out
    return out


def apply_override(document: Mapping[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of the document with `value` at `path` (every match of a list without [i]);
    a template's knob (`TEMPLATE.KEY`) on every compute of the template."""
    target = template_target(path, _SECTIONS)
    if target is not None:
        return _apply_knob(document, path, value, target[0])
    doc = copy.deepcopy(dict(document))
    if _assign(doc, split_path(path), value, "", path) == 0:
        raise SweepError(f"--set {path}: matches nothing in this scenario")
    return doc


def _assign(node: Any, segments: list, value: Any, where: str, path: str) -> int:
    (name, index), rest = segments[0], segments[1:]
    here = f"{where}.{name}" if where else name
    if not isinstance(node, dict):
        raise SweepError(f"--set {path}: {where} is not a mapping")
    if not rest and index is None:
        node[name] = copy.deepcopy(value)
        return 1
    child = node.get(name)
    if child is None and index is None:
        child = node[name] = {}  # a section the file leaves to its defaults
    if isinstance(child, list):
        if index is None or index == "*":
            picks = list(enumerate(child))
        elif isinstance(index, int) and index < len(child):
            picks = [(index, child[index])]
        else:
            raise SweepError(f"--set {path}: {here} has {len(child)} item(s), no [{index}]")
        if not rest:
            for i, _ in picks:
                child[i] = copy.deepcopy(value)
            return len(picks)
        return sum(_assign(item, rest, value, f"{here}[{i}]", path) for i, item in picks)
    if index is not None:
        raise SweepError(f"--set {path}: {here} is not a list")
    return _assign(child, rest, value, here, path)


def grid(settings: Sequence[Setting]) -> list[dict[str, Any]]:
    """Every combination of the settings' values; the first setting varies slowest."""
    return [dict(zip((s.path for s in settings), combo, strict=True))
            for combo in itertools.product(*(s.values for s in settings))]


def point_document(base: Mapping[str, Any], point: Mapping[str, Any]) -> dict[str, Any]:
    doc = dict(base)
    for path, value in point.items():
        doc = apply_override(doc, path, value)
    return doc


def _check(source: Source, document: dict[str, Any], what: str) -> Scenario:
    try:
        return parse_scenario(document, source=what, base_dir=source.base_dir)
    except ScenarioError as err:
        first = err.problems[0]
        more = len(err.problems) - 1
        where = f"{first.path}: " if first.path else ""
        tail = f" (and {more} more problem{'s' * (more > 1)})" if more else ""
        raise SweepError(f"--set {what}: {where}{first.message}{tail}") from None


def validated_points(source: Source, settings: Sequence[Setting]
                     ) -> list[tuple[dict[str, Any], dict[str, Any], Scenario]]:
    """(point, document, scenario) for the whole grid; raises SweepError on the first bad value.

    Each value is tried alone first, so the error names the one that is wrong.
    """
    for s in settings:
        for value in s.values:
            _check(source, point_document(source.document, {s.path: value}),
                   f"{s.path}={_text(value)}")
    out = []
    for point in grid(settings):
        doc = point_document(source.document, point)
        what = ", ".join(f"{p}={_text(v)}" for p, v in point.items())
        out.append((point, doc, _check(source, doc, what)))
    return out


def _text(value: Any) -> str:
    if isinstance(value, tuple) and len(value) == 2:  # a range of CU
        return f"{value[0]:g}-{value[1]:g}"
    return "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def replication_seed(seed: int, replication: int) -> int:
    """The seed of replication r: the scenario's own for r = 0, then derived from (seed, r)."""
    if replication == 0:
        return int(seed)
    state = np.random.SeedSequence([int(seed), int(replication)]).generate_state(2, np.uint32)
    return int(state[0]) << 31 | int(state[1]) >> 1  # a non-negative 63-bit integer


# ---- running ---------------------------------------------------------------------------------


def template_figures(totals: Mapping[str, Any]) -> dict[str, Any]:
    from sim.sweep.templates import TEMPLATE_FIGURES, TEMPLATES  # it builds on this module

    return {TEMPLATES: [{key: t.get(key) for key in ("template", *TEMPLATE_FIGURES)}
                        for t in totals["templates"]]}


def run_point(document: dict[str, Any], base_dir: str | None, seed: int,
              topic: str | None = None, task: int = 0) -> dict[str, Any]:
    """Run one grid point with one seed and return its key figures (one dask task)."""
    source = Source(document, base_dir, str(document.get("name", "<scenario>")))
    result = run_fleet(source, seed=seed, progress=progress_reporter(topic, task))
    totals = summary(frames(result), result)
    attempts = totals["connection_attempts"]
    # waited in the pooler's queue, then served or timed out: Erlang-C's P(wait)
    waited = totals["queued"] + totals["queue_timeouts"]
    totals["queued_share"] = waited / attempts if attempts else None
    figures = {key: totals.get(key) for key in KEY_FIGURES}
    figures.update(template_figures(totals))
    return figures


@dataclass
class SweepResult:
    name: str
    settings: list[Setting]
    replications: int
    runs: pd.DataFrame
    points: pd.DataFrame
    #: one row per run and template / per point and template (`template_runs_frame`)
    template_runs: pd.DataFrame | None = None
    template_points: pd.DataFrame | None = None

    @property
    def params(self) -> list[str]:
        return [s.path for s in self.settings]


def run_sweep(
    source: str | Path | Mapping[str, Any] | Source,
    settings: Sequence[Setting | str] | Mapping[str, Sequence[Any]],
    *,
    replications: int = 1,
    workers: int | None = None,
    scheduler: str | None = None,
    client: Any = None,
    progress: BatchProgress | None = None,
) -> SweepResult:
    """Run every grid point `replications` times on dask and tabulate the key figures.

    By default on an embedded LocalCluster with one worker process per CPU;
    `scheduler` sends the runs to an existing cluster, `client` uses an open
    dask Client, and `workers=0` runs them one by one in this process (as does a
    call from a script's top level outside `if __name__ == "__main__":`).
    Raises SweepError for a bad setting, before anything runs.
    """
    if replications < 1:
        raise SweepError(f"replications must be >= 1, got {replications}")
    src = read_source(source)
    chosen = as_settings(settings)
    if not chosen:
        raise SweepError("nothing to sweep: give at least one --set PATH=V1,V2,...")
    points = validated_points(src, chosen)
    jobs = []  # (point index, replication, seed)
    calls = []
    for i, (_, doc, scenario) in enumerate(points):
        for r in range(replications):
            seed = replication_seed(scenario.seed, r)
            jobs.append((i, r, seed))
            calls.append(((doc, src.base_dir, seed), scenario.duration))
    if (client is None and scheduler is None and workers == 0) or \
            in_process_instead("sim.run_sweep", workers, scheduler, client):
        figures = run_local(run_point, calls, progress)
    else:
        context = nullcontext(client) if client is not None else open_client(workers, scheduler)
        with context as active:
            figures = run_tasks(active, run_point, calls, progress)
    runs = runs_frame(chosen, [p for p, _, _ in points], jobs, figures)
    name = str(src.document.get("name", "scenario"))
    from sim.sweep.templates import template_points_frame, template_runs_frame

    by_template = template_runs_frame(chosen, [p for p, _, _ in points], jobs, figures)
    return SweepResult(name, chosen, replications, runs, points_frame(runs, chosen),
                       by_template, template_points_frame(by_template, chosen))


# ---- tables ----------------------------------------------------------------------------------


def _column(values: Sequence[Any]) -> pd.Series:
    """A swept parameter's column: numbers stay numbers; anything mixed becomes text."""
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present) and len(present) == len(values):
        return pd.Series(values, dtype="bool")
    if all(isinstance(v, int) and not isinstance(v, bool) for v in present) and \
            len(present) == len(values):
        return pd.Series(values, dtype="int64")
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return pd.Series([np.nan if v is None else float(v) for v in values], dtype="float64")
    return pd.Series([None if v is None else _text(v) for v in values], dtype="string")


def label(point: Mapping[str, Any], settings: Sequence[Setting]) -> str:
    """`suspend_timeout_seconds=300, max_cu=4`: last keys, or whole paths when two clash."""
    names = [s.name for s in settings]
    short = len(set(names)) == len(names)
    return ", ".join(f"{s.name if short else s.path}={_text(point[s.path])}" for s in settings)


def runs_frame(settings: Sequence[Setting], points: Sequence[Mapping[str, Any]],
               jobs: Sequence[tuple[int, int, int]], figures: Sequence[Mapping[str, Any]]
               ) -> pd.DataFrame:
    columns: dict[str, Any] = {"point": pd.Series([i for i, _, _ in jobs], dtype="int64")}
    for s in settings:
        columns[s.path] = _column([points[i][s.path] for i, _, _ in jobs])
    columns["label"] = pd.Series([label(points[i], settings) for i, _, _ in jobs], dtype="string")
    columns["replication"] = pd.Series([r for _, r, _ in jobs], dtype="int64")
    columns["seed"] = pd.Series([seed for _, _, seed in jobs], dtype="int64")
    for key, dtype in KEY_FIGURES.items():
        columns[key] = figure_column([f[key] for f in figures], dtype)
    return pd.DataFrame(columns)


def figure_column(values: Sequence[Any], dtype: str) -> pd.Series:
    """A key figure over the runs; a run without it (None: no data) leaves NaN, and a
    count with a NaN among it becomes a float column rather than failing."""
    if any(v is None for v in values):
        return pd.Series([np.nan if v is None else v for v in values], dtype="float64")
    return pd.Series(values, dtype=dtype)


@functools.lru_cache(maxsize=256)
def t_factor(df: int, confidence: float = CONFIDENCE) -> float:
    return t_quantile_two_sided(1.0 - confidence, df)


def mean_ci(values: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """Mean and the t-interval of the mean; NaN bounds with fewer than two values."""
    values = values[~np.isnan(values)]
    n = len(values)
    if n == 0:
        return math.nan, math.nan, math.nan
    mean = float(values.mean())
    if n < 2:
        return mean, math.nan, math.nan
    half = t_factor(n - 1, confidence) * float(values.std(ddof=1)) / math.sqrt(n)
    return mean, mean - half, mean + half


def point_row(group: pd.DataFrame, keep: Sequence[str], figures: Sequence[str]
              ) -> dict[str, Any]:
    """One grid point's runs as a row: the `keep` columns of its first run, how many
    replications, and mean / ci_low / ci_high of each of `figures`."""
    row: dict[str, Any] = group.iloc[0][list(keep)].to_dict()
    row["replications"] = len(group)
    for key in figures:
        mean, low, high = mean_ci(group[key].to_numpy(dtype="float64"))
        row[f"{key}_mean"], row[f"{key}_ci_low"], row[f"{key}_ci_high"] = mean, low, high
    return row


def points_frame(runs: pd.DataFrame, settings: Sequence[Setting]) -> pd.DataFrame:
    """Per grid point: its values, label, replications, and mean / ci_low / ci_high per figure."""
    keep = ["point", *(s.path for s in settings), "label"]
    rows = []
    for _, group in runs.groupby("point", sort=True):
        rows.append(point_row(group, keep, KEY_FIGURES))
    out = pd.DataFrame(rows)
    for column in keep:
        out[column] = out[column].astype(runs[column].dtype)
    out["replications"] = out["replications"].astype("int64")
    return out


# ---- writing ---------------------------------------------------------------------------------


def write_sweep(result: SweepResult, out_dir: str | Path) -> dict[str, Path]:
    """runs.parquet, points.parquet, sweep.json and the sweep charts; returns name -> path."""
    from sim.metrics.sweep_charts import draw_sweep_charts

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"runs": out / "runs.parquet", "points": out / "points.parquet",
             "sweep": out / "sweep.json"}
    result.runs.to_parquet(paths["runs"], index=False)
    result.points.to_parquet(paths["points"], index=False)
    if result.template_points is not None and result.template_runs is not None:
        paths["template_runs"] = out / "template_runs.parquet"
        paths["template_points"] = out / "template_points.parquet"
        result.template_runs.to_parquet(paths["template_runs"], index=False)
        result.template_points.to_parquet(paths["template_points"], index=False)
    meta = {"name": result.name, "replications": result.replications,
            "confidence": CONFIDENCE,
            "settings": [{"path": s.path, "values": list(s.values)} for s in result.settings]}
    paths["sweep"].write_text(json.dumps(meta, indent=2, default=str) + "\n", encoding="utf-8")
    for path in draw_sweep_charts(result.points, result.settings, result.name, out,
                                  result.template_points):
        paths[path.stem] = path
    return paths


#: the columns of `points_table`: (heading, figure, format of sim.metrics.summary.format_value)
_TABLE = [("cost", "cost", "money"), ("CU-hours", "cu_hours", "num"),
          ("cold starts/1k", "cold_starts_per_1000_sessions", "num"),
          ("wake p99", "wake_p99_s", "seconds"), ("refused", "refused_share", "pct"),
          ("queued", "queued_share", "pct"), ("computes on", "mean_active_computes", "num")]


def _plus_minus(half: float, mean: float, kind: str) -> str:
    """A CI half-width in two significant digits (it is itself uncertain)."""
    if half <= 1e-9 * abs(mean):
        half = 0.0  # identical runs; not float noise
    if kind == "pct":
        half *= 100
    rounded = float(f"{half:.2g}")
    text = f"{rounded:,.0f}" if rounded >= 100 else f"{rounded:g}"
    unit = {"pct": " %", "seconds": " s"}.get(kind, "")
    return f" ±{text}{unit}"


def points_table(result: SweepResult, width: int = 160) -> str:
    """Per point: the swept values, then mean ±95% CI half-width of the key figures; then
    the same per point and template."""
    from sim.sweep.templates import TEMPLATE_TABLE

    text = _figures_table(result.settings, result.points, _TABLE, width)
    if result.template_points is not None and len(result.template_points):
        text += "\n" + _figures_table(result.settings, result.template_points,
                                      TEMPLATE_TABLE, width, by_template=True)
    return text


def _figures_table(settings: Sequence[Setting], points: pd.DataFrame,
                   columns: Sequence[tuple[str, str, str]], width: int,
                   by_template: bool = False) -> str:
    import io

    from rich import box
    from rich.console import Console
    from rich.table import Table

    from sim.metrics.summary import format_value
    from sim.metrics.sweep_charts import value_text

    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for s in settings:
        table.add_column(s.name, no_wrap=True)
    if by_template:
        table.add_column("template", no_wrap=True)
    table.add_column("runs", justify="right")
    for heading, _, _ in columns:
        table.add_column(heading, justify="right", no_wrap=True)
    previous = None
    for row in points.to_dict("records"):
        cells = [value_text(s, row[s.path]) for s in settings]
        if by_template:  # the swept values once per point, its templates below them
            if row["point"] == previous:
                cells = [""] * len(cells)
            elif previous is not None:
                table.add_section()
            previous = row["point"]
            cells.append(str(row["template"]))
        cells.append(str(row["replications"]))
        for _, key, kind in columns:
            mean, high = row[f"{key}_mean"], row[f"{key}_ci_high"]
            text = format_value(None if math.isnan(mean) else mean, kind)
            if not math.isnan(high):
                text += _plus_minus(high - mean, mean, kind)
            cells.append(text)
        table.add_row(*cells)
    buffer = io.StringIO()
    Console(file=buffer, width=width, color_system=None, no_color=True, highlight=False,
            emoji=False).print(table)
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines()).strip("\n") + "\n"

"""A run's tables on disk: Parquet per table, summary.json and run.json.

The same RunResult always gives the same bytes, so runs can be compared and
cached by hash. For that the Parquet files carry no pandas metadata (it names
the pandas version and index layout) and an explicit Arrow schema; reading
applies the frame schema again, so dtypes survive the round trip without it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from sim.engine.records import RunResult
from sim.metrics.frames import BOOL, F64, I64, SCHEMAS, STR, TABLES, TIME, frames
from sim.metrics.summary import summary as make_summary
from sim.scenario.roads import current

SUMMARY_FILE = "summary.json"
RUN_FILE = "run.json"

_ARROW_TYPES: list[tuple[Any, pa.DataType]] = [
    (STR, pa.string()),
    (F64, pa.float64()),
    (I64, pa.int64()),
    (BOOL, pa.bool_()),
    (TIME, pa.timestamp("us", tz="UTC")),
]


def arrow_schema(table: str) -> pa.Schema:
    return pa.schema([(name, _arrow_type(dtype)) for name, dtype in SCHEMAS[table].items()])


def _arrow_type(dtype: Any) -> pa.DataType:
    for known, arrow in _ARROW_TYPES:
        if dtype == known:
            return arrow
    raise TypeError(f"no Arrow type for column dtype {dtype!r}")


def write_results(
    result: RunResult, out_dir: str | Path, *, tables: dict[str, pd.DataFrame] | None = None,
    totals: dict[str, Any] | None = None, on_saved: Callable[[Path], None] | None = None,
) -> dict[str, Path]:
    """Write every table, the summary and the run's metadata; returns name -> path.

    Pass `tables` and `totals` when the frames and the summary are already built (they
    are costly for big fleets); `on_saved` hears of each file as it is written (a
    progress bar).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tables = frames(result) if tables is None else tables

    def saved(path: Path) -> Path:
        if on_saved is not None:
            on_saved(path)
        return path

    paths = {name: saved(write_table(tables[name], name, out / f"{name}.parquet"))
             for name in TABLES}
    totals = make_summary(tables, result) if totals is None else totals
    paths["summary"] = saved(_write_json(totals, out / SUMMARY_FILE))
    paths["run"] = saved(_write_json(run_metadata(result), out / RUN_FILE))
    return paths


def result_files() -> list[str]:
    """The names of the files `write_results` writes, in the order it writes them."""
    return [*(f"{name}.parquet" for name in TABLES), SUMMARY_FILE, RUN_FILE]


def missing_results(out_dir: str | Path) -> list[str]:
    """Which of a run's result files a directory lacks (all of them for a non-directory)."""
    out = Path(out_dir)
    return [name for name in result_files() if not (out / name).is_file()]


def read_results(out_dir: str | Path) -> tuple[dict[str, pd.DataFrame], dict[str, Any]]:
    """The tables and the summary that `write_results` wrote, with their original dtypes."""
    out = Path(out_dir)
    tables = {name: read_table(out / f"{name}.parquet", name) for name in TABLES}
    summary = json.loads((out / SUMMARY_FILE).read_text(encoding="utf-8"))
    return tables, summary


def read_run(out_dir: str | Path) -> dict[str, Any]:
    run = json.loads((Path(out_dir) / RUN_FILE).read_text(encoding="utf-8"))
    if "roads" in run:  # in today's words, whenever it was written
        run["roads"] = current(run["roads"])
    return run


def run_metadata(result: RunResult) -> dict[str, Any]:
    return {
        "name": result.name,
        "seed": int(result.seed),
        "start": result.start_iso,
        "duration_s": float(result.duration_s),
        "price_per_cu_hour": float(result.price_per_cu_hour),
        "assumptions": dict(result.assumptions),
        "roads": dict(result.roads),
    }


def write_table(df: pd.DataFrame, table: str, path: Path) -> Path:
    schema = arrow_schema(table)
    if list(df.columns) != schema.names:
        raise ValueError(f"{table}: columns {list(df.columns)} differ from {schema.names}")
    arrow = pa.Table.from_pandas(df, schema=schema, preserve_index=False)
    arrow = arrow.replace_schema_metadata(None)
    # a reader never sees a half-written file: write beside it, then rename
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(arrow, tmp, compression="zstd")
    os.replace(tmp, path)
    return path


def read_table(path: Path, table: str) -> pd.DataFrame:
    df = pq.read_table(path, schema=arrow_schema(table)).to_pandas()
    return df.astype(SCHEMAS[table])


def _write_json(data: dict[str, Any], path: Path) -> Path:
    # repr of floats is the shortest exact form; allow_nan=False: summaries use null for no data
    text = json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path

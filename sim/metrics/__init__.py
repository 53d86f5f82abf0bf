"""A run's records -> pandas frames, Parquet files, a summary and charts.

tables = frames(result)                 # dict of DataFrames, fixed schemas
totals = summary(tables, result)        # flat dict of plain numbers
print(summary_table(totals))
write_results(result, "out/", tables=tables)
draw_charts(tables, totals, "out/")
tables, totals = read_results("out/")   # redraw from disk later
"""

from sim.metrics.charts import draw_charts
from sim.metrics.frames import SCHEMAS, TABLES, frames
from sim.metrics.io import read_results, write_results
from sim.metrics.summary import summary, summary_table

__all__ = [
    "SCHEMAS",
    "TABLES",
    "draw_charts",
    "frames",
    "read_results",
    "summary",
    "summary_table",
    "write_results",
]

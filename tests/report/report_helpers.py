"""Helpers for the report tests: gpfit-style params shards, output rows."""
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from gpcore import FitResult
from gpcore.result import COMPONENT_FIELDS
from pipeline.io.rows import of_fit
from pipeline.io.schema import OUTPUT_SCHEMA

# Deliberately awkward: HTML and matplotlib-mathtext characters in an id.
ODD_ID = "<b>&$x_1$"


def write_params(folder, rows, shards=1, manifest=True):
    """Writes rows (dicts with the output columns) as gpfit does: shards
    params/part-SSSSS-of-NNNNN.parquet and, unless told not to, _SUCCESS.json
    (with `manifest`'s content if it is a dict)."""
    (folder / "params").mkdir(parents=True, exist_ok=True)
    for shard, part in enumerate(np.array_split(np.arange(len(rows)), shards)):
        table = pa.Table.from_pylist([rows[i] for i in part], schema=OUTPUT_SCHEMA)
        pq.write_table(table, folder / "params" / f"part-{shard:05d}-of-{shards:05d}.parquet")
    if manifest:
        content = manifest if isinstance(manifest, dict) else {}
        (folder / "_SUCCESS.json").write_text(json.dumps({"series": len(rows), **content}))
    return folder


def params_row(series_id, status="ok", kernel="rbf", n_points=30, **values):
    """One output row; "ok" rows get plausible parameters unless given, and
    a single kernel's `components` repeats its flat parameters."""
    row = of_fit(FitResult(series_id, status, kernel, n_points), None)
    if status == "ok":
        row.update(mean=0.0, amplitude=1.0, length_scale=2.0, noise_variance=0.1,
                   nll=float(n_points), converged=True, stop_reason="converged", iterations=12)
    row.update(values)
    if status == "ok" and "components" not in values:
        row["components"] = [{name: row[name] if name != "kernel" else kernel
                              for name in COMPONENT_FIELDS}]
    return row

"""The output table's explicit Arrow schema: one row per input series.

Explicit, not inferred: a shard whose rows are all "skipped" would otherwise
get null-typed parameter columns, and shards of one output would disagree.
The types are plain (string, int64, float64, bool) so that pandas, DuckDB and
BigQuery read the files as they are.
"""
from __future__ import annotations

import pyarrow as pa


def _field(name: str, type_: pa.DataType, nullable: bool, doc: str) -> pa.Field:
    return pa.field(name, type_, nullable=nullable, metadata={"description": doc})


# Same columns, same order as gpcore.OUTPUT_COLUMNS (a test keeps them equal).
OUTPUT_SCHEMA = pa.schema([
    _field("series_id", pa.string(), False, "input series id, as a string"),
    _field("status", pa.string(), False, "ok, skipped (not fittable) or failed"),
    _field("error", pa.string(), True, "why the series was skipped or failed; null if ok"),
    _field("kernel", pa.string(), False, "covariance kernel fitted"),
    _field("n_points", pa.int64(), False, "finite observations used"),
    _field("mean", pa.float64(), True, "constant mean, units of y"),
    _field("amplitude", pa.float64(), True, "kernel standard deviation, units of y"),
    _field("length_scale", pa.float64(), True,
           "length scale, units of t (days for date/timestamp t); unitless for periodic"),
    _field("period", pa.float64(), True, "period, units of t; null unless kernel is periodic"),
    _field("noise_variance", pa.float64(), True, "observation noise variance, units of y^2"),
    _field("nll", pa.float64(), True,
           "negative log marginal likelihood of the observed points (nats)"),
    _field("converged", pa.bool_(), False, "the optimiser met its tolerance"),
    _field("stop_reason", pa.string(), True,
           "why the optimiser stopped: converged, max_iterations or stalled; null if not ok"),
    _field("at_bound", pa.bool_(), False,
           "a parameter ended at a bound of its search range (see docs/design.md)"),
    _field("iterations", pa.int64(), False, "optimiser iterations"),
])

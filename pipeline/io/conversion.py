"""Input rows -> Series -> output rows: the conversions the Beam job and the
DataFrame API (pipeline/frame.py) share, so that both give the same series
and the same rows for the same data.

  split:        a table (long or nested layout) -> (id, Chunk) per series in
                it; null and NaN ids dropped and counted
  merge:        one id's chunks -> Series, points sorted by (t, y)
  first_problem: the one reason of a series with several bad chunks
  too_many_rows, skipped_row: a series refused unassembled
  fitted_row:   a fit's result -> its output row, with the fingerprint
  output_table: output rows -> a table of the output schema

Times become float64 days for dates and timestamps, ids strings
(pipeline/io/columns.py). Sorting by (t, y) makes a series independent of
the order of its rows, so results do not depend on how the input was split.
"""
from __future__ import annotations

from typing import Iterator, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from gpcore.result import SKIPPED, FitResult
from gpcore.series import Series
from pipeline.io import columns as col
from pipeline.io import fingerprint
from pipeline.io.inputs import Columns
from pipeline.io.rows import of_fit
from pipeline.io.schema import OUTPUT_SCHEMA

# (t [n] float64, y [n] float64, problem or None): part of one series.
Chunk = tuple[np.ndarray, np.ndarray, Optional[str]]


def split(table: pa.Table, columns: Columns) -> tuple[int, Iterator[tuple[str, Chunk]]]:
    """A table with the id, time and value columns -> (rows with a null id,
    a float's NaN counted as one (columns.missing_ids), (series id, Chunk)
    per series in it).

    Long layout: rows grouped by id (one chunk per id). Nested layout: one
    chunk per row; a row whose t and y lists differ in length carries the
    problem. Rows with a null or NaN id are dropped.
    """
    ids = col.without_views(table.column(columns.id))
    missing = col.missing_ids(ids)
    null_ids = pc.sum(missing).as_py() or 0
    if null_ids:
        at = table.schema.get_field_index(columns.id)
        table = table.set_column(at, columns.id, ids).filter(pc.invert(missing))
    if table.num_rows == 0:
        return null_ids, iter(())
    ids = table.column(columns.id)
    times, values = table.column(columns.time), table.column(columns.value)
    if col.is_list(times.type):
        return null_ids, _nested_chunks(col.as_str(ids), times, values, columns)
    return null_ids, _long_chunks(*col.as_codes(ids), col.as_float(times), col.as_float(values))


def _long_chunks(codes: np.ndarray, names: np.ndarray, t: np.ndarray, y: np.ndarray):
    """One chunk per distinct id (col.as_codes), the ids in sorted order."""
    order = np.argsort(codes, kind="stable")
    parts = np.split(order, np.cumsum(np.bincount(codes, minlength=names.size))[:-1])
    for code in np.argsort(names, kind="stable"):
        yield str(names[code]), (t[parts[code]], y[parts[code]], None)


def _nested_chunks(ids: np.ndarray, times, values, columns: Columns):
    t_len, y_len = col.list_lengths(times), col.list_lengths(values)
    t_all = np.split(col.as_float(col.list_values(times)), np.cumsum(t_len)[:-1])
    y_all = np.split(col.as_float(col.list_values(values)), np.cumsum(y_len)[:-1])
    for series_id, t, y in zip(ids, t_all, y_all):
        problem = None
        if t.size != y.size:
            problem = (f"a row of this series has {t.size} times but {y.size} values; give "
                       f"its {columns.time!r} and {columns.value!r} lists equal length")
        yield str(series_id), (t, y, problem)


def merge(series_id: str, chunks: Sequence[Chunk]) -> Series:
    """One id's chunks -> its Series, points sorted by (t, y)."""
    t = np.concatenate([chunk[0] for chunk in chunks])
    y = np.concatenate([chunk[1] for chunk in chunks])
    order = np.lexsort((y, t))
    return Series(series_id, t[order], y[order])


def first_problem(*problems: Optional[str]) -> Optional[str]:
    """The reason a series whose chunks carry these problems (None: none)
    is skipped: the least of them, so that it, and the skipped row's
    fingerprint, do not depend on the order in which the chunks arrive
    (files, row groups, workers)."""
    return min((p for p in problems if p), default=None)


def too_many_rows(rows: int, max_rows: int, flag: str = "--max_rows") -> str:
    """Why a series of `rows` raw points (rows in the long layout, list
    elements in the nested one; missing values included) was not assembled."""
    return (f"{rows} input points (missing ones included) is more than {flag}={max_rows}; "
            f"the series was not assembled: aggregate or split it, or raise {flag}")


def skipped_row(series_id: str, kernel: str, problem: str, key: bytes) -> dict:
    """The "skipped" row of a series refused unassembled, fingerprinted by its
    reason under `key` (fingerprint.options_key)."""
    return of_fit(FitResult(series_id, SKIPPED, kernel, 0, error=problem),
                  fingerprint.of_reason(key, problem))


def fitted_row(result: FitResult, series: Series, key: bytes) -> dict:
    """A fit's output row, with the series' fingerprint under `key` (the one
    it carries, else of its points: fingerprint.of_series)."""
    return of_fit(result, fingerprint.of_series(key, series))


def output_table(rows: Sequence[dict]) -> pa.Table:
    """Output rows (dicts of schema.OUTPUT_COLUMNS) -> a table of exactly the
    output schema (pipeline/io/schema.py), in the rows' order."""
    return pa.Table.from_pylist(list(rows), schema=OUTPUT_SCHEMA)

"""The output layout against the readers the README names: each one-liner
on a table's folder returns exactly that table, one schema, every row once
(on the fault suite's clean run, which wrote both tables). BigQuery's load
is documented in the README and not run here (no network)."""
from __future__ import annotations

import os
import re
import shutil

import dask.dataframe as dd
import duckdb
import pandas as pd
import polars as pl
import pyarrow
import pyarrow.dataset as ds
import pytest

from pipeline.io.schema import OUTPUT_SCHEMA, predictions_schema
from reliability_runs import HOSTILE_IDS, PREDICT_POINTS, REPO

PREDICTION_COLUMNS = list(predictions_schema(False).names)


def _readers(folder: str) -> dict:
    """{reader: (rows, columns, ids)} of the README's one-liners on a folder."""
    found = {}
    table = pd.read_parquet(f"{folder}/")
    found["pandas"] = (len(table), list(table.columns), list(table.series_id))
    table = ds.dataset(f"{folder}/").to_table()
    found["pyarrow.dataset"] = (table.num_rows, table.column_names,
                                table.column("series_id").to_pylist())
    table = duckdb.sql(f"SELECT * FROM read_parquet('{folder}/*.parquet', "
                       "hive_partitioning = false)")
    found["duckdb"] = (len(table.fetchall()), table.columns,
                       [r[0] for r in duckdb.sql(f"SELECT series_id FROM '{folder}/*.parquet'")
                        .fetchall()])
    table = pl.read_parquet(f"{folder}/*.parquet")
    found["polars"] = (table.height, table.columns, table["series_id"].to_list())
    return found


@pytest.mark.parametrize("reader", ["pandas", "pyarrow.dataset", "duckdb", "polars"])
def test_the_params_folder_reads_as_the_params_table(clean, reader):
    run, _ = clean
    rows, columns, ids = _readers(f"{run.output}/params")[reader]
    assert columns == OUTPUT_SCHEMA.names  # gpcore's columns, then the holdout's
    assert rows == len(HOSTILE_IDS) and sorted(ids) == sorted(HOSTILE_IDS)


@pytest.mark.parametrize("reader", ["pandas", "pyarrow.dataset", "duckdb", "polars"])
def test_the_predictions_folder_reads_as_the_predictions_table(clean, reader):
    run, _ = clean
    ok = {row["series_id"] for row in run.rows() if row["status"] == "ok"}
    rows, columns, ids = _readers(f"{run.output}/predictions")[reader]
    assert columns == PREDICTION_COLUMNS
    assert rows == len(ok) * PREDICT_POINTS and set(ids) == ok


def test_the_run_folder_holds_only_the_tables_and_the_manifest(clean):
    run, _ = clean
    assert sorted(n.split("/")[0] for n in clean[1].files) == sorted(
        ["_SUCCESS.json"] + ["params"] * 2 + ["predictions"] * 2)


def test_finders_ds_store_in_a_table_folder_is_skipped_by_every_reader(clean, tmp_path):
    """gpfit keeps a .DS_Store it finds (pipeline.io.outputs.BROWSER_FILES)
    because every reader the README names skips it."""
    import shutil

    run, _ = clean
    folder = tmp_path / "params"
    shutil.copytree(f"{run.output}/params", folder)
    (folder / ".DS_Store").write_bytes(b"\x00\x00\x00\x01Bud1")
    assert _readers(str(folder)) == _readers(f"{run.output}/params")


def _readme_readers() -> dict:
    """{reader: (parameters, predictions)}: the code of the rows of the
    README's table of readers ("Output") whose cells are both code (not
    BigQuery's), as written there, reading the run folder `out/`."""
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        text = f.read()
    return {m[1]: (m[2], m[3]) for m in
            re.finditer(r"^\| (\w+) \| `([^`]+)` \| `([^`]+)` \|$", text, re.MULTILINE)}


def _read(reader: str, code: str, run_folder: str):
    """The table the README's `code` for `reader` returns, run on
    run_folder in place of out/, as (columns, rows as tuples)."""
    code = code.replace("out/", f"{run_folder}/")
    if reader == "DuckDB":
        found = duckdb.sql(code)
        return found.columns, found.fetchall()
    found = eval(code, {"pd": pd, "pyarrow": pyarrow, "pl": pl, "dd": dd})
    if reader == "Dask":
        found = found.compute()
    elif reader != "pandas":  # pyarrow's Table, polars' DataFrame
        found = found.to_pandas()
    return list(found.columns), [tuple(row) for row in found.itertuples(index=False)]


def test_the_readme_readers_read_a_run_under_key_value_folders_as_written(clean, tmp_path):
    """The scheduled runs' folders are named run_date=YYYY-MM-DD
    (docs/scheduling.md), and a user may file runs under kernel=... too:
    DuckDB's and Dask's readers took such names on the path for hive
    partitions, DuckDB adding a run_date column and writing "matern52" over
    every row's fitted kernel. The README's readers return each table as
    written, columns and kernels included."""
    run, _ = clean
    folder = tmp_path / "gp-params" / "kernel=matern52" / "run_date=2026-11-29"
    shutil.copytree(run.output, folder)
    readers = _readme_readers()
    assert set(readers) == {"pandas", "pyarrow", "DuckDB", "polars", "Dask"}
    kernels = sorted(row["kernel"] for row in run.rows())
    for reader, (params, predictions) in readers.items():
        columns, rows = _read(reader, params, str(folder))
        assert columns == OUTPUT_SCHEMA.names, reader
        assert sorted(row[columns.index("kernel")] for row in rows) == kernels, reader
        columns, rows = _read(reader, predictions, str(folder))
        assert columns == PREDICTION_COLUMNS, reader
        assert len(rows) == len(run.predictions()), reader


def test_the_readme_reads_several_nights_as_one_table_of_parameters(clean, tmp_path,
                                                                   monkeypatch):
    """The README's reading of several nights (DuckDB's query and polars'
    call) on two nights laid out as docs/scheduling.md lays them out: every
    night's parameter rows once, with its run_date, no prediction rows."""
    run, _ = clean
    nights = ("2026-11-28", "2026-11-29")
    for night in nights:
        shutil.copytree(run.output, tmp_path / "gp-params" / f"run_date={night}")
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        text = f.read()
    query = re.search(r"^SELECT \* FROM read_parquet\('gp-params/.*;$", text, re.MULTILINE)[0]
    call = re.search(r"^-- polars: (pl\.read_parquet\(\"gp-params/.*\))$", text, re.MULTILINE)[1]
    monkeypatch.chdir(tmp_path)  # the README's paths are relative
    by_duckdb = duckdb.sql(query.rstrip(";"))
    by_polars = eval(call, {"pl": pl})
    expected = sorted((str(night), sid) for night in nights for sid in HOSTILE_IDS)
    for columns, rows in ((by_duckdb.columns, by_duckdb.fetchall()),
                          (by_polars.columns, by_polars.rows())):
        assert columns == [*OUTPUT_SCHEMA.names, "run_date"]
        assert sorted((str(row[-1]), row[0]) for row in rows) == expected

"""The output layout against the readers the README names: each one-liner
on a table's folder returns exactly that table, one schema, every row once
(on the fault suite's clean run, which wrote both tables). BigQuery's load
is documented in the README and not run here (no network)."""
from __future__ import annotations

import duckdb
import pandas as pd
import polars as pl
import pyarrow.dataset as ds
import pytest

from pipeline.io.schema import OUTPUT_SCHEMA, predictions_schema
from reliability_runs import HOSTILE_IDS, PREDICT_POINTS

PREDICTION_COLUMNS = list(predictions_schema(False).names)


def _readers(folder: str) -> dict:
    """{reader: (rows, columns, ids)} of the README's one-liners on a folder."""
    found = {}
    table = pd.read_parquet(f"{folder}/")
    found["pandas"] = (len(table), list(table.columns), list(table.series_id))
    table = ds.dataset(f"{folder}/").to_table()
    found["pyarrow.dataset"] = (table.num_rows, table.column_names,
                                table.column("series_id").to_pylist())
    table = duckdb.sql(f"SELECT * FROM '{folder}/*.parquet'")
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

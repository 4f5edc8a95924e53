"""The output table's schema (pipeline.io.schema)."""
import gpcore
from pipeline.io.schema import HOLDOUT_COLUMNS, OUTPUT_SCHEMA, completed


def test_columns_match_gpcore_then_the_holdout_columns():
    assert OUTPUT_SCHEMA.names == [*gpcore.OUTPUT_COLUMNS, *HOLDOUT_COLUMNS]


def test_a_row_without_the_holdout_columns_gets_them_null():
    row = gpcore.FitResult("a", "ok", "rbf", 3).to_row()
    assert list(completed(row)) == OUTPUT_SCHEMA.names
    assert all(completed(row)[name] is None for name in HOLDOUT_COLUMNS)
    full = completed(row)
    assert completed(full) is full

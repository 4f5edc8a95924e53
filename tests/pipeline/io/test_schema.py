"""The output table's schema (pipeline.io.schema)."""
import gpcore
from pipeline.io.schema import OUTPUT_SCHEMA


def test_columns_match_gpcore():
    assert OUTPUT_SCHEMA.names == list(gpcore.OUTPUT_COLUMNS)

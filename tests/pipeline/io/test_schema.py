"""The parameters table's one list of columns (pipeline.io.schema.COLUMNS)
and what is read from it."""
import dataclasses
import re
from pathlib import Path

import pyarrow as pa
import pytest

import gpcore
from gpcore.result import FIELDS
from pipeline.io import previous, shards
from pipeline.io.schema import (BACKTEST, COLUMNS, FIT, FIT_COLUMNS, HOLDOUT_COLUMNS,
                                OUTPUT_COLUMNS, OUTPUT_SCHEMA, PARAMETERS, RUN, completed, named)
from pipeline.report import nightly, summary


def test_the_schema_is_the_table_of_columns_in_order():
    assert OUTPUT_SCHEMA.names == list(OUTPUT_COLUMNS) == [c.name for c in COLUMNS]
    for column, field in zip(COLUMNS, OUTPUT_SCHEMA):
        assert (field.type, field.nullable) == (column.type, column.nullable)
        assert field.metadata == {b"description": column.doc.encode()}


def test_fit_columns_are_exactly_the_fit_result_fields():
    # gpcore cannot import the pipeline: this ties its FitResult to the table.
    assert FIT_COLUMNS == FIELDS
    declared = {f.name for f in dataclasses.fields(gpcore.FitResult)}
    assert set(FIT_COLUMNS) == declared
    assert {c.source for c in COLUMNS} == {FIT, RUN, BACKTEST}
    assert [c.name for c in COLUMNS if c.source == RUN] == ["reused", "fingerprint"]


def test_parameters_are_what_a_fit_result_gives_as_params():
    result = gpcore.FitResult("a", "ok", "rbf", 3)
    assert PARAMETERS == tuple(result.params)
    assert all(c.source == FIT for c in COLUMNS if c.parameter)


def test_readers_take_their_columns_from_the_table():
    assert shards.COLUMNS == OUTPUT_COLUMNS
    assert set(previous.REQUIRED) == {"series_id", "status", *PARAMETERS} - {"components"}
    assert set(summary.COLUMNS) <= set(OUTPUT_COLUMNS)
    assert set(nightly._COLUMNS) <= set(OUTPUT_COLUMNS)
    assert set(HOLDOUT_COLUMNS) == {c.name for c in COLUMNS if c.source == BACKTEST}


def test_a_name_that_is_no_column_is_refused():
    assert named("status", "nll") == ("status", "nll")
    with pytest.raises(KeyError, match="holdout_rmse"):
        named("status", "holdout_rmse")


def test_a_row_without_the_holdout_columns_gets_them_null():
    row = {name: None for name in OUTPUT_COLUMNS if name not in HOLDOUT_COLUMNS}
    assert list(completed(row)) == OUTPUT_SCHEMA.names
    assert all(completed(row)[name] is None for name in HOLDOUT_COLUMNS)
    full = completed(row)
    assert completed(full) is full


def test_a_levels_columns_name_it_as_given():
    # --predict_levels 80,99.5: the columns say 99.5, not a rounded 100.
    from pipeline.io.schema import interval_columns, level_name

    assert [level_name(level) for level in (80.0, 95.0, 99.5)] == ["80", "95", "99.5"]
    assert interval_columns((80.0, 99.5)) == ["lower_80", "upper_80", "lower_99.5", "upper_99.5"]


def readme_column_tables() -> list[list[tuple[str, str]]]:
    """README.md's "| column | type | meaning" tables, in order: [(name, type)]."""
    text = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    tables = []
    for table in re.findall(r"^\| column \| type \| meaning[^\n]*\n\|[-|]+\|\n((?:\|[^\n]*\n)+)",
                            text, re.M):
        tables.append([(m.group(1), m.group(2).strip())
                       for m in re.finditer(r"^\| `([^`]+)`[^|]* \| ([^|]*) \|", table, re.M)])
    return tables


def test_the_readmes_column_tables_are_the_tables_written():
    # A reader's map of the files: every column the shards hold, in their
    # order, each of its type (predictions: the levels' pair stands for
    # every level's; t is a number or a timestamp as the input's t is).
    from pipeline.io.schema import predictions_schema

    params, predictions = readme_column_tables()
    scalar = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(),
              "bool": pa.bool_()}
    assert [name for name, _ in params] == OUTPUT_SCHEMA.names
    for name, written in params:
        field = OUTPUT_SCHEMA.field(name)
        if name == "components":
            assert written.startswith("list of struct") and pa.types.is_list(field.type)
        else:
            assert scalar[written] == field.type, (name, written, field.type)
    numbers, dates = predictions_schema(dates=False), predictions_schema(dates=True)
    names = [name for name, _ in predictions]
    assert names == [n.replace("_95", "_L") for n in numbers.names if n != "upper_95"] \
        and "lower_L" in names
    for name, written in predictions:
        if name == "t":
            assert written == "float64 or timestamp"
            assert (numbers.field("t").type, pa.types.is_timestamp(dates.field("t").type)) \
                == (pa.float64(), True)
        else:
            assert scalar[written] == numbers.field(name.replace("_L", "_95")).type, name

"""gpfit.fit_frame in this process: the Beam job's rows for the same data,
the output schema, one fitter per configuration, clear errors."""
from __future__ import annotations

import datetime
import decimal
import multiprocessing
import os
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import gpfit
from frame_data import assert_same_rows, in_folder, job_rows, long_table, rows_of
from gpcore.config import MARKOV_ABOVE
from pipeline import builder, fitters, options
from pipeline.io import conversion, fingerprint
from pipeline.io.errors import InputError
from pipeline.io.schema import OUTPUT_SCHEMA


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """(the long table, the job's rows for it)."""
    folder = tmp_path_factory.mktemp("frame")
    table = long_table(in_folder(folder, "series"))
    return table, job_rows(in_folder(folder, "series"), in_folder(folder, "out"))


def test_a_pandas_frame_gives_the_jobs_rows_and_a_second_call_reuses_the_fitter(data):
    table, want = data
    before = fitters.counts()
    got = gpfit.fit_frame(table.to_pandas())
    assert isinstance(got, pd.DataFrame)
    assert_same_rows(rows_of(got), want)
    assert got["status"].tolist().count("skipped") == 1  # "short": 2 points
    again = gpfit.fit_frame(table.to_pandas())
    after = fitters.counts()
    assert after["built"] - before["built"] <= 1  # 0 if an earlier test built it
    assert after["calls"] - before["calls"] == 2
    assert_same_rows(rows_of(again), want)


def test_an_arrow_table_gives_exactly_the_output_schema_of_the_jobs_shards(data, tmp_path):
    table, want = data
    got = gpfit.fit_frame(table)
    assert isinstance(got, pa.Table)
    assert got.schema.equals(OUTPUT_SCHEMA, check_metadata=True)
    assert_same_rows(got.to_pylist(), want)


def test_categorical_times_and_values_are_read_as_their_categories(data):
    """pandas' category dtype (dates or values repeated over a long frame
    kept as categories to save memory) arrives as Arrow dictionaries:
    fit_frame refused them ("has type dictionary<values=timestamp[ms],
    ...>; expected numbers, dates or timestamps") where the command reads
    the same frame written with to_parquet, its rows the job's."""
    table, want = data
    frame = table.to_pandas()
    frame["t"], frame["y"] = frame["t"].astype("category"), frame["y"].astype("category")
    assert_same_rows(rows_of(gpfit.fit_frame(frame)), want)


def test_the_nested_layout_and_renamed_columns_are_read_as_the_command_reads_them(data):
    table, want = data
    frame = table.to_pandas().dropna(subset=["series_id"])
    nested = (frame.groupby("series_id", sort=False)
              .agg(when=("t", list), sales=("y", list)).reset_index()
              .rename(columns={"series_id": "store"}))
    got = gpfit.fit_frame(pa.Table.from_pandas(nested, preserve_index=False),
                          id_column="store", time_column="when", value_column="sales")
    assert_same_rows(got.to_pylist(), want)


def test_one_group_at_a_time_through_pandas_groupby_apply_as_the_recipe_says(data):
    """pandas 3 (and Dask after it) leaves the grouping column out of the
    frames groupby().apply passes: the recipe selects it; without, the
    error says how."""
    table, want = data
    frame = table.to_pandas()
    groups = frame.groupby("series_id", group_keys=False)
    got = groups[["series_id", "t", "y"]].apply(gpfit.fit_frame)
    assert_same_rows(rows_of(got), want)
    with pytest.raises(InputError, match=r'leaves the grouping column out.*'
                       r'groupby\("series_id"\)\[\["series_id", "t", "y"\]\]'):
        groups.apply(gpfit.fit_frame)


def test_the_options_are_the_commands_and_give_its_fingerprints(data):
    table, _ = data
    got = gpfit.fit_frame(table, kernel="auto", candidates="rbf,matern12", restarts=1,
                          min_points=40).to_pylist()
    kernels = {r["kernel"] for r in got if r["status"] == "ok"}
    assert kernels <= {"rbf", "matern12"} and kernels
    short = [r for r in got if r["status"] == "skipped"]
    assert short and all("at least 40" in r["error"] for r in short)
    default_rows = gpfit.fit_frame(table).to_pylist()
    default = {r["series_id"]: r["fingerprint"] for r in default_rows}
    assert all(r["fingerprint"] != default[r["series_id"]] for r in got)  # options are hashed
    quick, balanced = ({r["series_id"]: r for r in gpfit.fit_frame(table, search=s).to_pylist()}
                       for s in ("quick", "balanced"))
    # quick leaves out the far probes, balanced where the fit passes the
    # residual check: never better, and keyed apart.
    for row in default_rows:
        for other in (quick, balanced):
            assert other[row["series_id"]]["fingerprint"] != row["fingerprint"]
            if row["status"] == "ok":
                assert other[row["series_id"]]["nll"] >= row["nll"] - 1e-4


def test_candidates_in_any_order_or_as_a_set_give_the_same_rows():
    """A set of names iterates in the order of the process's hash seed
    (PYTHONHASHSEED 1 and 3 gave two orders of rbf, matern12,
    rbf+periodic), so Spark's or Dask's worker processes saw other orders:
    the choice and the fingerprint do not depend on it (docs/design.md,
    "Kernel choice")."""
    frame = _small_frame()
    want = gpfit.fit_frame(frame, kernel="auto", candidates=["rbf", "matern12"])
    for given in (["matern12", "rbf"], "matern12,rbf", {"rbf", "matern12"}):
        got = gpfit.fit_frame(frame, kernel="auto", candidates=given)
        assert_same_rows(rows_of(got), rows_of(want))
        assert list(got["fingerprint"]) == list(want["fingerprint"])


def test_a_markov_kernels_default_max_points_is_the_commands():
    """Left out, max_points is the kernel's default, as the command's
    --max_points is: a series over 4,096 points fits in O(n) under matern12
    (docs/design.md, "Long series: Markov kernels"), and its fingerprint
    hashes the command's options."""
    n = MARKOV_ABOVE + 1
    t = np.arange(n, dtype=np.float64)
    y = np.sin(t / 40.0) + 0.1 * np.random.default_rng(0).standard_normal(n)
    frame = pd.DataFrame({"series_id": "long", "t": t, "y": y})
    (row,) = gpfit.fit_frame(frame, kernel="matern12").to_dict("records")
    assert row["status"] == "ok", row["error"]
    argv = ["--input", "i", "--output", "o", "--kernel", "matern12"]
    command = builder.fit_config(options.parse_options(argv).view_as(options.GPFitOptions))
    series = conversion.merge("long", [(t, y, None)])
    assert row["fingerprint"] == fingerprint.of_series(fingerprint.options_key(command), series)


def test_timestamps_closer_than_days_resolve_are_skipped_saying_what_to_do():
    """Nanosecond timestamps 1 ns apart become equal days since 1970 (float64
    resolves ~0.3 us there): the reason says so and how to keep them apart,
    not merely that the times are equal."""
    start = np.datetime64("2024-01-01T00:00:00", "ns")
    times = pa.array(start + np.arange(20).astype("timedelta64[ns]"), pa.timestamp("ns"))
    table = pa.table({"series_id": ["ns"] * 20, "t": times, "y": np.sin(np.arange(20.0))})
    (row,) = gpfit.fit_frame(table).to_pylist()
    assert row["status"] == "skipped"
    assert "float64" in row["error"] and "give t as numbers from an offset" in row["error"]


def test_timestamps_spanning_milliseconds_are_skipped_saying_to_give_numbers():
    """Timestamps 0.5 ms apart over 10 ms are distinct as days since 1970,
    but span too little of them to fit (README, "Units of t"): the reason
    says to give numbers from an offset, as the README does, not only to
    "subtract an offset from t", which on timestamps makes durations that
    are refused; and the advice taken, the series fits (in seconds)."""
    start = pd.Timestamp("2024-05-01 12:00", tz="Europe/Berlin")
    steps = pd.to_timedelta(np.arange(20) * 500, unit="us")
    frame = pd.DataFrame({"series_id": "burst", "t": start + steps,
                          "y": np.sin(np.arange(20.0))})
    (row,) = gpfit.fit_frame(frame).to_dict("records")
    assert row["status"] == "skipped"
    assert "give t as numbers from an offset" in row["error"], row["error"]
    assert "days since 1970-01-01" in row["error"], row["error"]
    seconds = frame.assign(t=steps / pd.Timedelta(seconds=1))
    (row,) = gpfit.fit_frame(seconds).to_dict("records")
    assert row["status"] == "ok", row["error"]


def test_an_empty_frame_gives_an_empty_table_of_the_schema_without_a_fitter():
    before = fitters.counts()
    empty = gpfit.fit_frame(pd.DataFrame({"series_id": pd.Series([], dtype=str),
                                          "t": pd.Series([], dtype=float),
                                          "y": pd.Series([], dtype=float)}))
    assert list(empty.columns) == OUTPUT_SCHEMA.names and len(empty) == 0
    assert fitters.counts() == before


def test_the_empty_result_has_the_dtypes_of_any_other_as_dasks_meta_must():
    """The recipe's meta is fit_frame of no rows: each of its dtypes must be
    what a partition's result has (holdout_points, an int column always null
    here, is float64 in pandas as soon as there is a row)."""
    meta = gpfit.fit_frame(_small_frame().head(0))
    got = gpfit.fit_frame(_small_frame())
    assert meta.dtypes.to_dict() == got.dtypes.to_dict()


@pytest.mark.parametrize("frame, kwargs, words", [
    (pd.DataFrame({"id": ["a"], "t": [1.0], "y": [1.0]}), {},
     ("no column 'series_id'", "id_column=")),
    (pd.DataFrame({"series_id": ["a"], "t": ["x"], "y": [1.0]}), {},
     ("time column 't'", "time_column=")),
    # Times pandas holds in types gpfit does not take: the refusal says the
    # conversion to make.
    (pd.DataFrame({"series_id": ["a"], "t": ["2024-01-01"], "y": [1.0]}), {},
     ("time column 't'", "pandas.to_datetime")),
    (pd.DataFrame({"series_id": ["a"], "t": pd.to_timedelta([1.5], unit="D"), "y": [1.0]}), {},
     ("time column 't'", "duration", "t / pd.Timedelta(days=1)")),
    (pd.DataFrame({"series_id": ["a"], "t": pd.period_range("2024-01", periods=1, freq="M"),
                   "y": [1.0]}), {}, ("time column 't'", ".dt.to_timestamp()")),
    (pd.DataFrame({"series_id": ["a"], "t": [1.0], "y": [1.0]}), {"value_column": "t"},
     ("time_column= and value_column= both name the column 't'",)),
    (pd.DataFrame({"series_id": ["a"], "t": [1.0], "y": [1.0]}), {"kernel": "rbff"},
     ("rbff",)),
    (pd.DataFrame({"series_id": ["a"], "t": [1.0], "y": [1.0]}), {"restarts": 0},
     ("restarts",)),
    (pd.DataFrame({"series_id": ["a"], "t": [1.0], "y": [1.0]}), {"restarts": 41},
     ("restarts= (41) must be at most 40", "give restarts=40 or fewer")),
    (pd.DataFrame({"series_id": ["a"], "t": [1.0], "y": [1.0]}), {"search": "fast"},
     ("search must be one of thorough, balanced, quick", "'fast'")),
    # As the command refuses --candidates without --kernel auto: the
    # candidates would go unused, every series fitted with rbf.
    (pd.DataFrame({"series_id": ["a"], "t": [1.0], "y": [1.0]}),
     {"candidates": "rbf,rbf+periodic"}, ("candidates= is for kernel='auto'", "'rbf'")),
    # The command said how to write them; fit_frame named ' matern12' alone.
    (pd.DataFrame({"series_id": ["a"], "t": [1.0], "y": [1.0]}),
     {"kernel": "auto", "candidates": "rbf, matern12"},
     ("candidates='rbf, matern12': candidate kernel ' matern12' is not known",
      "give at least 2 kernels, a sequence or separated by commas with no spaces, e.g. "
      "'rbf,rbf+periodic'")),
])
def test_bad_input_or_options_are_refused_naming_them(frame, kwargs, words):
    with pytest.raises((InputError, ValueError)) as err:
        gpfit.fit_frame(frame, **kwargs)
    assert all(w in str(err.value) for w in words), str(err.value)


def _small_frame() -> pd.DataFrame:
    t = np.arange(8.0)
    return pd.DataFrame({"series_id": np.repeat(["a", "b"], 8), "t": np.tile(t, 2),
                         "y": np.concatenate([np.sin(t), np.cos(t)])})


def test_other_columns_are_not_read_whatever_they_hold():
    """Only the three columns are converted: an extra column of mixed
    objects, or two extra columns of one name, change nothing."""
    frame = _small_frame()
    want = rows_of(gpfit.fit_frame(frame))
    mixed = frame.assign(note=[1] + ["x"] * (len(frame) - 1))
    twice = pd.concat([frame, frame[["y"]].set_axis(["z"], axis=1),
                       frame[["y"]].set_axis(["z"], axis=1)], axis=1)
    for other in (mixed, twice):
        assert_same_rows(rows_of(gpfit.fit_frame(other)), want)


@pytest.mark.parametrize("column, values, words", [
    ("series_id", [1] + ["b"] * 15, ("column 'series_id'", ".astype(str)")),
    ("t", [1.0] + ["2"] * 15, ("column 't'", "pd.to_numeric")),
])
def test_a_column_of_mixed_python_objects_is_refused_naming_it(column, values, words):
    with pytest.raises(InputError) as err:
        gpfit.fit_frame(_small_frame().assign(**{column: values}))
    assert all(w in str(err.value) for w in words), str(err.value)


def test_a_role_column_named_twice_is_refused_as_the_command_refuses_it():
    frame = _small_frame()
    twice = pd.concat([frame, frame[["y"]]], axis=1)
    with pytest.raises(InputError, match="2 columns named 'y'.*value_column="):
        gpfit.fit_frame(twice)


def test_columns_labelled_by_integers_are_named_by_them():
    """pd.read_csv(header=None) labels columns 0, 1, 2: id_column=0 names
    the first (it was "no column 0 (its columns: 0, 1, 2)")."""
    frame = _small_frame()
    got = gpfit.fit_frame(frame.set_axis([0, 1, 2], axis=1), id_column=0, time_column=1,
                          value_column=2)
    assert_same_rows(rows_of(got), rows_of(gpfit.fit_frame(frame)))


@pytest.mark.parametrize("index", [["series_id"], ["t"], ["series_id", "t"]])
def test_a_column_in_the_frames_index_is_refused_saying_reset_index(index):
    """A frame indexed by time (or id) names the index, not a missing
    column, nor pandas' groupby().apply."""
    with pytest.raises(InputError, match=rf"'{index[0]}' is in the frame's index.*reset_index"):
        gpfit.fit_frame(_small_frame().set_index(index))


@pytest.mark.parametrize("frame", [
    pd.DataFrame(columns=["series_id", "t", "y"]),  # object columns, no rows
    pd.DataFrame({"series_id": [None] * 3, "t": [1.0, 2.0, 3.0], "y": [1.0, 2.0, 3.0]}),
    # A category column with no categories is a dictionary of Arrow's null
    # type: it was refused ("has type dictionary<values=null, ...>;
    # expected strings or integers"), where its Parquet file is read.
    pd.DataFrame({"series_id": pd.Categorical([]), "t": pd.Series([], dtype=float),
                  "y": pd.Series([], dtype=float)}),
    pd.DataFrame({"series_id": pd.Categorical([None] * 3, categories=[]),
                  "t": [1.0, 2.0, 3.0], "y": [1.0, 2.0, 3.0]}),
])
def test_ids_all_missing_from_pandas_give_no_rows_as_null_ids_do(frame):
    """pandas' object columns without a value are Arrow's null type: no id,
    no series (an empty Dask partition, a group of missing ids); so are
    category columns without categories, from pandas or as Arrow's table."""
    got = gpfit.fit_frame(frame)
    assert list(got.columns) == OUTPUT_SCHEMA.names and len(got) == 0
    table = gpfit.fit_frame(pa.Table.from_pandas(frame, preserve_index=False))
    assert table.schema.equals(OUTPUT_SCHEMA) and table.num_rows == 0


def test_ids_in_a_time_zone_the_tz_database_lacks_are_refused_naming_it():
    """Timestamp ids in a zone tzdata has dropped (US/Pacific-New), in an
    Arrow table: the fit ended in Arrow's ArrowInvalid "Cannot locate or
    parse timezone" while writing the ids as text, after the checks."""
    from pipeline.io.errors import InputError

    ids = pa.array([1_700_000_000_000] * 8 + [1_800_000_000_000] * 8,
                   pa.timestamp("ms", tz="US/Pacific-New"))
    frame = _small_frame()
    table = pa.table({"series_id": ids, "t": frame["t"], "y": frame["y"]})
    with pytest.raises(InputError, match=re.escape(
            "id column 'series_id' in the table holds timestamps in the time zone "
            "'US/Pacific-New', which the tz database lacks, so its ids cannot be written as "
            "text; write the column in UTC or in a zone the tz database has (e.g. pandas' "
            ".dt.tz_convert('UTC')), or name another with id_column=")):
        gpfit.fit_frame(table)


def _command_ids(tmp_path, table: pa.Table) -> tuple:
    """(the run, its series ids sorted): the command fitting `table`,
    written as one Parquet file, with rbf."""
    from gpfit_runs import gpfit_here, read_rows

    os.makedirs(in_folder(tmp_path, "in"))
    pq.write_table(table, os.path.join(in_folder(tmp_path, "in"), "part.parquet"))
    run = gpfit_here(in_folder(tmp_path, "in"), in_folder(tmp_path, "out"), "--kernel", "rbf")
    assert run.code == 0, run.stderr
    return run, sorted(row["series_id"] for row in read_rows(in_folder(tmp_path, "out")))


def test_bool_ids_are_false_and_true_from_pandas_arrow_and_the_command(tmp_path):
    """Bool ids are Arrow's strings "false" and "true" (not Python's
    "False"), as the command writes them from a Parquet bool column: one
    series gets one id however it is fitted, and a later run's warm starts
    (matched by id) find it. The README's id column says so."""
    n = 8
    frame = pd.DataFrame({"series_id": [False] * n + [True] * n,
                          "t": np.r_[np.arange(n), np.arange(n)].astype(float),
                          "y": np.r_[np.sin(np.arange(n)), np.cos(np.arange(n))]})
    table = pa.Table.from_pandas(frame, preserve_index=False)
    assert table.schema.field("series_id").type == pa.bool_()
    _, command = _command_ids(tmp_path, table)
    assert command == ["false", "true"]
    assert sorted(gpfit.fit_frame(frame)["series_id"]) == command
    assert sorted(gpfit.fit_frame(table).column("series_id").to_pylist()) == command


def test_nan_float_ids_are_missing_ids_from_pandas_arrow_and_the_command(tmp_path):
    """A float id of NaN is a missing id, as a null one is: pandas' own
    Parquet writer makes it null, but polars, Spark and Arrow keep NaN as a
    value, and the command fitted every such row, of whatever series, as
    one series "nan" (here 6 rows of two series), which fit_frame of the
    pandas frame left out."""
    frame = _small_frame().assign(series_id=np.repeat([1.0, 2.0], 8))
    frame.loc[[2, 5, 9, 12], "series_id"] = np.nan
    frame.loc[[0, 8], "series_id"] = [np.nan, np.nan]
    table = pa.table({"series_id": pa.array(frame["series_id"].to_numpy(), from_pandas=False),
                      "t": frame["t"], "y": frame["y"]})
    assert pa.compute.is_nan(table.column("series_id")).to_pylist().count(True) == 6
    run, command = _command_ids(tmp_path, table)
    assert command == ["1", "2"]
    assert run.manifest["counts"]["null_ids"] == 6
    assert "6 rows with a null id" in run.stdout + run.stderr
    assert sorted(gpfit.fit_frame(frame)["series_id"]) == command
    assert sorted(gpfit.fit_frame(table).column("series_id").to_pylist()) == command


def test_category_ids_of_dates_are_read_as_their_dates():
    """Ids of dates kept as pandas' category dtype arrive as a dictionary
    of timestamps: fit_frame refused them ("has type dictionary<values=
    timestamp[ns], ...>; expected strings or integers"), though its id
    check takes any type Arrow can group and Arrow groups these: an empty
    dictionary array of them could not be built from a Python list. The
    same dates as plain timestamps, as their Parquet file holds them, are
    the reference."""
    dates = _small_frame()
    dates["series_id"] = pd.to_datetime(dates["series_id"].map({"a": "2024-01-01",
                                                                  "b": "2024-01-02"}))
    want = rows_of(gpfit.fit_frame(dates))
    assert [row["status"] for row in want] == ["ok", "ok"]
    categories = dates.assign(series_id=dates["series_id"].astype("category"))
    assert_same_rows(rows_of(gpfit.fit_frame(categories)), want)
    assert_same_rows(gpfit.fit_frame(pa.Table.from_pandas(categories)).to_pylist(), want)


@pytest.mark.parametrize("kwargs, words", [
    ({"max_rows": 0}, "max_rows= (0) must be >= max_points= (4096, rbf's default)"),
    ({"max_rows": 10, "max_points": 20}, "max_rows= (10) must be >= max_points= (20)"),
])
def test_max_rows_below_max_points_is_refused_as_the_command_refuses_it(kwargs, words):
    """Rows include missing values: a lower cap skips series the fit would
    take (at 0, every series), which the command refuses up front."""
    with pytest.raises(ValueError, match=re.escape(words)):
        gpfit.fit_frame(_small_frame(), **kwargs)


def test_a_max_points_past_the_machines_memory_is_refused_as_the_command_refuses_it():
    """One series of 100,000 points under rbf would need terabytes."""
    with pytest.raises(ValueError, match=r"^max_points \(100000\) would let one series' rbf "
                                         r"fit need about [\d,.]+ GiB .* give max_points \d+ or less"):
        gpfit.fit_frame(_small_frame(), max_points=100_000, max_rows=100_000)


def test_a_series_over_max_rows_is_skipped_saying_fit_frames_option():
    (row,) = gpfit.fit_frame(_small_frame().head(8), max_rows=5, max_points=5).to_dict("records")
    assert row["status"] == "skipped"
    assert row["error"].startswith(
        "8 input points (missing ones included) is more than max_rows=5;"), row["error"]
    assert "raise max_rows" in row["error"] and "--" not in row["error"]
    # max_rows points are within it: fitted.
    (row,) = gpfit.fit_frame(_small_frame().head(5), max_rows=5, max_points=5).to_dict("records")
    assert row["status"] == "ok", row["error"]


def test_a_series_with_two_bad_rows_gives_the_jobs_one_reason_whatever_their_order():
    # Nested rows of unequal lists: the reason (and fingerprint) was the
    # first row's in the table, where the job's depended on which arrived
    # first; both take the least (conversion.first_problem).
    rows = {"series_id": ["bad", "bad"], "t": [[1.0, 2.0, 3.0], [4.0, 5.0]],
            "y": [[1.0], [1.0, 2.0, 3.0, 4.0, 5.0]]}
    table = pa.table(rows)
    found = [gpfit.fit_frame(t).to_pylist()[0] for t in (table, table.take([1, 0]))]
    assert [(r["status"], r["error"]) for r in found] == [
        ("skipped", "a row of this series has 2 times but 5 values; give its 't' and 'y' "
                    "lists equal length")] * 2
    assert found[0]["fingerprint"] == found[1]["fingerprint"]


@pytest.mark.parametrize("kwargs, words", [
    ({"min_points": 2.5}, "min_points= must be a whole number; got 2.5"),
    ({"batch_size": "8"}, "batch_size= must be a whole number; got '8'"),
    ({"restarts": True}, "restarts= must be a whole number; got True"),
    ({"max_rows": None}, "max_rows= must be a whole number; got None"),
    ({"cores": 0}, "cores= must be >= 1; got 0"),
    ({"cores": 2.0}, "cores= must be a whole number; got 2.0"),
    # 10**9 set TensorFlow's thread pools that large: the process died (SIGSEGV).
    ({"cores": os.cpu_count() + 1}, f"cores= must be at most this machine's {os.cpu_count()} "
     f"cores (one fitter per core); got {os.cpu_count() + 1}"),
    ({"cores": 10 ** 9}, "got 1000000000"),
])
def test_counts_that_are_not_whole_numbers_are_refused_as_the_commands_flags(kwargs, words):
    """The command's flags parse as int; a keyword that is not one was
    taken as it came (min_points=2.5 fitted, hashed as 2.5) or failed deep
    inside (batch_size="8": a TypeError), and cores=0 ran on one core."""
    with pytest.raises(ValueError, match=re.escape(words)):
        gpfit.fit_frame(_small_frame(), **kwargs)
    assert gpfit.fit_frame(_small_frame(), min_points=np.int64(3), cores=1).shape[0] == 2


@pytest.mark.parametrize("make", [lambda f: [("a", 1.0, 2.0)], lambda f: f["y"],
                                  lambda f: f.groupby("series_id")])
def test_something_other_than_a_frame_is_refused_with_the_recipe(make):
    """Also pandas' other objects (a Series, a groupby), which had met an
    AttributeError."""
    with pytest.raises(InputError, match="pandas DataFrame or a pyarrow Table"):
        gpfit.fit_frame(make(_small_frame()))


@pytest.mark.parametrize("lazy", [False, True])
def test_a_polars_frame_is_told_the_conversion_that_works(lazy):
    """A polars DataFrame was refused as "got DataFrame (a Spark or Dask
    frame: call it per group or partition ...)": a name the pandas one
    shares and advice for other engines. The advice given is followed
    here: the same rows as the pandas frame's."""
    pl = pytest.importorskip("polars")
    frame = _small_frame()
    data = pl.from_pandas(frame).lazy() if lazy else pl.from_pandas(frame)
    name, advice = (("LazyFrame", "data.collect().to_arrow()") if lazy
                    else ("DataFrame", "data.to_arrow()"))
    with pytest.raises(InputError) as refused:
        gpfit.fit_frame(data)
    assert str(refused.value) == ("fit_frame takes a pandas DataFrame or a pyarrow Table; got "
                                  f"polars.{name}: pass {advice}")
    followed = data.collect().to_arrow() if lazy else data.to_arrow()
    assert_same_rows(gpfit.fit_frame(followed).to_pylist(), rows_of(gpfit.fit_frame(frame)))


class _FrameOfMine(pd.DataFrame):
    """A DataFrame subclass defined outside pandas (as geopandas' are)."""

    @property
    def _constructor(self):
        return _FrameOfMine


def test_a_dataframe_subclass_is_a_dataframe():
    frame = _small_frame()
    got = gpfit.fit_frame(_FrameOfMine(frame))
    assert isinstance(got, pd.DataFrame)
    assert_same_rows(rows_of(got), rows_of(gpfit.fit_frame(frame)))


def _fit_in_child(frame: pd.DataFrame) -> str:
    try:
        return gpfit.fit_frame(frame)["status"].iloc[0]
    except RuntimeError as err:
        return str(err)


def test_a_process_forked_after_a_fit_is_refused_instead_of_waiting_forever():
    """TensorFlow's threads do not survive fork: a multiprocessing Pool
    forked after a fit (Linux's default start method) waited forever in
    its first fit. It says so, and what to do, instead."""
    frame = _small_frame()
    gpfit.fit_frame(frame)  # TensorFlow started in this process
    pool = multiprocessing.get_context("fork").Pool(1)
    try:
        said = pool.apply_async(_fit_in_child, (frame,)).get(timeout=90)
    finally:
        pool.terminate()
    assert "is a fork of" in said and "'spawn'" in said, said


def test_the_spark_schema_lists_every_output_column_in_order():
    names = [part.split(" ")[0] for part in gpfit.spark_schema().split(", ")]
    assert names == OUTPUT_SCHEMA.names


# A column name in Spark's DDL, by Spark's SQL lexer (SqlBaseLexer.g4): bare,
# an IDENTIFIER of letters, digits and "_" (here ASCII, not starting with a
# digit, which would lex as a number); or BACKQUOTED_IDENTIFIER, `...` with
# each ` doubled. A "." is the DOT token: `lower_99.5 double` ended the name.
_SPARK_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)|`((?:[^`]|``)*)`")


def test_the_spark_schema_quotes_the_names_spark_reads_no_other_way():
    """--predict_levels 99.5 names the columns lower_99.5 and upper_99.5:
    written bare, the DDL was one Spark's parser refuses. Each name reads
    back as the table's own, in order."""
    schema = gpfit.predictions_schema(dates=True, predict_levels=[80, 99.5])
    assert "lower_99.5" in schema.names
    names = []
    for part in gpfit.spark_schema(schema).split(", "):
        name, _, type_ = part.rpartition(" ")
        spelled = _SPARK_NAME.fullmatch(name)
        assert spelled and type_ in {"string", "timestamp", "double"}, part
        names.append(spelled[1] or spelled[2].replace("``", "`"))
    assert names == schema.names


def test_the_version_is_the_packages():
    from pipeline.io.fingerprint import VERSION
    assert gpfit.__version__ == VERSION


def _command_rows(tmp_path, frame: pd.DataFrame, *flags: str) -> list[dict]:
    """The command's rows for `frame` as pandas writes it (to_parquet, one
    file), with rbf and `flags`, sorted by id."""
    from gpfit_runs import gpfit_here

    os.makedirs(in_folder(tmp_path, "in"))
    frame.to_parquet(os.path.join(in_folder(tmp_path, "in"), "part.parquet"))
    run = gpfit_here(in_folder(tmp_path, "in"), in_folder(tmp_path, "out"), "--kernel", "rbf",
                     *flags)
    assert run.code == 0, run.stderr
    return run.rows()


def test_timestamps_in_seconds_give_the_fingerprints_of_their_parquet_file(tmp_path):
    """numpy's hourly datetime64 become pandas' datetime64[s], which Parquet
    stores as ms (it has no unit of seconds), so the command reads ms; an
    instant read as s * (1/86,400) days and as ms * (1/86,400,000) can be
    one float64 step apart, and fit_frame's fingerprints of such a frame
    were not the command's (here both series': 3 of 8 times differ)."""
    hours = np.arange(np.datetime64("2024-03-01T00"), np.datetime64("2024-03-01T08"))
    frame = _small_frame().assign(t=np.tile(hours, 2))
    assert frame["t"].dtype == "datetime64[s]"
    got = rows_of(gpfit.fit_frame(frame))
    assert [row["status"] for row in got] == ["ok", "ok"]
    assert_same_rows(got, _command_rows(tmp_path, frame))


@pytest.mark.parametrize("zone", [None, "Europe/Berlin"])
def test_timestamp_ids_in_seconds_are_named_as_their_parquet_file_names_them(tmp_path, zone):
    """Timestamp ids in seconds (a day's datetime64 in pandas) are stored as
    ms in Parquet, which the command writes "2024-03-01 00:00:00.000";
    fit_frame wrote the frame's "2024-03-01 00:00:00", so one series had
    two names and a later run's warm starts, matched by id, missed it."""
    days = pd.Series(np.arange(np.datetime64("2024-03-01"), np.datetime64("2024-03-03")))
    days = days.dt.tz_localize(zone) if zone else days
    frame = _small_frame().assign(series_id=np.repeat(days.to_numpy(), 8))
    assert str(frame["series_id"].dtype).startswith("datetime64[s")
    want = _command_rows(tmp_path, frame)
    assert want[0]["series_id"].startswith("2024-03-01 00:00:00.000"), want[0]["series_id"]
    assert_same_rows(rows_of(gpfit.fit_frame(frame)), want)
    categories = frame.assign(series_id=frame["series_id"].astype("category"))
    assert_same_rows(rows_of(gpfit.fit_frame(categories)), want)


@pytest.mark.parametrize("column, values, words, convert", [
    # uuid.uuid4().int ids: 128-bit Python ints (OverflowError "Python int
    # too large to convert to C long").
    ("series_id", [2**100 + 1] * 8 + [2**100 + 2] * 8, ".astype(str) for ids",
     lambda column: column.astype(str)),
    # np.datetime64 day scalars kept as objects (TypeError "int() argument
    # must be ... not 'datetime.date'").
    ("t", [np.datetime64("2024-03-01", "D") + np.timedelta64(i % 8, "D") for i in range(16)],
     "pd.to_datetime for times", pd.to_datetime),
])
def test_objects_arrow_cannot_convert_are_refused_naming_the_column(tmp_path, column, values,
                                                                   words, convert):
    """Python objects Arrow fails on with Python's own error, not Arrow's,
    ended fit_frame with that error alone, naming neither column nor
    conversion (to_parquet fails alike, so the command never sees them);
    they are refused as other unconvertible columns are, and the advised
    conversion gives the command's rows."""
    frame = _small_frame().assign(**{column: pd.Series(values, dtype=object)})
    with pytest.raises((TypeError, OverflowError)):
        frame.to_parquet(in_folder(tmp_path, "as_is.parquet"))
    with pytest.raises(InputError) as err:
        gpfit.fit_frame(frame)
    assert f"column {column!r} of the frame" in str(err.value) and words in str(err.value), \
        str(err.value)
    converted = frame.assign(**{column: convert(frame[column])})
    assert_same_rows(rows_of(gpfit.fit_frame(converted)), _command_rows(tmp_path, converted))


def test_ids_of_text_that_is_not_utf8_are_refused_saying_to_give_them_as_bytes(tmp_path):
    """Ids with lone surrogates (os.fsdecode's of file names that are not
    UTF-8) ended fit_frame with a bare UnicodeEncodeError naming no column
    (to_parquet fails alike). They are refused naming the column and the
    encoding to make: as bytes the ids are those the command names with
    \\xNN escapes, on the same frame's Parquet file."""
    frame = _small_frame().assign(series_id=pd.Series(["a\udcff"] * 8 + ["b"] * 8,
                                                      dtype=object))
    with pytest.raises(UnicodeEncodeError):
        frame.to_parquet(in_folder(tmp_path, "as_is.parquet"))
    with pytest.raises(InputError, match=re.escape(
            "column 'series_id' of the frame holds text that is not UTF-8")) as err:
        gpfit.fit_frame(frame)
    assert "s.encode('utf-8', 'surrogateescape')" in str(err.value), str(err.value)
    encoded = frame.assign(series_id=frame["series_id"].map(
        lambda s: s.encode("utf-8", "surrogateescape")))
    want = _command_rows(tmp_path, encoded)
    assert [row["series_id"] for row in want] == ["a\\xff", "b"]
    assert_same_rows(rows_of(gpfit.fit_frame(encoded)), want)


@pytest.mark.parametrize("make, advice", [
    (lambda frame: frame.to_dict("list"), "pandas.DataFrame(data)"),
    (lambda frame: frame.to_records(index=False), "pandas.DataFrame(data)"),
    (lambda frame: __import__("pyarrow.dataset").dataset.dataset(pa.table(frame)),
     "data.to_table()"),
])
def test_data_a_call_makes_a_frame_of_is_told_that_call_not_an_engines_recipe(tmp_path, make,
                                                                             advice):
    """A dict of columns, a numpy record array or a pyarrow Dataset was
    told it was "a Spark or Dask frame: call it per group or partition",
    advice for other engines; the conversion named is followed here and
    gives the command's rows for the same frame's Parquet file."""
    frame = _small_frame()
    data = make(frame)
    with pytest.raises(InputError) as refused:
        gpfit.fit_frame(data)
    assert str(refused.value).endswith(f": pass {advice}"), str(refused.value)
    assert "Spark" not in str(refused.value)
    followed = pd.DataFrame(data) if advice.startswith("pandas") else data.to_table()
    assert_same_rows(rows_of(gpfit.fit_frame(followed)), _command_rows(tmp_path, frame))


def test_pandas_other_objects_are_told_what_to_pass_instead():
    """A Series and a groupby were told they were "a Spark or Dask frame"."""
    with pytest.raises(InputError, match=r"got pandas\.Series: a Series is one column; pass "
                                         r"the DataFrame that holds the id, time and value"):
        gpfit.fit_frame(_small_frame()["y"])
    with pytest.raises(InputError, match=re.escape(
            "got pandas.DataFrameGroupBy: call it on each group, with the id column selected, "
            "as in groupby(id)[[id, t, y]].apply(gpfit.fit_frame)")):
        gpfit.fit_frame(_small_frame().groupby("series_id"))


def test_times_in_an_unnamed_index_are_refused_saying_how_to_make_them_the_column(tmp_path):
    """A time series' usual shape, times in an unnamed DatetimeIndex, was
    refused as "no column 't' (its columns: series_id, y)", the times
    unmentioned (the command, on its to_parquet file, finds them as
    __index_level_0__). The refusal names the index and the call; made,
    it gives the command's rows for the frame it makes."""
    frame = _small_frame()
    indexed = frame.drop(columns="t").set_axis(
        pd.DatetimeIndex((pd.Timestamp("2024-03-01")
                          + pd.to_timedelta(frame["t"], unit="D")).to_numpy()))
    assert indexed.index.name is None
    with pytest.raises(InputError, match=re.escape(
            "the frame has no column 't' but its index holds times (datetime64[us]): pass "
            "data.rename_axis('t').reset_index(), or name another column with time_column=")):
        gpfit.fit_frame(indexed)
    made = indexed.rename_axis("t").reset_index()
    assert_same_rows(rows_of(gpfit.fit_frame(made)), _command_rows(tmp_path, made))


def _command_refuses(tmp_path, frame: pd.DataFrame, said: str) -> None:
    """The command on `frame` as pandas writes it (to_parquet, one file)
    exits 2 saying `said`."""
    from gpfit_runs import gpfit_here

    os.makedirs(in_folder(tmp_path, "refused_in"))
    frame.to_parquet(os.path.join(in_folder(tmp_path, "refused_in"), "part.parquet"))
    run = gpfit_here(in_folder(tmp_path, "refused_in"), in_folder(tmp_path, "refused"))
    assert run.code == 2 and said in run.stderr, run.stderr


def _refused_then_converted(tmp_path, frame, column: str, convert: str) -> None:
    """fit_frame refuses `frame`'s object column of datetime.date and
    datetime.datetime values naming the conversion `convert` (Python, of
    `data`), and the frame so converted gives the command's rows on its
    to_parquet file, every instant kept (docs/design.md, "DataFrame API")."""
    with pytest.raises(InputError, match=re.escape(
            f"column {column!r} of the frame holds datetime.datetime values among "
            "datetime.date ones")) as err:
        gpfit.fit_frame(frame)
    assert f"convert it first: {convert}," in str(err.value), str(err.value)
    converted = frame.assign(**{column: eval(convert, {"data": frame, "pd": pd})})
    want = _command_rows(tmp_path, converted)
    assert [row["status"] for row in want] == ["ok", "ok"], want
    assert_same_rows(rows_of(gpfit.fit_frame(converted)), want)


@pytest.mark.parametrize("column, values", [
    # Hourly readings where the day's first was kept as a date.
    ("t", ([datetime.date(2024, 3, 1)]
           + [datetime.datetime(2024, 3, 1, hour) for hour in range(1, 8)]) * 2),
    ("series_id", [datetime.date(2024, 3, 1)] * 8 + [datetime.datetime(2024, 3, 1, 12)] * 8),
])
def test_dates_and_datetimes_in_one_object_column_are_refused_not_read_as_dates(
        tmp_path, column, values):
    """An object column of datetime.date and datetime.datetime values, a
    date first, is read by Arrow as dates (date32), each datetime's time
    of day dropped: the hours of a day became one time (every series
    skipped, "all observation times are equal"), ids at noon and midnight
    one series. to_parquet writes the same dates, so the command cannot
    see the loss; fit_frame refuses the column naming pd.to_datetime,
    which keeps every instant and gives the command's rows on its file."""
    frame = _small_frame().assign(**{column: pd.Series(values, dtype=object)})
    frame.to_parquet(in_folder(tmp_path, "as_is.parquet"))
    assert pq.read_schema(in_folder(tmp_path, "as_is.parquet")).field(column).type == \
        pa.date32()  # the writer's loss, which the refusal warns of
    _refused_then_converted(tmp_path, frame, column, f"pd.to_datetime(data[{column!r}])")


def test_text_times_as_string_views_are_told_to_parse_them_on_both_paths(tmp_path):
    """Times as text in Arrow's string_view (polars' to_arrow at its newest
    compat level, pandas' ArrowDtype(pa.string_view()); Parquet keeps the
    view) were refused without the advice text in string or large_string
    gets ("has type string_view; expected numbers, dates or timestamps
    (or name another ...)"), by fit_frame and by the command on the same
    frame's to_parquet file."""

    hours = pd.Timestamp("2024-03-01") + pd.to_timedelta(_small_frame()["t"], unit="h")
    frame = _small_frame().assign(
        t=hours.dt.strftime("%Y-%m-%dT%H:%M:%SZ").astype(pd.ArrowDtype(pa.string_view())))
    advice = ("has type string_view; expected numbers, dates or timestamps: parse the text "
              "into timestamps first (e.g. pandas.to_datetime)")
    with pytest.raises(InputError, match=re.escape(advice)):
        gpfit.fit_frame(frame)
    _command_refuses(tmp_path, frame, advice)


@pytest.mark.parametrize("name, advice", [
    # It was "the table has no column 't' (its columns: series_id, y);
    # name the right one with time_column=", the index unmentioned.
    (None, "the frame has no column 't' but its index holds periods (period[M]): pass "
           "data.to_timestamp().rename_axis('t').reset_index(), or name another column with "
           "time_column="),
    # It was "pass data.reset_index()", after which the periods were
    # refused as periods.
    ("t", "'t' is in the frame's index, not among its columns (series_id, y); pass "
          "data.to_timestamp().reset_index()"),
])
def test_periods_in_the_index_are_refused_saying_how_to_make_them_timestamps(tmp_path, name,
                                                                           advice):
    """Monthly data in a PeriodIndex (resample("M"), read_csv of months);
    the advised call gives the command's rows for the frame it makes (each
    period's start)."""
    frame = _small_frame()
    months = pd.PeriodIndex(pd.period_range("2024-01", periods=8, freq="M").tolist() * 2,
                            name=name)
    indexed = frame.drop(columns="t").set_axis(months)
    with pytest.raises(InputError, match=re.escape(advice)):
        gpfit.fit_frame(indexed)
    made = (indexed.to_timestamp().rename_axis("t").reset_index() if name is None
            else indexed.to_timestamp().reset_index())
    assert str(made["t"].dtype).startswith("datetime64")
    assert_same_rows(rows_of(gpfit.fit_frame(made)), _command_rows(tmp_path, made))


def test_multiindex_columns_are_told_to_flatten_them_on_both_paths(tmp_path):
    """A frame with two levels of column labels (an aggregation's
    agg({"y": ["mean"]}), a pivot stacked back) names its columns as
    tuples, "('k', 'series_id')", in the frame and in its to_parquet file:
    both were told "no column 'series_id' ...; name the right one with
    ...", the name given. Both say the column is a MultiIndex's and how
    to flatten it; flattened, the frame gives the command's rows."""

    frame = _small_frame()
    levels = frame.set_axis(pd.MultiIndex.from_product([["k"], frame.columns]), axis=1)
    advice = ("its column \"('k', 'series_id')\" is a pandas MultiIndex's, named by its "
              "levels: flatten the columns first (e.g. data.droplevel(0, axis=1)), or give "
              "that name to {}")
    with pytest.raises(InputError, match=re.escape(advice.format("id_column="))):
        gpfit.fit_frame(levels)
    _command_refuses(tmp_path, levels, advice.format("--id_column"))
    flat = levels.droplevel(0, axis=1)
    assert_same_rows(rows_of(gpfit.fit_frame(flat)), _command_rows(tmp_path, flat))


def test_decimal_values_give_the_rows_of_the_same_numbers_as_floats(tmp_path):
    """A Spark or DuckDB export's DECIMAL(38, 18) values were read a float64
    step or two off the numbers they hold, on both paths, so the command on
    the decimal file and fit_frame of the same numbers as float64 gave
    other fingerprints (the series' points differ). Decimals are read as
    their nearest float64 now (columns.as_float)."""
    from gpfit_runs import gpfit_here

    frame = _small_frame().assign(y=np.round(_small_frame()["y"], 1))  # 0.3, -0.7, ...
    exact = pa.array([decimal.Decimal(f"{v:.1f}") for v in frame["y"]], pa.decimal128(38, 18))
    table = pa.table(frame).set_column(2, "y", exact)
    os.makedirs(in_folder(tmp_path, "in"))
    pq.write_table(table, os.path.join(in_folder(tmp_path, "in"), "part.parquet"))
    run = gpfit_here(in_folder(tmp_path, "in"), in_folder(tmp_path, "out"), "--kernel", "rbf")
    assert run.code == 0, run.stderr
    as_floats = rows_of(gpfit.fit_frame(frame))
    assert [row["status"] for row in as_floats] == ["ok", "ok"]
    assert_same_rows(run.rows(), as_floats)
    assert_same_rows(rows_of(gpfit.fit_frame(table)), as_floats)


def test_the_command_names_an_unnamed_index_written_by_to_parquet(tmp_path):
    """A frame with its times in an unnamed DatetimeIndex, written with
    to_parquet, holds them as __index_level_0__: the command said "has no
    column 't' (its columns: series_id, y, __index_level_0__); name the
    right one with --time_column", the index unmentioned. It says what the
    column is; given that name, it gives fit_frame's rows for the frame
    whose index is named t."""
    from gpfit_runs import gpfit_here

    frame = _small_frame()
    indexed = frame.drop(columns="t").set_axis(
        pd.DatetimeIndex((pd.Timestamp("2024-03-01")
                          + pd.to_timedelta(frame["t"], unit="h")).to_numpy()))
    os.makedirs(in_folder(tmp_path, "in"))
    indexed.to_parquet(os.path.join(in_folder(tmp_path, "in"), "part.parquet"))
    refused = gpfit_here(in_folder(tmp_path, "in"), in_folder(tmp_path, "refused"))
    assert refused.code == 2 and (
        "its column '__index_level_0__' is a pandas frame's unnamed index, as to_parquet "
        "writes it: if it holds this column, give that name to --time_column, or name the "
        "index before writing (data.rename_axis('t'))") in refused.stderr, refused.stderr
    run = gpfit_here(in_folder(tmp_path, "in"), in_folder(tmp_path, "out"), "--kernel", "rbf",
                     "--time_column", "__index_level_0__")
    assert run.code == 0, run.stderr
    assert_same_rows(run.rows(), rows_of(gpfit.fit_frame(indexed.rename_axis("t").reset_index())))


def test_intervals_as_times_are_told_to_give_numbers_on_both_paths(tmp_path):
    """DuckDB's INTERVAL (time since an event) reaches fit_frame as Arrow's
    month_day_nano_interval and the command, through Parquet's INTERVAL, as
    fixed_size_binary[12]: both were refused naming the type alone, where a
    duration is told to give numbers of one unit. Both say so now, with
    DuckDB's call, which, followed, gives the command's rows."""
    import duckdb

    from gpfit_runs import gpfit_here

    def query(t: str) -> str:
        return (f"SELECT CASE WHEN i < 8 THEN 'a' ELSE 'b' END AS series_id, {t} AS t, "
                "sin(i) AS y FROM range(16) r(i)")
    elapsed = "(i % 8) * INTERVAL 36 HOUR"
    connection = duckdb.connect()
    advice = ("give intervals as numbers of one unit (e.g. days, epoch(t) / 86400 in DuckDB) "
              "or as timestamps")
    with pytest.raises(InputError, match=re.escape(
            f"has type month_day_nano_interval; expected numbers, dates or timestamps: "
            f"{advice}")):
        gpfit.fit_frame(connection.sql(query(elapsed)).to_arrow_table())
    os.makedirs(in_folder(tmp_path, "intervals"))
    path = os.path.join(in_folder(tmp_path, "intervals"), "part.parquet")
    connection.execute(f"COPY ({query(elapsed)}) TO '{path}' (FORMAT parquet)")
    run = gpfit_here(in_folder(tmp_path, "intervals"), in_folder(tmp_path, "refused"))
    assert run.code == 2 and (
        "has type fixed_size_binary[12]; expected numbers, dates or timestamps: Parquet's "
        f"INTERVAL (DuckDB's) is read as 12 bytes: {advice}") in run.stderr, run.stderr
    days = connection.sql(query(f"epoch({elapsed}) / 86400")).to_arrow_table()
    assert days.column("t").to_pylist()[:3] == [0.0, 1.5, 3.0]
    assert_same_rows(rows_of(gpfit.fit_frame(days)), _command_rows(tmp_path, days.to_pandas()))


def test_lists_of_dates_and_datetimes_are_refused_not_read_as_dates(tmp_path):
    """The nested layout's lists of times hit the same loss: a list column
    of datetime.date and datetime.datetime values, a date first, is read
    as lists of dates (list<date32>), by fit_frame and in the to_parquet
    file, each time of day dropped (both series skipped, "all observation
    times are equal"). fit_frame refuses it; the conversion it names gives
    the command's rows on the converted frame's file."""
    day = datetime.date(2024, 3, 1)
    times = [day] + [datetime.datetime(2024, 3, 1, hour) for hour in range(1, 8)]
    frame = pd.DataFrame({"series_id": ["a", "b"], "t": pd.Series([times, times], dtype=object),
                          "y": [np.sin(np.arange(8.0)), np.cos(np.arange(8.0))]})
    frame.to_parquet(in_folder(tmp_path, "as_is.parquet"))
    assert pq.read_schema(in_folder(tmp_path, "as_is.parquet")).field("t").type == \
        pa.list_(pa.field("element", pa.date32()))
    convert = "data['t'].map(lambda ts: pd.to_datetime(ts).to_numpy(), na_action='ignore')"
    _refused_then_converted(tmp_path, frame, "t", convert)


@pytest.mark.parametrize("values, advice", [
    # Yes/no readings (a sensor's state, an event flag).
    (np.tile([True, False, True, True, False, False, True, False], 2),
     "has type bool; expected numbers: give true and false as numbers first "
     "(e.g. .astype(float): 1.0 and 0.0)"),
    (np.round(np.linspace(0.0, 1.0, 16), 2).astype(str),
     "has type large_string; expected numbers: parse the text into numbers first (e.g. "
     "pandas.to_numeric)"),
])
def test_values_of_bools_or_text_are_told_the_conversion_on_both_paths(tmp_path, values,
                                                                       advice):
    """y of bools or of numbers as text was refused "expected numbers
    (convert it, or name another with ...)", no conversion named, where t
    of text is told to parse it; by fit_frame and by the command on the
    frame's to_parquet file. Both name it; followed, it gives the command's
    rows."""

    frame = _small_frame().assign(y=values)
    with pytest.raises(InputError, match=re.escape(advice)):
        gpfit.fit_frame(frame)
    _command_refuses(tmp_path, frame, advice)
    followed = frame.assign(y=frame["y"].astype(float) if values.dtype == bool
                            else pd.to_numeric(frame["y"]))
    assert_same_rows(rows_of(gpfit.fit_frame(followed)), _command_rows(tmp_path, followed))


@pytest.mark.parametrize("column", ["t", "series_id"])
def test_categories_of_dates_and_datetimes_are_refused_not_read_as_dates(tmp_path, column):
    """pandas' category dtype of the same objects (a long frame's repeated
    times or ids kept as categories) is a dictionary of dates to Arrow,
    its datetimes' times of day dropped: distinct categories became one
    date. Refused as the object column is; converted, it gives the
    command's rows."""
    values = {"t": ([datetime.date(2024, 3, 1)]
                    + [datetime.datetime(2024, 3, 1, hour) for hour in range(1, 8)]) * 2,
              "series_id": ([datetime.date(2024, 3, 1)] * 8
                            + [datetime.datetime(2024, 3, 1, 12)] * 8)}[column]
    frame = _small_frame().assign(**{column: pd.Series(values, dtype=object).astype("category")})
    _refused_then_converted(tmp_path, frame, column, f"pd.to_datetime(data[{column!r}])")

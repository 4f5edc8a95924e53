"""Bad invocations and unusable input: exit code 2, one line on stderr, and
the output folder untouched (here: never created)."""
from __future__ import annotations

import os
import re

import numpy as np
import pyarrow as pa
import pyarrow.csv  # noqa: F401  (pa.csv)
import pyarrow.parquet as pq
import pytest

from gpfit_runs import Run, as_a_user_without_access, command_in, without_gcs, write_encrypted
from pipeline_data import gpfit


def _good_table(n: int = 5) -> pa.Table:
    return pa.table({"series_id": ["a"] * n, "t": np.arange(n, dtype=float),
                     "y": np.arange(n, dtype=float)})


def _write(path, table):
    pq.write_table(table, path)
    return str(path)


def no_match(tmp):
    return str(tmp / "nothing-*.parquet"), "no file matches"


def unknown_scheme(tmp):
    # Beam raised outside the listing: "gpfit failed unexpectedly ... report it", exit 3.
    return "foo://bucket/data/", ("cannot read --input 'foo://bucket/data/': Unable to get "
                                  "filesystem from specified path")


def unavailable_scheme(tmp):
    return "hdfs://namenode/data/", "cannot read --input 'hdfs://namenode/data/': Unable to get"


def no_such_path(tmp):
    return str(tmp / "absent"), "no file or folder"


def no_such_folder(tmp):
    # A missing local folder named with its "/" was called "a folder that
    # holds no data files".
    return str(tmp / "absent") + "/", "no file or folder"


def empty_folder(tmp):
    os.makedirs(tmp / "empty")
    (tmp / "empty" / "_SUCCESS").write_text("")  # not a data file
    return str(tmp / "empty"), "holds no data files"


def missing_column(tmp):
    table = _good_table().rename_columns(["series_id", "t", "value"])
    return _write(tmp / "x.parquet", table), (
        "has no column 'y' (its columns: series_id, t, value); name the right one with "
        "--value_column")


def not_parquet(tmp):
    (tmp / "data.parquet").write_text("series_id,t,y\na,1,2\n")
    return str(tmp / "data.parquet"), "data.parquet is not a Parquet file"


def one_bad_file_among_good(tmp):
    os.makedirs(tmp / "mixed")
    _write(tmp / "mixed" / "a.parquet", _good_table())
    (tmp / "mixed" / "README.txt").write_text("hello")
    # The folder's other files are the likely mistake: the advice names the glob.
    return str(tmp / "mixed"), ("; remove it from the input or convert it to Parquet, or give "
                                "--input a glob of the Parquet files alone, e.g. "
                                f"'{tmp / 'mixed'}/*.parquet'")


def empty_file(tmp):
    (tmp / "zero.parquet").write_bytes(b"")
    return str(tmp / "zero.parquet"), "zero.parquet is empty (0 bytes)"


def string_values(tmp):
    table = pa.table({"series_id": ["a", "a"], "t": [1.0, 2.0], "y": ["1", "2"]})
    return _write(tmp / "s.parquet", table), "value column 'y' in"


def string_times(tmp):
    table = pa.table({"series_id": ["a", "a"], "t": ["mon", "tue"], "y": [1.0, 2.0]})
    return _write(tmp / "s.parquet", table), "time column 't' in"


def half_nested(tmp):
    table = pa.table({"series_id": ["a"], "t": [[1.0, 2.0]], "y": [1.0]})
    return _write(tmp / "h.parquet", table), "column 't' holds lists but 'y' does not"


def half_float_ids(tmp):
    # Accepted, the job then failed on the workers: Arrow cannot group float16.
    table = _good_table().set_column(0, "series_id", pa.array(np.ones(5, np.float16)))
    return _write(tmp / "h.parquet", table), (f"id column 'series_id' in {tmp / 'h.parquet'} "
                                              "has type halffloat; expected strings or integers")


def json_ids(tmp):
    table = _good_table().set_column(0, "series_id", pa.array(['{"k": 1}'] * 5, pa.json_()))
    return _write(tmp / "j.parquet", table), "has type extension<arrow.json>; expected strings"


def duckdb_json_ids(tmp):
    # DuckDB writes its JSON type as Parquet's JSON, which Arrow reads as
    # arrow.json and cannot group: the refusal said what was expected, not
    # what to do, as the refusals of times and values do. (Its UUID type,
    # arrow.uuid, is an id: tests/pipeline/test_uuid_ids.py.)
    import duckdb
    path = tmp / "keys.parquet"
    duckdb.connect().execute(
        "COPY (SELECT json_object('k', i % 2) AS series_id, "
        f"i AS t, i * 1.5 AS y FROM range(6) r(i)) TO '{path}' (FORMAT parquet)")
    return str(path), (
        f"id column 'series_id' in {path} has type extension<arrow.json>; expected strings or "
        "integers: write it as one of those (a JSON id as its text, e.g. "
        'CAST("series_id" AS VARCHAR) in DuckDB), or name another with --id_column')


def ids_in_a_zone_the_tz_database_lacks(tmp):
    # US/Pacific-New, removed from tzdata in 2020a, as an older writer left
    # it: the footer passed, and the job failed on its workers writing the
    # ids as text (exit 3, "Cannot locate or parse timezone").
    ids = pa.array([1_700_000_000_000_000] * 5, pa.timestamp("us", tz="US/Pacific-New"))
    path = _write(tmp / "z.parquet", _good_table().set_column(0, "series_id", ids))
    return path, (f"id column 'series_id' in {path} holds timestamps in the time zone "
                  "'US/Pacific-New', which the tz database lacks, so its ids cannot be written "
                  "as text; write the column in UTC or in a zone the tz database has (e.g. "
                  "pandas' .dt.tz_convert('UTC')), or name another with --id_column")


def no_rows(tmp):
    return _write(tmp / "none.parquet", _good_table().slice(0, 0)), "hold no rows"


def mixed_time_kinds(tmp):
    os.makedirs(tmp / "kinds")
    _write(tmp / "kinds" / "a.parquet", _good_table())
    table = _good_table().set_column(1, "t", pa.array(np.arange(5, dtype=np.int32)).cast(pa.date32()))
    _write(tmp / "kinds" / "b.parquet", table)
    return str(tmp / "kinds"), "give one kind of time"


def mixed_layouts(tmp):
    # A nested file read as long (or the reverse) gave no series of its ids.
    os.makedirs(tmp / "layouts")
    _write(tmp / "layouts" / "a.parquet", _good_table())
    nested = pa.table({"series_id": ["b"], "t": [[0.0, 1.0, 2.0]], "y": [[1.0, 2.0, 3.0]]})
    _write(tmp / "layouts" / "b.parquet", nested)
    return str(tmp / "layouts"), (f"{tmp / 'layouts' / 'b.parquet'} is in nested layout but "
                                  f"{tmp / 'layouts' / 'a.parquet'} is long; give files of one "
                                  "layout")


def a_column_twice(tmp):
    # Which of the two would be read as y is pyarrow's choice, not the user's.
    table = _good_table().append_column("y", pa.array(np.zeros(5)))
    return _write(tmp / "twice.parquet", table), (
        f"{tmp / 'twice.parquet'} has 2 columns named 'y'; give its columns unique names, or "
        "name another with --value_column")


def a_link_beside_its_file(tmp):
    # A "latest" link beside the dated file it points to: every point of the
    # file's series was read twice, without a word.
    os.makedirs(tmp / "days")
    _write(tmp / "days" / "2026-12-06.parquet", _good_table())
    os.symlink("2026-12-06.parquet", tmp / "days" / "latest.parquet")
    return str(tmp / "days"), (f"{tmp / 'days' / 'latest.parquet'} is "
                               f"{tmp / 'days' / '2026-12-06.parquet'} again (a link)")


def a_hard_link_beside_its_file(tmp):
    os.makedirs(tmp / "days")
    _write(tmp / "days" / "a.parquet", _good_table())
    os.link(tmp / "days" / "a.parquet", tmp / "days" / "b.parquet")
    return str(tmp / "days" / "*.parquet"), "read twice"


def a_dask_metadata_summary(tmp):
    # Dask's to_parquet(write_metadata_file=True) and Spark leave _metadata,
    # the footers of the parts, beside them: named as --input, its footer
    # passed and the job failed reading row groups that are in the parts
    # ("Couldn't deserialize thrift", exit 3, output cleared).
    os.makedirs(tmp / "dask")
    collector = []
    pq.write_table(_good_table(), tmp / "dask" / "part.0.parquet", metadata_collector=collector)
    collector[-1].set_file_path("part.0.parquet")
    pq.write_metadata(_good_table().schema, tmp / "dask" / "_metadata",
                      metadata_collector=collector)
    return str(tmp / "dask" / "_metadata"), (
        f"{tmp / 'dask' / '_metadata'} holds the footers of other files (a _metadata summary, "
        f"as Dask and Spark write beside their parts), not their rows; give --input the folder "
        f"that holds it, {str(tmp / 'dask')!r}")


def an_id_in_hive_folder_names(tmp):
    # pyarrow's write_to_dataset(partition_cols=["series_id"]), Spark's
    # partitionBy: the id is in the folder names, not in the files, and the
    # advice was to name the right column with --id_column.
    pq.write_to_dataset(_good_table(), tmp / "hive", partition_cols=["series_id"])
    return str(tmp / "hive" / "**" / "*.parquet"), (
        "has no column 'series_id' (its columns: t, y); it is in the folder names "
        f"(series_id=a/: Hive partitioning), which gpfit does not read: write the files with "
        f"the column in them (pyarrow.dataset.dataset({str(tmp / 'hive')!r}, "
        "partitioning='hive') reads them with it)")


def column_names_with_spaces(tmp):
    # The listing showed " series_id, t , y": the names it lacked, seemingly.
    table = _good_table().rename_columns([" series_id", "t", "y"])
    return _write(tmp / "s.parquet", table), (
        "has no column 'series_id' (its columns:  series_id, t, y); its column ' series_id' "
        "differs only in case or in spaces around the name: give that name to --id_column")


def column_names_in_another_case(tmp):
    table = _good_table().rename_columns(["series_id", "T", "y"])
    return _write(tmp / "s.parquet", table), (
        "its column 'T' differs only in case or in spaces around the name: give that name to "
        "--time_column")


def an_encrypted_file(tmp):
    # Parquet modular encryption (Spark's parquet.encryption.* settings)
    # encrypts the footer by default: the file was "not a Parquet file",
    # to be converted to Parquet.
    path = tmp / "sealed.parquet"
    write_encrypted(path, _good_table(), ["y"], plaintext_footer=False)
    return str(path), (f"{path} is an encrypted Parquet file (Parquet modular encryption), "
                       "which gpfit cannot decrypt: write it without encryption, or leave it "
                       "out of --input")


def no_columns(tmp):
    # pandas' DataFrame().to_parquet(): "(its columns: ); name the right one".
    return _write(tmp / "empty.parquet", pa.table({})), (
        f"{tmp / 'empty.parquet'} has no columns (a table written without any); write it with "
        "the columns 'series_id', 't' and 'y', or remove it")


def a_file_named_in_latin1(tmp):
    # The job failed on its workers, exit 3: "'utf-8 [while running
    # 'ReadSeries/ListRowGroups/ParDo(ListRowGroups)']' codec can't encode
    # characters in position 7-8: surrogates not allowed".
    os.makedirs(tmp / "names")
    _write(tmp / "names" / "a.parquet", _good_table())
    with open(os.path.join(os.fsencode(tmp / "names"), b"caf\xe9.parquet"), "wb") as f:
        pq.write_table(_good_table(), f)
    return str(tmp / "names"), (f"input file '{tmp / 'names'}/caf\\xe9.parquet' has a name "
                                "that is not UTF-8 text")


def a_file_named_with_a_newline(tmp):
    # The refusal was two lines: "gpfit: error: .../bad" and "name.parquet is not ...".
    os.makedirs(tmp / "names")
    _write(tmp / "names" / "a.parquet", _good_table())
    (tmp / "names" / "bad\nname\u202e.parquet").write_text("x")
    return str(tmp / "names"), f"{tmp / 'names'}/bad\\nname\\u202e.parquet is not a Parquet file"


def a_column_arrow_cannot_read(tmp):
    # polars writes its Int128 as Parquet's INTEGER(128), which Arrow has no
    # type for: even beside good id, time and value columns the file's schema
    # cannot be read, and it was called "not a Parquet file": "convert it to
    # Parquet".
    import polars as pl
    frame = pl.from_arrow(_good_table()).with_columns(pl.lit(7, pl.Int128).alias("count"))
    frame.write_parquet(tmp / "wide.parquet")
    return str(tmp / "wide.parquet"), (
        f"{tmp / 'wide.parquet'} is a Parquet file whose schema Arrow cannot read (Integers "
        "with more than 64 bits not implemented): a column of a type Arrow has none for, such "
        "as polars' Int128; write that column as another type (Int64, Float64, a Decimal) or "
        "leave it out, or leave the file out of --input")


def a_glob_in_a_folder_named_with_brackets(tmp):
    # "no file matches ...; check the --input pattern", of a folder that is there.
    os.makedirs(tmp / "runs [v2]")
    _write(tmp / "runs [v2]" / "a.parquet", _good_table())
    return str(tmp / "runs [v2]" / "*.parquet"), (
        f"; in a glob, [...] matches one of the characters within, so to match the folder "
        f"'{tmp}/runs [v2]' write its [ as [[]: '{tmp}/runs [[]v2]/*.parquet'")


@pytest.mark.parametrize("make_input", [
    a_glob_in_a_folder_named_with_brackets, a_file_named_in_latin1, a_file_named_with_a_newline, no_match, no_such_path, no_such_folder, empty_folder, missing_column, not_parquet,
    one_bad_file_among_good, empty_file, string_values, string_times, half_nested, no_rows,
    mixed_time_kinds, half_float_ids, json_ids, duckdb_json_ids, unknown_scheme,
    ids_in_a_zone_the_tz_database_lacks,
    unavailable_scheme,
    a_link_beside_its_file, a_hard_link_beside_its_file, a_dask_metadata_summary,
    an_id_in_hive_folder_names, column_names_with_spaces, column_names_in_another_case,
    no_columns, mixed_layouts, a_column_twice, a_column_arrow_cannot_read, an_encrypted_file,
])
def test_unusable_input_exits_2(tmp_path, make_input):
    input_, expected = make_input(tmp_path)
    run = gpfit(input_, str(tmp_path / "out"))
    assert_usage_error(run, expected)


@pytest.mark.parametrize("in_file, expected", [
    # A header written on macOS (accents decomposed, NFD) and the name typed
    # composed (NFC) read as "has no column 'ventes_été' (its columns:
    # series_id, t, ventes_été)": the name seemingly there.
    ("ventes_été", "its column 'ventes_e\\u0301te\\u0301' differs from 'ventes_\\xe9t\\xe9' only in "
                   "Unicode normalisation (accents composed or not): give --value_column the "
                   "name as the file spells it, or rename the column"),
    # In another case too: said to differ "only in case or in spaces", with
    # the file's name as it looks, so the name typed again as shown (NFC)
    # was refused again.
    ("Ventes_été", "its column 'Ventes_e\\u0301te\\u0301' differs from 'ventes_\\xe9t\\xe9' in case "
                   "or in spaces around the name and in Unicode normalisation (accents "
                   "composed or not): give --value_column the name as the file spells it, or "
                   "rename the column"),
])
def test_a_column_name_in_another_unicode_form_is_said_so(tmp_path, in_file, expected):
    import unicodedata
    table = _good_table().rename_columns(["series_id", "t", unicodedata.normalize("NFD", in_file)])
    input_ = _write(tmp_path / "s.parquet", table)
    run = gpfit(input_, str(tmp_path / "out"), "--value_column",
                unicodedata.normalize("NFC", "ventes_été"))
    assert_usage_error(run, expected)


def _spark_windows(path) -> str:
    """Spark's groupBy(window(...)).agg(...): the time in the struct column
    `window` (start, end), the value in `avg(y)`."""
    hours = [pa.array(np.arange(k, k + 5) * 3_600_000_000).cast(pa.timestamp("us"))
             for k in (0, 1)]
    window = pa.StructArray.from_arrays(hours, names=["start", "end"])
    return _write(path, pa.table({"series_id": ["a"] * 5, "window": window,
                                  "avg(y)": np.arange(5.0)}))


@pytest.mark.parametrize("time_column, expected", [
    # "has no column 'window.start' (its columns: series_id, window, avg(y));
    # name the right one with --time_column": none could be named.
    ("window.start", "has no column 'window.start' (its columns: series_id, window, avg(y)); "
                     "it is the field 'start' of the struct column 'window', and gpfit reads "
                     "columns, not their fields: write it as a column of its own (Spark: "
                     ".withColumn('start', col('window.start'))) and give that name to "
                     "--time_column"),
    ("start", "it is the field 'start' of the struct column 'window', and gpfit reads"),
    # "...has type struct<start: timestamp[us], end: timestamp[us]>; expected
    # numbers, dates or timestamps (or name another with --time_column)".
    ("window", "time column 'window' in {path} has type struct<start: timestamp[us], end: "
               "timestamp[us]>; expected numbers, dates or timestamps: gpfit reads columns, "
               "not their fields: write the field that holds the time as a column of its own "
               "(Spark: .withColumn('start', col('window.start')))"),
])
def test_a_time_in_a_struct_column_says_to_write_it_as_a_column(tmp_path, time_column,
                                                                 expected):
    input_ = _spark_windows(tmp_path / "windows.parquet")
    run = gpfit(input_, str(tmp_path / "out"), "--time_column", time_column,
                "--value_column", "avg(y)")
    assert_usage_error(run, expected.format(path=input_))


@pytest.mark.parametrize("extra, expected", [
    # A misspelt option was refused without the one meant.
    (["--kernal", "rbf"], "unrecognised arguments: --kernal rbf; for --kernal, did you mean "
                          "--kernel? See gpfit --help"),
    (["--predict_step=3", "--timeseries_column", "t"],
     "unrecognised arguments: --predict_step=3 --timeseries_column t; for --predict_step, did "
     "you mean --predict_steps? See gpfit --help"),
    (["--runer", "DirectRunner"], "for --runer, did you mean --runner?"),  # Beam's own
    (["--kernel", "cubic"], "--kernel must be one of rbf, matern12, matern32, matern52, periodic, "
                            "linear, or a sum"),
    (["--kernel", "auto", "--candidates", "rbf,cubic"], "candidate kernel 'cubic' is not known"),
    (["--candidates", "rbf,periodic"], "--candidates is for --kernel auto"),
    (["--restarts", "two"], "argument --restarts: invalid int value: 'two'"),
    (["--min_points", "0"], "--min_points must be >= 1"),
    # Above the kernel's default --max_points: the 4096 came from nowhere.
    (["--min_points", "5000"], "--max_points (4096, rbf's default) must be >= --min_points "
     "(5000); raise --max_points or lower --min_points; see gpfit --help"),
    # Under auto a candidate's default was checked only when its fitter was
    # built: "gpfit failed unexpectedly: ValueError", and "report it".
    (["--kernel", "auto", "--candidates", "rbf,periodic", "--min_points", "5000"],
     "--max_points (4096, rbf's default) must be >= --min_points (5000)"),
    (["--kernel", "auto", "--min_points", "5000"],
     "--max_points (4096, matern52+periodic's default) must be >= --min_points (5000)"),
    (["--restarts", "0"], "--restarts must be >= 1; got 0"),  # the flag, not FitConfig's field
    # A start past the grid's points repeats one, yet is a batch member in
    # memory: --restarts 1000000 fitted 6 series of 40 points for 340 s and
    # failed every one (10000: 113 s and 7 GB for the fits of --restarts 3).
    (["--restarts", "1000000"], "--restarts (1000000) must be at most 40: rbf's start grid "
                                "has 40 points, and a start past them repeats one; give "
                                "--restarts 40 or fewer"),
    (["--restarts", "97", "--kernel", "rbf+periodic"], "--restarts (97) must be at most 96: "
                                                       "rbf+periodic's start grid has 96"),
    (["--restarts", "97", "--kernel", "auto"],
     "--restarts (97) must be at most 96: the largest of the candidates' start grids has 96"),
    # One series' dense fit would need terabytes: the run aborted
    # (std::bad_alloc, exit 134) or was killed by the OOM killer, silently.
    (["--max_points", "100000", "--max_rows", "100000"],
     "--max_points (100000) would let one series' rbf fit"),
    (["--kernel", "auto", "--max_points", "100000", "--max_rows", "100000"],
     "would let one series' matern52+periodic fit"),
    (["--max_failure_fraction", "1.5"], "--max_failure_fraction must be between 0 and 1"),
    # inf passed "> 0": every bundle's series in one fit call, which Dataflow cannot split.
    (["--seconds_per_fit_call", "inf"],
     "--seconds_per_fit_call must be a number > 0 and at most 900; got inf"),
    (["--time_column", "when"], "has no column 'when'"),
    # One column as two roles would fit t against t, or make a series per time.
    (["--value_column", "t"], "--time_column and --value_column both name the column 't'"),
    (["--id_column", "y"], "--id_column and --value_column both name the column 'y'"),
    # Below the kernel's default --max_points too: every series would be skipped.
    (["--max_rows", "0"], "--max_rows (0) must be >= --max_points (4096, rbf's default)"),
    (["--max_rows", "-5", "--kernel", "auto"],
     "--max_rows (-5) must be >= --max_points (1000000, the largest of the candidates' defaults)"),
    # Beam writes every shard asked for: --num_shards 1000000 on 40 series
    # wrote empty files for 9 minutes (57,000 of them) before it was killed.
    (["--num_shards", "6"], "--num_shards 6 is more than the input's 5 rows"),
    # Beam's own Parquet sink fails its runtime type check at the write (exit 3,
    # the output folder cleared); the strictness failed the build 'unexpectedly'.
    (["--runtime_type_check"], "--runtime_type_check: gpfit's job does not pass it"),
    (["--type_check_strictness", "ALL_REQUIRED"],
     "--type_check_strictness ALL_REQUIRED: gpfit's job does not declare"),
    # Wrote columns lower_100, upper_100, where --predict_levels 100 is refused.
    (["--predict_levels", "80,99.99999999", "--predict_steps", "1"],
     "--predict_levels 99.99999999 names the columns lower_100, upper_100"),
    # A script's `--previous_output "$LAST"` with LAST unset fitted every series
    # cold without a word (the manifest's previous_output null).
    (["--previous_output", ""], "--previous_output is empty: give the previous run's output"),
    # Beam said so once the job ran (exit 3), after an earlier run's manifest
    # in the output folder had been deleted.
    (["--runner", "PortableRunner"], "--runner PortableRunner needs --job_endpoint: embed"),
    # Beam's FnApiRunner failed the job: "the pipeline failed: list index out of range".
    (["--direct_num_workers", "-2", "--direct_running_mode", "multi_processing"],
     "--direct_num_workers must be >= 0 (0: one worker per core); got -2"),
    (["--direct_num_workers", "-1", "--direct_running_mode", "multi_threading"],
     "--direct_num_workers must be >= 0 (0: one worker per core); got -1"),
    # Past the cores each worker only costs: 200 threads took 185 s for 3 series
    # on 2 cores (2 took 9 s); 10**9 failed the job once the output was cleared.
    ([f"--direct_num_workers={os.cpu_count() + 1}", "--direct_running_mode=multi_processing"],
     f"--direct_num_workers {os.cpu_count() + 1} is more than this machine's "
     f"{os.cpu_count()} cores"),
    (["--direct_num_workers", "1000000000"],
     f"give --direct_num_workers {os.cpu_count()} or fewer, or 0 (one per core, on any machine)"),
])
def test_bad_options_exit_2(tmp_path, extra, expected):
    input_ = _write(tmp_path / "in.parquet", _good_table())
    run = gpfit(input_, str(tmp_path / "out"), *extra)
    assert_usage_error(run, expected)


@pytest.mark.parametrize("name, value", [("TF_NUM_INTRAOP_THREADS", "x"),
                                         ("TF_NUM_INTRAOP_THREADS", "0"),
                                         ("TF_NUM_INTEROP_THREADS", "-2"),
                                         ("TF_NUM_INTEROP_THREADS", str(os.cpu_count() + 1)),
                                         ("TF_NUM_INTRAOP_THREADS", "1000000000")])
def test_bad_thread_counts_in_the_environment_exit_2(tmp_path, monkeypatch, name, value):
    """They failed the job once it ran (in a worker process, or as 'gpfit
    failed unexpectedly', after the output folder was cleared); 1000000000
    killed the process (SIGSEGV, exit 139) without a word, its lock left."""
    monkeypatch.setenv(name, value)
    input_ = _write(tmp_path / "in.parquet", _good_table())
    run = gpfit(input_, str(tmp_path / "out"))
    assert_usage_error(run, f"{name}={value!r} in the environment must be a whole number from "
                            f"1 to this machine's {os.cpu_count()} cores")


@pytest.mark.parametrize("value", ["0", "-1", "abc"])
def test_a_blas_thread_count_that_means_every_core_exits_2(tmp_path, monkeypatch, value):
    """OpenBLAS reads these as "one thread per core", the oversubscription
    gpfit's OPENBLAS_NUM_THREADS=1 is there to prevent; the run went on
    with it, without a word."""
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", value)
    input_ = _write(tmp_path / "in.parquet", _good_table())
    run = gpfit(input_, str(tmp_path / "out"))
    assert_usage_error(run, f"OPENBLAS_NUM_THREADS={value!r} in the environment must be a whole "
                            "number from 1 (BLAS threads per process; gpfit's default is 1)")


def test_a_pickle_library_that_is_not_installed_exits_2(tmp_path):
    """Beam raised ImportError building the pipeline: 'gpfit failed
    unexpectedly ... report it', exit 3."""
    try:
        import dill  # noqa: F401
        pytest.skip("dill is installed here")
    except ImportError:
        pass
    input_ = _write(tmp_path / "in.parquet", _good_table())
    run = gpfit(input_, str(tmp_path / "out"), "--pickle_library", "dill")
    assert_usage_error(run, "Beam refuses the options: Pipeline option pickle_library=dill is "
                            "set, but dill is not installed")


@pytest.mark.parametrize("levels", [["--log_level", "debug", "--log_level", "error"],
                                    ["--log_level=debug", "--log_level=info"]])
def test_a_repeated_log_level_takes_the_last_as_the_options_do(tmp_path, levels):
    """A wrapper's --log_level debug followed by the user's own: the last
    is the one recorded, but the first set gpfit's lines, so a refusal came
    with its traceback."""
    input_ = _write(tmp_path / "in.parquet", _good_table())
    done = command_in(str(tmp_path), "-m", "pipeline", "--input", input_, "--output",
                      str(tmp_path / "out"), *levels, "--kernel", "cubic")
    assert_usage_error(Run(done.returncode, done.stdout, done.stderr, str(tmp_path / "out")),
                       "--kernel must be one of rbf")


@pytest.mark.parametrize("option", ["--input", "--output", "--previous_output"])
def test_a_path_that_is_not_utf8_exits_2(tmp_path, option):
    """A folder named in Latin-1 (Python hands its bytes over as surrogate
    escapes) in any path option: Beam's encoding of the options failed, and
    gpfit "failed unexpectedly: UnicodeEncodeError ... report it", exit 3."""
    folder = os.fsdecode(os.path.join(os.fsencode(tmp_path), b"d\xe9j\xe0"))
    os.makedirs(folder)
    input_ = os.path.join(folder, "in.parquet")
    with open(input_, "wb") as f:  # pyarrow takes no such path
        pq.write_table(_good_table(), f)
    paths = {"--input": input_, "--output": os.path.join(folder, "out"),
             "--previous_output": folder}
    run = gpfit(paths["--input"] if option == "--input" else _write(tmp_path / "in.parquet",
                                                                    _good_table()),
                str(tmp_path / "out") if option != "--output" else paths["--output"],
                *(["--previous_output", paths[option]] if option == "--previous_output" else []))
    shown = paths[option].replace("d\udce9j\udce0", "d\\xe9j\\xe0")
    assert_usage_error(run, f"{option} '{shown}' is not UTF-8 text, which Beam needs of every "
                            "option and file name")


@pytest.mark.parametrize("option", ["--input", "--output", "--previous_output"])
def test_a_path_starting_with_an_unexpanded_tilde_exits_2(tmp_path, option, monkeypatch):
    """`--output=~/out` (the shell expands ~ only at a word's start) or a
    scheduler's argument list reached gpfit as is: the run wrote a folder
    named "~" in the working folder and said "-> ~/out"; an input or a
    previous output under "~" was "not found". Refused at launch, nothing
    written."""
    monkeypatch.chdir(tmp_path)
    input_ = _write(tmp_path / "in.parquet", _good_table())
    paths = {"--input": "~/in.parquet", "--output": "~/out", "--previous_output": "~/last"}
    run = gpfit(paths["--input"] if option == "--input" else input_,
                paths["--output"] if option == "--output" else str(tmp_path / "out"),
                *(["--previous_output", paths[option]] if option == "--previous_output" else []))
    assert_usage_error(run, f"{option} {paths[option]} starts with '~', which no shell expanded")
    assert not os.path.exists(tmp_path / "~") and not os.path.exists(tmp_path / "out")


def test_an_output_name_longer_than_the_file_system_takes_exits_2(tmp_path):
    """A name over 255 bytes in --output, or a path over 4096 with the names
    gpfit writes in it, failed as "gpfit failed unexpectedly: OSError:
    [Errno 36] File name too long ... report it", exit 3."""
    input_ = _write(tmp_path / "in.parquet", _good_table())
    run = gpfit(input_, str(tmp_path / "runs" / ("é" * 128) / "night"))
    assert_usage_error(run, f"--output: the name {'é' * 40}... is 256 bytes, longer than the "
                            "file system takes (255 bytes); give a shorter folder path")
    deep = os.path.join(str(tmp_path / "runs"), *["d" * 200] * 20)
    run = gpfit(input_, deep)
    assert_usage_error(run, f"--output: the path {deep[:40]}... is {len(deep):,} bytes, longer "
                            "with the 112 bytes of names written in it than the file system "
                            "takes (4096 bytes); give a shorter folder path")
    assert not os.path.exists(tmp_path / "runs")


@pytest.mark.parametrize("unreadable, pattern, expected", [
    # "not a Parquet file ([Errno 13] Permission denied ...); ... convert it to Parquet"
    ("days/b.parquet", "days", "{tmp}/days/b.parquet cannot be read: Permission denied; make it "
                               "readable by this user, or leave it out of --input"),
    # The run went on without the folder's files, exit 0, without a word.
    ("days/late", "days/**/*.parquet", "cannot list the folder {tmp}/days/late, which --input "
                                       "reaches: Permission denied; its files would be left "
                                       "out of the run. Make it readable by this user, or give "
                                       "an --input glob that leaves it out"),
    # "folder 'days' holds no data files; put the Parquet files directly in it"
    ("days", "days", "cannot list the folder {tmp}/days, which --input reaches: Permission "
                     "denied; its files would be left out of the run. Make it readable by this "
                     "user, or give an --input glob that leaves it out"),
])
def test_input_this_user_cannot_read_exits_2(tmp_path, unreadable, pattern, expected):
    os.makedirs(tmp_path / "days" / "late")
    for name in ("days/a.parquet", "days/b.parquet", "days/late/c.parquet"):
        _write(tmp_path / name, _good_table())
    os.chmod(tmp_path / unreadable, 0)
    try:
        done = as_a_user_without_access("-m", "pipeline", "--input", str(tmp_path / pattern),
                                         "--output", str(tmp_path / "out"))
    finally:
        os.chmod(tmp_path / unreadable, 0o755)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "gpfit: error: " + expected.replace("{tmp}", str(tmp_path))]
    assert not os.path.exists(tmp_path / "out")


@pytest.mark.parametrize("unreadable, said", [
    # "... part-00000-of-00001.parquet is not a Parquet file ([Errno 13] Permission denied ...)"
    ("night1/params/part-00000-of-00001.parquet",
     "{tmp}/night1/params/part-00000-of-00001.parquet cannot be read: Permission denied; make "
     "it readable by this user"),
    # "... holds no parameter shards", and the report: "no params/part-*.parquet files"
    ("night1/params", "cannot list the folder {tmp}/night1/params: Permission denied; make it "
                      "readable by this user"),
])
def test_a_previous_run_this_user_cannot_read_is_said_so(tmp_path, unreadable, said):
    """As --previous_output and as gpfit-report's --params."""
    input_ = _write(tmp_path / "in.parquet", _good_table())
    assert gpfit(input_, str(tmp_path / "night1")).code == 0
    os.chmod(tmp_path / unreadable, 0)
    try:
        night2 = as_a_user_without_access(
            "-m", "pipeline", "--input", input_, "--output", str(tmp_path / "night2"),
            "--previous_output", str(tmp_path / "night1"))
        report = as_a_user_without_access(
            "-m", "pipeline.report", "--params", str(tmp_path / "night1"), "--out",
            str(tmp_path / "r.html"))
    finally:
        os.chmod(tmp_path / unreadable, 0o755)
    said = said.replace("{tmp}", str(tmp_path))
    assert night2.returncode == 2 and night2.stderr.strip().splitlines() == [
        f"gpfit: error: --previous_output: {said}; give a gpfit output folder, or add "
        "--previous_output_optional to fit every series cold"], night2.stderr
    assert report.returncode == 2 and report.stderr.strip().splitlines() == [
        f"gpfit-report: error: {said}"], report.stderr


def test_a_folder_the_glob_does_not_reach_may_be_unreadable(tmp_path):
    """A glob of the files directly in a folder needs none of its
    subfolders, nor a ** glob its _temporary/ (no data): no refusal."""
    os.makedirs(tmp_path / "days" / "late")
    os.makedirs(tmp_path / "days" / "sub" / "_temporary")
    _write(tmp_path / "days" / "a.parquet", _good_table())
    os.chmod(tmp_path / "days" / "late", 0)
    os.chmod(tmp_path / "days" / "sub" / "_temporary", 0)
    globs = [str(tmp_path / "days" / "*.parquet"), str(tmp_path / "days"),
             str(tmp_path / "days" / "s*" / "**" / "*.parquet"),
             str(tmp_path / "days" / "s*" / "*.parquet")]
    try:
        done = as_a_user_without_access(
            "-c", "import sys; from pipeline.io.matching import check_listable\n"
                  "for glob in sys.argv[1:]: check_listable(glob)\n"
                  "check_listable(sys.argv[1].replace('*.parquet', '**'))", *globs)
    finally:
        os.chmod(tmp_path / "days" / "late", 0o755)
        os.chmod(tmp_path / "days" / "sub" / "_temporary", 0o755)
    assert done.returncode == 1 and done.stderr.strip().splitlines()[-1].startswith(
        f"pipeline.io.errors.InputError: cannot list the folder {tmp_path}/days/late,"), \
        done.stderr


def test_the_final_line_names_an_output_with_a_newline_on_one_line(tmp_path):
    """It was two lines: "gpfit: ... -> .../out" and "night (3.2 s)"."""
    input_ = _write(tmp_path / "in.parquet", _good_table())
    run = gpfit(input_, str(tmp_path / "out\nnight"))
    assert run.code == 0 and run.stdout.count("\n") == 1, run.stdout
    assert f"-> {tmp_path}/out\\nnight (" in run.stdout


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning",
                            "ignore:invalid value encountered:RuntimeWarning")
def test_the_too_many_failed_line_names_an_output_with_a_newline_on_one_line(tmp_path):
    """The exit-1 line (and the job's other end lines naming --output: a
    failed job, a stop, the unreadable files) printed the folder raw: two
    lines, "... see the error column and _FAILED.json in .../out" and
    "night", the second free text a log collector reads as a record."""
    t = np.arange(20.0)
    table = pa.table({"series_id": ["extreme"] * 6 + ["fine"] * 20,
                      "t": np.concatenate([[-1e308, -5e307, 0.0, 5e307, 1e308, 2e307], t]),
                      "y": np.concatenate([[1.0, 2, 3, 1, 2, 5], np.sin(t)])})
    input_ = _write(tmp_path / "in.parquet", table)
    run = gpfit(input_, str(tmp_path / "out\nnight\x1b"), "--kernel", "rbf",
                "--max_failure_fraction", "0.25")
    assert run.code == 1, run.stderr
    said = [line for line in run.stderr.splitlines() if line.startswith("gpfit: error:")]
    assert len(said) == 1 and said[0].endswith(f"_FAILED.json in {tmp_path}/out\\nnight\\x1b")
    assert all(line.startswith("gpfit") for line in run.stderr.splitlines()), run.stderr


def test_a_wide_table_is_refused_naming_some_of_its_columns(tmp_path):
    """A wide table (a column per series, as a spreadsheet exports it) is
    refused for its missing id column, and the refusal listed every column:
    20,000 series made one line of 380 KB on stderr. It lists 20 and how
    many more there are."""
    names = ["date"] + [f"store_{i:05d}" for i in range(5_000)]
    input_ = _write(tmp_path / "wide.parquet",
                    pa.table({name: np.arange(3.0) for name in names}))
    run = gpfit(input_, str(tmp_path / "out"))
    assert_usage_error(run, "has no column 'series_id' (its columns: date, store_00000, ")
    assert "store_00018, and 4,981 more); name the right one with --id_column" in run.stderr
    assert len(run.stderr) < 600, len(run.stderr)


def test_missing_input_option_exits_2(tmp_path, capsys):
    from pipeline import cli
    assert cli.run(["--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "gpfit: error: --input is required: a Parquet file, folder or glob"
    assert not os.path.exists(tmp_path / "out")


def test_foreign_files_in_output_folder_are_never_deleted(tmp_path):
    input_ = _write(tmp_path / "in.parquet", _good_table())
    os.makedirs(tmp_path / "out")
    (tmp_path / "out" / "thesis.tex").write_text("precious")
    run = gpfit(input_, str(tmp_path / "out"))
    assert run.code == 2
    assert "holds 'thesis.tex', which gpfit did not write" in run.stderr
    assert os.listdir(tmp_path / "out") == ["thesis.tex"]


def test_a_page_left_in_a_previous_runs_folder_is_named_with_what_to_do(tmp_path):
    """A gpfit-report page put inside last night's output folder (by hand,
    or by a release that let --out go there) refused the next run with
    "give an empty folder or a previous gpfit output folder": it was one.
    The refusal names the file, says gpfit keeps it, and says to move it
    beside the folder; the page is left as it was."""
    from gpfit_runs import contents
    input_, out = _write(tmp_path / "in.parquet", _good_table()), str(tmp_path / "out")
    assert gpfit(input_, out).code == 0
    (tmp_path / "out" / "report.html").write_text("<html>last night</html>")
    before = contents(out)
    run = gpfit(input_, out)
    assert run.code == 2
    assert run.stderr.strip() == (
        f"gpfit: error: output folder {out}, a previous gpfit run's, holds 'report.html', "
        "which gpfit did not write and does not delete; move it out of the folder (e.g. to "
        f"{str(tmp_path / 'report.html')!r}: a gpfit-report --out belongs beside the folder "
        "too), then run again"), run.stderr
    assert contents(out) == before


@pytest.mark.parametrize("given", [".", "./", "out/.", "sub/..", "out"])
def test_a_page_left_in_the_working_folder_run_into_is_told_a_place_outside(tmp_path,
                                                                           monkeypatch, given):
    """--output . (or out/., sub/..) named the place beside the folder as
    its dirname, "": the refusal told the user to move report.html to
    'report.html', where it was. The place is beside the folder itself.
    And --output out, a folder in the working one, was told 'report.html'
    too, the name the page already has: './report.html' now."""
    input_, out = _write(tmp_path / "in.parquet", _good_table()), tmp_path / "out"
    assert gpfit(input_, str(out)).code == 0
    (out / "report.html").write_text("<html>last night</html>")
    (out / "sub").mkdir()
    monkeypatch.chdir(tmp_path if given.startswith("out") else out)
    run = gpfit(input_, given)
    assert run.code == 2
    beside = re.search(r"move it out of the folder \(e\.g\. to '([^']+)'", run.stderr)
    assert beside and os.path.abspath(beside[1]) == str(tmp_path / "report.html"), run.stderr
    assert "/" in beside[1], beside[1]  # a place, not the page's name alone


def test_a_file_named_alone_that_is_not_parquet_is_not_told_to_use_a_glob(tmp_path,
                                                                         monkeypatch):
    """A CSV given as --input itself was told "give --input a glob of the
    Parquet files alone, e.g. '/*.parquet'": the root's files, from the
    name's empty folder. Converting it is what helps; a glob only helps
    where --input names a folder or a glob that caught the file."""
    pa.csv.write_csv(_good_table(), tmp_path / "data.csv")
    monkeypatch.chdir(tmp_path)
    run = gpfit("data.csv", "out")
    assert_usage_error(run, "data.csv is not a Parquet file (")
    assert run.stderr.strip().endswith(
        "); gpfit reads Parquet alone: convert it to Parquet and give --input the Parquet "
        "file"), run.stderr


def test_a_glob_in_the_current_folder_that_caught_other_files_is_told_a_local_glob(
        tmp_path, monkeypatch):
    """The advice's glob was '/*.parquet' (the root) for a file of the
    current folder; it is the current folder's '*.parquet'."""
    _write(tmp_path / "a.parquet", _good_table())
    (tmp_path / "notes.txt").write_text("hello")
    monkeypatch.chdir(tmp_path)
    run = gpfit("*", "out")
    assert_usage_error(run, "notes.txt is not a Parquet file (")
    assert run.stderr.strip().endswith(
        "; remove it from the input or convert it to Parquet, or give --input a glob of the "
        "Parquet files alone, e.g. '*.parquet'"), run.stderr


def test_a_folder_of_csv_alone_is_not_told_a_glob_that_matches_nothing(tmp_path):
    """A folder holding a CSV export and no Parquet file was told to "give
    --input a glob of the Parquet files alone, e.g. '<folder>/*.parquet'",
    which then matched no file; converting is what helps."""
    os.makedirs(tmp_path / "export")
    pa.csv.write_csv(_good_table(), tmp_path / "export" / "data.csv")
    run = gpfit(str(tmp_path / "export"), str(tmp_path / "out"))
    assert_usage_error(run, "data.csv is not a Parquet file (")
    assert run.stderr.strip().endswith("); remove it from the input or convert it to Parquet"), \
        run.stderr
    followed = gpfit(str(tmp_path / "export" / "*.parquet"), str(tmp_path / "out"))
    assert_usage_error(followed, "no file matches")  # what the glob advice led to


def test_output_inside_input_is_refused(tmp_path):
    os.makedirs(tmp_path / "data")
    input_ = _write(tmp_path / "data" / "a.parquet", _good_table())
    run = gpfit(input_, str(tmp_path / "data"))
    assert run.code == 2 and "lies inside the output folder" in run.stderr


def test_output_that_is_a_file_is_refused(tmp_path):
    input_ = _write(tmp_path / "in.parquet", _good_table())
    (tmp_path / "out").write_text("")
    run = gpfit(input_, str(tmp_path / "out"))
    assert run.code == 2 and "is a file; --output takes a folder" in run.stderr


@pytest.mark.parametrize("kind", ["a named pipe (FIFO)", "a device"])
def test_output_that_is_no_file_nor_folder_is_refused_as_what_it_is(tmp_path, kind):
    # "/dev/null is a file, not a folder, so no folder can be made below it":
    # the output itself, no folder on its path, and no regular file.
    input_ = _write(tmp_path / "in.parquet", _good_table())
    if kind == "a device":
        output = os.devnull
    else:
        output = str(tmp_path / "out")
        os.mkfifo(output)
    run = gpfit(input_, output)
    assert run.code == 2, run.stderr
    assert run.stderr.strip().splitlines() == [
        f"gpfit: error: output {output!r} is {kind}, not a folder; --output takes a folder"]


def assert_usage_error(run, expected: str) -> None:
    assert run.code == 2, (run.stdout, run.stderr)
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("gpfit: error: ") and expected in lines[0], lines[0]
    assert not os.path.exists(run.output)


def test_a_gs_path_without_an_answer_says_so():
    """Offline, Google's storage client retries a gs:// listing for 120 s and
    Beam wraps its RetryError twice: the line said only that, nested, after
    two to three minutes (README, "Exit codes"). It now names the cause and
    the fix. (Built as Beam builds it: a real run waits the 120 s.)"""
    from apache_beam.io.filesystem import BeamIOError
    from google.api_core.exceptions import RetryError

    from pipeline.io.errors import listing_failure

    timeout = RetryError("Timeout of 120.0s exceeded", ConnectionError("Failed to resolve"))
    inner = BeamIOError("List operation failed", {"gs://b/series/": timeout})
    said = listing_failure(BeamIOError("Match operation failed", {"gs://b/series/*": inner}))
    assert said.startswith("Google Cloud did not answer within its client's 120 s of retries")
    assert "storage.googleapis.com" in said and "gcloud auth application-default login" in said
    assert listing_failure(ValueError("Unable to get filesystem\nmore")) == (
        "Unable to get filesystem")


def test_a_gs_glob_without_an_answer_waits_for_one_round_of_retries(monkeypatch):
    """Offline, `--input 'gs://b/series/*.parquet'` asked Cloud Storage first
    whether the pattern names an object as it is (is_glob), waited out its
    client's 120 s of retries, took the silence for "no" and then listed the
    glob, another 120 s: 3 min 52 s in all where the README says 2-3
    minutes. The first silence now answers. (The error as Google's client
    raises it: a real request waits the 120 s.)"""
    from apache_beam.io.filesystems import FileSystems
    from google.api_core.exceptions import RetryError

    from pipeline.io import inputs, matching
    from pipeline.io.errors import NO_ANSWER, InputError

    asked = []

    def no_answer(*args, **kwargs):
        asked.append(args)
        raise RetryError("Timeout of 120.0s exceeded, last exception: HTTPSConnectionPool("
                         "host='storage.googleapis.com', port=443)", ConnectionError())

    monkeypatch.setattr(FileSystems, "exists", no_answer)
    monkeypatch.setattr(FileSystems, "match", no_answer)
    # A host that accepts the connection, then never answers a request
    # (matching.check_gcs_reached stops only one that cannot be reached).
    monkeypatch.setattr(matching, "check_gcs_reached", lambda pattern: None)
    pattern = "gs://gpfit-offline-test-bucket/series/*.parquet"
    with pytest.raises(InputError) as refused:
        inputs.inspect(pattern, inputs.Columns("series_id", "t", "y"))
    assert str(refused.value) == f"cannot list {pattern!r}: {NO_ANSWER}"
    assert len(asked) == 1  # one wait, not two


def _gcs_reached() -> bool:
    import socket
    try:
        socket.create_connection(("storage.googleapis.com", 443), timeout=5).close()
        return True
    except OSError:
        return False


def test_an_offline_gs_input_is_said_in_seconds_not_minutes(tmp_path, monkeypatch):
    """Offline, `--input gs://B/series/` was said after Beam's 21 s search
    for credentials and the storage client's 120 s of retries: 104 s on
    this machine, "Google Cloud did not answer". Cloud Storage's host is
    now tried first, three times over 6 s. (Run for real where
    storage.googleapis.com cannot be reached; skipped where it can.)"""
    import time

    if _gcs_reached():
        pytest.skip("this machine reaches storage.googleapis.com")
    for name in ("https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "STORAGE_EMULATOR_HOST",
                 "API_ENDPOINT_OVERRIDE"):
        monkeypatch.delenv(name, raising=False)
    for input_ in ("gs://gpfit-offline-test-bucket/series/",
                   "gs://gpfit-offline-test-bucket/series/*.parquet"):
        started = time.monotonic()
        run = gpfit(input_, str(tmp_path / "out"))
        assert time.monotonic() - started < 60
        assert_usage_error(run, f"cannot read --input {input_!r}: Cloud Storage's "
                                "storage.googleapis.com:443 cannot be reached (")
        # Resolving fails at once here: the pauses' 6 s, as said.
        assert re.search(r"3 tries over 6\.\d s\): check this machine's network, DNS or proxy",
                         run.stderr), run.stderr


_CLIENT_ROUTES = ("https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "STORAGE_EMULATOR_HOST",
                  "API_ENDPOINT_OVERRIDE")


def test_an_offline_gs_output_or_previous_output_is_said_in_seconds(tmp_path, monkeypatch,
                                                                    caplog):
    """With a local input, `--output gs://...` and `--previous_output
    gs://...` offline were said only after the storage client's 120 s of
    retries (and Beam's search for credentials) as the --input was: their
    host is now tried first too. An optional previous output that cannot be
    reached is fitted cold, in seconds. (Run for real where
    storage.googleapis.com cannot be reached; skipped where it can.)"""
    import time

    if _gcs_reached():
        pytest.skip("this machine reaches storage.googleapis.com")
    for name in _CLIENT_ROUTES:
        monkeypatch.delenv(name, raising=False)
    input_ = _write(tmp_path / "x.parquet", _good_table(8))
    unreached = ("Cloud Storage's storage.googleapis.com:443 cannot be reached (", "3 tries over "
                 "6.X s): check this machine's network, DNS or proxy (HTTPS_PROXY), then run again")
    output = "gs://gpfit-offline-test-bucket/out/"
    started = time.monotonic()
    run = gpfit(input_, output)
    assert time.monotonic() - started < 60
    assert_usage_error(run, f"cannot write --output {output!r}: {unreached[0]}")
    assert unreached[1] in re.sub(r"over 6\.\d s", "over 6.X s", run.stderr), run.stderr

    last = "gs://gpfit-offline-test-bucket/night1/"
    started = time.monotonic()
    run = gpfit(input_, str(tmp_path / "out"), "--previous_output", last)
    assert time.monotonic() - started < 60
    assert_usage_error(run, f"--previous_output {last} cannot be read: {unreached[0]}")
    assert unreached[1] in re.sub(r"over 6\.\d s", "over 6.X s", run.stderr), run.stderr
    assert run.stderr.rstrip().endswith("or add --previous_output_optional to fit every series "
                                        "cold"), run.stderr

    started = time.monotonic()
    with caplog.at_level("WARNING", logger="gpfit"):
        run = gpfit(input_, str(tmp_path / "out"), "--previous_output", last,
                    "--previous_output_optional")
    assert time.monotonic() - started < 90
    assert run.code == 0, run.stderr
    (said,) = [r.getMessage() for r in caplog.records if "fitted cold" in r.getMessage()]
    assert said.startswith(f"gpfit: every series fitted cold: --previous_output {last} cannot "
                           f"be read: {unreached[0]}"), said


def test_cloud_storage_is_tried_once_a_run(monkeypatch):
    """The --input, --output and --previous_output on gs:// share one host:
    it is tried once, not three times (6 s each offline)."""
    import socket

    from pipeline.io import matching, outputs, previous
    from pipeline.io.errors import InputError, UsageError

    for name in _CLIENT_ROUTES:
        monkeypatch.delenv(name, raising=False)
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(8)
        monkeypatch.setattr(matching, "GCS_HOST", listening.getsockname())
        monkeypatch.setattr(matching, "_REACHED", {})
        matching.check_gcs_reached("gs://b/in/")
        matching.check_gcs_reached("gs://b/in/*.parquet")
        outputs.check_gcs_reached("gs://b/out/")
        previous.check_gcs_reached("gs://b/night1/")
        listening.setblocking(False)
        accepted = 0
        while True:
            try:
                listening.accept()[0].close()
            except BlockingIOError:
                break
            accepted += 1
        assert accepted == 1
    # A host not reached is not remembered: each option is refused as its own.
    monkeypatch.setattr(matching, "REACH_TRIES", (0.0,))
    monkeypatch.setattr(matching, "GCS_HOST", ("gpfit-test.invalid", 443))
    with pytest.raises(InputError, match="^cannot read --input 'gs://b/in/': Cloud Storage's "):
        matching.check_gcs_reached("gs://b/in/")
    with pytest.raises(UsageError, match="^cannot write --output 'gs://b/out/': Cloud Storage's "):
        outputs.check_gcs_reached("gs://b/out/")
    with pytest.raises(previous.Unusable, match="^--previous_output gs://b/night1/ cannot be "
                                                "read: Cloud Storage's gpfit-test"):
        previous.check_gcs_reached("gs://b/night1/")


def test_only_a_gs_host_that_never_answers_stops_the_run(monkeypatch):
    """A host that cannot be resolved (.invalid never is) stops it after
    the tries; one that accepts a connection goes on to the client and its
    retries, as does any host where a proxy or another endpoint is set."""
    import socket

    from pipeline.io import matching
    from pipeline.io.errors import InputError

    for name in ("https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "STORAGE_EMULATOR_HOST",
                 "API_ENDPOINT_OVERRIDE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(matching, "REACH_TRIES", (0.0, 0.1))
    monkeypatch.setattr(matching, "GCS_HOST", ("gpfit-test.invalid", 443))
    with pytest.raises(InputError, match=r"^cannot read --input 'gs://b/x/': Cloud Storage's "
                                         r"gpfit-test\.invalid:443 cannot be reached \(gaierror: "
                                         r".*; 2 tries over 0\.\d s\)"):
        matching.check_gcs_reached("gs://b/x/")
    matching.check_gcs_reached("/tmp/local/")  # not gs://: not asked
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    matching.check_gcs_reached("gs://b/x/")  # the client's route: not asked
    monkeypatch.delenv("HTTPS_PROXY")
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(4)
        monkeypatch.setattr(matching, "GCS_HOST", listening.getsockname())
        matching.check_gcs_reached("gs://b/x/")


def _blackhole(listening):
    """Makes a listening socket drop further SYNs, as a packet-dropping
    network does: its accept queue (backlog 0) filled by one connection
    never accepted, which it returns (close it after). Connects to it then
    time out rather than being refused."""
    import socket

    listening.bind(("127.0.0.1", 0))
    listening.listen(0)
    return socket.create_connection(listening.getsockname(), timeout=1)  # queued, never accepted


def test_a_host_that_drops_packets_is_said_after_the_time_the_message_gives(monkeypatch):
    """On a network that drops packets each try waited for its connection
    timeout once per address of the host (storage.googleapis.com has an
    IPv4 and an IPv6 one): 36-66 s, said as "3 tries over 6 s". Each try
    now waits at most CONNECT_TIMEOUT_S for all of them at once, and the
    message gives the time the tries took."""
    import socket
    import time

    from pipeline.io import matching
    from pipeline.io.errors import InputError

    for name in _CLIENT_ROUTES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(matching, "REACH_TRIES", (0.0, 0.3))
    monkeypatch.setattr(matching, "CONNECT_TIMEOUT_S", 0.6)
    monkeypatch.setattr(matching, "_REACHED", {})
    with socket.socket() as listening:
        filler = _blackhole(listening)
        try:
            with pytest.raises(socket.timeout):  # the stand-in drops SYNs
                socket.create_connection(listening.getsockname(), timeout=0.2)
            monkeypatch.setattr(matching, "GCS_HOST", listening.getsockname())
            began = time.monotonic()
            with pytest.raises(InputError, match=r"cannot be reached \(TimeoutError: .*; 2 tries "
                                                 r"over \d+(\.\d)? s\)") as raised:
                matching.check_gcs_reached("gs://b/x/")
            took = time.monotonic() - began
        finally:
            filler.close()
    said = float(re.search(r"over ([\d.]+) s", str(raised.value)).group(1))
    # Pauses 0.3 s + 2 tries x 0.6 s = 1.5 s; the message rounds to 0.1 s.
    assert 1.4 <= took <= 2.5 and abs(said - took) <= 0.15, (took, str(raised.value))


def test_each_try_asks_every_address_of_the_host_at_once(monkeypatch):
    """One address that drops packets (an IPv6 route that goes nowhere) no
    longer holds the try for its timeout before the next is asked: the
    host is reached as soon as any of them answers."""
    import socket
    import time

    from pipeline.io import matching

    with socket.socket() as listening, socket.socket() as answering:
        filler = _blackhole(listening)
        answering.bind(("127.0.0.1", 0))
        answering.listen(4)
        try:
            dropped, = socket.getaddrinfo(*listening.getsockname(), type=socket.SOCK_STREAM)
            answers, = socket.getaddrinfo(*answering.getsockname(), type=socket.SOCK_STREAM)
            began = time.monotonic()
            matching.connect_any([dropped, answers], 5.0)  # raises if none answered
            assert time.monotonic() - began < 1.0
            with pytest.raises(TimeoutError):
                matching.connect_any([dropped], 0.3)
        finally:
            filler.close()


def test_the_gs_host_is_asked_as_the_client_would_reach_it_proxy_and_no_proxy(monkeypatch):
    """The precheck stood aside for any HTTPS_PROXY/ALL_PROXY in the
    environment and for nothing else, where Google's client (requests)
    takes its proxies from urllib.request.getproxies and proxy_bypass: a
    NO_PROXY naming the host (the client goes direct) skipped the check,
    and a proxy set outside the environment (macOS's System Settings,
    which getproxies reads there) was not seen: a reachable input refused
    (exit 2) on a Mac behind a proxy."""
    import urllib.request

    from pipeline.io import matching
    from pipeline.io.errors import InputError

    for name in ("https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY",
                 "STORAGE_EMULATOR_HOST", "API_ENDPOINT_OVERRIDE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(matching, "REACH_TRIES", (0.0,))
    monkeypatch.setattr(matching, "GCS_HOST", ("gpfit-test.invalid", 443))
    # A proxy the host is exempt from: the client connects directly.
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "localhost,.invalid")
    with pytest.raises(InputError, match="gpfit-test.invalid:443 cannot be reached"):
        matching.check_gcs_reached("gs://b/x/")
    monkeypatch.setenv("NO_PROXY", "localhost")
    matching.check_gcs_reached("gs://b/x/")  # through the proxy: the client's to reach
    # A proxy from the system's settings, not the environment (macOS's
    # _scproxy: no real one on this Linux machine, so stood in for).
    monkeypatch.delenv("HTTPS_PROXY")
    monkeypatch.delenv("NO_PROXY")
    monkeypatch.setattr(urllib.request, "getproxies",
                        lambda: {"https": "http://proxy.example:3128"})
    matching.check_gcs_reached("gs://b/x/")


def test_a_gs_previous_output_without_an_answer_is_unusable(monkeypatch):
    """Offline, reading a gs:// --previous_output's _SUCCESS.json raised
    Google's RetryError after 120 s, no OSError: gpfit "failed unexpectedly"
    (exit 3, "report it"), --previous_output_optional or not. It is now an
    unusable previous output, which says why: exit 2, or a cold run when
    optional. (The error as Google's client raises it: a real read waits
    the 120 s.)"""
    from google.api_core.exceptions import RetryError

    from pipeline.io import manifest, previous

    def no_answer(folder, name):
        raise RetryError("Timeout of 120.0s exceeded, last exception: HTTPSConnectionPool("
                         "host='storage.googleapis.com', port=443)", ConnectionError())

    monkeypatch.setattr(manifest, "load", no_answer)
    # A host that accepts the connection, then never answers a request.
    monkeypatch.setattr(previous, "check_gcs_reached", lambda folder: None)
    with pytest.raises(previous.Unusable) as refused:
        previous.check("gs://gpfit-offline-test-bucket/gp-params/run_date=2026-11-28/", "out")
    assert refused.value.reason.startswith(
        "--previous_output gs://gpfit-offline-test-bucket/gp-params/run_date=2026-11-28/ cannot "
        "be read: Google Cloud did not answer within its client's 120 s of retries")
    assert str(refused.value).endswith("--previous_output_optional to fit every series cold")


GCS_EXTRA = "gs:// paths need gpfit's gcp extra, which is not installed here; " \
    "pip install 'gpfit[gcp]'"


@pytest.mark.parametrize("paths", [
    ["--input", "gs://bucket-x/series/", "--output", "{tmp}/out"],
    ["--input", "{tmp}/x.parquet", "--output", "gs://bucket-x/out/"],
    ["--input", "{tmp}/x.parquet", "--output", "{tmp}/out", "--previous_output",
     "gs://bucket-x/previous/", "--previous_output_optional"],
    ["--input", "gs://bucket-x/series/", "--output", "gs://bucket-x/out/", "--runner",
     "DataflowRunner", "--project", "gpfit-offline-test", "--region", "europe-west4",
     "--temp_location", "gs://bucket-x/temp", "--dry_run=True", "--no_auth"],
])
def test_a_gs_path_without_the_gcp_extra_says_to_install_it(tmp_path, paths):
    """A plain `pip install gpfit` has no gs:// file system. Beam's error
    then read as "give a local path or a gs:// one" (--input), "cannot list
    output folder" with Beam's advice to install apache-beam[gcp] unpinned
    (--output), a cold night with a warning (an optional --previous_output),
    and "gpfit failed unexpectedly ... report it" (a Dataflow dry run)."""
    _write(tmp_path / "x.parquet", _good_table())
    args = [a.replace("{tmp}", str(tmp_path)) for a in paths]
    done = command_in(without_gcs(tmp_path / "no-gcs"), "-m", "pipeline", *args)
    gs_path = next(a for a in args if a.startswith("gs://"))  # the first is named
    option = args[args.index(gs_path) - 1]
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"gpfit: error: {option} {gs_path}: {GCS_EXTRA}"), done.stderr
    assert not os.path.exists(tmp_path / "out")

"""Bad invocations and unusable input: exit code 2, one line on stderr, and
the output folder untouched (here: never created)."""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gpfit_runs import Run, command_in, without_gcs
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


def uuid_ids(tmp):
    table = _good_table().set_column(0, "series_id", pa.array([b"0123456789abcdef"] * 5,
                                                              pa.uuid()))
    return _write(tmp / "u.parquet", table), "has type extension<arrow.uuid>; expected strings"


def no_rows(tmp):
    return _write(tmp / "none.parquet", _good_table().slice(0, 0)), "hold no rows"


def mixed_time_kinds(tmp):
    os.makedirs(tmp / "kinds")
    _write(tmp / "kinds" / "a.parquet", _good_table())
    table = _good_table().set_column(1, "t", pa.array(np.arange(5, dtype=np.int32)).cast(pa.date32()))
    _write(tmp / "kinds" / "b.parquet", table)
    return str(tmp / "kinds"), "give one kind of time"


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


@pytest.mark.parametrize("make_input", [
    no_match, no_such_path, no_such_folder, empty_folder, missing_column, not_parquet,
    one_bad_file_among_good, empty_file, string_values, string_times, half_nested, no_rows,
    mixed_time_kinds, half_float_ids, uuid_ids, unknown_scheme, unavailable_scheme,
    a_link_beside_its_file, a_hard_link_beside_its_file,
])
def test_unusable_input_exits_2(tmp_path, make_input):
    input_, expected = make_input(tmp_path)
    run = gpfit(input_, str(tmp_path / "out"))
    assert_usage_error(run, expected)


@pytest.mark.parametrize("extra, expected", [
    (["--kernal", "rbf"], "unrecognised arguments: --kernal rbf"),
    (["--kernel", "cubic"], "--kernel must be one of rbf, matern12, matern32, matern52, periodic, "
                            "linear, or a sum"),
    (["--kernel", "auto", "--candidates", "rbf,cubic"], "candidate kernel 'cubic' is not known"),
    (["--candidates", "rbf,periodic"], "--candidates is for --kernel auto"),
    (["--restarts", "two"], "argument --restarts: invalid int value: 'two'"),
    (["--min_points", "0"], "--min_points must be >= 1"),
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
    (["--max_failure_fraction", "1.5"], "--max_failure_fraction must be between 0 and 1"),
    # inf passed "> 0": every bundle's series in one fit call, which Dataflow cannot split.
    (["--seconds_per_fit_call", "inf"], "--seconds_per_fit_call must be a finite number > 0; "
                                        "got inf"),
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
])
def test_bad_options_exit_2(tmp_path, extra, expected):
    input_ = _write(tmp_path / "in.parquet", _good_table())
    run = gpfit(input_, str(tmp_path / "out"), *extra)
    assert_usage_error(run, expected)


@pytest.mark.parametrize("name, value", [("TF_NUM_INTRAOP_THREADS", "x"),
                                         ("TF_NUM_INTRAOP_THREADS", "0"),
                                         ("TF_NUM_INTEROP_THREADS", "-2")])
def test_bad_thread_counts_in_the_environment_exit_2(tmp_path, monkeypatch, name, value):
    """They failed the job once it ran (in a worker process, or as 'gpfit
    failed unexpectedly', after the output folder was cleared)."""
    monkeypatch.setenv(name, value)
    input_ = _write(tmp_path / "in.parquet", _good_table())
    run = gpfit(input_, str(tmp_path / "out"))
    assert_usage_error(run, f"{name}={value!r} in the environment must be a whole number >= 1")


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

    from pipeline.io import inputs
    from pipeline.io.errors import NO_ANSWER, InputError

    asked = []

    def no_answer(*args, **kwargs):
        asked.append(args)
        raise RetryError("Timeout of 120.0s exceeded, last exception: HTTPSConnectionPool("
                         "host='storage.googleapis.com', port=443)", ConnectionError())

    monkeypatch.setattr(FileSystems, "exists", no_answer)
    monkeypatch.setattr(FileSystems, "match", no_answer)
    pattern = "gs://gpfit-offline-test-bucket/series/*.parquet"
    with pytest.raises(InputError) as refused:
        inputs.inspect(pattern, inputs.Columns("series_id", "t", "y"))
    assert str(refused.value) == f"cannot list {pattern!r}: {NO_ANSWER}"
    assert len(asked) == 1  # one wait, not two


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

"""The pipeline's parts on their own: column conversion, reading series,
batching, the fitter's guard, progress lines, options, runner, output folder."""
from __future__ import annotations

import datetime as dt
import decimal
import logging
import os

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.utils.windowed_value import WindowedValue

import gpcore
from pipeline import columns, logs, metrics, outputs, workers
from pipeline.inputs import Columns
from pipeline.options import KERNEL_NAMES, help_parser
from pipeline.runner import local_runner
from pipeline.schema import OUTPUT_SCHEMA
from pipeline.transforms import UNFITTABLE, BatchByLength, ReadSeries, fit_safely, length_bucket


# ---- columns ----------------------------------------------------------------

@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_timestamps_become_days_since_epoch(unit):
    stamps = pa.array([dt.datetime(1970, 1, 2, 12), None, dt.datetime(2024, 1, 1, 6)],
                      pa.timestamp(unit, tz="UTC"))
    days = columns.as_float(stamps)
    np.testing.assert_allclose(days[[0, 2]], [1.5, 19723.25], rtol=0, atol=1e-9)
    assert np.isnan(days[1])


def test_dates_become_days_since_epoch():
    dates = [dt.date(1970, 1, 11), None]
    for type_ in (pa.date32(), pa.date64()):
        days = columns.as_float(pa.array(dates, type_))
        assert days[0] == 10.0 and np.isnan(days[1])


def test_numbers_keep_their_units_and_null_is_nan():
    assert columns.as_float(pa.array([1, None, 3])).tolist()[::2] == [1.0, 3.0]
    assert columns.as_float(pa.array([2**62 + 1])).tolist() == [2.0**62]  # rounded, not refused
    assert columns.as_float(pa.array([decimal.Decimal("2.5")])).tolist() == [2.5]
    assert np.isnan(columns.as_float(pa.chunked_array([[None, 1.0]]))[0])


def test_ids_become_strings():
    assert columns.as_str(pa.array([7, 8])).tolist() == ["7", "8"]
    assert columns.as_str(pa.array(["a", "b"]).dictionary_encode()).tolist() == ["a", "b"]


# ---- reading series ---------------------------------------------------------

def _run(build):
    """Runs a small pipeline on gpfit's local runner; returns its result."""
    options = PipelineOptions([])
    pipeline = beam.Pipeline(runner=local_runner(options), options=options)
    build(pipeline)
    result = pipeline.run()
    result.wait_until_finish()
    return result


def test_read_series_gathers_each_series_across_files(tmp_path):
    # Series "a" is split over two files and out of order; one id is null.
    pq.write_table(pa.table({"id": ["a", "b", None], "time": [3.0, 1.0, 1.0],
                             "v": [30.0, 10.0, 0.0]}), tmp_path / "1.parquet")
    pq.write_table(pa.table({"id": ["a", "a"], "time": [1.0, 2.0], "v": [np.nan, 20.0]}),
                   tmp_path / "2.parquet")
    files = [str(tmp_path / "1.parquet"), str(tmp_path / "2.parquet")]

    def build(p):
        series = p | ReadSeries(files, Columns("id", "time", "v"), "rbf")
        assert_that(series.series | beam.Map(lambda s: (s.series_id, s.t.tolist(),
                                                        np.nan_to_num(s.y, nan=-1).tolist())),
                    equal_to([("a", [1.0, 2.0, 3.0], [-1.0, 20.0, 30.0]),
                              ("b", [1.0], [10.0])]))
        assert_that(series[UNFITTABLE], equal_to([]), label="NoneUnfittable")

    result = _run(build)
    found = result.metrics().query(MetricsFilter().with_name(metrics.NULL_IDS))["counters"]
    assert sum(c.committed for c in found) == 1


def test_nested_row_with_mismatched_lists_is_skipped_with_reason(tmp_path):
    pq.write_table(pa.table({"id": ["ok", "bad"], "t": [[1.0, 2.0], [1.0, 2.0, 3.0]],
                             "y": [[1.0, 2.0], [1.0]]}), tmp_path / "n.parquet")

    def build(p):
        series = p | ReadSeries([str(tmp_path / "n.parquet")], Columns("id", "t", "y"), "rbf")
        assert_that(series.series | beam.Map(lambda s: s.series_id), equal_to(["ok"]))
        assert_that(series[UNFITTABLE] | beam.Map(lambda r: (r["series_id"], r["status"],
                                                             r["error"])),
                    equal_to([("bad", "skipped", "a row of this series has 3 times but 1 values; "
                                        "give its 't' and 'y' lists equal length")]),
                    label="Unfittable")

    _run(build)


# ---- batching and fitting ---------------------------------------------------

def _series(sid, n):
    t = np.linspace(0.0, 10.0, n)
    return gpcore.Series(sid, t, np.sin(t) + 0.01 * np.cos(7 * t))


def test_length_buckets_are_powers_of_two():
    assert [length_bucket(n) for n in (1, 2, 3, 4, 5, 64, 65, 128)] == [0, 1, 2, 2, 3, 6, 7, 7]


def test_batches_hold_similar_lengths_and_every_series_once():
    batcher = BatchByLength(batch_size=2)
    batcher.start_bundle()
    lengths = [40, 200, 41, 210, 42, 5]
    full = [b for n, s in enumerate(lengths)
            for b in batcher.process(_series(f"s{n}", s))]
    finished = list(batcher.finish_bundle())
    assert all(isinstance(w, WindowedValue) for w in finished)
    rest = [w.value for w in finished]
    assert [[len(s.y) for s in b] for b in full] == [[40, 41], [200, 210]]
    assert [[len(s.y) for s in b] for b in rest] == [[5, 42]]


def test_a_fit_that_raises_fails_only_its_series():
    fitter = gpcore.GPFitter(gpcore.FitConfig(kernel="rbf"))
    broken = gpcore.Series("broken", np.array(["a", "b", "c"]), np.ones(3))  # t not numbers
    results = fit_safely(fitter, [_series("fine", 30), broken], "rbf")
    assert [r.series_id for r in results] == ["fine", "broken"]
    assert results[0].status == "ok"
    assert results[1].status == "failed" and results[1].error.startswith("fit raised ValueError")
    assert results[1].to_row().keys() == set(gpcore.OUTPUT_COLUMNS)


# ---- progress, threads, logs --------------------------------------------------

def test_progress_line_at_most_every_interval():
    now = [100.0]
    progress = workers.Progress(lambda: now[0], every_s=30.0)
    now[0] = 110.0
    assert progress.add(50) is None
    now[0] = 131.0
    line = progress.add(50)
    assert "100 series fitted" in line and "(3.2 series/s)" in line
    now[0] = 140.0
    assert progress.add(10) is None


def test_thread_counts_split_the_cores_between_processes():
    assert workers.intra_op_threads(2, 1) == 2
    assert workers.intra_op_threads(2, 2) == 1
    assert workers.intra_op_threads(2, 4) == 1
    assert workers.intra_op_threads(8, None) == 1  # one process per core
    opts = PipelineOptions(["--direct_num_workers", "2", "--direct_running_mode",
                            "multi_processing"])
    assert workers.processes_per_machine(opts) == 2
    assert workers.processes_per_machine(PipelineOptions(["--direct_num_workers", "2",
                                                          "--direct_running_mode",
                                                          "multi_threading"])) == 1
    assert workers.processes_per_machine(PipelineOptions(["--runner", "DataflowRunner"])) is None


def test_worker_log_lines_keep_gpfit_and_warnings_only():
    keep = logs._WorkerLines()  # pylint: disable=protected-access

    def record(level, message):
        entry = f'severity: INFO message: "{message}" log_location: "x.py:1"'
        return logging.LogRecord("w", level, "x", 1, "Worker: %s", (entry,), None)

    gpfit_line = record(logging.INFO, "gpfit progress: 10 series")
    assert keep.filter(gpfit_line) and gpfit_line.getMessage() == "worker: gpfit progress: 10 series"
    assert not keep.filter(record(logging.INFO, "Data channel established."))
    assert keep.filter(record(logging.WARNING, "something odd"))


# ---- options, schema, runner ------------------------------------------------

def test_kernels_and_columns_match_gpcore():
    assert KERNEL_NAMES == gpcore.KERNELS
    assert OUTPUT_SCHEMA.names == list(gpcore.OUTPUT_COLUMNS)


def test_help_explains_every_option_in_one_line():
    text = help_parser().format_help()
    lines = text.splitlines()
    for flag in ("--input", "--output", "--kernel", "--id_column", "--time_column",
                 "--value_column", "--restarts", "--min_points", "--max_points",
                 "--batch_size", "--max_failure_fraction"):
        [line] = [l for l in lines if l.strip().startswith(flag + " ")]
        following = lines[lines.index(line) + 1]
        assert len(line.split(None, 2)) == 3, line  # flag, metavar, help on one line
        assert following.strip() == "" or following.strip().startswith("--"), following


def test_local_runs_use_the_fn_api_runner_never_prism():
    from apache_beam.runners.portability.fn_api_runner.fn_runner import FnApiRunner
    for argv in ([], ["--runner", "DirectRunner"], ["--runner", "FnApiRunner"]):
        assert isinstance(local_runner(PipelineOptions(argv)), FnApiRunner)
    assert local_runner(PipelineOptions(["--runner", "DataflowRunner"])) is None


# ---- output folder ------------------------------------------------------------

def test_previous_run_files_are_cleared_including_temp_folders(tmp_path):
    out = tmp_path / "out"
    os.makedirs(out / "beam-temp-params-abc")
    for name in ("params-00000-of-00003.parquet", "_SUCCESS.json",
                 "beam-temp-params-abc/part"):
        (out / name).write_text("old")
    files = outputs.check_output(str(out), ())
    assert len(files) == 3
    outputs.clear_output(str(out), files)
    assert os.listdir(out) == []

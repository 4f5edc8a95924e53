"""The job's transforms (pipeline.transforms): reading series, batching them
by length, and the fitter's guard."""
from __future__ import annotations

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.utils.windowed_value import WindowedValue

import gpcore
from pipeline import metrics
from pipeline.io.inputs import Columns
from pipeline.runtime import local_runner
from pipeline.transforms import BatchByLength, ReadSeries, fit_safely, length_bucket


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
        assert_that(series.unfittable, equal_to([]), label="NoneUnfittable")

    result = _run(build)
    found = result.metrics().query(MetricsFilter().with_name(metrics.NULL_IDS))["counters"]
    assert sum(c.committed for c in found) == 1


def test_nested_row_with_mismatched_lists_is_skipped_with_reason(tmp_path):
    pq.write_table(pa.table({"id": ["ok", "bad"], "t": [[1.0, 2.0], [1.0, 2.0, 3.0]],
                             "y": [[1.0, 2.0], [1.0]]}), tmp_path / "n.parquet")

    def build(p):
        series = p | ReadSeries([str(tmp_path / "n.parquet")], Columns("id", "t", "y"), "rbf")
        assert_that(series.series | beam.Map(lambda s: s.series_id), equal_to(["ok"]))
        assert_that(series.unfittable | beam.Map(lambda r: (r["series_id"], r["status"],
                                                             r["error"])),
                    equal_to([("bad", "skipped", "a row of this series has 3 times but 1 values; "
                                        "give its 't' and 'y' lists equal length")]),
                    label="Unfittable")

    _run(build)


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

"""The job's transforms (pipeline.reading, pipeline.transforms): reading
series, the cap on a series' rows, fit calls sized by cost, and the fit
call's guard."""
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
from gpcore.batching import Batching
from pipeline import metrics
from pipeline.io import inputs
from pipeline.io.inputs import Columns
from pipeline.reading import ReadSeries
from pipeline.runtime import local_runner
from pipeline.transforms import BatchByLength, fit_or_fail


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
    spec = inputs.inspect(str(tmp_path), Columns("id", "time", "v"))

    def build(p):
        series = p | ReadSeries(spec, "rbf", max_rows=100)
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
        spec = inputs.inspect(str(tmp_path / "n.parquet"), Columns("id", "t", "y"))
        series = p | ReadSeries(spec, "rbf", max_rows=100)
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


def test_a_series_beyond_max_rows_is_skipped_unassembled(tmp_path):
    # "big" spans three row groups and two files; its rows pass the cap of 10
    # (NaN rows count: the cap is on rows, before cleaning).
    pq.write_table(pa.table({"series_id": ["big"] * 8 + ["small"] * 3,
                             "t": np.arange(11.0), "y": np.r_[np.full(8, np.nan), 1, 2, 3]}),
                   tmp_path / "a.parquet", row_group_size=4)
    pq.write_table(pa.table({"series_id": ["big"] * 4, "t": np.arange(4.0), "y": np.ones(4)}),
                   tmp_path / "b.parquet")
    spec = inputs.inspect(str(tmp_path), Columns())

    def build(p):
        series = p | ReadSeries(spec, "rbf", max_rows=10)
        assert_that(series.series | beam.Map(lambda s: (s.series_id, len(s.y))),
                    equal_to([("small", 3)]))
        assert_that(series.unfittable | beam.Map(lambda r: (r["series_id"], r["status"],
                                                             r["n_points"], r["error"])),
                    equal_to([("big", "skipped", 0, "12 input rows is more than --max_rows=10; "
                               "the series was not assembled: aggregate or split it, or raise "
                               "--max_rows")]), label="Skipped")

    _run(build)


def _bundle(batcher, lengths):
    """Runs one bundle of series of these lengths; -> (calls put out in
    process(), calls put out at the bundle's end), as lists of lengths."""
    batcher.start_bundle()
    full = [[len(s.y) for s in call] for n, size in enumerate(lengths)
            for call in batcher.process(_series(f"s{n}", size))]
    finished = list(batcher.finish_bundle())
    assert all(isinstance(w, WindowedValue) for w in finished)
    return full, [[len(s.y) for s in w.value] for w in finished]


def test_fit_calls_are_cut_by_estimated_cost_within_a_length_bucket():
    # A call holds 5 series of 512 points, whatever gpcore's calibration.
    seconds = 4.5 * Batching(gpcore.FitConfig()).cost(512)
    batching = Batching(gpcore.FitConfig(), seconds_per_call=seconds)
    assert batching.cost(1024) > seconds > 4 * batching.cost(512) > 100 * batching.cost(64)
    lengths = [1024, 40] + [512] * 6 + [41, 1100]
    full, rest = _bundle(BatchByLength(batching), lengths)
    per_call = int(-(-seconds // batching.cost(512)))  # series of 512 points to fill a call
    assert per_call == 5
    # Long series alone; 512-point ones as soon as their cost reaches a call;
    # short ones wait (a call of them would hold hundreds).
    assert full == [[1024], [512] * per_call, [1100]]
    assert rest == [[40, 41] + [512] * (6 - per_call)]
    assert sorted(n for call in full + rest for n in call) == sorted(lengths)


class FlatCost(Batching):
    """gpcore's buckets, every series 0.4 s: leftovers of several buckets."""

    def cost(self, n_points: int) -> float:
        return 0.4


def test_leftovers_at_the_end_of_a_bundle_are_cut_by_cost_too():
    # One or two series per bucket: nothing fills a call within its bucket.
    lengths = [160, 10, 80, 20, 40, 20]
    full, rest = _bundle(BatchByLength(FlatCost(gpcore.FitConfig(), 1.0)), lengths)
    assert full == []
    assert rest == [[10, 20, 20], [40, 80, 160]]


class _FaultyFitter(gpcore.GPFitter):
    """A real fitter whose call fails as a lost device or a bug would: GPFitter
    itself never raises for a series (bad ones come back skipped or failed)."""

    def fit(self, series):
        if any(s.series_id == "broken" for s in series):
            raise ValueError("device lost\nmore detail")
        return super().fit(series)


def test_a_fit_call_that_raises_fails_its_series_with_the_reason():
    fitter = _FaultyFitter(gpcore.FitConfig(kernel="rbf"))
    broken = gpcore.Series("broken", np.arange(3.0), np.ones(3))
    results = fit_or_fail(fitter, [_series("fine", 30), broken], "rbf")
    assert [r.series_id for r in results] == ["fine", "broken"]
    assert all(r.status == "failed" and r.error == "fit raised ValueError: device lost"
               for r in results)
    assert results[1].to_row().keys() == set(gpcore.OUTPUT_COLUMNS)
    assert [r.status for r in fit_or_fail(fitter, [_series("fine", 30)], "rbf")] == ["ok"]

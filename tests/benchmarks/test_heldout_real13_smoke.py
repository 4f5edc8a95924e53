"""Smoke tests of the thirteenth held-out real set (benchmarks/heldout_real13.py):
as its docstring says, from the data files of autots, which no other set
reads, sharing no series with the tuning sets or the other held-out sets.
Not the quality target, and no fit: the set was built to be scored once,
later."""
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from heldout_checks import (assert_shares_nothing, assert_spacings, assert_windows,
                            built_alike)  # noqa: E402

import heldout_real13  # noqa: E402


def test_thirteenth_real_set_comes_from_autots_files_and_shares_nothing():
    series, _ = built_alike(heldout_real13)
    # Mixed spacings: a month and a year (in years); a week, a day and an
    # hour (in days); business days.
    assert_spacings(series, ((0.08, 0.09), (0.99, 1.01), (6.99, 7.01), (0.99, 1.01),
                             (0.999 / 24, 1.001 / 24)))
    assert_windows(series, heldout_real13)

    def part(prefix):
        return [s for s in series if s.series_id.startswith(prefix)]

    # Each file's part: FRED's 9 monthly and 12 yearly series (monthly ones
    # in up to 6 windows), EIA's 9 weekly ones, the daily markets, the wind,
    # the page views (under a third of the set), 2020's daily series and
    # the hourly traffic.
    yearly = [s for s in part("autots/fred/") if np.median(np.diff(s.t)) > 0.5]
    assert len(yearly) == 12 and all(1900 <= s.t[0] and s.t[-1] < 2020 for s in yearly)
    assert len(part("autots/fred/")) - len(yearly) == 30
    assert len(part("autots/eia_weekly/")) == 54
    assert len(part("autots/markets/")) == 24
    pages = part("autots/wikipedia/")
    assert len(pages) == 48 and len(pages) / len(series) < 1 / 3
    # Page views are logged: millions of views a day at most.
    assert all(0 < np.nanmin(s.y) and np.nanmax(s.y) < np.log(1e7) for s in pages)
    covid = part("autots/covid_daily/")
    assert len(covid) == 12 and all(18262 <= s.t[0] and s.t[-1] < 18628 for s in covid)
    # WTI's price went below zero on 2020-04-20.
    assert min(np.nanmin(s.y) for s in covid if "/wti" in s.series_id) < 0
    traffic = part("autots/traffic_hourly/")
    assert len(traffic) == 18
    temperature = [s for s in traffic if "temperature" in s.series_id]
    assert all(-40 < np.nanmin(s.y) and np.nanmax(s.y) < 40 for s in temperature)  # deg C
    # What the docstring leaves out: precipitation, rain, snow, the weather
    # category, the other page views and their total, the holiday list.
    left_out = ("prcp", "rain", "snow", "weather", "wiki_all", "hamburger", "cleopatra",
                "holiday")
    assert not any(word in s.series_id.lower() for s in series for word in left_out)
    assert_shares_nothing(series, "heldout_real", "heldout_real2", "heldout_real3",
                          "heldout_real4", "heldout_real5", "heldout_real6", "heldout_real7",
                          "heldout_real8", "heldout_real9", "heldout_real10", "heldout_real11",
                          "heldout_real12", "realdata_tuning", "realdata")

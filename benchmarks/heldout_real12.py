"""A twelfth held-out real set: the data files of three wheels no other set reads.

Built, and its oracle fitted, before gpcore was ever fitted to it or scored
on it. It is read, offline, from the data files of three test-only wheels
pinned in pyproject.toml (found, not imported: only the files are read):

- richardsonpy (its German weather service test reference years 2010,
  TRY2010_05 and TRY2010_12: a typical year, 1988-2007 observations, hourly,
  stamped 2010; the files' first row, a copy of the last hour, dropped): air temperature (deg C), station pressure (hPa), relative
  humidity (%), wind speed at 10 m (m/s) and diffuse solar irradiance on
  a horizontal plane (W/m^2) at Essen (region 5, Rhine-Ruhr) and Mannheim
  (region 12, Upper Rhine valley);
- sunkit_instruments (its RHESSI test file): the observing summary's count
  rates (log10 of counts/s, uncompressed by RHESSI's lookup table, NaN where
  zero: the spacecraft's night and the South Atlantic Anomaly) in the
  RHESSI_BANDS energy bands, every 4 s over the whole day 2011-04-04;
- pyphysio (its test recording, 2048 Hz, 120 s, units as stored: the
  package gives none): the ECG, the electrodermal activity (EDA), the blood
  volume pulse (BVP) and the respiration, each thinned to every STRIDES-th
  sample so that a window spans a few beats or breaths (ECG and BVP 128 Hz,
  respiration 32 Hz, EDA 8 Hz).

Left out on purpose: richardsonpy's other weather columns (cloud cover and
the weather code are categories, the wind direction is an angle, the water
vapour content follows from temperature and humidity, the direct and
longwave irradiances to keep richardsonpy under half of the set) and its
appliance, light-bulb and occupancy tables (constants and transition
probabilities, not series); RHESSI's 7000-20000 keV band (a median of 3
counts/s, 22 distinct values over the day), its modulation variance,
ephemeris, pointing and roll (orbit and attitude, not the Sun) and the
flags; sunkit_instruments' GOES file go1520110607.fits (set 11 reads the
same day from sunpy), its LYRA annotations, images and spectra;
pyphysio's fNIRS files (its own format, and a model's weights beside
them). t is in days (since 1970-01-01) for the weather, each hour at its
start, and in seconds for RHESSI (from the day's 00:00 UT) and for the
recording (from its first sample). Series longer than WINDOW (150) points
are cut into near-equal consecutive windows, at most MAX_WINDOWS (8) spread
over the series (heldout_real.windows); kept when >= MIN_POINTS finite and
not constant. 175 series.

    python benchmarks/heldout_real12.py [--list] [--check] [--search S] [--count N] [--fresh]
    python benchmarks/heldout_real12.py --oracle-only [--count N] [--fresh]

What `--check` and `--oracle-only` do: heldout_real.command; the oracle's
fits are cached in benchmarks/results/heldout-real12-sklearn.json.
"""
from __future__ import annotations

import bz2
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
CACHE = os.path.join(HERE, "results", "heldout-real12-sklearn.json")
PACKAGES = ("richardsonpy", "sunkit_instruments", "pyphysio")  # ids' first part
TRY_REGIONS = ((5, "essen"), (12, "mannheim"))
TRY_COLUMNS = (("t", "temperature"), ("p", "pressure"), ("RF", "humidity"), ("WG", "wind"),
               ("D", "diffuse_irradiance"))
RHESSI_FILE = "hsi_obssumm_20110404_042.fits.gz"
RHESSI_BANDS = 8  # 3-6, 6-12, 12-25, 25-50, 50-100, 100-300, 300-800 and 800-7000 keV
RECORDING_HZ = 2048.0  # pyphysio's TestData says so
STRIDES = (("ecg", 16), ("eda", 256), ("bvp", 16), ("resp", 64))  # its columns, in order


# ---- richardsonpy: two test reference years ---------------------------------------

def _richardsonpy(out: list) -> None:
    for region, place in TRY_REGIONS:
        days, frame = heldout_real.try_hours(
            package_file("richardsonpy", f"inputs/weather/TRY2010_{region:02d}_Jahr.dat"))
        last = ~frame.duplicated(["MM", "DD", "HH"], keep="last").to_numpy()
        for column, name in TRY_COLUMNS:  # the first row repeats the year's last hour
            out.append(Raw(f"richardsonpy/try/{place}/{name}", days[last],
                           frame[column].to_numpy(float)[last], "hourly"))


# ---- sunkit_instruments: RHESSI's observing summary ---------------------------------

def rhessi_counts(compressed) -> np.ndarray:
    """RHESSI's observing-summary count rates [n, bands] from their
    compressed bytes (hsi_obs_summ_decompress.pro's table, as
    sunkit_instruments.rhessi.uncompress_countrate builds it)."""
    table = np.zeros(256, dtype=np.int64)
    total = 0
    for i in range(16):
        table[16 * i:16 * (i + 1)] = np.arange(16) * 2**i + total
        total = table[16 * (i + 1) - 1] + 2**i
    return table[np.asarray(compressed, dtype=np.int64)].astype(float)


def _sunkit_instruments(out: list) -> None:
    from astropy.io import fits

    with fits.open(package_file("sunkit_instruments", f"data/test/{RHESSI_FILE}")) as f:
        info = f["HSI_OBSSUMMRATEINFO"].data
        step = float(info["TIME_INTV"][0])
        edges = np.asarray(info["ENERGY_EDGES"][0], float)
        rates = rhessi_counts(f["HSI_OBSSUMMRATEDATA"].data["COUNTRATE"])
    assert step == 4.0 and edges[0] == 3.0, (step, edges)
    seconds = step * np.arange(rates.shape[0])
    for band in range(RHESSI_BANDS):
        name = f"{edges[band]:g}-{edges[band + 1]:g}keV_log10"
        out.append(Raw(f"sunkit_instruments/rhessi_20110404/{name}", seconds,
                       heldout_real.positive_log(rates[:, band]) / np.log(10.0), "other"))


# ---- pyphysio: a physiological recording -------------------------------------------

def _pyphysio(out: list) -> None:
    with bz2.open(package_file("pyphysio", "test_data/medical.txt.bz2"), "rt") as f:
        recording = np.loadtxt(f, delimiter="\t")
    assert recording.shape[1] == len(STRIDES), recording.shape
    for k, (name, stride) in enumerate(STRIDES):
        rows = np.arange(0, recording.shape[0], stride)
        out.append(Raw(f"pyphysio/medical/{name}", rows / RECORDING_HZ, recording[rows, k],
                       "other"))


# The twelfth held-out real set: real_series(count=None) -> [Series], n <= WINDOW.
real_series = heldout_real.set_series(
    (_richardsonpy, _sunkit_instruments, _pyphysio), WINDOW, MAX_WINDOWS, MIN_POINTS)


def main(argv=None) -> int:
    return heldout_real.command(argv, "benchmarks/heldout_real12.py", __doc__, real_series, CACHE)


if __name__ == "__main__":
    sys.exit(main())

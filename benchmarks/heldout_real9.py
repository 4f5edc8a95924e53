"""A ninth held-out real set: the data files of four wheels no other set reads.

Built, and its oracle fitted, before gpcore was ever fitted to it or scored
on it, while the default fit was being tuned on the other real sets. It is
read, offline, from the data files of four test-only wheels pinned in
pyproject.toml (found, not imported: only the files are read):

- nitime (its examples' fMRI data): the BOLD signal of 31 regions of one
  subject's resting-state scan (250 volumes, TR 1.89 s; the first three
  columns are white matter, ventricles and whole brain) and the BOLD
  signal (% change) of motion-sensitive voxels near area MT in an
  event-related scan (TR 2 s);
- aquacrop (its weather inputs): the daily minimum and maximum air
  temperature (deg C) of four stations: Champion, Nebraska (from 1982),
  Tunis (1979), Brussels (1976) and Hyderabad (2000);
- skyfield (its bundled Delta T): TT - UT1 (s), half-yearly 1657-1984,
  from historical lunar occultations and transits;
- seglearn (its smartwatch data, 50 Hz): for the first recording of each of
  the seven shoulder exercises, one of the watch's six inertial axes in
  turn (accelerometer x, y, z, gyroscope x, y, z, then accelerometer x
  again; in the file's units).

Left out on purpose: nitime's grasshopper stimulus (a generated sound) and
spike times (events, not a signal) and its NIfTI volumes (the resting
scan's voxels); the event-related scan's event codes (the design);
aquacrop's precipitation (mostly zeros) and reference ET (computed from the
temperatures), its five UK and Cordoba files (1991-2021 with computed ET:
gridded, not a station), its climate-model projections, CO2 scenarios and
model outputs; skyfield's iers.npz (IERS finals: the quantities of the
eighth set's C04 series) and its ephemerides (models). t is in seconds for
the fMRI and the watch, in days (since 1970-01-01) for the weather and in
years (Julian, from the table's Julian dates) for Delta T. Series longer
than WINDOW (150) points are cut into near-equal consecutive windows, at
most MAX_WINDOWS (8) spread over the series (heldout_real.windows); kept
when >= MIN_POINTS finite and not constant.

    python benchmarks/heldout_real9.py [--list] [--check] [--count N] [--fresh]

`--check` scores gpcore's default options (FitConfig()) against the same
oracle as the other held-out real sets (benchmarks/heldout_oracle.py: RBF +
White, scikit-learn with 4 starts, both sides by one numpy nll; cached in
benchmarks/results/heldout-real9-sklearn.json).
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
from heldout_real import Raw, package_file  # noqa: E402

WINDOW = 150
MAX_WINDOWS = 8
MIN_POINTS = 5
RESTING_TR_S = 1.89  # nitime's resting-state examples give the repetition times
EVENT_TR_S = 2.0
STATIONS = ("champion", "tunis", "brussels", "hyderabad")  # aquacrop/data/<station>_climate.txt
WATCH_HZ = 50.0  # seglearn.datasets.load_watch gives the rate
CACHE = os.path.join(HERE, "results", "heldout-real9-sklearn.json")
PACKAGES = ("nitime", "aquacrop", "skyfield", "seglearn")  # ids' first part


# ---- nitime: fMRI BOLD ------------------------------------------------------------

def _nitime(out: list) -> None:
    import pandas as pd

    resting = pd.read_csv(package_file("nitime", "data/fmri_timeseries.csv"))
    t = RESTING_TR_S * np.arange(len(resting))
    for region in resting.columns:
        out.append(Raw(f"nitime/resting/{region}", t, resting[region].to_numpy(float), "other"))
    event = pd.read_csv(package_file("nitime", "data/event_related_fmri.csv"))
    out.append(Raw("nitime/event_related/bold", EVENT_TR_S * np.arange(len(event)),
                   event["bold"].to_numpy(float), "other"))


# ---- aquacrop: weather stations -------------------------------------------------

def _aquacrop(out: list) -> None:
    import pandas as pd

    for station in STATIONS:
        # Whitespace columns Day, Month, Year, Tmin, Tmax, ... (names vary by file).
        weather = pd.read_csv(package_file("aquacrop", f"data/{station}_climate.txt"), sep=r"\s+")
        day, month, year, tmin, tmax = (weather.iloc[:, k] for k in range(5))
        days = heldout_real.to_days(pd.DataFrame({"year": year, "month": month, "day": day}))
        out.append(Raw(f"aquacrop/{station}/tmin", days, tmin.to_numpy(float), "daily"))
        out.append(Raw(f"aquacrop/{station}/tmax", days, tmax.to_numpy(float), "daily"))


# ---- skyfield: historical Delta T -----------------------------------------------

def _skyfield(out: list) -> None:
    jd, delta_t = np.load(package_file("skyfield", "data/historic_deltat.npy"))
    out.append(Raw("skyfield/historic_delta_t", 2000.0 + (jd - 2451545.0) / 365.25, delta_t,
                   "other"))


# ---- seglearn: a smartwatch's inertial sensors ----------------------------------

class _ArraysOnly(pickle.Unpickler):
    """Unpickles dicts, lists, strings and numpy arrays only: seglearn's
    watch file holds nothing else, and a pickle could otherwise run any code
    it names."""

    ALLOWED = {("numpy.core.multiarray", "_reconstruct"), ("numpy", "ndarray"),
               ("numpy", "dtype"), ("_codecs", "encode")}

    def find_class(self, module, name):
        if (module, name) in self.ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not a numpy array part")


def watch_data() -> dict:
    """seglearn's watch data: X [140] of [n, 6] arrays, y [140] exercise
    codes, X_labels, y_labels, subject, side (an object array in a .npy)."""
    with open(package_file("seglearn", "data/watch_dataset.npy"), "rb") as f:
        np.lib.format.read_magic(f)
        np.lib.format.read_array_header_1_0(f)
        return _ArraysOnly(f, encoding="latin1").load().item()


def _seglearn(out: list) -> None:
    watch = watch_data()
    axes, exercises = watch["X_labels"], watch["y_labels"]
    for code, exercise in enumerate(exercises):
        first = int(np.flatnonzero(watch["y"] == code)[0])
        axis = code % len(axes)
        y = np.asarray(watch["X"][first][:, axis], float)
        out.append(Raw(f"seglearn/watch/{exercise}/{first}/{axes[axis]}",
                       np.arange(y.size) / WATCH_HZ, y, "other"))


# The ninth held-out real set: real_series(count=None) -> [Series], n <= WINDOW.
real_series = heldout_real.set_series(
    (_nitime, _aquacrop, _skyfield, _seglearn), WINDOW, MAX_WINDOWS, MIN_POINTS)


def main(argv=None) -> int:
    return heldout_real.command(argv, "benchmarks/heldout_real9.py", __doc__, real_series, CACHE)


if __name__ == "__main__":
    sys.exit(main())

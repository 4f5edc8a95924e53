"""Harmonic-rich seasonal series for tuning kernel sums: the tuning set.

The seasonal set (benchmarks/seasonal.py) has cycles whose periodogram's
top peak is mostly the fundamental; real cycles are often sharper, and then
the top peak is the 2nd or 3rd harmonic and a fit can settle on half or a
third of the period (docs/design.md, "Seasonal series"). This set has such
shapes, from its own generator and seed, for tuning the period's basin;
its claims are proved on a held-out set that tuning never looked at.

- seasonal (SEASONAL_COUNT, "tuning/seasonal/<k>/<shape>/<sampling>"):
  60-250 points, 1.5-10 cycles per span (log-uniform), a shape of
  - sawtooth: a sharp ramp (15 harmonics, 1/k), rising or falling;
  - pulses: a narrow Gaussian bump per cycle, width 4-15 % of the period;
  - expsinsq: an ExpSinSquared draw with a short length scale, l 0.2-0.5;
  - square: a smoothed square wave, duty cycle 0.2-0.5;
  - sine: a sinusoid (a control);
  on a smooth trend (an RBF draw, length 0.3-1 span) in half of them;
  noise sd 0.03-1 times the periodic part's sd (log-uniform); times from
  seasonal.py's sampler (regular, jittered, irregular; some with a gap or
  5 % missing), spans 1-1,000 units at offsets up to 2,000.
- non-seasonal (NON_SEASONAL_COUNT, "tuning/plain/<k>/<shape>/<sampling>"):
  an RBF or Matern-5/2 draw (length scale 0.03-1 span) with a slope, or a
  random walk, 60-250 points; no cycle.

    python benchmarks/seasonal_tuning.py     # list the set
"""
from __future__ import annotations

import argparse
import functools
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
if __name__ == "__main__":  # run as a script: gpcore from the checkout
    sys.path.insert(0, os.path.dirname(HERE))

import seasonal  # noqa: E402
from gpcore import Series  # noqa: E402

SEED = 20261223
SEASONAL_COUNT = 80
NON_SEASONAL_COUNT = 30
POINTS = (60, 250)
CYCLES = (1.5, 10.0)
SHAPES = ("sawtooth", "pulses", "expsinsq", "square", "sine")


def _cycle(rng, t: np.ndarray, period: float, shape: str) -> np.ndarray:
    """A periodic function of t [n] with the given period and shape, unit sd."""
    u = ((t - t[0]) / period + rng.uniform()) % 1.0  # phase in cycles, [0, 1)
    if shape == "sawtooth":
        k = np.arange(1, 16)[:, None]
        f = rng.choice([-1, 1]) * (np.sin(2 * np.pi * k * u[None]) / k).sum(axis=0)
    elif shape == "pulses":
        width = rng.uniform(0.04, 0.15)
        f = np.exp(-0.5 * (np.minimum(u, 1 - u) / width) ** 2)
    elif shape == "expsinsq":
        l = rng.uniform(0.2, 0.5)
        f = seasonal._draw(rng, t, lambda d: np.exp(-2 * np.sin(np.pi * d / period) ** 2 / l ** 2))
    elif shape == "square":
        duty = rng.uniform(0.2, 0.5)
        off_centre = np.abs(u - duty / 2)
        off_centre = np.minimum(off_centre, 1 - off_centre)  # cycles from the "on" centre
        f = 1 / (1 + np.exp(np.clip(40 * (off_centre - duty / 2), -50, 50)))
    else:
        f = np.sin(2 * np.pi * u)
    return (f - f.mean()) / max(f.std(), 1e-12)


def _seasonal_case(rng, k: int) -> seasonal.Case:
    n = int(rng.integers(POINTS[0], POINTS[1] + 1))
    t, sampling = seasonal._times(rng, n)
    span = t[-1] - t[0]
    period = span / np.exp(rng.uniform(*np.log(CYCLES)))
    shape = SHAPES[k % len(SHAPES)]
    signal = _cycle(rng, t, period, shape)
    if rng.uniform() < 0.5:
        signal = signal + rng.uniform(0.3, 2) * seasonal._smooth(
            rng, t, "rbf", span * 10 ** rng.uniform(-0.5, 0))
    y = seasonal._finish(rng, t, signal, 10 ** rng.uniform(-1.5, 0))
    return seasonal.Case(Series(f"tuning/seasonal/{k}/{shape}/{sampling}", t, y),
                         float(period), False)


def _plain_case(rng, k: int) -> seasonal.Case:
    n = int(rng.integers(POINTS[0], POINTS[1] + 1))
    t, sampling = seasonal._times(rng, n)
    span = t[-1] - t[0]
    shape = ("rbf", "matern52", "random_walk")[k % 3]
    if shape == "random_walk":
        steps = rng.standard_normal(n) * np.sqrt(np.diff(t, prepend=t[0]) + 1e-12)
        signal = np.cumsum(steps)
        signal = (signal - signal.mean()) / signal.std()
    else:
        signal = (seasonal._smooth(rng, t, shape, span * 10 ** rng.uniform(-1.5, 0))
                  + rng.normal(0, 1) * (t - t.mean()) / span)
    y = seasonal._finish(rng, t, signal, 10 ** rng.uniform(-1.5, 0))
    return seasonal.Case(Series(f"tuning/plain/{k}/{shape}/{sampling}", t, y), None, False)


@functools.lru_cache(maxsize=1)
def _build() -> tuple:
    rng = np.random.default_rng(SEED)
    out = [_seasonal_case(rng, k) for k in range(SEASONAL_COUNT)]
    out += [_plain_case(rng, k) for k in range(NON_SEASONAL_COUNT)]
    return tuple(out)


def cases() -> list[seasonal.Case]:
    """The whole tuning set, seasonal then non-seasonal; the same series
    (fresh arrays) on every call."""
    return [seasonal.Case(Series(c.series.series_id, c.series.t.copy(), c.series.y.copy()),
                          c.period, c.real) for c in _build()]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/seasonal_tuning.py",
                                     description=__doc__.split("\n")[0])
    parser.parse_args(argv)
    for c in cases():
        s = c.series
        cycles = "" if c.period is None else f"{(s.t[-1] - s.t[0]) / c.period:.1f} cycles"
        print(f"{s.series_id}\t{s.t.size}\t{np.isfinite(s.y).sum()}\t{cycles}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

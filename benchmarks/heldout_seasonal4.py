"""The fourth held-out seasonal set: kernel sums proven on series no tuning saw.

This set was built, and its oracle cached, before any tuning looked at it;
gpcore has not been fitted on it, and it is scored once, at the end of the
tuning that follows (docs/design.md, "Held-out sets"). Deterministic (SEED)
and offline, with generators of its own: no shape, background (but
nothing), noise or sampling of seasonal.py, seasonal_tuning.py or
heldout_seasonal.py to heldout_seasonal3.py (AR(1) noise excepted, here
from point to point, there per median spacing). SEASONAL_COUNT series
have a cycle, NON_SEASONAL_COUNT none:

- seasonal ("heldout4/seasonal/<k>/<shape>+<background>+<noise>/<sampling>"):
  a periodic part of one of six shapes, unit sd: an overtone waveform (the
  fundamental and its harmonics up to the 3rd-5th, of random phases,
  amplitudes k^-p, p 0.7-1.5, and in half of them the 2nd (two in three)
  or 3rd harmonic at 1.2-2.5 x the fundamental), a ramp-and-hold (a linear rise over 4-12 % of
  the period, a hold at the top for 15-35 %, a linear fall over 30-50 %, low
  for the rest), two Gaussian peaks of unequal width per cycle (sd 2-5 % and
  10-20 % of the period, the wide one 0.5-1.2 x as high, 35-65 % of a period
  apart), a monthly slot pattern (12 equal slots a cycle, each slot's level
  N(0, 1)), a train of broad Gaussian pulses (sd 15-35 % of the period,
  wrapped) and a time-warped sine (sin 2 pi v, v = u + b sin(2 pi (u - c)) /
  2 pi, b 0.5-0.9: a fast half-cycle and a slow one); 1.5-10 cycles in the
  span (log-uniform: 7 of the 60 below two); on a background of nothing, a
  broken trend (two slopes and a level jump of 0.5-1.5 sd at a break at
  20-80 % of the span), a long damped oscillation (period 4-8 x the cycle's,
  decay rate 0.5-2 a span) or a cubic polynomial (Legendre, the cubic
  coefficient at least 0.5 in size), 0.3-1.5 times the cycle's sd; noise of
  sd 0.03-1 times the cycle's (log-uniform), AR(1) from point to point (phi
  0.3-0.8, whatever the spacing), Gaussian with 5 % outliers of 5 x the sd,
  multiplicative (white, its sd proportional to the signal less its minimum
  plus a quarter of its range) or skewed (a centred exponential, either
  sign), each of unit sd before the level.
- non-seasonal ("heldout4/plain/<k>/<shape>+<noise>/<sampling>"): a cubic
  spline through 4-8 random knots, a mesa (a logistic rise and a later fall
  of other heights and widths), a Gompertz curve (asymmetric S, either
  sign), 3-6 level shifts at random places, fractional Brownian motion
  (Hurst 0.6-0.9) or a rational-quadratic draw (alpha 0.2-2, length scale
  0.05-0.5 span), with the same noise rule.

Times: 80-240 finite points; regular with one long gap (15-30 % of the
span, centred 25-75 % in), log-spaced (spacings growing e^a-fold over the
span, a 2-4, either way), regular clusters (3-6 evenly spaced points over
10-30 % of each interval, the clusters' starts jittered by 5 % of the
interval) or business hours (runs of 6-12 regular steps on, 4-16 off);
about a quarter (22 of the 72) also have 3-10 % of their values missing (NaN, "+nan"); span
10^U(-1, 3) units at an offset of U(-2e4, 6e4); values scaled by
10^U(-2.5, 3) and offset by U(-1e3, 1e3) (heldout_seasonal3.py's rule).

    python benchmarks/heldout_seasonal4.py [--list] [--check] [--kernel rbf+periodic]
        [--count N] [--fresh] [--oracle]

`--oracle` only fits and caches the oracle (benchmarks/heldout_oracle.py,
rbf+periodic, 4 starts, benchmarks/results/heldout-seasonal4-sklearn.json);
`--check` scores gpcore against it as heldout_seasonal.py does.
"""
from __future__ import annotations

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if __name__ == "__main__":  # run as a script: gpcore from the checkout
    sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from gpcore import Series  # noqa: E402
import heldout_seasonal  # noqa: E402
from heldout_seasonal import Case  # noqa: E402
from heldout_seasonal2 import _draw  # noqa: E402
from heldout_seasonal3 import _finish, _standard  # noqa: E402

SEED = 2_026_1215_04
SEASONAL_COUNT = 60
NON_SEASONAL_COUNT = 12
POINTS = (80, 240)  # finite points
CYCLES = (1.5, 10.0)
SHAPES = ("overtone", "ramp_hold", "unequal_peaks", "month_slots", "broad_pulses", "warped_sine")
PLAIN_SHAPES = ("random_spline", "mesa", "gompertz", "level_shifts", "fbm", "rq_draw")
BACKGROUNDS = ("none", "broken_trend", "damped_long", "cubic")
NOISES = ("arstep", "outliers", "mult", "skew")
SAMPLINGS = ("long_gap", "log_spaced", "cluster_grid", "business_hours")
NOISE_SD = (0.03, 1.0)  # x the signal's sd, log-uniform
CACHE = os.path.join(HERE, "results", "heldout-seasonal4-sklearn.json")


def _unit_times(rng, n: int) -> tuple[np.ndarray, str]:
    """(n sorted distinct times in [0, 1], first 0 and last 1; sampling name)."""
    sampling = str(rng.choice(SAMPLINGS))
    if sampling == "long_gap":  # a regular grid with one long gap
        width, centre = rng.uniform(0.15, 0.3), rng.uniform(0.25, 0.75)
        u = np.linspace(0, 1 - width, n)
        u[u > centre - width / 2] += width
    elif sampling == "log_spaced":  # spacings growing geometrically
        u = np.expm1(rng.uniform(2, 4) * np.linspace(0, 1, n))
        if rng.uniform() < 0.5:
            u = np.sort(u[-1] - u)
    elif sampling == "cluster_grid":  # evenly spaced bursts at regular intervals
        size, width = int(rng.integers(3, 7)), rng.uniform(0.1, 0.3)
        count = -(-n // size)
        starts = np.arange(count) + rng.uniform(-0.05, 0.05, count)
        u = (starts[:, None] + np.linspace(0, width, size)[None]).ravel()[:n]
    else:  # business hours: runs of regular steps on, runs off
        on, off = int(rng.integers(6, 13)), int(rng.integers(4, 17))
        steps = np.arange(n * (on + off) // on + on + off)
        u = steps[(steps + int(rng.integers(on + off))) % (on + off) < on][:n].astype(float)
    return (u - u[0]) / (u[-1] - u[0]), sampling


def _times(rng, n: int) -> tuple[np.ndarray, np.ndarray, str]:
    """(sorted distinct times [m], missing mask [m], sampling name), n of
    the m points finite."""
    extra = int(round(n * rng.uniform(0.03, 0.1))) if rng.uniform() < 0.25 else 0
    u, sampling = _unit_times(rng, n + extra)
    missing = np.zeros(u.size, bool)
    if extra:
        missing[rng.choice(np.arange(1, u.size - 1), extra, replace=False)] = True
        sampling += "+nan"
    span = 10 ** rng.uniform(-1, 3)
    return rng.uniform(-2e4, 6e4) + span * u, missing, sampling


def _cycle(rng, t, period: float, shape: str) -> np.ndarray:
    u = ((t - t[0]) / period + rng.uniform()) % 1.0  # phase in cycles, [0, 1)
    if shape == "overtone":
        count = int(rng.integers(3, 6))
        amplitude = np.arange(1, count + 1) ** -rng.uniform(0.7, 1.5)
        if rng.uniform() < 0.5:  # an overtone outweighs the fundamental
            amplitude[1 if rng.uniform() < 2 / 3 else 2] = rng.uniform(1.2, 2.5)
        f = sum(a * np.sin(2 * np.pi * (k * u + rng.uniform()))
                for k, a in enumerate(amplitude, start=1))
    elif shape == "ramp_hold":  # fast rise, hold, slow fall, low
        rise, hold, fall = rng.uniform(0.04, 0.12), rng.uniform(0.15, 0.35), rng.uniform(0.3, 0.5)
        f = np.interp(u, [0, rise, rise + hold, rise + hold + fall, 1], [0, 1, 1, 0, 0])
    elif shape == "unequal_peaks":
        second = rng.uniform(0.35, 0.65)
        d = np.abs(u - second)
        f = (np.exp(-0.5 * (np.minimum(u, 1 - u) / rng.uniform(0.02, 0.05)) ** 2)
             + rng.uniform(0.5, 1.2)
             * np.exp(-0.5 * (np.minimum(d, 1 - d) / rng.uniform(0.1, 0.2)) ** 2))
    elif shape == "month_slots":
        f = rng.standard_normal(12)[np.minimum((u * 12).astype(int), 11)]
    elif shape == "broad_pulses":  # wrapped Gaussians, near a sinusoid at the widest
        sd = rng.uniform(0.15, 0.35)
        f = sum(np.exp(-0.5 * ((u - 0.5 + j) / sd) ** 2) for j in range(-3, 4))
    else:  # warped_sine: v runs 1 + b as fast as u in one half-cycle, 1 - b in the other
        b = rng.choice([-1, 1]) * rng.uniform(0.5, 0.9)
        f = np.sin(2 * np.pi * u + b * np.sin(2 * np.pi * (u - rng.uniform())))
    return _standard(f)


def _background(rng, t, period: float) -> tuple[np.ndarray, str]:
    kind = str(rng.choice(BACKGROUNDS))
    x = (t - t[0]) / (t[-1] - t[0])
    if kind == "none":
        return np.zeros_like(t), kind
    if kind == "broken_trend":
        knot = rng.uniform(0.2, 0.8)
        f = _standard(rng.normal() * x + rng.normal(0, 2) * np.maximum(x - knot, 0))
        f = f + rng.choice([-1, 1]) * rng.uniform(0.5, 1.5) * (x > knot)
    elif kind == "damped_long":
        cycles = (t[-1] - t[0]) / (period * rng.uniform(4, 8))
        f = np.exp(-rng.uniform(0.5, 2) * x) * np.cos(2 * np.pi * (cycles * x + rng.uniform()))
    else:
        c = rng.standard_normal(4)
        c[3] = rng.choice([-1, 1]) * max(abs(c[3]), 0.5)
        f = np.polynomial.legendre.legval(2 * x - 1, c)
    return rng.uniform(0.3, 1.5) * _standard(f), kind


def _noise(rng, signal) -> tuple[np.ndarray, str]:
    """(noise [n] of sd `level` about the signal [n], its name): AR(1) by
    point, Gaussian with outliers, multiplicative or skewed."""
    level = float(10 ** rng.uniform(*np.log10(NOISE_SD)))
    kind, n = str(rng.choice(NOISES)), signal.size
    if kind == "arstep":
        phi = rng.uniform(0.3, 0.8)
        e = np.empty(n)
        e[0] = rng.standard_normal()
        for i in range(1, n):
            e[i] = phi * e[i - 1] + np.sqrt(1 - phi * phi) * rng.standard_normal()
    elif kind == "outliers":  # 5 % of the points 5 x as noisy
        e = rng.standard_normal(n) * np.where(rng.uniform(size=n) < 0.05, 5.0, 1.0)
        e = e / np.sqrt(0.95 + 0.05 * 25)
    elif kind == "mult":
        sd = signal - signal.min() + 0.25 * (signal.max() - signal.min()) + 1e-12
        e = rng.standard_normal(n) * sd / np.sqrt(np.mean(sd ** 2))
    else:
        e = rng.choice([-1, 1]) * (rng.exponential(1.0, n) - 1)
    return level * e, f"{kind}{level:.2g}"


def _gaussian(rng, cov: np.ndarray) -> np.ndarray:
    """One zero-mean draw [n] with covariance cov [n, n] (eigh: robust where
    cov is singular), unit sd."""
    w, v = np.linalg.eigh(cov + 1e-9 * np.eye(len(cov)))
    return _standard(v @ (np.sqrt(np.clip(w, 0, None)) * rng.standard_normal(len(cov))))


def _plain(rng, t, shape: str) -> np.ndarray:
    x = (t - t[0]) / (t[-1] - t[0])
    if shape == "random_spline":
        from scipy.interpolate import CubicSpline

        knots = int(rng.integers(4, 9))
        at = np.linspace(0, 1, knots) + np.r_[0, rng.uniform(-0.3, 0.3, knots - 2), 0] / knots
        f = CubicSpline(at, rng.standard_normal(knots))(x)
    elif shape == "mesa":
        up, down = np.sort(rng.uniform(0.1, 0.9, 2))
        f = (rng.uniform(0.7, 1.3) / (1 + np.exp(-(x - up) / rng.uniform(0.01, 0.08)))
             - rng.uniform(0.5, 1.5) / (1 + np.exp(-(x - down) / rng.uniform(0.01, 0.08))))
    elif shape == "gompertz":
        f = rng.choice([-1, 1]) * np.exp(-rng.uniform(2, 8) * np.exp(-rng.uniform(3, 10) * x))
    elif shape == "level_shifts":
        shifts = np.sort(rng.uniform(0.05, 0.95, int(rng.integers(3, 7))))
        f = rng.standard_normal(shifts.size + 1)[np.searchsorted(shifts, x)]
    elif shape == "fbm":
        h2 = 2 * rng.uniform(0.6, 0.9)
        f = _gaussian(rng, 0.5 * (x[:, None] ** h2 + x[None] ** h2
                                  - np.abs(x[:, None] - x[None]) ** h2))
    else:  # rq_draw
        alpha, ell = rng.uniform(0.2, 2), rng.uniform(0.05, 0.5)
        f = _draw(rng, x, lambda d: (1 + d * d / (2 * alpha * ell * ell)) ** -alpha)
    return _standard(f)


def _seasonal_case(rng, k: int) -> Case:
    t, missing, sampling = _times(rng, int(rng.integers(POINTS[0], POINTS[1] + 1)))
    period = float((t[-1] - t[0]) / 10 ** rng.uniform(*np.log10(CYCLES)))
    shape = SHAPES[k % len(SHAPES)]
    background, kind = _background(rng, t, period)
    signal = _cycle(rng, t, period, shape) + background
    noise, noise_name = _noise(rng, signal)
    y = _finish(rng, signal, noise, missing)
    return Case(Series(f"heldout4/seasonal/{k}/{shape}+{kind}+{noise_name}/{sampling}", t, y),
                period)


def _plain_case(rng, k: int) -> Case:
    t, missing, sampling = _times(rng, int(rng.integers(POINTS[0], POINTS[1] + 1)))
    shape = PLAIN_SHAPES[k % len(PLAIN_SHAPES)]
    signal = _plain(rng, t, shape)
    noise, noise_name = _noise(rng, signal)
    y = _finish(rng, signal, noise, missing)
    return Case(Series(f"heldout4/plain/{k}/{shape}+{noise_name}/{sampling}", t, y), None)


cases = heldout_seasonal.set_cases(SEED, _seasonal_case, _plain_case, SEASONAL_COUNT,
                                   NON_SEASONAL_COUNT)


def main(argv=None) -> int:
    return heldout_seasonal.command(argv, "benchmarks/heldout_seasonal4.py", __doc__, cases, CACHE)


if __name__ == "__main__":
    sys.exit(main())

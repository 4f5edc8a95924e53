"""The second held-out seasonal set, a tuning set now.

It was built, and its oracle cached, before the sums' jumps were tuned on
benchmarks/heldout_seasonal.py, and scored once at their end; then its
misses were studied for the next lever (docs/design.md, "Held-out sets"),
so it is a tuning set too, and benchmarks/heldout_seasonal3.py is the
held-out one. Deterministic (SEED) and offline, with generators of its own
(not seasonal.py's, seasonal_tuning.py's or heldout_seasonal.py's).
SEASONAL_COUNT series have a cycle, NON_SEASONAL_COUNT none:

- seasonal ("heldout2/seasonal/<k>/<shape>+<background>+<noise>/<sampling>"):
  a periodic part of one of six shapes, unit sd: a triangle wave (odd
  harmonics, 1/k^2), a hard square wave of duty 0.1-0.5, two pulses per
  cycle of unequal height (the 2nd harmonic outweighs the fundamental), a
  sum of 2-4 harmonics with random amplitudes and phases, an ExpSineSquared
  draw with a short length scale 0.25-0.6, and a skewed cycle exp(k sin)
  (k 1-4); 1.5-10 cycles in the span (log-uniform); on a background of
  nothing, a line, a parabola or a slow smooth draw (length scale 1.5-4
  periods), 0.3-2 times the cycle's sd; noise of sd 0.03, 0.1, 0.3 or 1 times
  the cycle's, white or AR(1) (coefficient 0.3-0.8 per median spacing).
- non-seasonal ("heldout2/plain/<k>/<shape>+<noise>/<sampling>"): a line, a
  parabola, a random walk, an AR(1) path, a Matern-5/2 draw (length scale
  0.05-0.5 span) or a step, with the same noise rule.

Times: 50-120 points (the oracle takes 9 CPU s a series at that size, 4x
less than at 80-300); regular, jittered (+-0.3 spacings), uniform random, or
regular with 1-3 gaps of 5-25 % of the span (the points drawn elsewhere);
span 10^U(-2, 3) units at an offset of U(-1e4, 1e4); values scaled by
10^U(-3, 2) and offset by U(-100, 100).

    python benchmarks/heldout_seasonal2.py [--list] [--check] [--kernel rbf+periodic]
        [--count N] [--fresh] [--oracle]

`--oracle` only fits and caches the oracle (benchmarks/heldout_oracle.py,
rbf+periodic, 4 starts, benchmarks/results/heldout-seasonal2-sklearn.json);
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

SEED = 2_026_1201_18
SEASONAL_COUNT = 60
NON_SEASONAL_COUNT = 12
POINTS = (50, 120)
CYCLES = (1.5, 10.0)
SHAPES = ("triangle", "square", "double_pulse", "harmonics", "expsinsq_short", "skewed")
PLAIN_SHAPES = ("line", "parabola", "random_walk", "ar1", "matern52", "step")
NOISE_LEVELS = (0.03, 0.1, 0.3, 1.0)  # x the signal's sd
CACHE = os.path.join(HERE, "results", "heldout-seasonal2-sklearn.json")


def _unit(f: np.ndarray) -> np.ndarray:
    return (f - f.mean()) / max(f.std(), 1e-12)


def _times(rng, n: int) -> tuple[np.ndarray, str]:
    """(sorted times [n], sampling name)."""
    sampling = rng.choice(["regular", "jittered", "uniform", "gaps"])
    u = np.arange(n, dtype=float)
    if sampling == "jittered":
        u = np.sort(u + rng.uniform(-0.3, 0.3, n))
    elif sampling == "uniform":
        u = np.sort(rng.uniform(0, n, n))
    elif sampling == "gaps":
        keep = np.ones(n, bool)
        for _ in range(int(rng.integers(1, 4))):
            width = rng.uniform(0.05, 0.25) * n
            start = rng.uniform(0.05 * n, 0.95 * n - width)
            keep &= ~((u > start) & (u < start + width))
        kept = u[keep]
        extra = rng.choice(kept, n - kept.size) + rng.uniform(-0.5, 0.5, n - kept.size)
        u = np.sort(np.concatenate([kept, extra]))
    u = (u - u[0]) / (u[-1] - u[0])
    span = 10 ** rng.uniform(-2, 3)
    return rng.uniform(-1e4, 1e4) + span * u, str(sampling)


def _draw(rng, t, covariance) -> np.ndarray:
    d = np.abs(t[:, None] - t[None, :])
    w, v = np.linalg.eigh(covariance(d) + 1e-9 * np.eye(t.size))
    return _unit(v @ (np.sqrt(np.clip(w, 0, None)) * rng.standard_normal(t.size)))


def _cycle(rng, t, period: float, shape: str) -> np.ndarray:
    u = ((t - t[0]) / period + rng.uniform()) % 1.0  # phase, cycles
    if shape == "triangle":
        f = 1 - 4 * np.abs(u - 0.5)
    elif shape == "square":
        f = (u < rng.uniform(0.1, 0.5)).astype(float)
    elif shape == "double_pulse":
        width = rng.uniform(0.03, 0.08)
        second = rng.uniform(0.4, 0.6)
        f = (np.exp(-0.5 * (np.minimum(u, 1 - u) / width) ** 2)
             + rng.uniform(0.5, 0.9) * np.exp(-0.5 * ((u - second) / width) ** 2))
    elif shape == "harmonics":
        count = int(rng.integers(2, 5))
        f = sum(rng.uniform(0.2, 1.0) * np.sin(2 * np.pi * (k * u + rng.uniform()))
                for k in range(1, count + 1))
    elif shape == "expsinsq_short":
        ell = rng.uniform(0.25, 0.6)
        f = _draw(rng, t, lambda d: np.exp(-2 * np.sin(np.pi * d / period) ** 2 / ell ** 2))
    else:  # skewed: a sharp peak and a broad trough
        f = np.exp(rng.uniform(1, 4) * np.sin(2 * np.pi * u))
    return _unit(f)


def _background(rng, t, period: float) -> tuple[np.ndarray, str]:
    kind = str(rng.choice(["none", "line", "parabola", "smooth"]))
    x = (t - t[0]) / (t[-1] - t[0])
    if kind == "none":
        return np.zeros_like(t), kind
    if kind == "line":
        f = _unit(x)
    elif kind == "parabola":
        f = _unit((x - rng.uniform(0.2, 0.8)) ** 2)
    else:
        ell = period * rng.uniform(1.5, 4)
        f = _draw(rng, t, lambda d: np.exp(-0.5 * (d / ell) ** 2))
    return rng.uniform(0.3, 2.0) * f, kind


def _noise(rng, t) -> tuple[np.ndarray, str]:
    """(unit-sd noise [n] times a level, its name): white, or AR(1) with a
    coefficient per median spacing (irregular times: phi^(dt/spacing))."""
    level = float(rng.choice(NOISE_LEVELS))
    if rng.uniform() < 2 / 3:
        return level * rng.standard_normal(t.size), f"white{level:g}"
    phi = rng.uniform(0.3, 0.8)
    spacing = float(np.median(np.diff(t)))
    e = np.empty(t.size)
    e[0] = rng.standard_normal()
    for i in range(1, t.size):
        a = phi ** ((t[i] - t[i - 1]) / spacing)
        e[i] = a * e[i - 1] + np.sqrt(1 - a * a) * rng.standard_normal()
    return level * e, f"ar{level:g}"


def _plain(rng, t, shape: str) -> np.ndarray:
    x = (t - t[0]) / (t[-1] - t[0])
    if shape == "line":
        return _unit(x)
    if shape == "parabola":
        return _unit((x - rng.uniform(0, 1)) ** 2)
    if shape == "random_walk":
        return _unit(np.cumsum(rng.standard_normal(t.size) * np.sqrt(np.diff(x, prepend=0) + 1e-12)))
    if shape == "ar1":
        ell = rng.uniform(0.02, 0.2)
        return _draw(rng, x, lambda d: np.exp(-d / ell))
    if shape == "matern52":
        ell = rng.uniform(0.05, 0.5)
        return _draw(rng, x, lambda d: (1 + np.sqrt(5) * d / ell + 5 * d * d / (3 * ell * ell))
                     * np.exp(-np.sqrt(5) * d / ell))
    return _unit((x > rng.uniform(0.2, 0.8)).astype(float))


def _finish(rng, signal, noise) -> np.ndarray:
    return rng.uniform(-100, 100) + 10 ** rng.uniform(-3, 2) * (signal + noise)


def _seasonal_case(rng, k: int) -> Case:
    t, sampling = _times(rng, int(rng.integers(POINTS[0], POINTS[1] + 1)))
    period = float((t[-1] - t[0]) / 10 ** rng.uniform(*np.log10(CYCLES)))
    shape = SHAPES[k % len(SHAPES)]
    background, kind = _background(rng, t, period)
    noise, noise_name = _noise(rng, t)
    y = _finish(rng, _cycle(rng, t, period, shape) + background, noise)
    return Case(Series(f"heldout2/seasonal/{k}/{shape}+{kind}+{noise_name}/{sampling}", t, y), period)


def _plain_case(rng, k: int) -> Case:
    t, sampling = _times(rng, int(rng.integers(POINTS[0], POINTS[1] + 1)))
    shape = PLAIN_SHAPES[k % len(PLAIN_SHAPES)]
    noise, noise_name = _noise(rng, t)
    y = _finish(rng, _plain(rng, t, shape), noise)
    return Case(Series(f"heldout2/plain/{k}/{shape}+{noise_name}/{sampling}", t, y), None)


cases = heldout_seasonal.set_cases(SEED, _seasonal_case, _plain_case, SEASONAL_COUNT,
                                   NON_SEASONAL_COUNT)


def main(argv=None) -> int:
    return heldout_seasonal.command(argv, "benchmarks/heldout_seasonal2.py", __doc__, cases, CACHE)


if __name__ == "__main__":
    sys.exit(main())

"""Data-driven starting points for the optimiser, in standardised units.

Good starts are the main lever on speed (DESIGN.md, "Measured"): each saved
BFGS iteration saves a Cholesky per series. All inputs here are
standardised: t in [0, 1], y with zero mean and unit variance.
"""
from __future__ import annotations

import numpy as np

def length_scale_spread(restarts: int) -> np.ndarray:
    """[R] multipliers of the first start's length scale: 1, 1/4, 4, 1/16,
    16, ... alternately shorter and longer, so that R starts bracket the
    data-driven one."""
    r = np.arange(restarts)
    return 4.0 ** (np.ceil(r / 2.0) * np.where(r % 2 == 1, -1.0, 1.0))


def starting_points(kernel: str, t: np.ndarray, y: np.ndarray, restarts: int) -> dict:
    """Starting hyperparameters for R restarts of one standardised series.

    Args:
      kernel: kernel name. t: [n] sorted times in [0, 1]. y: [n] standardised.
      restarts: R.
    Returns:
      dict of [R] arrays: length_scale, noise_ratio and, for "periodic", period.
    """
    noise_ratio = np.full(restarts, _noise_ratio(t, y))
    if kernel == "periodic":
        periods = _periodogram_peaks(t, y, restarts)
        period = periods[np.arange(restarts) % periods.size]
        # ExpSinSquared's length scale is relative to the sine's argument.
        length_scale = 1.0 * length_scale_spread(restarts) ** 0.5
        return {"length_scale": length_scale, "noise_ratio": noise_ratio,
                "period": period}
    length_scale = _length_scale(t, y) * length_scale_spread(restarts)
    return {"length_scale": length_scale, "noise_ratio": noise_ratio}


def _length_scale(t: np.ndarray, y: np.ndarray) -> float:
    """From the rate of mean crossings: a stationary RBF process crosses its
    mean 1 / (pi * l) times per unit time. Noise adds crossings, so smooth
    with a 3-point running mean first."""
    smooth = np.convolve(y, np.ones(3) / 3.0, mode="same") if y.size >= 5 else y
    crossings = np.count_nonzero(np.diff(np.signbit(smooth)))
    spacing = np.median(np.diff(t)) if t.size > 1 else 1.0
    return float(np.clip(1.0 / (np.pi * max(crossings, 1)), max(spacing, 1e-3), 1.0))


def _noise_ratio(t: np.ndarray, y: np.ndarray) -> float:
    """Noise variance / signal variance, from successive differences: for a
    smooth signal sampled densely, half the mean squared difference is the
    noise variance (y has unit variance)."""
    if y.size < 3:
        return 0.1
    noise = 0.5 * float(np.mean(np.diff(y) ** 2))
    return float(np.clip(noise / max(1.0 - noise, 0.05), 1e-3, 1.0))


def _periodogram_peaks(t: np.ndarray, y: np.ndarray, count: int) -> np.ndarray:
    """[<=count] periods (units of t) at the highest peaks of the periodogram,
    searched from 2 cycles per span up to half the mean sampling rate."""
    n = y.size
    f_max = max(2.0, 0.5 * (n - 1))
    freqs = np.linspace(1.0, f_max, int(min(400, 4 * f_max)))
    phase = 2.0 * np.pi * freqs[:, None] * t[None, :]
    power = (np.cos(phase) @ y) ** 2 + (np.sin(phase) @ y) ** 2
    is_peak = np.r_[power[0] > power[1], (power[1:-1] > power[:-2]) & (power[1:-1] >= power[2:]),
                    power[-1] > power[-2]]
    peaks = np.flatnonzero(is_peak)
    if peaks.size == 0:
        return np.array([0.5])
    best = peaks[np.argsort(power[peaks])[::-1][:count]]
    return 1.0 / freqs[best]

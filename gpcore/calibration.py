"""Forecast intervals calibrated on the fitted model's own in-sample errors.

predict's sd treats the fitted hyperparameters and the constant mean as
known. Forecasts then come out overconfident: on forecast.py's tune split
rbf's 95 % intervals held 75 % of the held-out points, matern52's 85 %
(docs/design.md, "Forecast intervals"). `forecast` widens them by three
measured levers, all with the fitted hyperparameters (no refit):

1. the mean's uncertainty. The fitter's mean is the GLS estimate, so
   the predictive variance gains (1 - k*' A^-1 1)^2 / (1' A^-1 1),
   universal kriging's term: large where a forecast reverts to the mean;
2. the profiled scale. With the mean and the amplitude scale profiled,
   the predictive is Student-t with n - 1 degrees of freedom, not normal,
   and its scale is Q / (n - 1), Q the GLS residuals' quadratic form: the
   fitter's s^2 (amplitude and noise) is the maximum-likelihood Q / n, so
   the variance is multiplied by n / (n - 1) (with Q / n, 3-point series'
   80 % intervals held 0.738 of draws from the model, its shape known);
3. rolling-origin errors. At ORIGINS origins o in the series' second
   half, the posterior given the first o points (with 1 and 2) predicts the
   next horizon points, and each error over its predictive sd (with 1
   and 2's n / (n - 1)) is z ~ N(0, 1) when the model is right. The sd
   is multiplied by the root mean square of these z, kept between 1 and
   MAX_SCALE: widened where the model was overconfident on its own data,
   never narrowed (1 under 4 points: too few errors; levers 1 and 2
   still apply).

One Cholesky factor of the observed covariance serves every origin: its
leading o x o block is the factor of the first o points.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Mapping, Union

import numpy as np

from gpcore.kernels import components, distances, kernel as kernel_named
# JITTERS: predict's, relative to the largest prior variance.
from gpcore.predict import JITTERS, checked_params, predict
from gpcore.result import FitResult
from gpcore.series import Series

# Rolling origins per series, evenly spaced over the second half of the
# (windowed) series: the first half conditions every forecast on enough
# points for the fitted length scales to be seen.
ORIGINS = 16
# Points of a long series' end the in-sample errors and the mean's
# uncertainty are computed from (cost O(WINDOW^3)); exact below it. Not a
# multiple of 256, where OpenBLAS's Cholesky is 2.6x slower (docs/design.md,
# "Padded lengths off multiples of 256").
WINDOW = 504
# The most the rolling errors widen an interval: a level shift in the data
# should not make every interval meaningless.
MAX_SCALE = 4.0
# Degrees of freedom above which Student-t quantiles come from the
# Cornish-Fisher expansion (within 2e-8 relative of scipy's at 201), below
# which from bisection on the exact distribution function (a sum of dof / 2
# terms).
CORNISH_FISHER_ABOVE = 200


@dataclasses.dataclass(frozen=True)
class Forecast:
    """Calibrated predictive of new observations at t_new [m]: Student-t
    with `dof` degrees of freedom, centre `mean` [m] and scale `sd` [m]
    (units of y); `scale` is the rolling-error factor already in sd."""

    mean: np.ndarray
    sd: np.ndarray
    dof: float
    scale: float

    def interval(self, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """(lo [m], hi [m]): the central `level` interval (0 < level < 1)."""
        if not 0 < level < 1:  # a percentage, or one that would put lo above hi
            raise ValueError(f"level must be in (0, 1), e.g. 0.95 for a 95 % interval; "
                             f"got {level!r}")
        q = student_t_quantile(0.5 + 0.5 * level, self.dof)
        return self.mean - q * self.sd, self.mean + q * self.sd


def forecast(series: Series, params: Union[Mapping, FitResult], t_new,
             horizon: int | None = None, posterior=None,
             centre: float | None = None) -> Forecast:
    """The calibrated predictive of new observations at t_new (module
    docstring). horizon: points ahead of each rolling origin (default: the
    t_new beyond the last observation, at least 1). posterior: predict's
    (mean [m], sd of a new observation [m]) at t_new when the caller has
    them (the pipeline), else computed here. centre: `linear`'s, as
    predict's. Raises as predict."""
    p = checked_params(params)
    mean, sd = (predict(series, p, t_new, include_noise=True, centre=centre) if posterior is None
                else (np.asarray(posterior[0], np.float64), np.asarray(posterior[1], np.float64)))
    t, y = _observed(series)
    t_new = np.asarray(t_new, dtype=np.float64).reshape(-1)
    dof = max(t.size - 1.0, 1.0)
    # Q / n -> Q / (n - 1): the fitter's s^2 is the maximum-likelihood one
    # (lever 2 in the module docstring).
    profiled = t.size / dof if t.size > 1 else 1.0
    if not t.size:
        return Forecast(mean, sd, dof, 1.0)
    if horizon is None:
        horizon = max(1, int(np.sum(t_new > t[-1])))
    if centre is None:  # of all the points: linear's centre, as the fit's
        centre = 0.5 * (t[0] + t[-1])
    t, y = t[-WINDOW:], y[-WINDOW:]
    # One covariance call for both blocks: each call is a few eager ops.
    kff, kfx = np.hsplit(covariance(p, t - centre, np.r_[t, t_new] - centre), [t.size])
    chol = _cholesky(kff, p["noise_variance"])
    w, v = np.hsplit(_solve(chol, np.column_stack(  # L^-1 1 [n], L^-1 Kx* [n, m]
        [np.ones(t.size), kfx])), [1])
    w = w[:, 0]
    extra = (1.0 - v.T @ w) ** 2 / (w @ w)  # the GLS mean's variance at t_new
    # Under 4 points too few errors to scale by; the mean's variance stays.
    z = rolling_errors(p, t - centre, y, kff, chol, horizon) if t.size >= 4 else np.zeros(0)
    z = z / np.sqrt(profiled)  # over the same predictive sd as the forecast's
    scale = float(np.clip(np.sqrt(np.mean(z ** 2)), 1.0, MAX_SCALE)) if z.size else 1.0
    return Forecast(mean, scale * np.sqrt(profiled * (sd ** 2 + extra)), dof, scale)


def rolling_errors(p: dict, t: np.ndarray, y: np.ndarray, kff: np.ndarray, chol: np.ndarray,
                   horizon: int) -> np.ndarray:
    """[k] standardised errors of new observations up to `horizon` points
    ahead of ORIGINS rolling origins over the second half of (t [n]
    centred and sorted, y [n]; kff [n, n] their latent covariance, chol the
    factor of kff + noise I): each prediction from the points before its
    origin, with their own GLS mean and its variance.

    L^-1 is lower triangular, so (L^-1 b)[:o] = L_oo^-1 b[:o]: the solves
    of every origin are the leading rows of three solves of the whole."""
    n = t.size
    # Measured from the fitted mean, as predict does: each origin's GLS level
    # moves with y, so the errors are the same, but L^-1 y and level L^-1 1
    # no longer cancel to a few digits where y sits on a large offset (1e9 +
    # a variation of 1e-3 widened an interval by 10 %).
    y = y - p["mean"]
    w_all, a_all, v_all = np.hsplit(_solve(chol, np.column_stack([np.ones(n), y, kff])), [1, 2])
    prior = np.diag(kff) + p["noise_variance"]
    out = []
    for o in np.unique(np.linspace(max(n // 2, 2), n - 1, ORIGINS).round().astype(int)):
        ahead = np.arange(o, min(o + horizon, n))
        w, a, v = w_all[:o, 0], a_all[:o, 0], v_all[:o, ahead]  # L_oo^-1 (1, y, K_o*)
        level = float(w @ a) / float(w @ w)  # GLS mean of the first o points
        mean = level + v.T @ (a - level * w)
        var = prior[ahead] - np.sum(v * v, axis=0) + (1.0 - v.T @ w) ** 2 / float(w @ w)
        out.append((y[ahead] - mean) / np.sqrt(np.maximum(var, 1e-300)))
    return np.concatenate(out) if out else np.zeros(0)


@functools.lru_cache(maxsize=256)
def student_t_quantile(p: float, dof: float) -> float:
    """The p quantile (0 < p < 1) of the standard Student-t with `dof`
    degrees of freedom (rounded to an integer >= 1): bisection on its
    closed-form distribution function (Abramowitz and Stegun 26.7.3-4) up
    to CORNISH_FISHER_ABOVE degrees, the Cornish-Fisher expansion in 1 / dof
    above (error below 1e-6 there)."""
    if not 0 < p < 1:
        raise ValueError(f"p must be in (0, 1); got {p!r}")
    dof = max(1, int(round(dof)))
    z = _normal_quantile(p)
    if dof > CORNISH_FISHER_ABOVE:
        return float(z + (z ** 3 + z) / (4 * dof)
                     + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * dof ** 2)
                     + (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / (384 * dof ** 3))
    target = abs(2 * p - 1)  # P(|T| < q)
    lo, hi = 0.0, 1.0
    while _central_t(hi, dof) < target:
        hi *= 2
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _central_t(mid, dof) < target else (lo, mid)
    return float(np.copysign(0.5 * (lo + hi), p - 0.5))


def _central_t(q: float, dof: int) -> float:
    """P(|T| < q) of Student-t with integer dof (A&S 26.7.3-4)."""
    theta = np.arctan(q / np.sqrt(dof))
    c2, s = np.cos(theta) ** 2, np.sin(theta)
    if dof % 2:  # odd
        term, total = np.cos(theta), 0.0
        for k in range(1, (dof - 1) // 2 + 1):
            total += term
            term *= c2 * (2 * k) / (2 * k + 1)
        return float(2 / np.pi * (theta + s * total)) if dof > 1 else float(2 / np.pi * theta)
    term, total = 1.0, 0.0
    for k in range(1, dof // 2 + 1):
        total += term
        term *= c2 * (2 * k - 1) / (2 * k)
    return float(s * total)


def _normal_quantile(p: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(p)


def covariance(p: dict, t1: np.ndarray, t2: np.ndarray) -> np.ndarray:
    """[n1, n2] sum_c amplitude_c^2 k_c(t1, t2) of checked params p at
    centred times, from gpcore.kernels as predict builds it."""
    import tensorflow as tf

    a, b = tf.constant(t1[None]), tf.constant(t2[None])
    d = distances(a, b)
    total = np.zeros((t1.size, t2.size))
    for base, c in zip(components(kernel_named(p["kernel"])), p["components"]):
        values = [tf.constant([c[name]], tf.float64) for name in base.parameters]
        total += c["amplitude"] ** 2 * base.covariance(base.feature(d, a, b), values)[0].numpy()
    return total


def _observed(series: Series) -> tuple[np.ndarray, np.ndarray]:
    """(t [n], y [n]): the finite points, sorted by time."""
    t = np.asarray(series.t, dtype=np.float64).reshape(-1)
    y = np.asarray(series.y, dtype=np.float64).reshape(-1)
    keep = np.isfinite(t) & np.isfinite(y)
    order = np.argsort(t[keep], kind="stable")
    return t[keep][order], y[keep][order]


def _solve(lower: np.ndarray, b: np.ndarray) -> np.ndarray:
    """lower^-1 b for a lower-triangular factor: a triangular solve, a
    quarter of the time of numpy's general solve, which factors it again
    (docs/design.md, "Forecast intervals")."""
    import tensorflow as tf

    return tf.linalg.triangular_solve(tf.constant(lower), tf.constant(b), lower=True).numpy()


def _cholesky(kff: np.ndarray, noise_variance: float) -> np.ndarray:
    """Lower Cholesky factor of kff + noise I, with predict's jitters."""
    scale = float(np.max(np.diag(kff)))
    for jitter in JITTERS:
        try:
            return np.linalg.cholesky(kff + (noise_variance + jitter * scale) * np.eye(len(kff)))
        except np.linalg.LinAlgError:
            continue
    raise ValueError(f"the covariance of the {len(kff)} observed points is not positive "
                     f"definite even with jitter {JITTERS[-1]:g} x amplitude^2; check "
                     "noise_variance and amplitude")

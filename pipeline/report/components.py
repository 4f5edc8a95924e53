"""The posterior mean of each part of a sum of kernels, for the plots.

With f = f_1 + ... + f_m independent, f_c ~ GP(0, amplitude_c^2 k_c), and
A = Σ_c amplitude_c^2 K_c(t, t) + noise_variance I on the observed points,
the posterior mean of one part at new times t* is

    mean_c(t*) = amplitude_c^2 K_c(t*, t) A^-1 (y - mean),

and the parts add up to gpcore.predict's mean minus the constant mean: the
trend of an rbf+periodic fit apart from its seasonal cycle.
(gpcore has no such function yet; it belongs beside gpcore.predict.)
"""
from __future__ import annotations

from typing import Mapping

import numpy as np
import tensorflow as tf

from gpcore.kernels import distances, kernel as kernel_named
# predict's factorisation, jitter and all: the parts must add up to its mean.
from gpcore.predict import DTYPE, _cholesky, checked_params  # pylint: disable=protected-access
from gpcore.series import Series


def component_means(series: Series, row: Mapping, t_new) -> list[np.ndarray]:
    """[m] posterior mean of each component of row["components"] at t_new.

    Args:
      series: the observed series; non-finite points are dropped.
      row: a params row with status ok (or any params gpcore.predict takes).
      t_new: [m] times, in the units of series.t.
    Returns:
      One float64 array [m] per component, in their order, in units of y,
      around 0 (the constant mean is not in any of them).
    Raises:
      ValueError: bad params (as for gpcore.predict), or a covariance that
        is not positive definite even with jitter.
    """
    p = checked_params(row)
    t = np.asarray(series.t, np.float64)
    y = np.asarray(series.y, np.float64)
    keep = np.isfinite(t) & np.isfinite(y)
    t, y = t[keep], y[keep]
    t_new = np.asarray(t_new, np.float64).reshape(-1)
    if t.size == 0:
        return [np.zeros_like(t_new) for _ in p["components"]]
    centre = 0.5 * (t.min() + t.max())  # stationary kernels: centring changes nothing but round-off
    t, t_new = t - centre, t_new - centre
    total = tf.add_n([_covariance(c, t, t) for c in p["components"]])  # [n, n]
    amp2 = sum(c["amplitude"] ** 2 for c in p["components"])
    alpha = tf.linalg.cholesky_solve(_cholesky(total, p["noise_variance"], amp2),
                                     tf.constant((y - p["mean"])[:, None]))  # [n, 1]: A^-1 r
    return [tf.matmul(_covariance(c, t_new, t), alpha)[:, 0].numpy() for c in p["components"]]


def _covariance(component: Mapping, t1: np.ndarray, t2: np.ndarray) -> tf.Tensor:
    """[n1, n2] amplitude^2 k(|t1 - t2|) of one component."""
    kernel = kernel_named(component["kernel"])
    shape = [tf.constant([component[name]], DTYPE) for name in kernel.parameters]
    unit = kernel.matrix(kernel.feature(distances(tf.constant(t1[None]), tf.constant(t2[None]))),
                         shape)[0]
    return component["amplitude"] ** 2 * unit

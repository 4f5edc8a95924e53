"""Posterior predictions of a fitted GP at new times.

The model is the one the fitter fits: y(t) = mean + f(t) + noise, with
f ~ GP(0, sum_c amplitude_c^2 k_c(t, t')) for the unit-amplitude kernels
k_c of the fitted kernel (one, or a sum's components) from gpcore.kernels, and independent Gaussian noise of variance noise_variance.
Given the observed points (t, y), the posterior of f at new times t* is
Gaussian with

    mean(t*) = mean + K*x A^-1 (y - mean)
    var(t*)  = k(t*, t*) - diag(K*x A^-1 Kx*),

where A = Kxx + noise_variance I is factored once by Cholesky, and
k(t*, t*) is sum_c amplitude_c^2 for stationary kernels (each unit kernel
is 1 at distance 0). Times are centred on the midpoint of the observed
span, which is also the centre c of `linear`'s (t - c)(t' - c), and
stationary kernels are built from |t_i - t_j| directly
(gpcore/kernels.py): with raw times such as Unix seconds, x^2 + y^2 - 2xy
loses the precision the covariance needs.
"""
from __future__ import annotations

import math
from typing import Mapping, Union

import numpy as np
import tensorflow as tf

from gpcore.config import takes_markov_path
from gpcore.kernels import components, distances, kernel as kernel_named
from gpcore.result import COMPONENT_FIELDS, OK, FitResult
from gpcore.series import Series

DTYPE = tf.float64

# Diagonal jitter, relative to amplitude^2, tried in turn when A is not
# numerically positive definite (e.g. noise_variance 0 and repeated times).
# The first is 0: well-posed parameters are used exactly as given.
JITTERS = (0.0, 1e-10, 1e-8, 1e-6)


def predict(series: Series, params: Union[Mapping, FitResult], t_new,
            include_noise: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mean and standard deviation at t_new given a series' data.

    Args:
      series: the observed series; points where t or y is NaN or +-inf are
        dropped, as the fitter drops them.
      params: a FitResult with status "ok", or a mapping with keys kernel,
        mean, noise_variance (units of y squared) and components (per
        summed kernel: kernel, amplitude (standard deviation, units of y;
        of the slope, y per unit of t, for "linear"), length_scale (units
        of t; unitless for "periodic"; none for "linear"), period (units
        of t; "periodic" only)), as FitResult.params gives them; a single
        kernel may give amplitude, length_scale and period flat instead.
      t_new: [m] times at which to predict, in the units of series.t.
      include_noise: if True, the standard deviation is that of a new
        observation (f plus noise); by default that of the latent f.
    Returns:
      (mean [m], std [m]), float64 numpy arrays in the units of y. With no
      finite observations this is the prior: (mean, its sd: the total
      amplitude of the stationary parts; a linear part, whose centre the
      data set, is left out).
    Raises:
      ValueError: params are missing, not finite or out of range, or the
        series' t and y differ in length.
    """
    p = checked_params(params)
    t, y, t_new = _observed(series, t_new)
    if takes_markov_path(p["kernel"], t.size):  # O(n): docs/design.md, "Long series"
        from gpcore.markov_predict import posterior
        mean, var = posterior(p, t, y, t_new)
    elif t.size == 0:
        amp2 = sum(c["amplitude"] ** 2 for base, c in _parts(p) if not base.amplitude_per_time)
        mean, var = np.full_like(t_new, p["mean"]), np.full_like(t_new, amp2)
    else:
        t, t_new = _centred(t, t_new)
        prior_var = _prior_variance(p, t_new)  # [m]
        kxx = _covariance(p, t, t)  # [n, n]
        ksx = _covariance(p, t_new, t)  # [m, n]
        chol = _cholesky(kxx, p["noise_variance"], _jitter_scale(p, t))  # [n, n]
        resid = tf.constant((y - p["mean"])[:, None])  # [n, 1]
        alpha = tf.linalg.cholesky_solve(chol, resid)  # [n, 1] = A^-1 (y - mean)
        v = tf.linalg.triangular_solve(chol, tf.transpose(ksx))  # [n, m] = L^-1 Kx*
        mean = p["mean"] + tf.matmul(ksx, alpha)[:, 0].numpy()
        # Round-off can make the difference slightly negative far inside the data.
        var = np.maximum(prior_var - tf.reduce_sum(v * v, axis=0).numpy(), 0.0)
    if include_noise:
        var = var + p["noise_variance"]
    return mean, np.sqrt(var)


def component_means(series: Series, params: Union[Mapping, FitResult],
                    t_new) -> list[np.ndarray]:
    """The posterior mean of each component of a (summed) kernel at t_new.

    With f = f_1 + ... + f_m independent, f_c ~ GP(0, amplitude_c^2 k_c),
    mean_c(t*) = amplitude_c^2 K_c(t*, t) A^-1 (y - mean): the trend of an
    rbf+periodic fit apart from its seasonal cycle. The parts add up to
    predict's mean less the constant mean.

    Args, Raises: as predict.
    Returns:
      One float64 array [m] per component, in their order, units of y.
    """
    p = checked_params(params)
    t, y, t_new = _observed(series, t_new)
    if t.size == 0:
        return [np.zeros_like(t_new) for _ in p["components"]]
    if takes_markov_path(p["kernel"], t.size):  # O(n): docs/design.md, "Long series"
        from gpcore.markov_predict import posterior
        return posterior(p, t, y, t_new, parts=True)
    t, t_new = _centred(t, t_new)
    alpha = tf.linalg.cholesky_solve(
        _cholesky(_covariance(p, t, t), p["noise_variance"], _jitter_scale(p, t)),
        tf.constant((y - p["mean"])[:, None]))  # [n, 1]
    return [tf.matmul(part, alpha)[:, 0].numpy() for part in _covariance(p, t_new, t, total=False)]


def _observed(series: Series, t_new) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t [n], y [n], t_new [m]): the finite points, checked."""
    t = np.asarray(series.t, dtype=np.float64).reshape(-1)
    y = np.asarray(series.y, dtype=np.float64).reshape(-1)
    if t.shape != y.shape:
        raise ValueError(f"series {series.series_id!r}: t has {t.size} values but y has "
                         f"{y.size}; give one time per value")
    t_new = np.asarray(t_new, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(t_new)):
        raise ValueError("t_new must be finite; it holds NaN or inf")
    finite = np.isfinite(t) & np.isfinite(y)
    return t[finite], y[finite], t_new


def _centred(t: np.ndarray, t_new: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both shifted by the data's midpoint: stationary kernels see only
    differences, and small times keep them precise; `linear` measures
    times from this centre."""
    centre = 0.5 * (t.min() + t.max())
    return t - centre, t_new - centre


def _parts(p: dict):
    """(base kernel, checked component) pairs of checked params p."""
    return zip(components(kernel_named(p["kernel"])), p["components"])


def _covariance(p: dict, t1: np.ndarray, t2: np.ndarray, total: bool = True):
    """[n1, n2] sum over components of amplitude_c^2 k_c(t1, t2) (centred
    times), or (total=False) the list of the components' terms."""
    a, b = tf.constant(t1[None]), tf.constant(t2[None])
    d = distances(a, b)
    parts = [c["amplitude"] ** 2 * base.matrix(
                 base.feature(d, a, b), [tf.constant([c[name]], DTYPE) for name in base.parameters])[0]
             for base, c in _parts(p)]
    return tf.add_n(parts) if total else parts


def _prior_variance(p: dict, t_new: np.ndarray) -> np.ndarray:
    """[m] k(t*, t*) at centred times: each point as its own batch row."""
    column = tf.constant(t_new[:, None])  # [m, 1]
    d = tf.zeros([t_new.size, 1, 1], DTYPE)
    parts = [c["amplitude"] ** 2 * base.matrix(
                 base.feature(d, column, column),
                 [tf.constant([c[name]], DTYPE) for name in base.parameters])[:, 0, 0]
             for base, c in _parts(p)]
    return tf.add_n(parts).numpy()


def _jitter_scale(p: dict, t: np.ndarray) -> float:
    """What the jitter is relative to: the largest prior variance at the
    observed centred times t (sum_c amplitude_c^2 for stationary kernels)."""
    return float(np.max(_prior_variance(p, t)))


def _cholesky(kxx: tf.Tensor, noise_variance: float, amp2: float) -> tf.Tensor:
    """Cholesky factor of kxx + noise I, adding jitter only if it fails."""
    n = int(kxx.shape[0])
    for jitter in JITTERS:
        cov = kxx + (noise_variance + jitter * amp2) * tf.eye(n, dtype=DTYPE)
        try:
            chol = tf.linalg.cholesky(cov)
        except tf.errors.InvalidArgumentError:  # raised on some builds instead of NaN
            continue
        if np.all(np.isfinite(tf.linalg.diag_part(chol).numpy())):
            return chol
    raise ValueError(
        f"the covariance of the {n} observed points is not positive definite even with "
        f"jitter {JITTERS[-1]:g} x amplitude^2; check noise_variance and amplitude")


def checked_params(params: Union[Mapping, FitResult]) -> dict:
    """A FitResult or mapping -> {kernel, mean, noise_variance, components}
    as floats, checked; single kernels also keep amplitude, length_scale and
    period (None unless periodic) flat.

    `components` (one dict per component of the kernel: kernel, amplitude,
    length_scale, period) is built from the flat amplitude, length_scale
    and period of a single kernel where they are given (as in an output
    row), and taken from params["components"] otherwise.

    Raises:
      ValueError: as predict does for bad params.
    """
    if isinstance(params, FitResult):
        if params.status != OK:
            raise ValueError(
                f"series {params.series_id!r} has status {params.status!r}, not 'ok'; "
                "only fitted series have parameters to predict with")
        params = params.params
    kernel = kernel_named(params.get("kernel"))
    bases = components(kernel)
    out = {"kernel": kernel.name}
    for name in ("mean", "noise_variance"):
        out[name] = _number(params, name)
    if out["noise_variance"] < 0:
        raise ValueError(f"params['noise_variance'] must be >= 0; got {out['noise_variance']!r}")
    given = params.get("components")
    if len(bases) == 1 and (params.get("amplitude") is not None or not given):
        given = [{name: params.get(name) for name in COMPONENT_FIELDS}]
    elif given is None or len(given) == 0:
        raise ValueError(f"params of kernel {kernel.name!r} need 'components', one per summed "
                         "kernel (or, for a single kernel, a flat amplitude)")
    if [c.get("kernel", kernel.name if len(bases) == 1 else None) for c in given] != \
            [b.name for b in bases]:
        raise ValueError(f"params['components'] must list the kernels of {kernel.name!r} in "
                         f"order; got {[c.get('kernel') for c in given]}")
    out["components"] = []
    for c, (base, part) in enumerate(zip(bases, given)):
        checked = {"kernel": base.name, "length_scale": None, "period": None}
        for name in ("amplitude", *base.parameters):
            checked[name] = _number(part, name, f"params['components'][{c}]")
            if checked[name] <= 0:
                raise ValueError(f"params['components'][{c}][{name!r}] must be > 0; "
                                 f"got {checked[name]!r}")
        out["components"].append(checked)
    if len(bases) == 1:
        out.update({name: out["components"][0][name] for name in COMPONENT_FIELDS[1:]})
    return out


def _number(mapping: Mapping, name: str, where: str = "params") -> float:
    """mapping[name] as a finite float; ValueError naming it otherwise."""
    value = mapping.get(name)
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{where}[{name!r}] must be a number; got {value!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"{where}[{name!r}] must be finite; got {value!r}")
    return value

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
span, which is also the centre c of `linear`'s (t - c)(t' - c) (or on the
fit's c where the caller gives it: --holdout's fit saw fewer points), and
stationary kernels are built from |t_i - t_j| directly
(gpcore/kernels.py): with raw times such as Unix seconds, x^2 + y^2 - 2xy
loses the precision the covariance needs.
"""
from __future__ import annotations

import collections
import math
import sys
import threading
import types
from typing import Callable, Mapping, NamedTuple, Optional, Union

import numpy as np
import tensorflow as tf

from gpcore.batching import past_slow_side
from gpcore.config import takes_markov_path
from gpcore.kernels import components, distances, kernel as kernel_named
from gpcore.result import COMPONENT_FIELDS, OK, FitResult
from gpcore.series import Series, numbers, points
from gpcore.traced import TRACING

DTYPE = tf.float64

# Diagonal jitter, relative to amplitude^2, tried in turn when A is not
# numerically positive definite (e.g. noise_variance 0 and repeated times).
# The first is 0: well-posed parameters are used exactly as given.
JITTERS = (0.0, 1e-10, 1e-8, 1e-6)


class Prediction(NamedTuple):
    """A posterior at new times, float64 numpy arrays [m] in the units of y:
    the mean, the sd of the latent f and the sd of a new observation (f
    plus the fitted noise)."""

    mean: np.ndarray
    sd: np.ndarray
    sd_observation: np.ndarray


def predict(series: Series, params: Union[Mapping, FitResult], t_new,
            include_noise: bool = False, centre: Optional[float] = None
            ) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mean and standard deviation at t_new given a series' data.

    Args:
      series: the observed series; points where t or y is NaN or +-inf are
        dropped, as the fitter drops them.
      params: a FitResult with status "ok", a row of params/ (a pandas
        row, a dict, polars' named row, an itertuples() namedtuple) or a
        mapping with keys kernel, mean, noise_variance (units of y squared)
        and components (per summed kernel: kernel, amplitude (standard
        deviation, units of y; of the slope, y per unit of t, for
        "linear"), length_scale (units of t; unitless for "periodic"; none
        for "linear"), period (units of t; "periodic" only)), as
        FitResult.params gives them; a single
        kernel may give amplitude, length_scale and period flat instead.
      t_new: [m] times at which to predict, in the units of series.t.
      include_noise: if True, the standard deviation is that of a new
        observation (f plus noise); by default that of the latent f.
      centre: `linear`'s centre c (units of t), the midpoint of the points
        the parameters were fitted on (fitted_centre), where those are not
        all of series' (--holdout's fit); by default series' own. Only
        `linear` depends on it.
    Returns:
      (mean [m], std [m]), float64 numpy arrays in the units of y. With no
      finite observations this is the prior: (mean, its sd: the total
      amplitude of the stationary parts; a linear part, whose centre the
      data set, is left out).
    Raises:
      ValueError: params are missing, not finite or out of range; series
        is no Series, or its t and y differ in length.
    """
    found = prediction(series, params, t_new, centre)
    return found.mean, found.sd_observation if include_noise else found.sd


def prediction(series: Series, params: Union[Mapping, FitResult], t_new,
               centre: Optional[float] = None) -> Prediction:
    """predict's posterior with both standard deviations at once (Args,
    Raises: as predict)."""
    p, centre = checked_params(params), _checked_centre(centre)
    t, y, t_new = _observed(series, t_new)
    # O(n): docs/design.md, "Long series: Markov kernels"
    if takes_markov_path(kernel_named(p["kernel"]), t.size):
        mean, var = _markov(p, t, y, t_new)
    elif t.size == 0:
        amp2 = sum(c["amplitude"] ** 2 for base, c in _parts(p) if not base.amplitude_per_time)
        mean, var = np.full_like(t_new, p["mean"]), np.full_like(t_new, amp2)
    else:
        parts, var = _solved(p, t, y, t_new, centre)
        mean = p["mean"] + parts.sum(axis=0)
        # Round-off can make the difference slightly negative far inside the data.
        var = np.maximum(var, 0.0)
    _refuse_not_finite(t_new, mean=mean, variance=var)
    return Prediction(mean, np.sqrt(var), np.sqrt(var + p["noise_variance"]))


def component_means(series: Series, params: Union[Mapping, FitResult],
                    t_new, centre: Optional[float] = None) -> list[np.ndarray]:
    """The posterior mean of each component of a (summed) kernel at t_new.

    With f = f_1 + ... + f_m independent, f_c ~ GP(0, amplitude_c^2 k_c),
    mean_c(t*) = amplitude_c^2 K_c(t*, t) A^-1 (y - mean): the trend of an
    rbf+periodic fit apart from its seasonal cycle. The parts add up to
    predict's mean less the constant mean.

    Args, Raises: as predict.
    Returns:
      One float64 array [m] per component, in their order, units of y.
    """
    p, centre = checked_params(params), _checked_centre(centre)
    t, y, t_new = _observed(series, t_new)
    if t.size == 0:
        return [np.zeros_like(t_new) for _ in p["components"]]
    # O(n): docs/design.md, "Long series: Markov kernels"
    if takes_markov_path(kernel_named(p["kernel"]), t.size):
        return _markov(p, t, y, t_new, parts=True)
    parts = _solved(p, t, y, t_new, centre)[0]
    _refuse_not_finite(t_new, mean=parts.sum(axis=0))
    return list(parts)


def _refuse_not_finite(t_new: np.ndarray, **posterior: np.ndarray) -> None:
    """ValueError naming the first of t_new [m] where a posterior value
    [m] (the mean, the variance: by name) is not finite: far from the data
    a linear part's variance amplitude^2 (t - c)^2 passes float64's largest
    (~1e154 / amplitude from c), and inf - inf gave NaN without a word,
    where the command's forecast refuses the series (docs/design.md,
    "Contracts", "A row given to gpcore")."""
    bad = np.flatnonzero(~np.all([np.isfinite(v) for v in posterior.values()], axis=0))
    if bad.size:
        i = int(bad[0])
        said = ", ".join(f"{name} {v[i]:g}" for name, v in posterior.items())
        raise ValueError(f"the posterior at t_new[{i}] = {t_new[i]:g} is not finite in float64 "
                         f"({said}): a linear part's variance, "
                         "amplitude^2 (t - centre)^2, overflows this far from the data; predict "
                         "nearer it")


def _markov(p: dict, t: np.ndarray, y: np.ndarray, t_new: np.ndarray, parts: bool = False):
    """gpcore.markov_predict.posterior (docs/design.md, "Long series:
    Markov kernels") with _solved's jitter ladder: with noise_variance 0
    the filters' innovations vanish at the observed times, which gave NaN
    (or a singular state covariance) where the dense posterior is exact."""
    from gpcore.markov_predict import posterior

    prior = sum(c["amplitude"] ** 2 for c in p["components"])

    def attempt(jitter: float):
        found = posterior(dict(p, noise_variance=p["noise_variance"] + jitter * prior),
                          t, y, t_new, parts=parts)
        return found if all(np.all(np.isfinite(v)) for v in found) else None
    return _jittered(attempt, f"the O(n) posterior of the {t.size} observed points is not "
                              "finite")


def _jittered(attempt: Callable, what: str):
    """attempt(jitter)'s first answer (not None) over JITTERS, smallest
    first; a raise of TensorFlow's (some builds raise where others give
    NaN) or numpy's linear algebra tries the next.

    Raises:
      ValueError: `what`, even with the largest jitter.
    """
    for jitter in JITTERS:
        try:
            found = attempt(jitter)
        except (tf.errors.InvalidArgumentError, np.linalg.LinAlgError):
            continue
        if found is not None:
            return found
    raise ValueError(f"{what} even with jitter {JITTERS[-1]:g} x amplitude^2; check "
                     "noise_variance and amplitude")


def _observed(series: Series, t_new) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t [n], y [n], t_new [m]): the finite points, checked."""
    t, y = points(series)
    t_new, problem = numbers(t_new, "t_new", "give times as numbers in the units of series.t",
                             vector="the times to predict at as a vector [m]")
    if problem:
        raise ValueError(problem)
    if not np.all(np.isfinite(t_new)):
        raise ValueError("t_new must be finite; it holds NaN or inf")
    finite = np.isfinite(t) & np.isfinite(y)
    return t[finite], y[finite], t_new


def fitted_centre(series: Series) -> Optional[float]:
    """`linear`'s centre c of parameters fitted on series (under --holdout,
    the part the fit saw: gpcore.series.split's): the midpoint of its
    finite points (units of t); None where it has none. Raises as
    gpcore.series.points."""
    t, y = points(series)
    t = t[np.isfinite(t) & np.isfinite(y)]
    return 0.5 * (float(t.min()) + float(t.max())) if t.size else None


def _checked_centre(centre) -> Optional[float]:
    """predict's `centre` as a float, or None; ValueError naming it where it
    is no finite number: NaN was said as A not positive definite, text or a
    timestamp as numpy's error from a subtraction."""
    if centre is None:
        return None
    array = np.asarray(centre)
    if array.dtype.kind not in "iuf" or array.size != 1 or not np.isfinite(array).all():
        raise ValueError("centre must be a finite number in the units of t (fitted_centre's) or "
                         f"None; got {centre!r}")
    return float(array.reshape(-1)[0])


def _centred(t: np.ndarray, t_new: np.ndarray,
             centre: Optional[float] = None) -> tuple[np.ndarray, np.ndarray]:
    """Both shifted by `centre`, by default the data's midpoint: stationary
    kernels see only differences, and small times keep them precise;
    `linear` measures times from this centre, the fit's (its f(c) = 0
    pins the line to the fitted mean there)."""
    if centre is None:
        centre = 0.5 * (t.min() + t.max())
    return t - centre, t_new - centre


def _parts(p: dict):
    """(base kernel, checked component) pairs of checked params p."""
    return zip(components(kernel_named(p["kernel"])), p["components"])


def _solved(p: dict, t: np.ndarray, y: np.ndarray, t_new: np.ndarray,
            centre: Optional[float] = None) -> tuple[np.ndarray, np.ndarray]:
    """(component means less the mean [C, m], latent variance [m]) at t_new
    from the n >= 1 finite points (t, y), by the kernel's compiled
    posterior, `linear` centred at `centre` (predict's); jitter is added
    only where A's Cholesky fails."""
    t, t_new = _centred(t, t_new, centre)
    amplitudes = np.array([c["amplitude"] for c in p["components"]])
    shape = np.array([c[name] for base, c in _parts(p) for name in base.parameters],
                     dtype=np.float64)
    solve = compiled_posterior(p["kernel"])

    # The scalars go in as 0-d arrays: TensorFlow keeps a tensor for every
    # distinct Python (or NumPy) scalar a function is called with, never
    # freed, and each series has its own noise variance (docs/design.md,
    # "Measured facts", *Long-running workers*).
    noise_variance = np.asarray(p["noise_variance"], dtype=np.float64)
    extra = np.asarray(past_slow_side(t.size), dtype=np.int32)

    def attempt(jitter: float):
        parts, var, ok = solve(t, y - p["mean"], t_new, amplitudes, shape,
                               noise_variance, np.asarray(jitter, dtype=np.float64), extra)
        return (parts.numpy(), var.numpy()) if ok else None
    return _jittered(attempt, f"the covariance of the {t.size} observed points is not "
                              "positive definite")


# Held while a kernel's posterior is looked up or built: lru_cache alone
# let threads that asked for it at once each build and trace their own.
_BUILDING = threading.Lock()
# Compiled posteriors kept, by kernel name, least recently used first. A
# traced one holds 2-6 MiB (5.5 for a sum of three) and sums make 241
# names: kept without bound, a process trying them all (fit_frame in a
# notebook) would grow by 1.3 GiB. A run predicts with its kernel or auto's
# candidates, far fewer; past the bound the least recently used goes and is
# traced again if asked (1-2.5 s).
MAX_POSTERIORS = 32
_POSTERIORS: "collections.OrderedDict[str, Callable]" = collections.OrderedDict()


def compiled_posterior(kernel_name: str):
    """The posterior of one kernel (a name gpcore.kernels knows) as a
    tf.function traced once per process, at its first use, and kept
    while among the MAX_POSTERIORS most recently used: shapes are [None],
    so every series and grid length runs the same graph.

    It takes (t [n] and t_new [m] centred times, resid [n] = y - mean,
    amplitudes [C], shape [P] (the components' shape parameters in order),
    noise_variance, jitter (relative to the largest prior variance at t),
    extra (points of identity beside A: gpcore.batching.past_slow_side(n)))
    and returns (component means [C, m], latent variance [m] before
    clipping at 0, whether A's Cholesky factor is finite).
    """
    with _BUILDING:
        solve = _POSTERIORS.pop(kernel_name, None) or _posterior(kernel_name)
        _POSTERIORS[kernel_name] = solve  # the most recently used
        while len(_POSTERIORS) > MAX_POSTERIORS:
            _POSTERIORS.popitem(last=False)
        return solve


def _posterior(kernel_name: str):
    """compiled_posterior's function, built and traced."""
    bases = components(kernel_named(kernel_name))
    sizes = [len(base.parameters) for base in bases]
    vector, scalar = tf.TensorSpec([None], DTYPE), tf.TensorSpec([], DTYPE)

    @tf.function(input_signature=[vector, vector, vector, tf.TensorSpec([len(bases)], DTYPE),
                                  tf.TensorSpec([sum(sizes)], DTYPE), scalar, scalar,
                                  tf.TensorSpec([], tf.int32)])
    def solve(t, resid, t_new, amplitudes, shape, noise_variance, jitter, extra):
        params = [[shape_c[i:i + 1] for i in range(size)]  # [1] each: one batch row
                  for shape_c, size in zip(tf.split(shape, sizes), sizes)]

        def terms(t1, t2):
            """[n1, n2] amplitude_c^2 k_c(t1, t2) per component."""
            a, b = t1[None], t2[None]
            d = distances(a, b)
            return [tf.square(amplitudes[c]) * base.covariance(base.feature(d, a, b), params[c])[0]
                    for c, base in enumerate(bases)]

        def prior_variance(times):
            """[m] k(t*, t*): each point as its own batch row."""
            column = times[:, None]  # [m, 1]
            d = tf.zeros(tf.stack([tf.size(times), 1, 1]), DTYPE)
            return tf.add_n([
                tf.square(amplitudes[c]) * base.covariance(base.feature(d, column, column),
                                                           params[c])[:, 0, 0]
                for c, base in enumerate(bases)])

        n = tf.size(t)
        added = noise_variance + jitter * tf.reduce_max(prior_variance(t))
        a = tf.add_n(terms(t, t)) + added * tf.eye(n, dtype=DTYPE)
        # On a side that is a multiple of 256 the Cholesky is 1.3-1.8x
        # slower (docs/design.md, "Padded lengths off multiples of 256"):
        # there `extra` rows of identity go beside A, with zero residuals
        # and zero cross covariance, which changes nothing.
        a = tf.cond(extra > 0, lambda: _beside_identity(a, extra), lambda: a)
        chol = tf.linalg.cholesky(a)
        ok = tf.reduce_all(tf.math.is_finite(tf.linalg.diag_part(chol)))
        resid = tf.pad(resid, [[0, extra]])
        alpha = tf.linalg.cholesky_solve(chol, resid[:, None])  # [n (+ extra), 1] = A^-1 (y - mean)
        cross = [tf.pad(k, [[0, 0], [0, extra]]) for k in terms(t_new, t)]  # [m, n (+ extra)]
        parts = tf.stack([tf.matmul(k, alpha)[:, 0] for k in cross])  # [C, m]
        v = tf.linalg.triangular_solve(chol, tf.transpose(tf.add_n(cross)))  # [n (+ extra), m] = L^-1 Kx*
        return parts, prior_variance(t_new) - tf.reduce_sum(v * v, axis=0), ok

    with TRACING:  # as every trace of the process: one at a time (gpcore/traced.py)
        solve.get_concrete_function()
    return solve


compiled_posterior.cache_clear = _POSTERIORS.clear  # a fresh start, for tests


def _beside_identity(a, extra):
    """[n + extra, n + extra]: a [n, n] and the identity, block-diagonal."""
    eye = tf.eye(extra, dtype=a.dtype)
    return tf.concat([tf.pad(a, [[0, 0], [0, extra]]), tf.pad(eye, [[0, 0], [tf.shape(a)[0], 0]])],
                     axis=0)


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
        _refuse_unfitted(params.series_id, params.status, params.error)
        params = params.params
    if hasattr(params, "columns") and hasattr(params, "shape"):  # pandas', polars', Arrow's
        rows = params.shape[0]
        raise ValueError(f"params must be one row of params/, not a table (a "
                         f"{type(params).__name__} of {rows} row{'s' * (rows != 1)}): select the "
                         "series' row, e.g. params[params.series_id == ID].iloc[0] (pandas), "
                         ".row(0, named=True) (polars)")
    if callable(getattr(params, "_asdict", None)):  # a namedtuple: pandas' itertuples() row
        params = params._asdict()
    if not callable(getattr(params, "get", None)):  # a mapping, or a pandas row of the output
        raise ValueError("params must be a FitResult or a mapping as FitResult.params gives "
                         f"it; got a {type(params).__name__}")
    # A row of params/ says why it has no parameters (docs/design.md,
    # "Contracts"): its NaN or null mean named neither the series nor that.
    _refuse_unfitted(params.get("series_id"), params.get("status"), params.get("error"))
    for name in ("kernel", "mean", "noise_variance"):
        if name not in params:  # a column left out of a row: "got None" named a value
            raise ValueError(f"params has no {name!r}; give the row with its parameter columns "
                             "(kernel, mean, noise_variance, and components or amplitude, "
                             "length_scale, period)")
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
    if [str(c.get("kernel", kernel.name if len(bases) == 1 else None)) for c in given] != \
            [b.name for b in bases]:  # str: a Kernel's is its name
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
        # Its square is the variance: past float64 the prior raised
        # OverflowError, and the posterior said the covariance was not
        # positive definite, naming nothing.
        if math.isinf(checked["amplitude"] * checked["amplitude"]):
            raise ValueError(f"params['components'][{c}]['amplitude'] {checked['amplitude']!r} "
                             "is too large: its square overflows float64; rescale y")
        out["components"].append(checked)
    if len(bases) == 1:
        out.update({name: out["components"][0][name] for name in COMPONENT_FIELDS[1:]})
    return out


def _refuse_unfitted(series_id, status, error) -> None:
    """ValueError naming the series, its status and its reason where status
    is a status other than "ok" (None or a reader's NaN: no status given)."""
    if isinstance(status, str) and status != OK:
        why = f" ({error})" if isinstance(error, str) and error else ""
        raise ValueError(f"series {series_id!r} has status {status!r}, not 'ok'{why}; only "
                         "fitted series have parameters to predict with")


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


class _CallableModule(types.ModuleType):
    """This module, callable as its `predict`: gpcore exports the function
    under the module's name, and the import system binds the loaded module
    to that name on the package, so `from gpcore import predict` and
    `gpcore.predict` find the module, whichever was imported first."""

    def __call__(self, *args, **kwargs):
        return predict(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

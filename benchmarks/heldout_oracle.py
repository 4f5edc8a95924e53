"""The scikit-learn oracle of the held-out sets, and gaps scored by one numpy nll.

The oracle is GaussianProcessRegressor set up as a competent user would
(the same set-up as benchmarks/peers.py except the period's bounds):
ConstantKernel * RBF(span/10, bounds span/1000..10 span) [+ ConstantKernel
* ExpSineSquared(l 1, bounds 1e-2..1e2; period span/8 clipped into the
bounds)] + WhiteKernel(0.1), normalize_y, L-BFGS-B, REFERENCE_RESTARTS
starts, 1 BLAS thread per process, 2 processes. The period is bounded to
[median spacing, span/2]: a periodic part needs at least two cycles in the
data (docs/design.md, "Held-out sets").

Both sides are scored by the same numpy likelihood (`row_nll`, the textbook
Cholesky formula on raw y) at their fitted parameters, so neither side's own
bookkeeping (sklearn's standardised units, gpcore's fitted mean) enters the
gap. gpcore rows with a kernel `row_nll` does not know fall back to the
fitter's own nll (counted in `Gaps.own_nll`).
"""
from __future__ import annotations

import dataclasses
import math
import os
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import peers  # noqa: E402
import quality  # noqa: E402

REFERENCE_RESTARTS = quality.REFERENCE_RESTARTS
DESCRIPTIONS = {
    "rbf": peers.DESCRIPTION,
    "rbf+periodic": ("ConstantKernel * RBF(span/10, bounds span/1000..10 span) "
                     "+ ConstantKernel * ExpSineSquared(l 1, bounds 1e-2..1e2; period span/8, "
                     "bounds median spacing..span/2) + WhiteKernel(0.1), normalize_y, L-BFGS-B"),
}


def spacing_and_span(t: np.ndarray) -> tuple[float, float]:
    """(median positive spacing, span) of sorted times t [n], units of t."""
    span = max(float(t[-1] - t[0]), 1e-12)
    gaps = np.diff(t)
    return (float(np.median(gaps[gaps > 0])) if np.any(gaps > 0) else span), span


def period_bounds(t: np.ndarray) -> tuple[float, float]:
    """[median spacing, span/2] of sorted times t: at least two cycles in the data."""
    spacing, span = spacing_and_span(t)
    return min(spacing, span / 2), span / 2


def regressor(t: np.ndarray, kernel: str, restarts: int, seed: int):
    """The unfitted GaussianProcessRegressor for sorted finite times t [n]."""
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, ExpSineSquared, WhiteKernel

    _, span = spacing_and_span(t)
    model = ConstantKernel(1.0, (1e-5, 1e5)) * RBF(span / 10, (span / 1000, 10 * span))
    if kernel == "rbf+periodic":
        low, high = period_bounds(t)
        model = model + ConstantKernel(1.0, (1e-5, 1e5)) * ExpSineSquared(
            1.0, float(np.clip(span / 8, low, high)), (1e-2, 1e2), (low, high))
    elif kernel != "rbf":
        raise ValueError(f"oracle kernel must be rbf or rbf+periodic, got {kernel!r}")
    model = model + WhiteKernel(0.1, (1e-5, 1e1))
    return GaussianProcessRegressor(model, normalize_y=True, optimizer="fmin_l_bfgs_b",
                                    n_restarts_optimizer=restarts - 1, random_state=seed)


def _raw_row(fitted, mean: float, std: float) -> dict:
    """A fitted sklearn kernel (on standardised y) as a gpcore-style row in
    raw units: {mean, noise_variance, components: [{kernel, amplitude, ...}]}."""
    from sklearn.gaussian_process.kernels import RBF, ExpSineSquared, Product, Sum, WhiteKernel

    row = {"mean": mean, "noise_variance": 0.0, "components": []}

    def walk(k):
        if isinstance(k, Sum):
            walk(k.k1)
            walk(k.k2)
        elif isinstance(k, WhiteKernel):
            row["noise_variance"] += k.noise_level * std ** 2
        elif isinstance(k, Product):
            amplitude = math.sqrt(k.k1.constant_value) * std
            shape = k.k2
            if isinstance(shape, ExpSineSquared):
                row["components"].append({"kernel": "periodic", "amplitude": amplitude,
                                          "length_scale": shape.length_scale,
                                          "period": shape.periodicity})
            elif isinstance(shape, RBF):
                row["components"].append({"kernel": "rbf", "amplitude": amplitude,
                                          "length_scale": shape.length_scale, "period": None})
            else:
                raise TypeError(type(shape).__name__)
        else:
            raise TypeError(type(k).__name__)

    walk(fitted)
    return row


def sklearn_fit(task) -> dict:
    """task (t, y, kernel, restarts, seed) -> {"row": raw-unit parameters,
    "own_nll": sklearn's nll in raw units, "seconds"}; row None if it failed."""
    from sklearn.exceptions import ConvergenceWarning

    t, y, kernel, restarts, seed = task
    start = time.perf_counter()
    finite = np.isfinite(t) & np.isfinite(y)
    t, y = np.asarray(t, float)[finite], np.asarray(y, float)[finite]
    order = np.argsort(t, kind="stable")
    t, y = t[order], y[order]
    try:
        gp = regressor(t, kernel, restarts, seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # optimum at a bound
            gp.fit(t[:, None], y)
        # normalize_y: the density of (y - mean) / std, times std^n for raw y.
        own = float(-gp.log_marginal_likelihood_value_ + y.size * np.log(np.std(y)))
        row = _raw_row(gp.kernel_, float(np.mean(y)), float(np.std(y)))
    except Exception:  # pylint: disable=broad-except  (a failed fit is a result)
        row, own = None, None
    return {"row": row, "own_nll": own, "seconds": time.perf_counter() - start}


def oracle_fits(series, kernel: str, cache: str | None) -> dict:
    """{"fits": [sklearn_fit's dict] in the order of `series`, "wall_s"}.

    cache: a JSON file reused when it was written for the same series,
    oracle set-up and scikit-learn version (quality.stamp)."""
    import multiprocessing

    wanted, saved = quality.cached(cache, DESCRIPTIONS[kernel], series)
    if saved is not None:
        return saved
    tasks = [(s.t, s.y, kernel, REFERENCE_RESTARTS, seed) for seed, s in enumerate(series)]
    saved_env = {name: os.environ.get(name) for name in peers.BLAS_THREAD_VARIABLES}
    peers.one_blas_thread()  # spawned workers read it before their numpy loads
    start = time.perf_counter()
    try:
        with multiprocessing.get_context("spawn").Pool(
                peers.PROCESSES, initializer=peers._init_worker) as pool:  # noqa: SLF001
            fits = list(pool.imap(sklearn_fit, tasks, chunksize=1))
    finally:
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    out = {**wanted, "kernel": kernel, "fits": fits, "wall_s": time.perf_counter() - start}
    quality.save(cache, out)
    return out


# ---- one numpy likelihood for both sides --------------------------------------

def _unit_kernel(c: dict, d: np.ndarray):
    """The unit-amplitude kernel matrix of component c at distances d, or None
    for a kernel this reference does not know."""
    name, ell = c["kernel"], c.get("length_scale")
    if name == "rbf":
        return np.exp(-0.5 * (d / ell) ** 2)
    if name == "matern32":
        r = np.sqrt(3.0) * d / ell
        return (1.0 + r) * np.exp(-r)
    if name == "matern52":
        r = np.sqrt(5.0) * d / ell
        return (1.0 + r + r * r / 3.0) * np.exp(-r)
    if name == "periodic":
        return np.exp(-2.0 * np.sin(np.pi * d / c["period"]) ** 2 / ell ** 2)
    return None


def row_nll(row: dict, t: np.ndarray, y: np.ndarray) -> float | None:
    """Negative log marginal likelihood (nats) of the finite points of y [n]
    at times t [n] under a row (mean, noise_variance, components as in
    FitResult.params); None when a component's kernel is not known here or
    the covariance is not positive definite."""
    keep = np.isfinite(t) & np.isfinite(y)
    t, y = np.asarray(t, float)[keep], np.asarray(y, float)[keep]
    d = np.abs(t[:, None] - t[None, :])
    cov = row["noise_variance"] * np.eye(t.size)
    for c in row["components"]:
        unit = _unit_kernel(c, d)
        if unit is None:
            return None
        cov = cov + c["amplitude"] ** 2 * unit
    try:
        chol = np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        return None
    z = np.linalg.solve(chol, y - row["mean"])
    return float(0.5 * z @ z + np.log(np.diag(chol)).sum() + 0.5 * t.size * np.log(2 * np.pi))


@dataclasses.dataclass
class Gaps(quality.GapMeasures):
    """gpcore against the oracle on one set.

    Attributes:
      ids: [n] series ids; gaps: [n] nll_gpcore - nll_oracle (nats, both by
        row_nll; +inf where gpcore gave no fit, NaN where the oracle failed).
      own_nll: how many gpcore rows were scored by the fitter's own nll.
    """

    ids: list
    gaps: np.ndarray
    own_nll: int


def gaps(series, results, fits) -> Gaps:
    """Scores [FitResult] against oracle fits (oracle_fits()["fits"]), per series."""
    out, own = [], 0
    for s, r, f in zip(series, results, fits):
        theirs = None if f["row"] is None else row_nll(f["row"], s.t, s.y)
        if theirs is None:
            out.append(math.nan)
            continue
        if r.status != "ok" or r.nll is None or not math.isfinite(r.nll):
            out.append(math.inf)
            continue
        ours = row_nll(r.params, s.t, s.y)
        if ours is None:
            own += 1
            ours = r.nll
        out.append(ours - theirs)
    return Gaps([s.series_id for s in series], np.array(out, dtype=float), own)


def fit_gpcore(config, series, work: dict | None = None):
    """(results, wall seconds): `series` fitted by build_fitter(config), its
    trace done on two series before the clock starts. `work`, if given, gets
    the fitter's work counters of the timed fit (Newton evaluations...) and
    its process CPU seconds (`process_cpu_s`)."""
    import gpcore

    fitter = gpcore.build_fitter(config)
    fitter.fit(series[:2])
    before = dict(getattr(fitter, "work", {}))
    start, cpu = time.perf_counter(), time.process_time()
    results = fitter.fit(series)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    if work is not None:
        work.update({k: v - before.get(k, 0) for k, v in getattr(fitter, "work", {}).items()})
        work["process_cpu_s"] = cpu
    return results, seconds

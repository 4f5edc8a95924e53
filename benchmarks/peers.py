"""The scikit-learn peer: GaussianProcessRegressor set up as a competent user
would, the one reference for both the benchmark and the quality tests.

Model: a sum of ConstantKernel * shape kernel per component, + WhiteKernel,
on y standardised by its sample mean and std (normalize_y), L-BFGS-B,
`restarts` starts (the first from the initial values below, the others
drawn log-uniformly within the bounds by sklearn, seeded). Components, with
span and median spacing h of t (units of t):
- rbf, matern52: initial length scale span/10, bounds span/1000 to 10 x span
  (the kernels' defaults, length scale 1 in raw time units, made the peer
  about 3x slower: docs/design.md, "Measured facts");
- periodic: ExpSineSquared, exp(-2 sin^2(pi d / p) / l^2) as in sklearn's
  source, the same parametrisation as TFP's ExpSinSquared (l unitless);
  initial period span/8 (within the bounds) with bounds h to span/2,
  gpcore's (a cycle must be seen at least twice: docs/design.md, "Periods
  the data can support"), a plain default start: a user does not look for
  the period in the data first (gpcore does: its grid starts from
  periodogram peaks); initial l 1, bounds 1e-2 to 1e2 (gpcore's).
Small matrices want one BLAS thread per process, and two processes on two
cores (same section): `nlls` runs a pool set up that way.
"""
from __future__ import annotations

import os
import time
import warnings

import numpy as np

BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
PROCESSES = 2
DESCRIPTION = ("ConstantKernel * RBF(span/10, bounds span/1000..10 span) + WhiteKernel(0.1), "
               "normalize_y, L-BFGS-B")
# The sums' peer, as DESCRIPTION is the single RBF's (cache keys name it).
SEASONAL_DESCRIPTION = ("ConstantKernel * RBF(span/10, bounds span/1000..10 span) "
                        "+ ConstantKernel * ExpSineSquared(l 1, bounds 1e-2..1e2; period span/8, "
                        "bounds spacing..span/2) + WhiteKernel(0.1), normalize_y, L-BFGS-B")
DESCRIPTIONS = {"rbf": DESCRIPTION, "rbf+periodic": SEASONAL_DESCRIPTION}


def one_blas_thread(environ=os.environ) -> None:
    """One BLAS/OpenMP thread: effective only before numpy loads in the process
    (or a process started from it with this environment)."""
    for name in BLAS_THREAD_VARIABLES:
        environ[name] = "1"


def _component(name: str, t: np.ndarray):
    """ConstantKernel * the sklearn kernel of gpcore's kernel `name`, started
    and bounded relative to the span and median spacing of sorted times t [n]."""
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, ExpSineSquared, Matern

    span = max(float(t[-1] - t[0]), 1e-12)
    gaps = np.diff(t)
    spacing = float(np.median(gaps[gaps > 0])) if np.any(gaps > 0) else span
    length = dict(length_scale=span / 10, length_scale_bounds=(span / 1000, 10 * span))
    # gpcore's period bounds (gpcore/starts.py): a cycle seen at least twice.
    periods = (min(spacing, span / 4), span / 2)
    shapes = {
        "rbf": lambda: RBF(**length),
        "matern52": lambda: Matern(nu=2.5, **length),
        "periodic": lambda: ExpSineSquared(
            length_scale=1.0, length_scale_bounds=(1e-2, 1e2),
            periodicity=float(np.clip(span / 8, *periods)), periodicity_bounds=periods),
    }
    # Amplitudes are in standardised units (normalize_y): the data variance
    # is 1, so these bounds leave four or more decades either side.
    return ConstantKernel(1.0, constant_value_bounds=(1e-5, 1e5)) * shapes[name]()


def regressor(t: np.ndarray, restarts: int, seed: int, kernel: str = "rbf"):
    """The configured, unfitted GaussianProcessRegressor for sorted times t [n]
    and gpcore's kernel name ("rbf", "rbf+periodic", ...)."""
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import WhiteKernel

    model = WhiteKernel(noise_level=0.1, noise_level_bounds=(1e-5, 1e1))
    for name in reversed(kernel.split("+")):
        model = _component(name, t) + model
    return GaussianProcessRegressor(model, normalize_y=True, optimizer="fmin_l_bfgs_b",
                                    n_restarts_optimizer=restarts - 1, random_state=seed)


def sklearn_fit(t: np.ndarray, y: np.ndarray, restarts: int, seed: int,
                kernel: str = "rbf") -> tuple[float, float | None]:
    """(best negative log marginal likelihood of the finite points, nats, raw
    units; fitted period in units of t, or None without a periodic part).

    t, y: [n] times and values (NaN in y = missing). sklearn fits
    (y - mean) / std (std with ddof=0) with the mean fixed, so its density is
    the raw one times std^n: n log(std) converts back. Raises if the fit fails.
    """
    from sklearn.exceptions import ConvergenceWarning

    finite = np.isfinite(y)
    t, y = np.asarray(t, float)[finite], np.asarray(y, float)[finite]
    order = np.argsort(t, kind="stable")
    t, y = t[order], y[order]
    gp = regressor(t, restarts, seed, kernel)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # optimum at a bound
        gp.fit(t[:, None], y)
    periods = [v for k, v in gp.kernel_.get_params().items() if k.endswith("__periodicity")]
    return (float(-gp.log_marginal_likelihood_value_ + y.size * np.log(np.std(y))),
            float(periods[0]) if periods else None)


def sklearn_nll(t: np.ndarray, y: np.ndarray, restarts: int, seed: int) -> float:
    """sklearn_fit's nll for the single RBF kernel."""
    return sklearn_fit(t, y, restarts, seed)[0]


# ---- a pool of single-BLAS-thread processes ----------------------------------

_WORKER_THREADS = None  # BLAS/OpenMP threads this worker runs, per threadpoolctl


def _init_worker():
    global _WORKER_THREADS
    from threadpoolctl import threadpool_info, threadpool_limits

    # The environment already said 1 if numpy loaded after it; this holds
    # even where it did not (a forked parent with threaded BLAS).
    threadpool_limits(limits=1)
    _WORKER_THREADS = max((p["num_threads"] for p in threadpool_info()), default=1)


def fit(task) -> tuple:
    """task (t, y, restarts, seed, kernel) -> (nll or None if the fit failed,
    seconds, worker pid, BLAS threads of the worker, fitted period or None)."""
    t, y, restarts, seed, kernel = task
    start = time.perf_counter()
    try:
        nll, period = sklearn_fit(t, y, restarts, seed, kernel)
    except Exception:  # pylint: disable=broad-except  (a failed fit is a result)
        nll = period = None
    return nll, time.perf_counter() - start, os.getpid(), _WORKER_THREADS, period


def nlls(series, restarts: int, processes: int = PROCESSES, start_method: str = "spawn",
         kernel: str = "rbf"):
    """[fit()'s tuple] for series [(t, y)], the k-th seeded with k, fitted
    with `kernel` in a pool of `processes` one-BLAS-thread processes.

    "spawn" starts clean interpreters (safe after TensorFlow has started
    threads in this one); "fork" starts faster where nothing else has.
    """
    import multiprocessing

    tasks = [(t, y, restarts, seed, kernel) for seed, (t, y) in enumerate(series)]
    saved = {name: os.environ.get(name) for name in BLAS_THREAD_VARIABLES}
    one_blas_thread()  # spawned workers read it before their numpy loads
    try:
        context = multiprocessing.get_context(start_method)
        with context.Pool(processes, initializer=_init_worker) as pool:
            return list(pool.imap(fit, tasks, chunksize=1))
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

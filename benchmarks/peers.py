"""The scikit-learn peer: GaussianProcessRegressor set up as a competent user
would, the one reference for both the benchmark and the quality tests.

Model: ConstantKernel * RBF + WhiteKernel on y standardised by its sample mean
and std (normalize_y), L-BFGS-B, `restarts` starts (the first from the initial
values below, the others drawn log-uniformly within the bounds by sklearn,
seeded). Initial length scale span/10 with bounds span/1000 to 10 x span in
the units of t (the kernels' defaults, length scale 1 in raw time units, made
the peer about 3x slower: docs/design.md, "Measured facts").
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


def one_blas_thread(environ=os.environ) -> None:
    """One BLAS/OpenMP thread: effective only before numpy loads in the process
    (or a process started from it with this environment)."""
    for name in BLAS_THREAD_VARIABLES:
        environ[name] = "1"


def regressor(span: float, restarts: int, seed: int):
    """The configured, unfitted GaussianProcessRegressor for times spanning `span`."""
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    # Amplitude and noise are in standardised units (normalize_y): the data
    # variance is 1, so these bounds leave four or more decades either side.
    kernel = (ConstantKernel(1.0, constant_value_bounds=(1e-5, 1e5))
              * RBF(length_scale=span / 10, length_scale_bounds=(span / 1000, 10 * span))
              + WhiteKernel(noise_level=0.1, noise_level_bounds=(1e-5, 1e1)))
    return GaussianProcessRegressor(kernel, normalize_y=True, optimizer="fmin_l_bfgs_b",
                                    n_restarts_optimizer=restarts - 1, random_state=seed)


def sklearn_nll(t: np.ndarray, y: np.ndarray, restarts: int, seed: int) -> float:
    """Best negative log marginal likelihood of the finite points, nats, raw units.

    t, y: [n] times and values (NaN in y = missing). sklearn fits
    (y - mean) / std (std with ddof=0) with the mean fixed, so its density is
    the raw one times std^n: n log(std) converts back. Raises if the fit fails.
    """
    from sklearn.exceptions import ConvergenceWarning

    finite = np.isfinite(y)
    t, y = np.asarray(t, float)[finite], np.asarray(y, float)[finite]
    gp = regressor(max(float(np.ptp(t)), 1e-12), restarts, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # optimum at a bound
        gp.fit(t[:, None], y)
    return float(-gp.log_marginal_likelihood_value_ + y.size * np.log(np.std(y)))


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
    """task (t, y, restarts, seed) -> (nll or None if the fit failed, seconds,
    worker pid, BLAS threads of the worker)."""
    t, y, restarts, seed = task
    start = time.perf_counter()
    try:
        nll = sklearn_nll(t, y, restarts, seed)
    except Exception:  # pylint: disable=broad-except  (a failed fit is a result)
        nll = None
    return nll, time.perf_counter() - start, os.getpid(), _WORKER_THREADS


def nlls(series, restarts: int, processes: int = PROCESSES, start_method: str = "spawn"):
    """[(nll or None, seconds, pid, BLAS threads)] for series [(t, y)], the k-th
    seeded with k, fitted in a pool of `processes` one-BLAS-thread processes.

    "spawn" starts clean interpreters (safe after TensorFlow has started
    threads in this one); "fork" starts faster where nothing else has.
    """
    import multiprocessing

    tasks = [(t, y, restarts, seed) for seed, (t, y) in enumerate(series)]
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

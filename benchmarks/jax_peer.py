"""The JAX peer: a compiled GP fitter as a strong JAX user would write it,
for the speed benchmark (benchmarks/speed.py). Bench-only: needs the
`jaxbench` extra (jax, jaxlib, optax).

Model and objective are gpfit's (docs/design.md, "The fitter"): constant
mean + RBF + noise, covariance s^2 (K1 + r I), times standardised to [0, 1]
and values to zero mean and unit variance; the GLS mean and the scale s^2
profiled out, so L-BFGS searches (log length scale, log r) only.

How it is built (docs/design.md, "The JAX peer"):
- float64 throughout;
- series bucketed by length (BUCKET_STEP points) and padded with a mask:
  a padded point's row and column of the covariance are the identity's and
  its value zero, so it adds nothing to log|C| or the quadratic form;
- an analytic gradient: a custom VJP of (log|C|, min_mu (y - mu)'C^-1(y - mu))
  with respect to C (C^-1 and -a a', a = C^-1 (y - mu)), chained through the
  elementwise kernel by JAX;
- optax L-BFGS with its zoom line search, in a lax.while_loop per series, a
  lax.scan over CHUNK series, inside one jax.jit per bucket length;
- one start: length scale 0.03 of the span, r = 0.1 (`--start-lengths`
  gives others, or more, each run in turn by `lax.map` and the lowest
  kept). Its first form started at a tenth of the span and missed the
  quality target (98.7-99.1 % within 0.01 nats of scikit-learn); 0.03 met
  it with fewer iterations (docs/design.md, "The JAX peer");
- PROCESSES (2) processes of one XLA thread each, one taking chunks from
  the short end of the work, the other from the long end, so each compiles
  about half of the bucket shapes (on first use; the fitting time is that
  in compiled calls, compilation excluded);
- optionally JAX's persistent compilation cache (a folder a nightly job
  keeps): cold when empty, warm on the next run.

    python benchmarks/jax_peer.py DATA.npz OUT.json [--cache-dir DIR]
        [--start-lengths 0.03[,0.1...]]

writes the contender JSON of benchmarks/contenders.py: ids, nll (numpy's, at
the peer's fitted parameters in raw units), timing, info.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

if __name__ == "__main__":
    # Before numpy loads: the numpy likelihood of every fit runs here, on
    # small matrices (threaded BLAS on them: docs/design.md, "The JAX peer").
    for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_name] = "1"

import numpy as np  # noqa: E402

PROCESSES = 2
BUCKET_STEP = 16  # points: padding to the next multiple (a longer series pads less, relatively)
CHUNK = 16  # series per compiled call (lax.scan length); the last chunk of a bucket is padded
MAX_ITERATIONS = 100
GRADIENT_TOLERANCE = 1e-5  # L-BFGS stops when |grad| (nats per log parameter) is below
# Spans, one L-BFGS run from each: 0.03 chosen on workload a among 0.02-0.2
# and checked on 1,000 fresh draws (docs/design.md, "The JAX peer").
START_LENGTHS = (0.03,)
START_NOISE_RATIO = 0.1
LOG_2PI = math.log(2.0 * math.pi)


def configure(threads: int = 1, cache_dir: str | None = None):
    """Imports JAX with `threads` XLA CPU threads, float64 and (if cache_dir)
    the persistent compilation cache for every compile. Call before any
    other import of jax in the process. Returns the jax module."""
    # JAX's CPU Cholesky and triangular solves call LAPACK/BLAS (scipy's
    # OpenBLAS): threaded, a solve with 80 right-hand sides took 8-16 ms of
    # CPU instead of 0.14 (docs/design.md, "The JAX peer").
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = str(threads)
    flags = os.environ.get("XLA_FLAGS", "")
    if threads == 1 and "multi_thread_eigen" not in flags:
        flags += " --xla_cpu_multi_thread_eigen=false"
    os.environ["XLA_FLAGS"] = flags.strip()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    jax.config.update("jax_enable_x64", True)
    if cache_dir:
        jax.config.update("jax_compilation_cache_dir", cache_dir)
        # Every compile is cached, however short or small: the nightly job
        # wants all of its shapes back.
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return jax


# ---- the compiled fitter ----------------------------------------------------

def _build(start_lengths=START_LENGTHS):
    """The jitted fit of a [CHUNK, L] chunk (one compile per L), from each
    of start_lengths (spans) in turn, the lowest kept."""
    import jax
    import jax.numpy as jnp
    import optax
    from jax.scipy.linalg import cho_solve

    @jax.custom_vjp
    def terms(cov, y, mask):
        """(log|C|, q = min_mu (y - mu m)'C^-1(y - mu m)) for C [L, L]."""
        return _forward(cov, y, mask)[0]

    def _forward(cov, y, mask):
        chol = jnp.linalg.cholesky(cov)
        z = cho_solve((chol, True), jnp.stack([y, mask], axis=-1))  # C^-1 [y, m]
        yy, y1, one1 = y @ z[:, 0], mask @ z[:, 0], mask @ z[:, 1]
        mu = y1 / one1
        a = z[:, 0] - mu * z[:, 1]  # C^-1 (y - mu m)
        log_det = 2.0 * jnp.sum(jnp.log(jnp.diag(chol)))
        return (log_det, yy - y1 * mu), (chol, a)

    def _backward(saved, cotangent):
        chol, a = saved
        g_det, g_q = cotangent
        # d log|C| = C^-1; d q = -a a' (mu is optimal: its own change drops out).
        inverse = cho_solve((chol, True), jnp.eye(chol.shape[0], dtype=chol.dtype))
        return g_det * inverse - g_q * jnp.outer(a, a), None, None

    terms.defvjp(_forward, _backward)

    def covariance(theta, sq, mask):
        """C = K1 + r I on observed points, the identity on padded ones."""
        length2, ratio = jnp.exp(2.0 * theta[0]), jnp.exp(theta[1])
        kmat = jnp.exp(-0.5 * sq / length2) + ratio * jnp.eye(mask.size, dtype=sq.dtype)
        observed = jnp.outer(mask, mask) > 0
        return jnp.where(observed, kmat, jnp.diag(1.0 - mask))

    def objective(theta, sq, y, mask):
        """Profiled nll of standardised values, nats."""
        n = jnp.sum(mask)
        log_det, q = terms(covariance(theta, sq, mask), y, mask)
        return 0.5 * (n * (LOG_2PI + jnp.log(q / n) + 1.0) + log_det)

    solver = optax.lbfgs()  # zoom line search (strong Wolfe) by default

    def fit_one(sq, y, mask, theta0):
        def value(theta):
            return objective(theta, sq, y, mask)

        value_and_grad = optax.value_and_grad_from_state(value)

        def step(carry):
            theta, state = carry
            v, g = value_and_grad(theta, state=state)
            updates, state = solver.update(g, state, theta, value=v, grad=g, value_fn=value)
            return optax.apply_updates(theta, updates), state

        def running(carry):
            _, state = carry
            count = optax.tree_utils.tree_get(state, "count")
            grad = optax.tree_utils.tree_get(state, "grad")
            return (count == 0) | ((count < MAX_ITERATIONS)
                                   & (optax.tree_utils.tree_norm(grad) >= GRADIENT_TOLERANCE))

        theta, state = jax.lax.while_loop(running, step, (theta0, solver.init(theta0)))
        # The profile's mean and scale at the optimum (no gradient needed).
        cov = covariance(theta, sq, mask)
        chol = jnp.linalg.cholesky(cov)
        z = cho_solve((chol, True), jnp.stack([y, mask], axis=-1))
        mu = (mask @ z[:, 0]) / (mask @ z[:, 1])
        n = jnp.sum(mask)
        scale2 = (y @ z[:, 0] - (mask @ z[:, 0]) * mu) / n
        return (theta, mu, scale2, value(theta),
                optax.tree_utils.tree_get(state, "count"))

    @jax.jit
    def fit_chunk(t, y, mask):
        """t, y, mask: [CHUNK, L] standardised times and values, 1/0 mask."""
        starts = jnp.array([[math.log(length), math.log(START_NOISE_RATIO)]
                            for length in start_lengths])

        def body(carry, xs):
            ts, ys, ms = xs
            sq = (ts[:, None] - ts[None, :]) ** 2
            runs = jax.lax.map(lambda theta0: fit_one(sq, ys, ms, theta0), starts)
            best = jnp.argmin(jnp.where(jnp.isfinite(runs[3]), runs[3], jnp.inf))
            # Iterations: all the runs'; the rest: the lowest run's.
            return carry, tuple(r[best] for r in runs[:4]) + (jnp.sum(runs[4]),)

        return jax.lax.scan(body, 0, (t, y, mask))[1]

    return fit_chunk


# ---- data: standardise, bucket, pad -------------------------------------------

def bucket_length(n: int) -> int:
    return BUCKET_STEP * math.ceil(n / BUCKET_STEP)


def standardise(t: np.ndarray, y: np.ndarray) -> dict:
    """Finite points of one series, t to [0, 1] and y to zero mean, unit sd."""
    keep = np.isfinite(y)
    t, y = np.asarray(t, float)[keep], np.asarray(y, float)[keep]
    order = np.argsort(t, kind="stable")
    t, y = t[order], y[order]
    span = max(float(t[-1] - t[0]), 1e-12)
    sd = float(np.std(y)) or 1.0
    return {"t": t, "y": y, "t0": float(t[0]), "span": span, "ym": float(np.mean(y)), "sd": sd,
            "ts": (t - t[0]) / span, "ys": (y - np.mean(y)) / sd}


def chunks(prepared: list[dict]) -> list[tuple[int, list[int]]]:
    """[(bucket length L, [series index] of up to CHUNK)], shortest first."""
    by_length: dict[int, list[int]] = {}
    for k, p in enumerate(prepared):
        by_length.setdefault(bucket_length(p["ts"].size), []).append(k)
    return [(length, members[i:i + CHUNK])
            for length, members in sorted(by_length.items())
            for i in range(0, len(members), CHUNK)]


def padded(prepared: list[dict], length: int, members: list[int]):
    """[CHUNK, length] t, y, mask; a short chunk repeats its first series."""
    rows = members + [members[0]] * (CHUNK - len(members))
    t, y, mask = (np.zeros((CHUNK, length)) for _ in range(3))
    for r, k in enumerate(rows):
        n = prepared[k]["ts"].size
        t[r, :n], y[r, :n], mask[r, :n] = prepared[k]["ts"], prepared[k]["ys"], 1.0
    return t, y, mask


def raw_parameters(p: dict, theta, mu, scale2) -> dict:
    """Fitted parameters in the caller's units from the standardised fit."""
    return {"mean": p["ym"] + p["sd"] * float(mu),
            "amplitude": p["sd"] * math.sqrt(float(scale2)),
            "length_scale": p["span"] * math.exp(float(theta[0])),
            "noise_variance": p["sd"] ** 2 * float(scale2) * math.exp(float(theta[1]))}


def numpy_nll(t, y, mean, amplitude, length_scale, noise_variance) -> float:
    """-log N(y | mean, a^2 RBF(l) + noise I), nats: the textbook Cholesky
    formula in numpy (Rasmussen & Williams, Algorithm 2.1), on raw points."""
    d = t[:, None] - t[None, :]
    cov = amplitude ** 2 * np.exp(-0.5 * (d / length_scale) ** 2) + noise_variance * np.eye(t.size)
    chol = np.linalg.cholesky(cov)
    z = np.linalg.solve(chol, y - mean)
    return float(0.5 * (z @ z) + np.sum(np.log(np.diag(chol))) + 0.5 * t.size * LOG_2PI)


# ---- the worker processes ----------------------------------------------------

def _next_chunk(front: bool, ends, lock) -> int | None:
    """The index of the next chunk to fit, from the short end (front) or the
    long end; None once the two ends have met."""
    with lock:
        if ends[0] >= ends[1]:
            return None
        if front:
            ends[0] += 1
            return ends[0] - 1
        ends[1] -= 1
        return ends[1]


def _worker(front, cache_dir, prepared_path, work, ends, lock, results,
            start_lengths=START_LENGTHS):
    """One process: JAX on one thread; fits chunks of `work` from one end
    (the other process takes the other end, so each compiles about half of
    the bucket shapes), compiling a shape when first met; then puts its
    results [(series index, theta, mu, scale2, nll, iterations)] and timing."""
    begun = time.perf_counter()
    jax = configure(1, cache_dir)
    import jax.numpy as jnp

    with np.load(prepared_path, allow_pickle=True) as f:
        prepared = list(f["prepared"])
    fit_chunk = _build(start_lengths)
    timing = {"import_s": time.perf_counter() - begun, "compile_s": 0.0, "fit_s": 0.0,
              "fit_cpu_s": 0.0, "shapes": 0, "chunks": 0}
    compiled, rows = {}, []
    while (index := _next_chunk(front, ends, lock)) is not None:
        length, members = work[index]
        if length not in compiled:
            t0 = time.perf_counter()
            shape = jax.ShapeDtypeStruct((CHUNK, length), jnp.float64)
            compiled[length] = fit_chunk.lower(shape, shape, shape).compile()
            timing["compile_s"] += time.perf_counter() - t0
            timing["shapes"] += 1
        t0, c0 = time.perf_counter(), time.process_time()
        theta, mu, scale2, nll, count = (np.asarray(a) for a in
                                         compiled[length](*padded(prepared, length, members)))
        timing["fit_s"] += time.perf_counter() - t0
        timing["fit_cpu_s"] += time.process_time() - c0
        timing["chunks"] += 1
        rows += [(k, theta[r].tolist(), float(mu[r]), float(scale2[r]), float(nll[r]),
                  int(count[r])) for r, k in enumerate(members)]
    timing["whole_s"] = time.perf_counter() - begun
    results.put((rows, timing))


def fit(series, processes: int = PROCESSES, cache_dir: str | None = None,
        scratch: str | None = None, start_lengths=START_LENGTHS) -> dict:
    """Fits series [(t, y)] in `processes` (1 or 2) processes; returns
    {"fits": [{mean, amplitude, length_scale, noise_variance (raw units),
    nll (numpy), nll_jax, iterations}], "timing": {...}, "info": {...}}.
    Times in seconds; timing["fit_s"] (the busier process's time in compiled
    fits) excludes imports and compilation."""
    import multiprocessing
    import tempfile

    if processes not in (1, 2):
        raise ValueError(f"processes: 1 or 2 (one per end of the work); got {processes}")
    prepared = [standardise(t, y) for t, y in series]
    work = chunks(prepared)
    folder = tempfile.mkdtemp(prefix="jax-peer-", dir=scratch)
    prepared_path = os.path.join(folder, "prepared.npz")
    holder = np.empty(len(prepared), dtype=object)
    holder[:] = prepared
    np.savez(prepared_path, prepared=holder)

    context = multiprocessing.get_context("spawn")  # clean interpreters for XLA's threads
    lock = context.Lock()
    ends = context.Array("i", [0, len(work)], lock=False)
    results = context.Queue()
    workers = [context.Process(target=_worker, args=(k == 0, cache_dir, prepared_path, work,
                                                     ends, lock, results, start_lengths))
               for k in range(processes)]
    for w in workers:
        w.start()
    rows, timings = {}, []
    for _ in workers:
        done, timing = results.get()
        rows.update({k: r for k, *r in done})
        timings.append(timing)
    for w in workers:
        w.join()
    os.remove(prepared_path)
    os.rmdir(folder)

    fits = []
    for k, p in enumerate(prepared):
        theta, mu, scale2, nll_std, count = rows[k]
        params = raw_parameters(p, theta, mu, scale2)
        try:
            nll = numpy_nll(p["t"], p["y"], **params)
        except np.linalg.LinAlgError:
            nll = None
        # The standardised nll in raw units: a density in y/sd is sd^n times the raw one.
        fits.append({**params, "nll": nll, "nll_jax": nll_std + p["t"].size * math.log(p["sd"]),
                     "iterations": count})
    return {"fits": fits,
            "timing": {"fit_s": max(t["fit_s"] for t in timings),
                       "fit_cpu_s": sum(t["fit_cpu_s"] for t in timings),
                       "compile_s_max": max(t["compile_s"] for t in timings),
                       "import_s_max": max(t["import_s"] for t in timings),
                       "workers": timings},
            "info": {"shapes": sorted({length for length, _ in work}), "chunks": len(work),
                     "start_lengths": list(start_lengths),
                     "processes": processes, "chunk": CHUNK, "bucket_step": BUCKET_STEP}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/jax_peer.py", description=__doc__.split("\n")[0])
    parser.add_argument("data", help=".npz of benchmarks/contenders.py prepare")
    parser.add_argument("out", help="contender JSON to write")
    parser.add_argument("--cache-dir", default=None,
                        help="JAX persistent compilation cache folder (default: none)")
    parser.add_argument("--processes", type=int, default=PROCESSES)
    parser.add_argument("--start-lengths", default=",".join(map(str, START_LENGTHS)),
                        help="start length scales, spans, comma-separated (default "
                             "%(default)s, chosen on workload a; 0.1 is the "
                             "peer's first form)")
    args = parser.parse_args(argv)
    begun = time.perf_counter()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from contenders import load

    series = load(args.data)
    start_lengths = tuple(float(v) for v in args.start_lengths.split(","))
    out = fit([(t, y) for _, t, y in series], args.processes, args.cache_dir,
              os.path.dirname(os.path.abspath(args.out)), start_lengths)
    timing = out["timing"]
    timing["whole_s"] = time.perf_counter() - begun
    # Everything but the fits: interpreter and JAX start-up, data, compilation.
    timing["one_off_s"] = timing["whole_s"] - timing["fit_s"]
    fits = out["fits"]
    result = {"ids": [i for i, _, _ in series], "nll": [f["nll"] for f in fits],
              "ok": [f["nll"] is not None for f in fits], "timing": timing,
              "info": {**out["info"], "cache": "none" if not args.cache_dir else args.cache_dir,
                       "iterations_mean": float(np.mean([f["iterations"] for f in fits])),
                       "nll_jax": [f["nll_jax"] for f in fits]}}
    with open(args.out, "w") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())

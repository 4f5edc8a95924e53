"""The benchmark's contenders; speed.py runs each in a process of its own so
that its time and memory are its own.

    python benchmarks/contenders.py KIND SPEC.json OUT.json

KIND is one of:
  prepare   generate a workload (fixed seed) into SPEC["data"] (.npz for the
            in-process contenders) and SPEC["parquet"] (long format for the
            pipeline). Imports gpcore, hence TensorFlow: kept out of the others.
  gpcore    the fitter over the series, a copy per thread (--threads copies with
            one TF intra-op thread each, as the pipeline runs them); also
            measures this machine's float64 matrix-multiply rate.
  sklearn   the competent scikit-learn peer of benchmarks/peers.py (initial
            length scale span/10, bounds span/1000 to 10 x span, normalize_y)
            over the series in a Pool of processes, one BLAS thread each.
  realdata  fit quality on the real-data set (benchmarks/realdata.py): gpcore
            with FitConfig's defaults against the peer at 4 starts.
(The pipeline contender is the `gpfit` command itself; speed.py runs it.)

Every contender but realdata writes OUT.json: {"ids": [...], "nll": [... or
null], "ok": [...], "timing": {...}, "info": {...}}; realdata writes
quality.Comparison.to_json(). Times are seconds.
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402  (imports nothing heavy)

if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "sklearn":
    # Before numpy loads, here and in the forked pool workers: one BLAS/OpenMP
    # thread per process (docs/design.md, "Measured facts":
    # threaded BLAS on small matrices was 40x slower). speed.py also sets
    # these in the environment.
    peers.one_blas_thread()

import json  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

WARMUP_SERIES = 2  # series used to build and trace the fitter, ...
WARMUP_POINTS = 32  # ... cut to this many points, so the warm-up is nearly all overhead
MATMUL_N = 1024


# ---- data -------------------------------------------------------------------

def prepare(spec: dict) -> dict:
    """Writes the workload as .npz (ids, lengths, t, y concatenated) and Parquet."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from workloads import workload

    series = workload(spec["workload"], spec["count"])
    ids = np.array([str(s.series_id) for s in series])
    lengths = np.array([s.t.size for s in series])
    t = np.concatenate([s.t for s in series])
    y = np.concatenate([s.y for s in series])
    np.savez(spec["data"], ids=ids, lengths=lengths, t=t, y=y)
    os.makedirs(spec["parquet"], exist_ok=True)
    table = pa.table({"series_id": pa.array(np.repeat(ids, lengths), pa.string()),
                      "t": pa.array(t, pa.float64()),
                      # NaN marks a missing value (workload c), as in the input contract.
                      "y": pa.array(y, pa.float64())})
    pq.write_table(table, os.path.join(spec["parquet"], "series.parquet"))
    return {"ids": ids.tolist(), "points": int(lengths.sum()),
            "finite_points": int(np.isfinite(y).sum())}


def load(path: str) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """[(series id, t, y)] from prepare's .npz."""
    with np.load(path) as data:
        # Each data[...] reads the whole array again: read each once.
        ids, lengths, t, y = (data[k] for k in ("ids", "lengths", "t", "y"))
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    return [(str(i), t[a:b].copy(), y[a:b].copy())
            for i, a, b in zip(ids, bounds[:-1], bounds[1:])]


# ---- gpcore -----------------------------------------------------------------

def run_gpcore(spec: dict) -> dict:
    """Times the fitter's fit over the workload (build_fitter with a copy per
    thread), the one-off build/trace apart."""
    start = time.perf_counter()
    from gpcore.threads import configure_threads, skip_graph_rewrites
    # As the pipeline sets them (pipeline/runtime.py): intra- and inter-op alike.
    # As the pipeline runs a process's cores (pipeline/runtime.py): a fitter
    # copy per thread, one intra-op thread each, before TensorFlow runs any op.
    configure_threads(1, spec["threads"])
    skip_graph_rewrites()  # as the pipeline does
    from gpcore import Series, build_fitter
    from gpcore.config import at_search
    imported = time.perf_counter()

    series = [Series(i, t, y) for i, t, y in load(spec["data"])]
    config = at_search(spec["search"], kernel="rbf", restarts=spec["restarts"],
                       batch_size=spec["batch_size"], max_iterations=spec["max_iterations"],
                       tolerance=spec["tolerance"])
    built = time.perf_counter()
    fitter = build_fitter(config, copies=spec["threads"])
    warm = [Series(s.series_id, s.t[:WARMUP_POINTS], s.y[:WARMUP_POINTS])
            for s in series[:WARMUP_SERIES]]
    for copy in getattr(fitter, "fitters", [fitter]):  # every copy traces apart
        copy.fit(warm)
    traced = time.perf_counter()

    before = dict(fitter.work)
    cpu = time.process_time()
    results = fitter.fit(series)
    fitted = time.perf_counter()
    # CPU seconds (all threads) of the fits: less sensitive than wall time to
    # other work on the machine, for comparing levers.
    cpu = time.process_time() - cpu
    # Read with .get: the counters a fitter keeps may grow or change.
    work = {k: v - before.get(k, 0) for k, v in fitter.work.items()}
    flops = work.get("flops")

    rates = matmul_rates(spec["threads"])
    fit_s = fitted - traced
    return {
        "ids": [r.series_id for r in results],
        "nll": [r.nll if r.status == "ok" else None for r in results],
        "ok": [r.status == "ok" for r in results],
        "timing": {"import_s": imported - start, "build_trace_s": traced - built,
                   "one_off_s": (imported - start) + (traced - built), "fit_s": fit_s,
                   "fit_cpu_s": cpu},
        "info": {
            "config": {k: getattr(config, k) for k in
                       ("restarts", "batch_size", "max_iterations", "tolerance", "far_probes",
                        "probe_check")},
            "fitter_copies": spec["threads"], "intra_op_threads": 1,
            "traces": fitter.tracing_count,
            "batches": work.get("batches"),
            "member_evaluations": work.get("member_evaluations"),
            "iterations_mean": float(np.mean([r.iterations for r in results])),
            "converged_share": float(np.mean([r.converged for r in results])),
            "gflop": None if flops is None else flops / 1e9,
            "gflops": None if flops is None else flops / 1e9 / fit_s,
            **rates,
        },
    }


def matmul_rates(threads: int) -> dict:
    """This machine's float64 matrix-multiply rate, GFLOP/s: TensorFlow (its
    thread pools as configured) and numpy (1 and `threads` BLAS threads)."""
    import tensorflow as tf
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, MATMUL_N, MATMUL_N))
    flop = 2.0 * MATMUL_N ** 3

    def best_rate(multiply, repeats=5):
        multiply()  # warm: allocation, thread start, kernel choice
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            multiply()
            times.append(time.perf_counter() - start)
        return flop / min(times) / 1e9  # best of: least disturbed by other load

    ta, tb = tf.constant(a), tf.constant(b)
    rates = {"matmul_tf_gflops": best_rate(lambda: tf.linalg.matmul(ta, tb).numpy())}
    for n in sorted({1, threads}):
        with threadpool_limits(limits=n, user_api="blas"):
            rates[f"matmul_numpy_{n}thread_gflops"] = best_rate(lambda: a @ b)
    rates["matmul_peak_gflops"] = max(rates.values())
    return rates


# ---- scikit-learn -----------------------------------------------------------

def run_sklearn(spec: dict) -> dict:
    """Times a Pool of processes fitting the peer's GaussianProcessRegressor per series."""
    start = time.perf_counter()
    import sklearn
    import sklearn.gaussian_process  # noqa: F401  (import cost is one-off)
    imported = time.perf_counter()
    series = load(spec["data"])
    begun = time.perf_counter()
    # Same number of starts as gpcore's `restarts`, seeded per series. Fork:
    # nothing here has started threads, and the workers start at once.
    out = peers.nlls([(t, y) for _, t, y in series], spec["restarts"], spec["processes"],
                     start_method="fork")
    fit_s = time.perf_counter() - begun
    return {
        "ids": [i for i, _, _ in series],
        "nll": [o[0] for o in out],
        "ok": [o[0] is not None for o in out],
        "timing": {"import_s": imported - start, "one_off_s": imported - start,
                   "fit_s": fit_s},
        "info": {
            "sklearn_version": sklearn.__version__,
            "peer": peers.DESCRIPTION,
            "n_restarts_optimizer": spec["restarts"] - 1,
            "processes": spec["processes"],
            "worker_pids": len({o[2] for o in out}),
            # threadpoolctl in each worker: every BLAS/OpenMP pool has this many threads.
            "blas_threads_max": max(o[3] for o in out),
            "cpu_s_per_series": float(np.mean([o[1] for o in out])),
        },
    }


# ---- real-data quality ---------------------------------------------------------

def run_realdata(spec: dict) -> dict:
    """gpcore (FitConfig defaults but SPEC["search"], TF intra-op threads set
    first) against the peer at 4 starts on SPEC["count"] (all if null) real
    series."""
    from gpcore.threads import configure_threads
    configure_threads(spec["threads"], spec["threads"])
    import quality
    import realdata

    return quality.compare(realdata.spread(realdata.real_series(), spec["count"]),
                           search=spec["search"]).to_json()


def main(argv: list[str]) -> None:
    kind, spec_path, out_path = argv
    with open(spec_path) as f:
        spec = json.load(f)
    out = {"prepare": prepare, "gpcore": run_gpcore, "sklearn": run_sklearn,
           "realdata": run_realdata}[kind](spec)
    with open(out_path, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main(sys.argv[1:])

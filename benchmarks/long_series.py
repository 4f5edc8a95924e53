"""Long series in O(n): a matern32 fit of one series per length, with
CPU seconds and peak memory, each length in its own process (so that the
peak is that length's), beside the dense path at the lengths it can do.

    python benchmarks/long_series.py --sizes 10000,100000,1000000
    python benchmarks/long_series.py --sizes 10000,100000 --dense_sizes "" \
        --peer_sizes "" --kernels matern32+matern12,matern52+matern12

Columns: points, path, kernel, CPU s, us per point, first fit's CPU s,
peak MB, Newton evaluations of the fit (all stages; the whole series'
alone), CPU s of one whole-series value and gradient (what each
whole-series evaluation costs) and of one window evaluation (value,
gradient and Hessian on the window), the 1-minute load average at the
end, status; then per kernel the least-squares line CPU s = a + b n.
`--one N [--kernel K]` prints one size's row as JSON; `--rows FILE`
prints the table of such lines collected in a file. Sums are
fitted to the same matern32 draw: what they measure is the cost of their
larger state.

Peer, measured in the same run: celerite2 (O(n), one series at a time;
pip install gpfit[bench]) on the second series of each --peer_sizes.

The series is drawn from a matern32 state-space model (length scale 50
steps, noise ratio 0.1) on irregular times with 1 % missing values. The
first fit of a fitter traces and optimises its graph: on the O(n) path
it fits a series of WARM_POINTS (any length shares the trace); the table
reports the second fit, of n points (the steady cost on a worker), and
the first's CPU s.
Results: docs/design.md, "Long series: Markov kernels".
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np


def series(n: int, seed: int):
    """A matern32 sample of n points by its exact state-space recursion."""
    from gpcore.series import Series
    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.exponential(1.0, n))
    lam = np.sqrt(3.0) / 50.0
    state = rng.normal(size=2) * [1.0, lam]
    pinf = np.diag([1.0, lam * lam])
    # Transitions, noise factors and draws for all steps at once (the
    # random stream in the order a step-by-step loop draws it), then the
    # recursion itself step by step.
    dt = np.diff(t)[:, None, None]
    nil = np.array([[lam, 1.0], [-lam * lam, -lam]])
    a = np.exp(-lam * dt) * (np.eye(2) + nil * dt)
    q = pinf - a @ pinf @ np.swapaxes(a, 1, 2)
    w = (np.linalg.cholesky(q + 1e-15 * np.eye(2)) @ rng.normal(size=(n - 1, 2, 1)))[..., 0]
    x = np.zeros((n, 2))
    x0, x1 = state
    x[0] = state
    a = a.tolist()
    w = w.tolist()
    for k in range(1, n):
        (a00, a01), (a10, a11) = a[k - 1]
        x0, x1 = a00 * x0 + a01 * x1 + w[k - 1][0], a10 * x0 + a11 * x1 + w[k - 1][1]
        x[k, 0], x[k, 1] = x0, x1
    y = x[:, 0] + np.sqrt(0.1) * rng.normal(size=n) + 10.0
    y[rng.random(n) < 0.01] = np.nan
    return Series(f"n{n}_{seed}", t, y)


# The O(n) path's first fit (the trace): a series just over MARKOV_ABOVE.
WARM_POINTS = 5000


def one(n: int, dense: bool, kernel: str = "matern32") -> dict:
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    from gpcore.config import FitConfig
    from gpcore.fitter import GPFitter
    fitter = GPFitter(FitConfig(kernel=kernel))
    path = "markov" if fitter.long_fitter is not None and n > 4096 else "dense"
    if dense:
        fitter.long_fitter = None  # the dense path, for the peer column
        path = "dense"
    # The first fit traces: on the O(n) path a short series does it (the
    # function takes any length), so that only one long series is fitted.
    data = [series(WARM_POINTS if path == "markov" else n, 1), series(n, 2)]
    seconds = []
    for s in data:
        before = dict(fitter.long_fitter.work) if path == "markov" else {}
        start = time.process_time()
        result = fitter.fit([s])[0]
        seconds.append(time.process_time() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    work = fitter.long_fitter.work if path == "markov" else {}
    done = lambda key: work.get(key, 0) - before.get(key, 0)
    row = {"n": n, "path": path, "kernel": kernel, "first_cpu_s": seconds[0], "cpu_s": seconds[1],
           "evaluations": done("member_evaluations"),
           "series_evaluations": done("series_evaluations"),
           "peak_mb": peak, "status": result.status, "nll": result.nll,
           "length_scale": result.length_scale, "iterations": result.iterations,
           "load": os.getloadavg()[0]}
    if path == "markov":
        row.update(evaluation_seconds(fitter.long_fitter, data[1]))
    return row


def evaluation_seconds(fitter, s) -> dict:
    """CPU seconds of one whole-series value and gradient (the chunked
    scan's: what each whole-series Newton evaluation costs) and of one
    window evaluation (value, gradient and forward-difference Hessian:
    each window Newton step), at the standardised series' grid start; each
    the second call of its function (the first traces)."""
    from gpcore.fitter import _StandardisedBatch
    from gpcore.series import clean
    from gpcore.markov_fitter import WINDOW_POINTS
    cleaned = clean(s, fitter.config.min_points, fitter.config.max_points)[0]
    data = _StandardisedBatch([cleaned], np.zeros(1, np.int32))
    x = np.zeros((1, len(fitter.parameters)))
    x[0, :-1] = np.log(0.05)
    x[0, -1] = np.log(0.1)
    w = WINDOW_POINTS
    timed = {}
    for name, call in [
            ("value_gradient_s", lambda: fitter._gradient_compiled(x, data.t, data.y, data.mask)),
            ("window_evaluation_s", lambda: fitter._with_hessian(
                x, data.t[:, :w], data.y[:, :w], data.mask[:, :w]))]:
        call()
        start = time.process_time()
        call()
        timed[name] = time.process_time() - start
    return timed


def peer(n: int) -> dict:
    """celerite2 (pip install gpfit[bench]): the same model (constant mean,
    Matern32Term, white noise) fitted by scipy's L-BFGS-B on log parameters
    from the truth's order of magnitude, gradients by finite differences."""
    import celerite2
    import scipy.optimize
    from celerite2 import terms
    s = series(n, 2)
    keep = np.isfinite(s.y)
    t, y = s.t[keep], s.y[keep]

    def nll(x):
        mean, log_sigma, log_rho, log_noise = x
        gp = celerite2.GaussianProcess(terms.Matern32Term(sigma=np.exp(log_sigma),
                                                          rho=np.exp(log_rho)), mean=mean)
        gp.compute(t, diag=np.exp(2 * log_noise))
        return -gp.log_likelihood(y)

    start = time.process_time()
    best = scipy.optimize.minimize(nll, [float(np.mean(y)), 0.0, np.log(20.0), np.log(0.5)],
                                   method="L-BFGS-B")
    seconds = time.process_time() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return {"n": n, "path": "celerite2", "kernel": "matern32", "evaluations": int(best.nfev),
            "first_cpu_s": seconds, "cpu_s": seconds,
            "peak_mb": peak, "status": "ok" if best.success else "not converged",
            "nll": float(best.fun), "length_scale": float(np.exp(best.x[2])),
            "iterations": int(best.nit)}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--dense_sizes", default="1024,4096")
    parser.add_argument("--kernels", default="matern32",
                        help="kernels fitted at --sizes, comma-separated (sums: matern32+matern12)")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--kernel", default="matern32", help=argparse.SUPPRESS)
    parser.add_argument("--dense", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--peer", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--rows", help="a file of --one runs' JSON lines: print their table")
    parser.add_argument("--peer_sizes", default="10000,100000,1000000",
                        help="celerite2's sizes (pip install gpfit[bench]); empty: none")
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(peer(args.one) if args.peer else one(args.one, args.dense, args.kernel)))
        return
    if args.rows:
        with open(args.rows) as f:
            table([json.loads(line) for line in f if line.startswith("{")])
        return
    rows = []
    jobs = [(int(n), ["--dense"]) for n in args.dense_sizes.split(",") if n]
    jobs += [(int(n), ["--kernel", k])
             for k in args.kernels.split(",")
             for n in args.sizes.split(",") if n]
    jobs += [(int(n), ["--peer"]) for n in args.peer_sizes.split(",") if n]
    for n, flags in jobs:
        out = subprocess.run([sys.executable, __file__, "--one", str(n)] + flags,
                             capture_output=True, text=True, check=True).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
        print(json.dumps(rows[-1]), flush=True)
    table(rows)


def table(rows) -> None:
    """The rows as a Markdown table, then per kernel of the O(n) rows the
    least-squares lines a + b n of the fit's CPU s (a: the window's fixed
    stages; b: the whole-series evaluations' cost per point) and of one
    whole-series value and gradient."""
    print("| points | path | kernel | CPU s | us per point | first fit | peak MB "
          "| evaluations | whole series | value + gradient s | window evaluation s | load | status |")
    print("|" + "---|" * 13)
    for r in sorted(rows, key=lambda r: (r["kernel"] != "matern32", r["kernel"], r["n"])):
        print(f"| {r['n']:,} | {r['path']} | {r['kernel']} | {r['cpu_s']:.2f} "
              f"| {r['cpu_s'] / r['n'] * 1e6:.1f} | {r['first_cpu_s']:.2f} | {r['peak_mb']:,.0f} "
              f"| {r['evaluations']:.0f} | {r.get('series_evaluations', 0):.0f} "
              f"| {r.get('value_gradient_s', float('nan')):.2f} "
              f"| {r.get('window_evaluation_s', float('nan')):.3f} "
              f"| {r.get('load', float('nan')):.1f} | {r['status']} |", flush=True)
    for kernel in sorted({r["kernel"] for r in rows if r["path"] == "markov"}):
        mine = [r for r in rows if r["path"] == "markov" and r["kernel"] == kernel]
        if len(mine) < 2:
            continue
        n = np.array(sorted(r["n"] for r in mine), float)
        for key, what in (("cpu_s", "fit CPU s"), ("value_gradient_s", "one value + gradient")):
            b, a = np.polyfit([r["n"] for r in mine], [r[key] for r in mine], 1)
            print(f"{kernel}: {what} = {a:.2f} + {b * 1e6:.2f}e-6 n over {len(mine)} sizes "
                  f"({', '.join(f'{int(v):,}' for v in n)})")


if __name__ == "__main__":
    main()

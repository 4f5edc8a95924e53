"""What matern12, linear and sums with a line cost, and where matern12's
length scale goes on random walks (docs/design.md, "Kernels are described
once" and "Sums of kernels").

    python benchmarks/new_kernels.py evaluations   # Newton evaluations per series, per kernel
    python benchmarks/new_kernels.py walks         # matern12 on random walks: l, at_bound

`evaluations`: 37 series (the 13 seasonal ones of tests/seasonal_data.py,
the 24 lines and lines plus wiggles of benchmarks/linear_centre.py), each
kernel with its default starts and step limit. `walks`: 30 random walks of
50-200 points (regular and irregular times), fitted with matern12 at the
length-scale bound of gpcore/starts.py and at 1,000 spans.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE, os.path.join(os.path.dirname(HERE), "tests")]

from gpcore import FitConfig, GPFitter, Series, starts  # noqa: E402
from gpcore.batching import Batching  # noqa: E402

KERNELS = ("rbf", "matern12", "linear", "linear+rbf", "rbf+periodic", "linear+rbf+periodic")


def evaluations() -> None:
    from linear_centre import series_set
    from seasonal_data import seasonal_series

    series = [Series(k, t, y) for k, (t, y) in seasonal_series(n_series=12).items()]
    series += [s for _, s in series_set(24)]
    print("| kernel | starts | Newton evaluations / series | at 400 (or 100) steps | CPU s | "
          "cost model s |")
    print("|---|--:|--:|--:|--:|--:|")
    for name in KERNELS:
        fitter = GPFitter(FitConfig(kernel=name))
        fitter.fit(series[:2])  # trace first
        before = dict(fitter.work)
        start = time.process_time()
        fits = [f for f in fitter.fit(series) if f.status == "ok"]
        cpu = time.process_time() - start
        evals = fitter.work["member_evaluations"] - before["member_evaluations"]
        model = sum(Batching(fitter.config).cost(f.n_points) for f in fits)
        limit = sum(f.stop_reason == "max_iterations" for f in fits)
        print(f"| {name} | {fitter.config.restarts} | {evals / len(fits):.1f} | "
              f"{limit} of {len(fits)} | {cpu:.1f} | {model:.1f} |")


def walks() -> None:
    rng = np.random.default_rng(5)
    series = []
    for i in range(30):
        n = int(rng.integers(50, 200))
        t = np.sort(rng.uniform(0, 100, n)) if i % 2 else np.arange(n, dtype=float)
        steps = rng.standard_normal(n) * np.sqrt(np.diff(np.r_[t[0] - 1, t]))
        series.append(Series(str(i), t, 100 + np.cumsum(steps) + 0.1 * rng.standard_normal(n)))
    bound = starts.LENGTH_BOUNDS
    at_bound = GPFitter(FitConfig(kernel="matern12")).fit(series)
    starts.LENGTH_BOUNDS = (bound[0], bound[1], 1000.0)
    wide = GPFitter(FitConfig(kernel="matern12")).fit(series)
    starts.LENGTH_BOUNDS = bound
    gain = np.array([a.nll - b.nll for a, b in zip(at_bound, wide)])
    spans = np.array([b.length_scale / np.ptp(s.t) for b, s in zip(wide, series)])
    print(f"at the bound of {bound[2]:g} spans: {sum(a.at_bound for a in at_bound)} of "
          f"{len(series)}; at 1,000 spans: {sum(b.at_bound for b in wide)}")
    print(f"nll lower with the 1,000-span bound by: median {np.median(gain):.4f}, "
          f"max {gain.max():.4f} nats")
    print(f"fitted length scale / span: {spans.min():.3f} to {spans.max():.2f}, "
          f"median {np.median(spans):.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("evaluations", "walks"))
    {"evaluations": evaluations, "walks": walks}[parser.parse_args().what]()

"""What matern12, linear and sums with a line cost, and where matern12's
length scale goes on random walks (docs/design.md, "Kernels are described
once" and "Sums of kernels").

    python benchmarks/new_kernels.py evaluations   # Newton evaluations per series, per kernel
    python benchmarks/new_kernels.py walks         # matern12 on random walks: l, at_bound
    python benchmarks/new_kernels.py forecast      # held-out tails: trends and random walks

`evaluations`: 37 series (the 13 seasonal ones of tests/seasonal_data.py,
the 24 lines and lines plus wiggles of benchmarks/linear_centre.py), each
kernel with its default starts and step limit. `walks`: 30 random walks of
50-200 points (regular and irregular times), fitted with matern12 at the
length-scale bound of gpcore/kernels.py and at 1,000 spans. `forecast`: 40
lines plus a smooth wiggle and 40 random walks (fresh seeds, 60-200
points), the last 20 % held out; RMSE of the posterior mean over the held
out points relative to the naive forecast (the last observed value), and
the share of held-out points inside mean +- 1.96 sd of a new observation.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE, os.path.join(os.path.dirname(HERE), "tests")]
# gpcore (TensorFlow) is imported by each measurement, so that --help is instant.

KERNELS = ("rbf", "matern12", "linear", "linear+rbf", "rbf+periodic", "linear+rbf+periodic")


def evaluations() -> None:
    from gpcore import FitConfig, GPFitter, Series
    from gpcore.batching import Batching
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


def _walk(rng, n, regular):
    t = np.arange(n, dtype=float) if regular else np.sort(rng.uniform(0, 100, n))
    steps = rng.standard_normal(n) * np.sqrt(np.diff(np.r_[t[0] - 1, t]))
    return t, 100 + np.cumsum(steps) + 0.1 * rng.standard_normal(n)


def forecast() -> None:
    from gpcore import FitConfig, GPFitter, Series
    from gpcore.predict import predict

    rng = np.random.default_rng(2026)
    sets = {"trend + wiggle": [], "random walk": []}
    for i in range(40):
        n = int(rng.integers(60, 201))
        t = np.sort(rng.uniform(0, 100, n))
        d = np.abs(t[:, None] - t[None, :])
        wiggle = np.linalg.cholesky(np.exp(-0.5 * (d / rng.uniform(3, 15)) ** 2)
                                    + 1e-8 * np.eye(n)) @ rng.standard_normal(n)
        y = rng.normal(0, 0.05) * t + 0.5 * wiggle + 0.2 * rng.standard_normal(n)
        sets["trend + wiggle"].append((t, y))
        sets["random walk"].append(_walk(rng, n, i % 2 == 0))
    print("| set | kernel | RMSE / naive's (mean) | beats naive | 95 % cover |")
    print("|---|---|--:|--:|--:|")
    for label, data in sets.items():
        cut = [int(0.8 * t.size) for t, _ in data]
        train = [Series(str(i), t[:c], y[:c]) for i, ((t, y), c) in enumerate(zip(data, cut))]
        for name in ("rbf", "matern12", "linear+rbf", "linear+matern12"):
            fits = GPFitter(FitConfig(kernel=name)).fit(train)
            ratio, cover = [], []
            for (t, y), c, s, fit in zip(data, cut, train, fits):
                mean, sd = predict(s, fit, t[c:], include_noise=True)
                rmse = np.sqrt(np.mean((mean - y[c:]) ** 2))
                ratio.append(rmse / np.sqrt(np.mean((y[c - 1] - y[c:]) ** 2)))
                cover.append(np.mean(np.abs(y[c:] - mean) <= 1.96 * sd))
            ratio = np.array(ratio)
            print(f"| {label} | {name} | {ratio.mean():.2f} | {(ratio < 1).mean():.0%} | "
                  f"{np.mean(cover):.2f} |")


def walks() -> None:
    from gpcore import FitConfig, GPFitter, Series, kernels

    rng = np.random.default_rng(5)
    series = [Series(str(i), *_walk(rng, int(rng.integers(50, 200)), i % 2 == 0))
              for i in range(30)]
    bound = kernels.LENGTH_BOUNDS
    at_bound = GPFitter(FitConfig(kernel="matern12")).fit(series)
    kernels.LENGTH_BOUNDS = (bound[0], bound[1], 1000.0)
    wide = GPFitter(FitConfig(kernel="matern12")).fit(series)
    kernels.LENGTH_BOUNDS = bound
    gain = np.array([a.nll - b.nll for a, b in zip(at_bound, wide)])
    spans = np.array([b.length_scale / np.ptp(s.t) for b, s in zip(wide, series)])

    def held(fits, most):  # the length scale at its upper bound (at_bound: any parameter)
        return sum(f.length_scale >= 0.999 * most * np.ptp(s.t) for f, s in zip(fits, series))

    print(f"length scale at the bound of {bound[2]:g} spans: {held(at_bound, bound[2])} of "
          f"{len(series)}; at 1,000 spans: {held(wide, 1000.0)} (some parameter at a bound: "
          f"{sum(a.at_bound for a in at_bound)}, {sum(b.at_bound for b in wide)})")
    print(f"nll lower with the 1,000-span bound by: median {np.median(gain):.4f}, "
          f"max {gain.max():.4f} nats")
    print(f"fitted length scale / span: {spans.min():.3f} to {spans.max():.2f}, "
          f"median {np.median(spans):.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("evaluations", "walks", "forecast"))
    {"evaluations": evaluations, "walks": walks,
     "forecast": forecast}[parser.parse_args().what]()

"""Where `linear`'s centre c goes: the midpoint of the observed span (what
gpcore fixes), the mean of the observed times, or fitted as a parameter.

For each series, gpcore fits `linear` and `linear+rbf` (c at the
midpoint); then scipy, on a numpy likelihood independent of gpcore,
re-optimises all the other parameters from gpcore's optimum with c fixed
at the mean of the times, and with c free. The table gives how much lower
(nats) each alternative's nll is than the midpoint's: what fixing c costs.
A fitted c is one more parameter, worth it under BIC only where it gains
more than log(n) / 2 nats.

Series (fixed seeds, offline): a line plus noise, and a line plus an RBF
wiggle, with times uniform, denser towards the end (the mean of the times
is then far from the midpoint), or with a gap; 40-200 points.

    python benchmarks/linear_centre.py [--series 40]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np
from scipy import optimize

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from gpcore import FitConfig, GPFitter, Series  # noqa: E402


def series_set(count: int, seed: int = 7) -> list[tuple[str, Series]]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        n = int(rng.integers(40, 201))
        u = np.sort(rng.uniform(0.0, 1.0, n))
        sampling = ("uniform", "denser late", "gap")[i % 3]
        if sampling == "denser late":
            u = np.sqrt(u)
        elif sampling == "gap":
            u = u[(u < 0.3) | (u > 0.6)]
        t = 100.0 * u + rng.uniform(0, 1000)
        slope = rng.normal(0, 1) / 100.0 * rng.uniform(1, 5)
        y = 5.0 + slope * (t - t.mean()) + 0.3 * rng.uniform(0.2, 1.0) * rng.standard_normal(t.size)
        shape = "line"
        if i % 2:
            d = np.abs(t[:, None] - t[None, :])
            ell = 100.0 * rng.uniform(0.05, 0.3)
            y += np.linalg.cholesky(np.exp(-0.5 * (d / ell) ** 2) + 1e-8 * np.eye(t.size)) \
                @ rng.standard_normal(t.size) * 0.5
            shape = "line+wiggle"
        out.append((f"{shape}/{sampling}/{i}", Series(str(i), t, y)))
    return out


def numpy_nll(x, t, y, c, with_rbf):
    """Profiled nll (GLS mean, scale) of linear (+ rbf) at log params x:
    (log r[, log w, log l]), centre c."""
    v = t - c
    k = np.outer(v, v)
    if with_rbf:
        k = k + np.exp(x[1]) * np.exp(-0.5 * ((t[:, None] - t[None, :]) / np.exp(x[2])) ** 2)
    a = k + np.exp(x[0]) * np.eye(t.size)
    try:
        chol = np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        return 1e10
    solve = lambda b: np.linalg.solve(chol.T, np.linalg.solve(chol, b))
    one = np.ones_like(y)
    ai_y, ai_1 = solve(y), solve(one)
    mu = one @ ai_y / (one @ ai_1)
    s2 = (y - mu) @ solve(y - mu) / y.size
    return 0.5 * (y.size * (np.log(2 * np.pi * s2) + 1) + 2 * np.log(np.diag(chol)).sum())


def standardised(s: Series):
    t0, span = s.t.min(), np.ptp(s.t)
    return (s.t - t0) / span, (s.y - s.y.mean()) / s.y.std()


def log_start(result, span, with_rbf):
    """gpcore's optimum as this script's coordinates (standardised)."""
    lin = result.components[0]["amplitude"] * span
    r = result.noise_variance / lin ** 2
    if not with_rbf:
        return np.log([r])
    rbf = result.components[1]
    return np.log([r, (rbf["amplitude"] / lin) ** 2, rbf["length_scale"] / span])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--series", type=int, default=40)
    args = ap.parse_args()
    cases = series_set(args.series)
    rows = []
    for kernel in ("linear", "linear+rbf"):
        with_rbf = "rbf" in kernel
        fits = GPFitter(FitConfig(kernel=kernel)).fit([s for _, s in cases])
        for (name, s), fit in zip(cases, fits):
            t, y = standardised(s)
            sd, span = s.y.std(), np.ptp(s.t)
            x0 = log_start(fit, span, with_rbf)
            shift = s.t.size * np.log(sd)  # nll of raw y = standardised nll + n log sd
            at_mid = numpy_nll(x0, t, y, 0.5, with_rbf) + shift
            best = lambda c_fixed: optimize.minimize(
                lambda x: numpy_nll(x, t, y, c_fixed, with_rbf), x0, method="Nelder-Mead",
                options={"xatol": 1e-6, "fatol": 1e-8, "maxiter": 4000}).fun + shift
            mean_c = best(float(t.mean()))
            mid = best(0.5)  # gpcore's optimum, polished: ~0 where gpcore converged
            free = optimize.minimize(
                lambda z: numpy_nll(z[:-1], t, y, z[-1], with_rbf), np.r_[x0, 0.5],
                method="Nelder-Mead", options={"xatol": 1e-6, "fatol": 1e-8, "maxiter": 8000})
            rows.append((kernel, name, fit.nll - at_mid, at_mid - mid, at_mid - mean_c,
                         at_mid - (free.fun + shift), free.x[-1], 0.5 * np.log(s.t.size)))
    print("| kernel | series | gpcore - numpy, same parameters | gain: scipy from there | "
          "gain: c = mean of t | gain: c fitted | fitted c (span 0..1) | log(n)/2 |")
    print("|---|---|--:|--:|--:|--:|--:|--:|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]:.1e} | {r[3]:.4f} | {r[4]:.3f} | {r[5]:.3f} "
              f"| {r[6]:.2f} | {r[7]:.2f} |")
    for kernel in ("linear", "linear+rbf"):
        polished = np.array([r[3] for r in rows if r[0] == kernel])
        print(f"\n{kernel}: scipy from gpcore's optimum gains at most {polished.max():.4f} nats")
        mine = np.array([r[4:6] for r in rows if r[0] == kernel])
        half_log_n = np.array([r[7] for r in rows if r[0] == kernel])
        print(f"\n{kernel}: gain from c = mean of t: median {np.median(mine[:, 0]):.3f}, "
              f"max {mine[:, 0].max():.3f} nats; from a fitted c: median "
              f"{np.median(mine[:, 1]):.3f}, max {mine[:, 1].max():.3f} nats; fitted c worth "
              f"its BIC parameter on {(mine[:, 1] > half_log_n).sum()} of {len(mine)} series")


if __name__ == "__main__":
    main()

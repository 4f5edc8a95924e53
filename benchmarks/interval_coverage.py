"""Do gpfit's intervals cover what they say when the model is right?

    python benchmarks/interval_coverage.py [--count N] [--sizes 20,60,200]
        [--kernels rbf,matern52,...] [--seed S] [--cli N] [--out FILE.md]

Series are drawn in numpy from known GPs (`draw`; seeded per series by
(seed, kernel, n, i), so seeds 0 and 1 share no draw): irregular times
on [0, SPAN], true parameters drawn per series (noise from 1 % to 100 %
of the signal variance), then H = HORIZON points beyond them (the
irregular spacing continued), then H more on a regular grid (step
SPAN / n), the latent f drawn jointly at all n + 2H times and independent
noise added. Each series' first n points are fitted with gpcore's
GPFitter (the command's fitter, its default settings) and scored in three
blocks, at LEVELS:

  next     the H points after the fit's: what a `forecast` row of the n
           points, and a `holdout` row of the n + H points under
           --holdout H, predicts (gpcore.calibration.forecast from the n
           points: Student-t, n - 1 degrees of freedom)
  after    the H grid points after those, from all n + H points with the
           parameters fitted on n: the `forecast` rows of a --holdout H
           run (n + H - 1 degrees of freedom; `n - 1 dof` the alternative)
  observed the n observed points themselves, and a fresh observation at
           each observed time (f there plus new noise), by predict's
           normal interval with the noise (`observed` rows)

Intervals compared on the same points: `true`, the exact posterior
predictive with the TRUE parameters (numpy; covers nominally by
construction: the sampling-error yardstick); `plain`, the same with the
fitted parameters (numpy; no calibration); `gpfit`, what the command
writes; and for the diagnosis `gpfit, normal` (calibration's sd, normal
quantile), `gpfit, scale 1` (Student-t and the mean's variance only) and
`gpfit, unclipped` (the rolling-origin scale not held >= 1).
Coverage is the share of points inside; points of one series are
correlated, so its +- is 1.96 standard errors with series as clusters
(sd of the per-series shares over sqrt(N)), wider than a binomial one.
`--cli N` also runs the real `gpfit` command (DirectRunner, --holdout H
--predict_observed --predict_horizon) on the first N series of each
kernel at each size and checks that its rows equal the in-process
intervals (`cli_check`).
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if __name__ == "__main__":  # run as a script: gpcore from the checkout
    sys.path.insert(0, os.path.dirname(HERE))

KERNELS = ("rbf", "matern52", "matern12", "rbf+periodic", "linear+rbf")
SIZES = (20, 60, 200)
HORIZON = 6
LEVELS = (0.8, 0.95)
SPAN = 10.0
Z975 = 1.959963984540054
METHODS = ("true", "plain", "gpfit", "gpfit, normal", "gpfit, scale 1", "gpfit, unclipped")


def _log_uniform(rng, lo, hi):
    return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))


def true_params(rng, kernel: str) -> dict:
    """Parameters as FitResult.params gives them: amplitude 0.5-5, length
    scales 0.05-0.3 of SPAN (periodic: period SPAN/10-SPAN/3, its unitless
    length scale 0.7-1.5), noise variance 1-100 % of the amplitude^2."""
    amp = _log_uniform(rng, 0.5, 5.0)

    def smooth(name, lo=0.05, hi=0.3):
        return {"kernel": name, "amplitude": amp,
                "length_scale": _log_uniform(rng, lo * SPAN, hi * SPAN), "period": None}
    if kernel == "rbf+periodic":
        comps = [smooth("rbf", 0.2, 0.6),
                 {"kernel": "periodic", "amplitude": amp * rng.uniform(0.5, 1.0),
                  "length_scale": _log_uniform(rng, 0.7, 1.5),
                  "period": _log_uniform(rng, SPAN / 10, SPAN / 3)}]
    elif kernel == "linear+rbf":  # the line rises 0.2-1 amplitude over half the span
        comps = [{"kernel": "linear", "amplitude": amp * rng.uniform(0.2, 1.0) / (SPAN / 2),
                  "length_scale": None, "period": None}, smooth("rbf")]
    else:
        comps = [smooth(kernel)]
    return {"kernel": kernel, "mean": rng.uniform(-5.0, 5.0),
            "noise_variance": amp ** 2 * _log_uniform(rng, 0.01, 1.0), "components": comps}


def covariance(params: dict, t1, t2, centre: float) -> np.ndarray:
    """[n1, n2] sum_c amplitude_c^2 k_c(t1, t2), numpy (tfp.math.psd_kernels'
    definitions; `linear` measured from `centre`)."""
    t1, t2 = np.asarray(t1, float), np.asarray(t2, float)
    d = np.abs(t1[:, None] - t2[None, :])
    total = np.zeros(d.shape)
    for c in params["components"]:
        ell = c["length_scale"]
        if c["kernel"] == "linear":
            k = np.outer(t1 - centre, t2 - centre)
        elif c["kernel"] == "rbf":
            k = np.exp(-0.5 * (d / ell) ** 2)
        elif c["kernel"] == "matern12":
            k = np.exp(-d / ell)
        elif c["kernel"] == "matern52":
            r = np.sqrt(5.0) * d / ell
            k = (1 + r + r * r / 3) * np.exp(-r)
        elif c["kernel"] == "periodic":
            k = np.exp(-2 * np.sin(np.pi * d / c["period"]) ** 2 / ell ** 2)
        else:
            raise ValueError(c["kernel"])
        total += c["amplitude"] ** 2 * k
    return total


def posterior(params: dict, t, y, t_new, centre: float) -> tuple[np.ndarray, np.ndarray]:
    """(mean [m], sd of a new observation [m]) at t_new given (t, y) [n]:
    the exact GP predictive with params known (numpy Cholesky, with
    predict's jitters, x the largest prior variance, where it fails: a
    fitted noise of ~0)."""
    kxx = covariance(params, t, t, centre)
    for jitter in (0.0, 1e-10, 1e-8, 1e-6):
        try:
            chol = np.linalg.cholesky(kxx + (params["noise_variance"] + jitter * np.max(
                np.diag(kxx))) * np.eye(len(t)))
            break
        except np.linalg.LinAlgError:
            continue
    ks = covariance(params, t_new, t, centre)
    v = np.linalg.solve(chol, ks.T)
    mean = params["mean"] + v.T @ np.linalg.solve(chol, y - params["mean"])
    prior = np.diag(covariance(params, t_new, t_new, centre))
    return mean, np.sqrt(np.maximum(prior - np.sum(v * v, axis=0), 0) + params["noise_variance"])


@dataclasses.dataclass
class Draw:
    """One series: the truth at n + 2 H times (t, f latent, y = f + noise),
    and a fresh noisy observation y2 at the first n."""

    series_id: str
    params: dict
    t: np.ndarray
    f: np.ndarray
    y: np.ndarray
    y2: np.ndarray
    n: int


def draw(seed: int, kernel: str, n: int, i: int) -> Draw:
    rng = np.random.default_rng([seed, KERNELS.index(kernel) if kernel in KERNELS else 99, n, i])
    p = true_params(rng, kernel)
    t_obs = np.sort(rng.uniform(0.0, SPAN, n))
    t_next = t_obs[-1] + np.cumsum(rng.exponential(SPAN / n, HORIZON))
    t_after = t_next[-1] + SPAN / n * np.arange(1, HORIZON + 1)
    t = np.concatenate([t_obs, t_next, t_after])
    # The model's centre for `linear` is the fitted points' midpoint.
    cov = covariance(p, t, t, 0.5 * (t_obs[0] + t_obs[-1])) + 1e-9 * p["components"][-1][
        "amplitude"] ** 2 * np.eye(t.size)
    f = p["mean"] + np.linalg.cholesky(cov) @ rng.standard_normal(t.size)
    sd = np.sqrt(p["noise_variance"])
    return Draw(f"{kernel}/{n}/{i}", p, t, f, f + sd * rng.standard_normal(t.size),
                f[:n] + sd * rng.standard_normal(n), n)


def fit(draws: list[Draw], kernel: str) -> list:
    """FitResults of each draw's first n points (one GPFitter per kernel)."""
    from gpcore import FitConfig, GPFitter, Series

    if kernel not in _fitters:  # built (and traced) once per kernel
        _fitters[kernel] = GPFitter(FitConfig(kernel=kernel))
    return _fitters[kernel].fit([Series(d.series_id, d.t[:d.n], d.y[:d.n]) for d in draws])


_fitters: dict = {}


def intervals(d: Draw, result) -> dict:
    """{(block, method): (mean [k], half-width per level {level: [k]},
    target values [k])} for one fitted draw."""
    from gpcore import Series
    from gpcore.calibration import forecast, student_t_quantile
    from gpcore.predict import fitted_centre, predict

    n, fitted = d.n, result.params
    blocks = {"next": (n, slice(n, n + HORIZON)), "after": (n + HORIZON, slice(n + HORIZON, None))}
    centre = 0.5 * (d.t[0] + d.t[n - 1])
    out = {}
    for block, (seen, new) in blocks.items():
        t_seen, y_seen, t_new, target = d.t[:seen], d.y[:seen], d.t[new], d.y[new]
        for method, p in (("true", d.params), ("plain", fitted)):
            mean, sd = posterior(p, t_seen, y_seen, t_new, centre)
            out[block, method] = (mean, {lv: _z(lv) * sd for lv in LEVELS}, target)
        series = Series(d.series_id, t_seen, y_seen)
        fit_centre = fitted_centre(Series(d.series_id, d.t[:n], d.y[:n]))
        found = forecast(series, result, t_new, horizon=HORIZON, centre=fit_centre)
        raw = unclipped_scale(series, result, fit_centre)
        t_q = {lv: student_t_quantile(0.5 + lv / 2, found.dof) for lv in LEVELS}
        out[block, "gpfit"] = (found.mean, {lv: t_q[lv] * found.sd for lv in LEVELS}, target)
        out[block, "gpfit, normal"] = (found.mean, {lv: _z(lv) * found.sd for lv in LEVELS},
                                       target)
        out[block, "gpfit, scale 1"] = (found.mean, {lv: t_q[lv] * found.sd / found.scale
                                                     for lv in LEVELS}, target)
        out[block, "gpfit, unclipped"] = (found.mean, {lv: t_q[lv] * found.sd / found.scale * raw
                                                       for lv in LEVELS}, target)
        if block == "after":  # the degrees of freedom of the points fitted
            q = {lv: student_t_quantile(0.5 + lv / 2, n - 1) for lv in LEVELS}
            out[block, "gpfit, n - 1 dof"] = (found.mean, {lv: q[lv] * found.sd for lv in LEVELS},
                                              target)
    t_obs, y_obs = d.t[:n], d.y[:n]
    for method, p in (("true", d.params), ("plain", fitted)):
        mean, sd = posterior(p, t_obs, y_obs, t_obs, centre)
        out["observed", method] = (mean, {lv: _z(lv) * sd for lv in LEVELS}, y_obs)
        out["observed fresh", method] = (mean, {lv: _z(lv) * sd for lv in LEVELS}, d.y2)
    mean, sd = predict(Series(d.series_id, t_obs, y_obs), result, t_obs, include_noise=True)
    out["observed", "gpfit"] = (mean, {lv: _z(lv) * sd for lv in LEVELS}, y_obs)
    out["observed fresh", "gpfit"] = (mean, {lv: _z(lv) * sd for lv in LEVELS}, d.y2)
    return out


def unclipped_scale(series, result, centre: float) -> float:
    """calibration's rolling-origin RMS before it is held in [1, MAX_SCALE]
    (the errors over the same sqrt(n / (n - 1)) times their sd)."""
    from gpcore import calibration
    from gpcore.predict import checked_params

    p = checked_params(result)
    t, y = np.asarray(series.t, float), np.asarray(series.y, float)
    if t.size < 4:
        return 1.0
    kff = calibration.covariance(p, t - centre, t - centre)
    chol = np.linalg.cholesky(kff + (p["noise_variance"] + 1e-10 * np.max(np.diag(kff)))
                              * np.eye(t.size))
    z = calibration.rolling_errors(p, t - centre, y, kff, chol, HORIZON)
    return float(np.sqrt(np.mean(z ** 2) * (t.size - 1) / t.size)) if z.size else 1.0


def _z(level: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + level / 2)


def covered(found: dict) -> dict:
    """{(block, method, level): [per-point inside flags]} of one series."""
    out = {}
    for (block, method), (mean, half, target) in found.items():
        for lv in LEVELS:
            out[block, method, lv] = np.abs(target - mean) <= half[lv]
    return out


def share(flags: list) -> tuple[float, float, int]:
    """(coverage, 1.96 x its standard error with series as clusters, N)."""
    per = np.array([np.mean(f) for f in flags])
    return float(per.mean()), Z975 * float(per.std(ddof=1)) / np.sqrt(per.size), per.size


def study(kernels, sizes, count: int, seed: int, log=print) -> dict:
    """{(kernel, n): {(block, method, level): [flags per series]}, plus
    'failed': {(kernel, n): series not fitted "ok"}}."""
    cells, failed = {}, {}
    for kernel in kernels:
        for n in sizes:
            started = time.time()
            draws = [draw(seed, kernel, n, i) for i in range(count)]
            results = fit(draws, kernel)
            cell = cells[kernel, n] = {}
            failed[kernel, n] = sum(r.status != "ok" for r in results)
            for d, r in zip(draws, results):
                if r.status != "ok":
                    continue
                for key, flags in covered(intervals(d, r)).items():
                    cell.setdefault(key, []).append(flags)
            log(f"{kernel} n={n}: {count} series in {time.time() - started:.1f} s")
    return {"cells": cells, "failed": failed}


def table(found: dict, block: str, methods, level: float) -> str:
    """Markdown: coverage +- cluster CI per (kernel, n) and pooled, one
    column per method."""
    cells = found["cells"]
    lines = [f"| {block}, {level:.0%} | N | " + " | ".join(methods) + " |",
             "|---|--:|" + "--:|" * len(methods)]

    def row(name, keys):
        values = []
        for m in methods:
            flags = [f for k in keys for f in cells[k].get((block, m, level), [])]
            values.append("" if not flags else "{:.3f} ± {:.3f}".format(*share(flags)[:2]))
        count = sum(len(cells[k].get((block, methods[0], level), [])) for k in keys)
        lines.append(f"| {name} | {count} | " + " | ".join(values) + " |")
    for key in cells:
        row(f"{key[0]} n={key[1]}", [key])
    for n in sorted({k[1] for k in cells}):
        row(f"all n={n}", [k for k in cells if k[1] == n])
    row("all", list(cells))
    return "\n".join(lines)


def report(found: dict) -> str:
    parts = []
    diagnosis = ("true", "plain", "gpfit", "gpfit, normal", "gpfit, scale 1", "gpfit, unclipped")
    for level in LEVELS:
        parts.append(table(found, "next", diagnosis, level))
    for level in LEVELS:
        parts.append(table(found, "after", ("true", "plain", "gpfit", "gpfit, n - 1 dof"), level))
    for block in ("observed", "observed fresh"):
        for level in LEVELS:
            parts.append(table(found, block, ("true", "plain", "gpfit"), level))
    failed = {f"{k[0]} n={k[1]}": v for k, v in found["failed"].items() if v}
    parts.append(f"Series not fitted ok: {failed or 'none'}")
    return "\n\n".join(parts) + "\n"


def cli_check(kernel: str, n: int, count: int, seed: int, workdir: str) -> dict:
    """Runs `gpfit --holdout H --predict_observed --predict_horizon
    --predict_points H --predict_levels 80,95` on the first `count` draws'
    n + H points (each series' holdout rows are the `next` block, its
    forecast rows the `after` grid) and returns {(block, method, level):
    flags per series} for method "cli", after checking that every row's
    bounds equal the in-process intervals (rtol 1e-6: the same fit, read
    back from Parquet)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from gpcore import Series
    from gpcore.predict import predict

    draws = [draw(seed, kernel, n, i) for i in range(count)]
    table_in = pa.table({
        "series_id": [d.series_id for d in draws for _ in range(n + HORIZON)],
        "t": np.concatenate([d.t[:n + HORIZON] for d in draws]),
        "y": np.concatenate([d.y[:n + HORIZON] for d in draws])})
    src, out = os.path.join(workdir, "in.parquet"), os.path.join(workdir, "out")
    pq.write_table(table_in, src)
    command = [sys.executable, "-m", "pipeline", "--input", src, "--output", out,
               "--kernel", kernel, "--holdout", str(HORIZON), "--predict_observed", "true",
               "--predict_horizon", repr(HORIZON * SPAN / n), "--predict_points", str(HORIZON),
               "--predict_levels", "80,95"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=os.path.dirname(HERE))
    if done.returncode:
        raise RuntimeError(f"gpfit exited {done.returncode}: {done.stderr[-2000:]}")
    rows = pq.read_table(os.path.join(out, "predictions")).to_pandas()
    flags = {}
    by_id = {d.series_id: d for d in draws}
    results = dict(zip(by_id, fit(draws, kernel)))
    for sid, group in rows.groupby("series_id"):
        d, r = by_id[sid], results[sid]
        if r.status != "ok":
            continue
        ours = intervals(d, r)
        # The command's observed rows are all n + H points, from all of them.
        seen = Series(sid, d.t[:d.n + HORIZON], d.y[:d.n + HORIZON])
        mean, sd = predict(seen, r, seen.t, include_noise=True,
                           centre=0.5 * (d.t[0] + d.t[d.n - 1]))
        ours["observed", "gpfit"] = (mean, {lv: _z(lv) * sd for lv in LEVELS}, seen.y)
        for kind, block in (("holdout", "next"), ("forecast", "after"), ("observed", "observed")):
            g = group[group.kind == kind].sort_values("t")
            mean, half, target = ours[block, "gpfit"]
            for lv in LEVELS:
                name = f"{round(lv * 100)}"
                lo, hi = g[f"lower_{name}"].to_numpy(), g[f"upper_{name}"].to_numpy()
                np.testing.assert_allclose(lo, mean - half[lv], rtol=1e-6, atol=1e-9)
                np.testing.assert_allclose(hi, mean + half[lv], rtol=1e-6, atol=1e-9)
                flags.setdefault((block, "cli", lv), []).append((target >= lo) & (target <= hi))
    return flags


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=40, help="series per kernel and size")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--kernels", default=",".join(KERNELS))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cli", type=int, default=0,
                        help="series per kernel and size also run through the gpfit command")
    parser.add_argument("--out", help="also write the tables to this file")
    args = parser.parse_args(argv)
    kernels, sizes = args.kernels.split(","), [int(s) for s in args.sizes.split(",")]
    started = time.time()
    found = study(kernels, sizes, args.count, args.seed, log=lambda s: print(s, file=sys.stderr))
    text = (f"`python benchmarks/interval_coverage.py --count {args.count} --sizes "
            f"{args.sizes} --kernels {args.kernels} --seed {args.seed}`"
            f" ({time.time() - started:.0f} s)\n\n" + report(found))
    if args.cli:
        for kernel in kernels:
            for n in sizes:
                with tempfile.TemporaryDirectory() as workdir:
                    flags = cli_check(kernel, n, args.cli, args.seed, workdir)
                text += (f"\ngpfit command, {kernel} n={n}, {args.cli} series: rows equal the "
                         "in-process intervals; cover " + ", ".join(
                             f"{block} {lv:.0%} {share(v)[0]:.3f}"
                             for (block, _, lv), v in sorted(flags.items())) + "\n")
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

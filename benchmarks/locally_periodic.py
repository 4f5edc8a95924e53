"""Does a locally periodic product kernel (rbf * periodic) fit or forecast
real seasonal series better than the sum gpfit ships? (docs/design.md, "A
locally periodic product").

    python benchmarks/locally_periodic.py [--split tune|holdout] [--count N]
        [--no-gpfit] [--auto] [--out FILE.md]   # per-series BIC and scores beside it (.json)

The set: benchmarks/forecast.py's cases of the split with a season m > 1
(training points, the last H held out), scored on all of them and on
forecast.subsets' "seasonal" ones. Fitted with scikit-learn as the
independent reference (GaussianProcessRegressor, normalize_y, L-BFGS-B,
RESTARTS starts: the initial values below, then sklearn's log-uniform
draws inside the bounds; random_state from the series id; 1 BLAS thread,
PROCESSES processes):

    A  C*Matern(nu=2.5) + C*ExpSineSquared + White   (gpfit's matern52+periodic)
    B  C*RBF*ExpSineSquared + White                  (locally periodic)
    C  C*RBF*ExpSineSquared + C*Matern(nu=2.5) + White
    D  C*Matern(nu=2.5) + C*ExpSineSquared + C*RBF + White   (C's parts summed: the control)

Initial values and bounds, in the series' own units of t, as
benchmarks/heldout_oracle.py's oracle: C 1 (1e-5..1e5), every RBF and
Matern length scale span/10 (span/1000..10 span), ExpSineSquared length
1 (1e-2..1e2), White 0.1 (1e-5..10) on standardised y; the period m mean
spacings (span / (n - 1): months of 28-31 days and trading days with
weekends have a median spacing 1/m of the season's off), clipped into its
bounds [2 median spacings, span/2].

Per series and model: the nll in raw units of y (sklearn's, less n log
std(y) for its standardised y), BIC = 2 nll + k log n with k the kernel's
hyperparameters + 1 for the mean, and forecast.scores of the posterior
mean +- 1.96 sd at the held-out times. sklearn's predict(return_std=True)
already includes the White noise in its sd (WhiteKernel.diag is the noise
level at any X), so that sd is the one of a new observation; adding the
noise again would count it twice (tests/benchmarks/
test_locally_periodic_smoke.py checks it against the textbook formula).
The choices "BIC {A, B}" (and C, D) take, per series, the lower-BIC
model's forecast. gpfit's own FitConfig(kernel="matern52+periodic")
(gpcore.build_fitter, PROCESSES fitter copies of one thread, predicted
with include_noise as forecast.run_gpfit does) gives the scale: its nll
and sklearn A's are both rescored by heldout_oracle.row_nll, one numpy
likelihood at each side's fitted parameters and mean. With `--auto`,
gpfit's auto too (the kernel that ships the periodic candidate), auto
with B, C or D as one more candidate, and auto with C or D in place of
matern52+periodic (from auto's plain candidates, fitted alone), each by
choice.choose_fit's rule: a periodic model only where periodic_screen
passes and by MARGIN of BIC over the best plain fit. gpfit's BIC (its GLS
mean) is set against sklearn's (the sample mean): that leans to gpfit.

Tolerances (fixed before the first run): a model "wins" a series when its
BIC is lower than A's, "clearly" when by at least 6 (auto's margin,
docs/design.md "The guard"). The product helps only if a BIC choice lowers
the tune split's mean MASE below A's by at least 5 % on both the seasonal
subset and all m > 1 series, its geo-mean MASE too, with 95 % cover at
most 0.02 lower; the holdout split is scored once, after that decision
(docs/design.md gives the decision, and which rows came after it).
sklearn A stands for gpfit's sum when its row_nll is within 1 nat of
gpfit's on most series (the gap's median and count are printed).

Fits are cached in benchmarks/results/locally_periodic.json by a hash of
the model's description, scikit-learn's version, the starts and the
series' points.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import time
import warnings
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if __name__ == "__main__":  # run as a script: gpcore from the checkout
    sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import forecast  # noqa: E402

MODELS = {
    "A": "C*Matern(nu=2.5) + C*ExpSineSquared + White",
    "B": "C*RBF*ExpSineSquared + White",
    "C": "C*RBF*ExpSineSquared + C*Matern(nu=2.5) + White",
    # The control: C's three amplitudes without the product (a sum of three).
    "D": "C*Matern(nu=2.5) + C*ExpSineSquared + C*RBF + White",
}
CHALLENGERS = ("B", "C", "D")
SETUP = ("normalize_y; C 1 (1e-5..1e5); lengths span/10 (span/1000..10 span); ESS length 1 "
         "(1e-2..1e2); period m mean spacings in [2 median spacings, span/2]; White 0.1 "
         "(1e-5..10); L-BFGS-B")
RESTARTS = 4
PROCESSES = 2
GPFIT_KERNEL = "matern52+periodic"
MARGIN = 6.0  # BIC points: auto's margin (docs/design.md, "The guard")
CACHE = os.path.join(HERE, "results", "locally_periodic.json")
CHOICES = (("A", "B"), ("A", "C"), ("A", "D"))
PLAIN_CANDIDATES = ("matern52", "matern12")  # auto's candidates without a period (gpcore.config)


def kernel_of(model: str, t: np.ndarray, season: int):
    """The unfitted sklearn kernel of `model` (a key of MODELS) for sorted
    times t [n] (units of t) with season length `season` points."""
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, ExpSineSquared, Matern
    from sklearn.gaussian_process.kernels import WhiteKernel

    gaps = np.diff(t)
    span = float(t[-1] - t[0])
    low, high = 2 * float(np.median(gaps)), span / 2
    period = float(np.clip(season * span / (t.size - 1), low, high))

    def amplitude():
        return ConstantKernel(1.0, (1e-5, 1e5))

    def length(kind):
        return kind(span / 10, (span / 1000, 10 * span))

    def cycle():
        return ExpSineSquared(1.0, period, (1e-2, 1e2), (low, high))

    def smooth():
        return amplitude() * Matern(span / 10, (span / 1000, 10 * span), nu=2.5)

    if model == "A":
        k = smooth() + amplitude() * cycle()
    elif model == "B":
        k = amplitude() * length(RBF) * cycle()
    elif model == "C":
        k = amplitude() * length(RBF) * cycle() + smooth()
    elif model == "D":
        k = smooth() + amplitude() * cycle() + amplitude() * length(RBF)
    else:
        raise ValueError(f"model must be one of {sorted(MODELS)}, got {model!r}")
    return k + WhiteKernel(0.1, (1e-5, 1e1))


def seed_of(series_id: str) -> int:
    """A fixed seed per series (the same for every model)."""
    return zlib.crc32(series_id.encode()) % 2 ** 31


def _parts(k):
    """The leaves of a fitted sklearn kernel's sums, each a product's factors."""
    from sklearn.gaussian_process.kernels import Product, Sum

    if isinstance(k, Sum):
        return _parts(k.k1) + _parts(k.k2)
    if isinstance(k, Product):
        return [sum(_parts(k.k1) + _parts(k.k2), [])]
    return [[k]]


def raw_row(fitted, mean: float, std: float) -> dict | None:
    """A fitted A kernel (on standardised y) as a gpcore-style row in raw
    units, for heldout_oracle.row_nll; None for the products."""
    from sklearn.gaussian_process.kernels import ConstantKernel, ExpSineSquared, Matern
    from sklearn.gaussian_process.kernels import WhiteKernel

    row = {"mean": mean, "noise_variance": 0.0, "components": []}
    for factors in _parts(fitted):
        if len(factors) == 1 and isinstance(factors[0], WhiteKernel):
            row["noise_variance"] += factors[0].noise_level * std ** 2
            continue
        if len(factors) != 2 or not isinstance(factors[0], ConstantKernel):
            return None
        amplitude, shape = math.sqrt(factors[0].constant_value) * std, factors[1]
        if isinstance(shape, ExpSineSquared):
            row["components"].append({"kernel": "periodic", "amplitude": amplitude,
                                      "length_scale": shape.length_scale,
                                      "period": shape.periodicity})
        elif isinstance(shape, Matern) and shape.nu == 2.5:
            row["components"].append({"kernel": "matern52", "amplitude": amplitude,
                                      "length_scale": shape.length_scale, "period": None})
        else:
            return None
    return row


def fitted(model: str, series_id: str, t: np.ndarray, y: np.ndarray, season: int):
    """The GaussianProcessRegressor of `model` fitted to y [n] at sorted t [n]."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.gaussian_process import GaussianProcessRegressor

    gp = GaussianProcessRegressor(kernel_of(model, t, season), normalize_y=True,
                                  n_restarts_optimizer=RESTARTS - 1,
                                  random_state=seed_of(series_id))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # optima held at a bound
        gp.fit(t[:, None], y)
    return gp


def summary(gp, model: str, y: np.ndarray, t_test: np.ndarray) -> dict:
    """A fitted regressor as {nll (raw units), bic, k, mean [H], sd [H] (of
    a new observation), noise_variance, kernel (sklearn's repr), row (A
    only)}."""
    std = float(np.std(y))
    nll = float(-gp.log_marginal_likelihood_value_ + y.size * math.log(std))
    k = gp.kernel_.theta.size + 1
    mean, sd = gp.predict(t_test[:, None], return_std=True)  # sd includes the White noise
    noise = [f[0].noise_level for f in _parts(gp.kernel_) if len(f) == 1][0] * std ** 2
    return {"nll": nll, "bic": 2 * nll + k * math.log(y.size), "k": k,
            "mean": mean.tolist(), "sd": sd.tolist(), "noise_variance": float(noise),
            "kernel": repr(gp.kernel_),
            "row": raw_row(gp.kernel_, float(np.mean(y)), std) if model == "A" else None}


def fit(task) -> dict:
    """task (model, series_id, t [n], y [n], t_test [H], season) -> summary's
    dict and cpu_s; nll None (and the error) if the fit failed."""
    model, series_id, t, y, t_test, season = task
    t, y, t_test = (np.asarray(v, float) for v in (t, y, t_test))
    start = time.process_time()
    try:
        out = summary(fitted(model, series_id, t, y, season), model, y, t_test)
    except Exception as e:  # pylint: disable=broad-except  (a failed fit is a result)
        out = {"nll": None, "error": repr(e)}
    out["cpu_s"] = time.process_time() - start
    return out


def _key(model: str, case) -> str:
    import sklearn

    return hashlib.sha256(json.dumps(
        [MODELS[model], SETUP, sklearn.__version__, RESTARTS, case.series_id, case.season,
         case.t.tolist(), case.y.tolist(), case.t_test.tolist()]).encode()).hexdigest()


def sklearn_fits(chosen: list, cache: str | None = CACHE, processes: int = PROCESSES) -> dict:
    """{model: [fit()'s dict] in the order of `chosen`}, and "cpu_s": {model:
    the fits' summed CPU seconds}; fits found in `cache` are reused."""
    import multiprocessing

    saved = {}
    if cache and os.path.exists(cache):
        with open(cache) as f:
            saved = json.load(f)
    keys = {(m, i): _key(m, c) for m in MODELS for i, c in enumerate(chosen)}
    todo = [(m, i) for (m, i), key in keys.items() if key not in saved]
    if todo:
        forecast.one_thread()  # spawned workers read it before their numpy loads
        tasks = [(m, chosen[i].series_id, chosen[i].t.tolist(), chosen[i].y.tolist(),
                  chosen[i].t_test.tolist(), chosen[i].season) for m, i in todo]
        with multiprocessing.get_context("spawn").Pool(processes) as pool:
            for (m, i), result in zip(todo, pool.imap(fit, tasks, chunksize=1)):
                saved[keys[m, i]] = result
        if cache:
            os.makedirs(os.path.dirname(cache), exist_ok=True)
            with open(cache, "w") as f:
                json.dump(saved, f)
    out = {m: [saved[keys[m, i]] for i in range(len(chosen))] for m in MODELS}
    out["cpu_s"] = {m: sum(r["cpu_s"] for r in out[m]) for m in MODELS}
    out["fitted"] = len(todo)
    return out


def gpfit_fits(chosen: list, kernel: str = GPFIT_KERNEL) -> dict:
    """gpfit's `kernel`: {"results": [FitResult], "mean", "sd" [H] per
    series (None where it failed), "cpu_s": fits and predict}."""
    import gpcore
    from gpcore import FitConfig, Series
    from gpcore.predict import predict
    from gpcore.threads import configure_threads, skip_graph_rewrites

    configure_threads(1, PROCESSES)
    skip_graph_rewrites()
    fitter = gpcore.build_fitter(FitConfig(kernel=kernel), copies=PROCESSES)
    series = [Series(c.series_id, c.t, c.y) for c in chosen]
    forecast.warm_up(fitter, series)  # the traces, off the clock
    start = time.process_time()
    results = fitter.fit(series)
    means, sds = [], []
    for case, s, r in zip(chosen, series, results):
        mean, sd = (None, None) if r.status != "ok" else predict(s, r, case.t_test,
                                                               include_noise=True)
        means.append(mean)
        sds.append(sd)
    return {"results": results, "mean": means, "sd": sds, "cpu_s": time.process_time() - start}


def scored(case, mean, sd) -> dict | None:
    if mean is None:
        return None
    mean, sd = np.asarray(mean, float), np.asarray(sd, float)
    return forecast.scores(case, mean, mean - forecast.Z * sd, mean + forecast.Z * sd)


def choose(fits: dict, pair: tuple, i: int) -> str:
    """The model of `pair` with the lower BIC on series i (the first if
    the other failed)."""
    a, b = (fits[m][i] for m in pair)
    if b["nll"] is None or (a["nll"] is not None and a["bic"] <= b["bic"]):
        return pair[0]
    return pair[1]


def with_candidate(chosen: list, auto: dict, fits: dict, model: str) -> list:
    """[bool] per series: would `model` (periodic) be auto's choice as one
    more candidate? Where periodic_screen passes, a BIC below auto's
    choice's, and at least MARGIN below it if that choice has no period
    (choice.choose_fit's rule; a periodic choice already beat every plain
    one by MARGIN)."""
    from gpcore.choice import periodic_screen

    out = []
    for c, r, f in zip(chosen, auto["results"], fits[model]):
        if f["nll"] is None or not periodic_screen(c.t, c.y):
            out.append(False)
        elif r.status != "ok":
            out.append(True)
        else:
            bar = r.bic if "periodic" in r.kernel else r.bic - MARGIN
            out.append(f["bic"] < bar)
    return out


def in_place(chosen: list, plain: list, fits: dict, model: str) -> list:
    """[index into plain, or None for `model`] per series: auto's choice
    with `model` in place of its periodic candidate, by choice.choose_fit's
    rule (the lowest-BIC plain fit, unless periodic_screen passes and
    `model`'s BIC is at least MARGIN below it). plain: [gpfit_fits dict]
    of auto's other candidates."""
    from gpcore.choice import periodic_screen

    out = []
    for i, (c, f) in enumerate(zip(chosen, fits[model])):
        bics = [p["results"][i].bic if p["results"][i].status == "ok" else math.inf
                for p in plain]
        best = int(np.argmin(bics))
        periodic = f["nll"] is not None and periodic_screen(c.t, c.y)
        out.append(None if periodic and f["bic"] <= bics[best] - MARGIN else best)
    return out


def runs(chosen: list, fits: dict, gpfit: dict | None, auto: dict | None = None) -> list:
    """[forecast.Run] per model, per BIC choice, gpfit's and auto's."""
    out = []
    for m in MODELS:
        out.append(forecast.Run(f"sklearn {m}: {MODELS[m]}", [
            None if r["nll"] is None else scored(c, r["mean"], r["sd"])
            for c, r in zip(chosen, fits[m])], math.nan, fits["cpu_s"][m]))
    for pair in CHOICES:
        picks = [choose(fits, pair, i) for i in range(len(chosen))]
        out.append(forecast.Run(f"BIC {{{', '.join(pair)}}}", [
            out[list(MODELS).index(p)].scores[i] for i, p in enumerate(picks)], math.nan,
            sum(fits["cpu_s"][m] for m in pair)))
    if gpfit is not None:
        ours = forecast.Run(f"gpfit {GPFIT_KERNEL}", [
            scored(c, mu, sd) for c, mu, sd in zip(chosen, gpfit["mean"], gpfit["sd"])],
            math.nan, gpfit["cpu_s"])
        out.append(ours)
        for m in CHALLENGERS:
            # gpfit's bic (its GLS mean) against sklearn's (the sample mean, so
            # the product's nll is, if anything, too high: this leans to gpfit).
            picks = [r.status == "ok" and (f["nll"] is None or r.bic <= f["bic"])
                     for r, f in zip(gpfit["results"], fits[m])]
            out.append(forecast.Run(f"BIC {{gpfit {GPFIT_KERNEL}, {m}}}", [
                ours.scores[i] if p else out[list(MODELS).index(m)].scores[i]
                for i, p in enumerate(picks)], math.nan, gpfit["cpu_s"] + fits["cpu_s"][m]))
    if auto is not None:
        theirs = forecast.Run("gpfit auto", [
            scored(c, mu, sd) for c, mu, sd in zip(chosen, auto["mean"], auto["sd"])],
            math.nan, auto["cpu_s"])
        out.append(theirs)
        for m in CHALLENGERS:
            picks = with_candidate(chosen, auto, fits, m)
            out.append(forecast.Run(f"gpfit auto + {m} as a candidate ({sum(picks)} chosen)", [
                out[list(MODELS).index(m)].scores[i] if p else theirs.scores[i]
                for i, p in enumerate(picks)], math.nan, auto["cpu_s"] + fits["cpu_s"][m]))
        plain = auto["plain"]
        plain_runs = [[scored(c, mu, sd) for c, mu, sd in zip(chosen, p["mean"], p["sd"])]
                      for p in plain]
        for m in ("C", "D"):
            picks = in_place(chosen, plain, fits, m)
            out.append(forecast.Run(
                f"gpfit auto, {m} in place of {GPFIT_KERNEL} ({picks.count(None)} chosen)", [
                    out[list(MODELS).index(m)].scores[i] if p is None else plain_runs[p][i]
                    for i, p in enumerate(picks)], math.nan,
                sum(p["cpu_s"] for p in plain) + fits["cpu_s"][m]))
    return out


def gls_mean(row: dict, t: np.ndarray, y: np.ndarray) -> float:
    """The constant mean that maximises the likelihood of y [n] under the
    row's covariance (gpfit's profiled mean, docs/design.md "The fitter")."""
    d = np.abs(t[:, None] - t[None, :])
    cov = row["noise_variance"] * np.eye(t.size)
    for c in row["components"]:
        r = np.sqrt(5.0) * d / c["length_scale"]
        cov = cov + c["amplitude"] ** 2 * (
            (1.0 + r + r * r / 3.0) * np.exp(-r) if c["kernel"] == "matern52"
            else np.exp(-2.0 * np.sin(np.pi * d / c["period"]) ** 2 / c["length_scale"] ** 2))
    w = np.linalg.solve(cov, np.ones(t.size))
    return float(w @ y / w.sum())


def bic_wins(fits: dict, model: str, mask) -> tuple[int, int, int]:
    """(series where `model`'s BIC < A's, of them by >= MARGIN, series with
    both fitted) among `mask`."""
    pairs = [(a["bic"], b["bic"]) for a, b, keep in zip(fits["A"], fits[model], mask)
             if keep and a["nll"] is not None and b["nll"] is not None]
    return (sum(b < a for a, b in pairs), sum(b <= a - MARGIN for a, b in pairs), len(pairs))


def nll_gaps(chosen: list, fits: dict, gpfit: dict, profiled: bool = False) -> np.ndarray:
    """[n] gpfit's nll - sklearn A's, both by heldout_oracle.row_nll at their
    own fitted parameters (NaN where either is missing); sklearn's at its
    sample mean, or with `profiled` at the GLS mean of its covariance."""
    from heldout_oracle import row_nll

    out = []
    for c, a, r in zip(chosen, fits["A"], gpfit["results"]):
        ours = row_nll(r.params, c.t, c.y) if r.status == "ok" else None
        theirs = None
        if a.get("row") and profiled:
            theirs = row_nll(dict(a["row"], mean=gls_mean(a["row"], c.t, c.y)), c.t, c.y)
        elif a.get("row"):
            theirs = row_nll(a["row"], c.t, c.y)
        out.append(math.nan if ours is None or theirs is None else ours - theirs)
    return np.array(out, float)


def table(chosen: list, fits: dict, gpfit: dict | None, auto: dict | None = None) -> str:
    masks = {"m > 1": [True] * len(chosen),
             "seasonal": [forecast.subsets(c)["seasonal"] for c in chosen]}
    methods = runs(chosen, fits, gpfit, auto)
    lines = []
    for label, mask in masks.items():
        lines += [f"**{label}** ({sum(mask)} series)", "",
                  "| model | mean MASE | geo-mean MASE | mean sMAPE % | 95 % cover | mean MSIS | "
                  "failed | CPU s (all) |", "|---|--:|--:|--:|--:|--:|--:|--:|"]
        for r in methods:
            failed = sum(s is None for s, keep in zip(r.scores, mask) if keep)
            lines.append(f"| {r.method} | {r.mean('mase', mask):.3f} | "
                         f"{r.geometric_mean('mase', mask):.3f} | {r.mean('smape', mask):.2f} | "
                         f"{r.mean('coverage', mask):.3f} | {r.mean('msis', mask):.2f} | "
                         f"{failed} | {r.cpu_seconds:.1f} |")
        lines.append("")
        for m in CHALLENGERS:
            wins, clear, of = bic_wins(fits, m, mask)
            lines.append(f"- {m} beats A on BIC on {wins} of {of} series ({clear} by >= {MARGIN:g})")
        lml = {m: np.array([r["nll"] for r, keep in zip(fits[m], mask) if keep
                            and r["nll"] is not None]) for m in MODELS}
        lines.append("- mean nll (raw units): " + ", ".join(
            f"{m} {v.mean():.2f}" for m, v in lml.items() if v.size))
        if gpfit is not None:
            for profiled, label in ((False, "its sample mean"), (True, "its GLS mean")):
                gaps = nll_gaps(chosen, fits, gpfit, profiled)[np.array(mask, bool)]
                ok = gaps[np.isfinite(gaps)]
                if ok.size:
                    lines.append(
                        f"- gpfit {GPFIT_KERNEL} nll - sklearn A's at {label} (row_nll): median "
                        f"{np.median(ok):+.3f}, within 1 nat on {np.sum(np.abs(ok) <= 1)} of "
                        f"{ok.size}, gpfit worse by > 1 on {np.sum(ok > 1)}, better by > 1 on "
                        f"{np.sum(ok < -1)}")
            for m in CHALLENGERS:
                pairs = [(r.bic, f["bic"]) for r, f, keep in zip(gpfit["results"], fits[m], mask)
                         if keep and r.status == "ok" and f["nll"] is not None]
                lines.append(f"- {m} beats gpfit's {GPFIT_KERNEL} on BIC on "
                             f"{sum(b < a for a, b in pairs)} of {len(pairs)} series "
                             f"({sum(b <= a - MARGIN for a, b in pairs)} by >= {MARGIN:g})")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/locally_periodic.py",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=("tune", "holdout", "all"), default="tune")
    parser.add_argument("--count", type=int, default=None, help="only N series, spread over the set")
    parser.add_argument("--no-gpfit", action="store_true", help="skip gpfit's matern52+periodic")
    parser.add_argument("--auto", action="store_true",
                        help="also gpfit's auto, and auto with B or C as one more candidate")
    parser.add_argument("--cache", default=CACHE, help="the sklearn fits' JSON cache ('' for none)")
    parser.add_argument("--out", default=None, help="also write the tables to this file")
    args = parser.parse_args(argv)
    forecast.one_thread()
    import realdata

    chosen = realdata.spread([c for c in forecast.cases(args.split) if c.season > 1], args.count)
    start = time.perf_counter()
    fits = sklearn_fits(chosen, args.cache or None)
    fitted_s = time.perf_counter() - start
    gpfit = None if args.no_gpfit else gpfit_fits(chosen)
    auto = None
    if args.auto:
        auto = gpfit_fits(chosen, "auto")
        auto["plain"] = [gpfit_fits(chosen, k) for k in PLAIN_CANDIDATES]
    text = (f"Measured {time.strftime('%Y-%m-%dT%H:%M:%S')} with `python benchmarks/"
            f"locally_periodic.py {' '.join(argv if argv is not None else sys.argv[1:])}` "
            f"(split {args.split}; {fits['fitted']} sklearn fits made in {fitted_s:.0f} s wall, "
            f"the rest cached; load {os.getloadavg()[0]:.1f})\n\n" + table(chosen, fits, gpfit, auto))
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
        with open(os.path.splitext(args.out)[0] + ".json", "w") as f:  # per series, beside it
            json.dump({"ids": [c.series_id for c in chosen],
                       "seasonal": [forecast.subsets(c)["seasonal"] for c in chosen],
                       "bic": {m: [r.get("bic") for r in fits[m]] for m in MODELS}
                       | ({} if gpfit is None else {"gpfit": [r.bic for r in gpfit["results"]]}),
                       "scores": {r.method: r.scores for r in runs(chosen, fits, gpfit, auto)}},
                      f)
    return 0


if __name__ == "__main__":
    sys.exit(main())

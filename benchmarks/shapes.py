"""Fit calls of input shapes and options that gpcore.batching's figures
were not measured on, against their estimate.

Each named shape draws its series (deterministic, by --seed) and fits them
under its FitConfig settings as benchmarks/cost.py does: the fit calls
pipeline.transforms.BatchByLength forms in one bundle with
gpcore.batching's estimate at --seconds_per_fit_call, one fitter (traced
on two series apart from the measurement), one TensorFlow thread, CPU
seconds per call (not wall: the machine is shared). It prints per shape
the calls, their CPU over the estimate (median, largest), the largest
call's CPU seconds and the fits stopped at max_iterations
(docs/design.md, "Cost per kernel", *Shapes not calibrated on*).

  python benchmarks/shapes.py --shapes dense1000,bursts --seed 0
  python benchmarks/shapes.py --shapes sum_trend --seed 1 --out shapes.json
  python benchmarks/shapes.py --shapes dense1000,markov --predict 10

--predict POINTS also times each call's forecasts (gpcore.predict's
prediction of POINTS times past each series, as the Forecast step of
--predict_horizon does after the fit call, outside its estimate).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))


def _smooth(rng, t, scale):
    n = len(t)
    k = np.exp(-0.5 * np.subtract.outer(t, t) ** 2 / scale ** 2) + 1e-6 * np.eye(n)
    return np.linalg.cholesky(k) @ rng.standard_normal(n)


def _draw(rng, t, seasonal=True, trend=0.0, noise=0.2):
    """A smooth draw on times t (length scale a tenth to a third of the
    span), optionally a sine of 3-8 cycles in the span and a linear trend."""
    span = float(np.ptp(t)) or 1.0
    y = 5.0 + _smooth(rng, t, rng.uniform(0.1, 0.3) * span) + noise * rng.standard_normal(len(t))
    if seasonal:
        y = y + np.sin(2 * np.pi * t / (span / rng.uniform(3, 8)))
    return y + trend * (t - t.mean()) / span


def _series(name, i, t, y):
    from gpcore import Series
    return Series(series_id=f"{name}/{i}", t=np.asarray(t, float), y=np.asarray(y, float))


def regular(count, low, high, name, rng, **draw):
    out = []
    for i in range(count):
        n = int(rng.integers(low, high + 1))
        t = np.arange(n, dtype=float)
        out.append(_series(name, i, t, _draw(rng, t, **draw)))
    return out


def rough(count, low, high, name, rng, kind):
    """Series on 0..n-1 that no smooth kernel draws: "walk" a random walk,
    "noise" white noise, "spikes" a smooth draw with 3 outliers of 20
    spreads, "steps" 2-5 level shifts plus noise, "counts" Poisson counts of
    mean 2 (ties in y)."""
    out = []
    for i in range(count):
        n = int(rng.integers(low, high + 1))
        t = np.arange(n, dtype=float)
        if kind == "walk":
            y = 5.0 + np.cumsum(rng.standard_normal(n))
        elif kind == "noise":
            y = 5.0 + rng.standard_normal(n)
        elif kind == "spikes":
            y = _draw(rng, t, seasonal=False)
            y[rng.choice(n, 3, replace=False)] += 20.0 * np.std(y)
        elif kind == "steps":
            y = np.repeat(rng.normal(0, 3, 5), -(-n // 5))[:n]
            y = 5.0 + np.roll(y, int(rng.integers(n))) + 0.3 * rng.standard_normal(n)
        else:
            y = rng.poisson(2.0, n).astype(float)
        out.append(_series(name, i, t, y))
    return out


def sines(count, low, high, name, rng, trend=0.0):
    """A clean sine (noise 1 % of its amplitude) of 4-12 cycles on 0..n-1,
    optionally a linear trend of `trend` amplitudes over the span."""
    out = []
    for i in range(count):
        n = int(rng.integers(low, high + 1))
        t = np.arange(n, dtype=float)
        y = (5.0 + np.sin(2 * np.pi * t / (n / rng.uniform(4, 12)) + rng.uniform(0, 6))
             + trend * t / n + 0.01 * rng.standard_normal(n))
        out.append(_series(name, i, t, y))
    return out


def ar(count, rng, name, phis=(0.0, 0.2, 0.4, 0.6, 0.8, 0.9, 0.95, 0.99), irregular=False):
    """AR(1) series of 100-200 points, unit variance around 5, phi taking
    `phis` in turn (0: white noise; 0.99: smooth); on 0..n-1, or on sorted
    uniform times where `irregular`. "rough_*" shapes take phi 0 and 0.2
    (white noise and nearly so), "smooth_*" the rest."""
    out = []
    for i in range(count):
        n, phi = int(rng.integers(100, 201)), phis[i % len(phis)]
        e = rng.standard_normal(n)
        y = np.empty(n)
        y[0] = e[0]
        for k in range(1, n):
            y[k] = phi * y[k - 1] + np.sqrt(1.0 - phi ** 2) * e[k]
        t = np.sort(rng.uniform(0, n, n)) if irregular else np.arange(n, dtype=float)
        out.append(_series(name, i, t, 5.0 + y))
    return out


def bursts(count, rng, name="bursts"):
    """100-250 points in 3-8 tight bursts (width 1 % of the span), the
    gaps between them empty."""
    out = []
    for i in range(count):
        n, k = int(rng.integers(100, 251)), int(rng.integers(3, 9))
        centres = np.sort(rng.uniform(0, 1000, k))
        t = np.sort(np.concatenate([c + rng.uniform(0, 10, n // k) for c in centres]))
        out.append(_series(name, i, t, _draw(rng, t)))
    return out


def duplicates(count, rng, name="duplicates"):
    """100-250 points on 20-60 distinct times (each repeated)."""
    out = []
    for i in range(count):
        n, k = int(rng.integers(100, 251)), int(rng.integers(20, 61))
        t = np.sort(rng.choice(np.arange(k, dtype=float) * 7.0, n))
        out.append(_series(name, i, t, _draw(rng, t)))
    return out


def missing(count, rng, name="missing"):
    """200-400 rows, 60 % of y NaN."""
    out = []
    for i in range(count):
        n = int(rng.integers(200, 401))
        t = np.arange(n, dtype=float)
        y = _draw(rng, t)
        y[rng.random(n) < 0.6] = np.nan
        out.append(_series(name, i, t, y))
    return out


def mixed(count, rng, name="mixed"):
    """8-1,000 points, log-uniform: a bundle's leftovers of every bucket."""
    out = []
    for i in range(count):
        n = int(np.exp(rng.uniform(np.log(8), np.log(1000))))
        t = np.sort(rng.uniform(0, n, n))
        out.append(_series(name, i, t, _draw(rng, t)))
    return out


# name: (kernel and FitConfig settings, series(count, rng)).
SHAPES = {
    "dense500": ({"kernel": "rbf"}, lambda c, r: regular(c, 450, 700, "dense500", r)),
    "dense1000": ({"kernel": "rbf"}, lambda c, r: regular(c, 900, 1200, "dense1000", r)),
    "dense2000": ({"kernel": "matern32"}, lambda c, r: regular(c, 1600, 2000, "dense2000", r)),
    "periodic1000": ({"kernel": "periodic"}, lambda c, r: regular(c, 800, 1100, "periodic1000", r)),
    "sum600": ({"kernel": "rbf+periodic"}, lambda c, r: regular(c, 500, 700, "sum600", r)),
    "markov": ({"kernel": "matern32"}, lambda c, r: regular(c, 4097, 6000, "markov", r)),
    "markov_sum": ({"kernel": "matern52+matern12"},
                   lambda c, r: regular(c, 4097, 6000, "markov_sum", r)),
    "bursts": ({"kernel": "rbf"}, bursts),
    "bursts_sum": ({"kernel": "rbf+periodic"}, bursts),
    "duplicates": ({"kernel": "rbf"}, duplicates),
    "missing": ({"kernel": "rbf"}, missing),
    "mixed": ({"kernel": "rbf"}, mixed),
    "mixed_auto": ({"kernel": "auto"}, mixed),
    "restarts_sum": ({"kernel": "rbf+periodic", "restarts": 8},
                     lambda c, r: regular(c, 100, 200, "restarts_sum", r)),
    "restarts_rbf": ({"kernel": "rbf", "restarts": 9},
                     lambda c, r: regular(c, 100, 200, "restarts_rbf", r)),
    "iterations_sum": ({"kernel": "linear+rbf+periodic", "max_iterations": 2000},
                       lambda c, r: regular(c, 100, 200, "iterations_sum", r, trend=8.0, noise=1.0)),
    "sum_trend": ({"kernel": "linear+rbf+periodic"},
                  lambda c, r: regular(c, 100, 200, "sum_trend", r, trend=8.0, noise=1.0)),
    "quick": ({"kernel": "rbf", "search": "quick"}, lambda c, r: regular(c, 100, 200, "quick", r)),
    "balanced": ({"kernel": "rbf", "search": "balanced"},
                 lambda c, r: regular(c, 100, 200, "balanced", r)),
    "auto_candidates": ({"kernel": "auto", "candidates": "rbf,linear+rbf+periodic"},
                        lambda c, r: regular(c, 100, 200, "auto_candidates", r, trend=3.0)),
}
for _kind in ("walk", "noise", "spikes", "steps", "counts"):
    for _kernel in ("rbf", "periodic", "rbf+periodic", "linear+rbf+periodic"):
        SHAPES[f"{_kind}_{_kernel}"] = ({"kernel": _kernel}, lambda c, r, k=_kind, name=(
            f"{_kind}_{_kernel}"): rough(c, 100, 200, name, r, k))
    SHAPES[f"markov_{_kind}"] = ({"kernel": "matern32"}, lambda c, r, k=_kind, name=(
        f"markov_{_kind}"): rough(c, 4097, 6000, name, r, k))
for _kind in ("noise", "counts"):
    for _kernel in ("matern52", "matern12", "auto"):
        SHAPES[f"{_kind}_{_kernel}"] = ({"kernel": _kernel}, lambda c, r, k=_kind, name=(
            f"{_kind}_{_kernel}"): rough(c, 100, 200, name, r, k))
    SHAPES[f"{_kind}_dense"] = ({"kernel": "rbf"}, lambda c, r, k=_kind, name=(
        f"{_kind}_dense"): rough(c, 400, 800, name, r, k))
for _kernel in ("periodic", "rbf+periodic", "linear+rbf+periodic", "auto"):
    SHAPES[f"sine_{_kernel}"] = ({"kernel": _kernel}, lambda c, r, name=f"sine_{_kernel}": sines(
        c, 100, 200, name, r))
    SHAPES[f"sine_trend_{_kernel}"] = ({"kernel": _kernel}, lambda c, r, name=(
        f"sine_trend_{_kernel}"): sines(c, 100, 200, name, r, trend=5.0))
SHAPES["markov_auto"] = ({"kernel": "auto"}, lambda c, r: rough(c, 4097, 6000, "markov_auto", r, "walk"))
for _kernel in ("rbf", "matern52", "matern12", "matern32", "auto"):
    SHAPES[f"ar_{_kernel}"] = ({"kernel": _kernel}, lambda c, r, name=f"ar_{_kernel}": ar(c, r, name))
    SHAPES[f"rough_{_kernel}"] = ({"kernel": _kernel}, lambda c, r, name=f"rough_{_kernel}": ar(
        c, r, name, phis=(0.0, 0.2)))
    SHAPES[f"smooth_{_kernel}"] = ({"kernel": _kernel}, lambda c, r, name=f"smooth_{_kernel}": ar(
        c, r, name, phis=(0.4, 0.6, 0.8, 0.9, 0.95, 0.99)))
SHAPES["markov_long"] = ({"kernel": "matern32"},
                         lambda c, r: rough(c, 50_000, 100_000, "markov_long", r, "walk"))


def config_of(settings: dict):
    from gpcore.config import at_search
    settings = dict(settings)
    return at_search(settings.pop("search", "thorough"), **settings)


def _forecast_cpu(call, results, points: int) -> float:
    """CPU seconds of gpcore.predict.prediction of `points` times over the
    next fifth of each fitted series' span (the Forecast step's work)."""
    from gpcore.predict import prediction
    cpu = time.process_time()
    for s, r in zip(call, results):
        if r.status == "ok":
            t = np.asarray(s.t, float)
            prediction(s, r, np.linspace(t.max(), t.max() + 0.2 * np.ptp(t), points))
    return time.process_time() - cpu


def measure(shape: str, count: int, seed: int, seconds: float, predict: int = 0) -> list[dict]:
    import gpcore.batching
    from cost import _calls
    from gpcore import Batching, build_fitter
    from gpcore.choice import fits_periodic
    is_rough = getattr(gpcore.batching, "is_rough", lambda s: False)  # a checkout before it
    from gpcore.config import fitted_configs
    settings, draw = SHAPES[shape]
    config = config_of(settings)
    series = draw(count, np.random.default_rng(seed))
    fitter = build_fitter(config)
    # Traced apart from the measurement, on a series of the shape's own
    # (a long one's path: the O(n) fitter's functions) drawn apart.
    warm = draw(1, np.random.default_rng(10_000 + seed))
    if predict:
        _forecast_cpu(warm, fitter.fit(warm), predict)
    else:
        fitter.fit(warm)
    batching = Batching(config, seconds)
    limits = min(c.max_iterations for c in fitted_configs(config))
    records = []
    for call in _calls(series, batching):
        estimated = sum(batching.cost_of(s) for s in call)
        evaluations = fitter.work["member_evaluations"]
        cpu = time.process_time()
        results = fitter.fit(call)
        cpu = time.process_time() - cpu
        records.append({"shape": shape, "seed": seed, "settings": settings,
                        "lengths": [int(np.isfinite(s.y).sum()) for s in call],
                        "rough": [is_rough(s) for s in call],
                        **({"periodic": [fits_periodic(config, s) for s in call]}
                           if config.kernel == "auto" else {}),
                        "evaluations": fitter.work["member_evaluations"] - evaluations,
                        "estimated_s": round(estimated, 4), "cpu_s": round(cpu, 3),
                        "at_max_iterations": sum(r.stop_reason == "max_iterations"
                                                 and r.iterations >= limits for r in results),
                        "statuses": sorted({r.status for r in results}),
                        **({"predict_cpu_s": round(_forecast_cpu(call, results, predict), 4)}
                           if predict else {})})
        print(f"  {shape}: {len(call)} series, estimated {estimated:.2f} s, CPU {cpu:.2f} s",
              flush=True)
    return records


def _estimates(batching, rows: list[dict], rough_term: bool) -> list[float]:
    """Each recorded call's estimate by this checkout: with each series'
    recorded roughness (a checkout before the rough term: none), or as if
    none were rough (the estimate before the term)."""
    import inspect
    takes_rough = "rough" in inspect.signature(batching.cost).parameters
    out = []
    for r in rows:
        lengths = r["lengths"]
        periodic = r.get("periodic") or [None] * len(lengths)
        rough = r.get("rough") if rough_term and r.get("rough") else [False] * len(lengths)
        out.append(sum(batching.cost(n, p, q) if takes_rough else batching.cost(n, p)
                       for n, p, q in zip(lengths, periodic, rough)))
    return out


def table(records: list[dict]) -> str:
    """CPU over the estimate per shape, estimates from this checkout, with
    and without its rough term (gpcore.batching.ROUGH_EVALUATIONS)."""
    from gpcore import Batching
    lines = ["| shape | seed | series | rough | Newton ev. / series | calls | CPU / estimate "
             "without the rough term: median, max | with it | largest call CPU s (estimate) "
             "| at max_iterations |", "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for shape, seed in sorted({(r["shape"], r["seed"]) for r in records}):
        rows = [r for r in records if (r["shape"], r["seed"]) == (shape, seed)]
        batching = Batching(config_of(rows[0]["settings"]))
        before = [r["cpu_s"] / e for r, e in zip(rows, _estimates(batching, rows, False))]
        estimates = _estimates(batching, rows, True)
        after = [r["cpu_s"] / e for r, e in zip(rows, estimates)]
        big = max(range(len(rows)), key=lambda k: rows[k]["cpu_s"])
        n = sum(len(r["lengths"]) for r in rows)
        lines.append(f"| {shape} | {seed} | {n} | {sum(sum(r.get('rough') or []) for r in rows)} "
                     f"| {sum(r.get('evaluations', np.nan) for r in rows) / n:.1f} | {len(rows)} "
                     f"| {np.median(before):.2f}, {max(before):.2f} "
                     f"| {np.median(after):.2f}, {max(after):.2f} | {rows[big]['cpu_s']:.1f} "
                     f"({estimates[big]:.1f}) | {sum(r['at_max_iterations'] for r in rows)} |")
    forecasts = [r for r in records if "predict_cpu_s" in r]
    for shape in sorted({r["shape"] for r in forecasts}):
        rows = [r for r in forecasts if r["shape"] == shape]
        n = sum(len(r["lengths"]) for r in rows)
        lines.append(f"forecasts, {shape}: {1000 * sum(r['predict_cpu_s'] for r in rows) / n:.1f} "
                     f"CPU ms a series, {100 * sum(r['predict_cpu_s'] for r in rows) / sum(r['cpu_s'] for r in rows):.1f} % of the fit calls' CPU")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/shapes.py", description=__doc__.split("\n")[0])
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--count", type=int, default=8, help="series per shape")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seconds_per_fit_call", type=float, default=15.0)
    parser.add_argument("--out", default=None, help="JSON file for the call records")
    parser.add_argument("--model", default=None, help="re-estimate recorded calls; fit nothing")
    parser.add_argument("--predict", type=int, default=0, metavar="POINTS",
                        help="also time forecasts of POINTS times after each call (the Forecast "
                        "step of --predict_horizon, outside the fit call)")
    args = parser.parse_args(argv)
    if args.model:
        with open(args.model) as f:
            print(table(json.load(f)["calls"]))
        return 0
    from gpcore.threads import configure_threads, skip_graph_rewrites
    configure_threads(1, 1)
    skip_graph_rewrites()
    records: list[dict] = []
    for shape in args.shapes.split(","):
        records += measure(shape, args.count, args.seed, args.seconds_per_fit_call, args.predict)
        if args.out:
            from cost import keep_records
            keep_records(args.out, records)
    print(table(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`auto`'s candidates and its guard against spurious periodic parts, chosen by measurement.

    python benchmarks/auto_choice.py fit --set tune|holdout|seasonal --kernels K,K,...
    python benchmarks/auto_choice.py table --set tune|holdout|seasonal [--settings FILE]

`fit` fits each kernel once on a set (forecast.py's tune or holdout split,
or seasonal.py's set) with gpcore's fitter for that kernel alone
(PROCESSES copies side by side, as forecast.py does) and caches, per
series, the BIC, whether a periodic part was fitted, and (forecast sets)
forecast.py's scores of its forecast; per kernel the fit wall seconds.
`table` then scores every setting of SETTINGS without refitting: a setting
is a candidate tuple and a guard (gpcore.choice.choose_fit's rule, applied
to the cached fits), its wall time the sum of its candidates' (an upper
bound where the screen skips periodic fits). A setting's real cost is
measured by forecast.py with `--kernels rbf,auto` (docs/design.md, "Kernel
choice (auto)").
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

CACHE = os.path.join(HERE, "results", "auto_choice")
PROCESSES = 2

P = "periodic"
SETTINGS = {  # name: (candidates, guard)
    "old default (rbf, m52, +periodic), no guard":
        (("rbf", "matern52", "rbf+periodic", "matern52+periodic"), "none"),
    "old default, guarded":
        (("rbf", "matern52", "rbf+periodic", "matern52+periodic"), "guard"),
    "rbf, matern12": (("rbf", "matern12"), "none"),
    "rbf, matern12, linear+rbf": (("rbf", "matern12", "linear+rbf"), "none"),
    "rbf, matern12, linear+rbf, linear+matern12":
        (("rbf", "matern12", "linear+rbf", "linear+matern12"), "none"),
    "rbf, matern12, linear+rbf, rbf+periodic, no guard":
        (("rbf", "matern12", "linear+rbf", "rbf+periodic"), "none"),
    "rbf, matern12, linear+rbf, rbf+periodic, guarded":
        (("rbf", "matern12", "linear+rbf", "rbf+periodic"), "guard"),
    "rbf, matern12, linear+rbf, linear+matern12, rbf+periodic, guarded":
        (("rbf", "matern12", "linear+rbf", "linear+matern12", "rbf+periodic"), "guard"),
    "rbf, matern12, linear+rbf, rbf+periodic, m52+periodic, guarded":
        (("rbf", "matern12", "linear+rbf", "rbf+periodic", "matern52+periodic"), "guard"),
    "all eight, no guard": (("rbf", "matern12", "matern52", "linear+rbf", "linear+matern12",
                             "rbf+periodic", "matern52+periodic", "linear+rbf+periodic"), "none"),
    "all eight, guarded": (("rbf", "matern12", "matern52", "linear+rbf", "linear+matern12",
                            "rbf+periodic", "matern52+periodic", "linear+rbf+periodic"), "guard"),
}


def _cases(name: str):
    """[(Series, forecast Case or None, seasonal flag or None)] of a set."""
    from gpcore import Series

    if name in ("tune", "holdout"):
        import forecast

        return [(Series(c.series_id, c.t, c.y), c, None) for c in forecast.cases(name)]
    import seasonal

    return [(c.series, None, c.seasonal) for c in seasonal.cases()]


def _path(set_name: str, kernel: str) -> str:
    return os.path.join(CACHE, f"{set_name}.{kernel.replace('+', '_')}.json")


def fit(set_name: str, kernels) -> None:
    """Fits and caches each kernel of `kernels` not yet cached on the set."""
    import forecast

    forecast.one_thread()
    import gpcore
    from gpcore import FitConfig
    from gpcore.predict import predict
    from gpcore.threads import configure_threads, skip_graph_rewrites

    configure_threads(1, PROCESSES)
    skip_graph_rewrites()
    chosen = _cases(set_name)
    series = [s for s, _, _ in chosen]
    os.makedirs(CACHE, exist_ok=True)
    for kernel in kernels:
        if os.path.exists(_path(set_name, kernel)):
            continue
        fitter = gpcore.build_fitter(FitConfig(kernel=kernel), copies=PROCESSES)
        fitter.fit(series[:2])  # the trace, off the clock
        start = time.perf_counter()
        results = fitter.fit(series)
        seconds = time.perf_counter() - start
        rows = []
        for (s, case, _), r in zip(chosen, results):
            row = {"status": r.status, "bic": r.bic, "nll": r.nll,
                   "periodic": any(c.get("period") is not None for c in r.components or []),
                   "stop": r.stop_reason, "scores": None}
            if r.status == "ok" and case is not None:
                mean, sd = predict(s, r, case.t_test, include_noise=True)
                row["scores"] = forecast.scores(case, mean, mean - forecast.Z * sd,
                                                mean + forecast.Z * sd)
            rows.append(row)
        with open(_path(set_name, kernel), "w") as f:
            json.dump({"kernel": kernel, "seconds": seconds,
                       "ids": [s.series_id for s in series], "rows": rows}, f)
        print(f"{kernel}: {seconds:.1f} s", flush=True)


@dataclasses.dataclass
class Scored:
    name: str
    mase: list
    coverage: list
    msis: list
    periodic: list
    seconds: float
    skipped_periodic: int


def score(set_name: str, candidates, guard: str, chosen, fits) -> Scored:
    """One setting on the cached fits (module docstring)."""
    from gpcore.choice import choose_fit, periodic_screen
    from gpcore.result import FitResult

    mase, coverage, msis, periodic = [], [], [], []
    skipped = 0
    for i, (s, _, _) in enumerate(chosen):
        screen = guard == "none" or periodic_screen(s.t, s.y)
        results, rows = [], {}
        for k in candidates:
            if P in k and not screen:
                continue
            row = fits[k]["rows"][i]
            rows[k] = row
            results.append(FitResult(s.series_id, row["status"], k, s.t.size, bic=row["bic"]))
        skipped += not screen
        best = choose_fit(results, margin=0.0 if guard == "none" else None)
        row = rows.get(best.kernel)
        periodic.append(bool(row and row["status"] == "ok" and row["periodic"]))
        sc = row["scores"] if row else None
        mase.append(sc["mase"] if sc else np.nan)
        coverage.append(sc["coverage"] if sc else np.nan)
        msis.append(sc["msis"] if sc else np.nan)
    seconds = sum(fits[k]["seconds"] for k in candidates)
    return Scored("", mase, coverage, msis, periodic, seconds, skipped)


def table(set_name: str, settings=SETTINGS) -> str:
    chosen = _cases(set_name)
    kernels = sorted({k for c, _ in settings.values() for k in c})
    fits = {}
    for k in kernels:
        with open(_path(set_name, k)) as f:
            fits[k] = json.load(f)
    forecast_set = chosen[0][1] is not None
    lines = []
    if forecast_set:
        lines += [f"{len(chosen)} series of forecast.py's {set_name} split", "",
                  "| setting | mean MASE | geo-mean MASE | 95 % cover | mean MSIS | periodic chosen "
                  "| series screened out | wall s (sum of candidates) |",
                  "|---|--:|--:|--:|--:|--:|--:|--:|"]
    else:
        plain = [f is False for _, _, f in chosen]
        lines += [f"{len(chosen)} series of seasonal.py ({sum(not p for p in plain)} seasonal, "
                  f"{sum(plain)} non-seasonal)", "",
                  "| setting | periodic on seasonal | periodic on non-seasonal | series screened out "
                  "| wall s |", "|---|--:|--:|--:|--:|"]
    for name, (candidates, guard) in settings.items():
        r = score(set_name, candidates, guard, chosen, fits)
        if forecast_set:
            m = np.array(r.mase)
            m = m[np.isfinite(m)]
            lines.append(f"| {name} | {np.mean(m):.3f} | {np.exp(np.mean(np.log(m[m > 0]))):.3f} | "
                         f"{np.nanmean(r.coverage):.3f} | {np.nanmean(r.msis):.2f} | "
                         f"{sum(r.periodic)} | {r.skipped_periodic} | {r.seconds:.1f} |")
        else:
            on = np.array(r.periodic)
            seasonal_mask = np.array([f is True for _, _, f in chosen])
            lines.append(f"| {name} | {on[seasonal_mask].sum()} / {seasonal_mask.sum()} | "
                         f"{on[~seasonal_mask].sum()} / {(~seasonal_mask).sum()} | "
                         f"{r.skipped_periodic} | {r.seconds:.1f} |")
    lines += ["", "Per kernel alone: " + ", ".join(
        f"{k} {fits[k]['seconds']:.1f} s" for k in kernels)]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/auto_choice.py",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=("fit", "table"))
    parser.add_argument("--set", choices=("tune", "holdout", "seasonal"), default="tune")
    parser.add_argument("--kernels", default="rbf,matern12")
    parser.add_argument("--settings", default=None,
                        help="only the settings whose name contains this text")
    args = parser.parse_args(argv)
    if args.what == "fit":
        fit(args.set, [k for k in args.kernels.split(",") if k])
        return 0
    settings = {k: v for k, v in SETTINGS.items() if args.settings is None or args.settings in k}
    print(table(args.set, settings))
    return 0


if __name__ == "__main__":
    sys.exit(main())

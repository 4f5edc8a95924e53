"""`auto`'s candidates and its guard against spurious periodic parts, chosen by measurement.

    python benchmarks/auto_choice.py fit --set tune|holdout|seasonal --kernels SPEC,SPEC,...
        [--screened] [--cache DIR]
    python benchmarks/auto_choice.py table --set tune|holdout|seasonal [--settings TEXT]
        [--cache DIR]
    python benchmarks/auto_choice.py starts --set tune [--kernels matern52+periodic]
        [--started "jumps=1:max_iterations=100"] [--refit]
        [--settings "START_PERIODIC_LENGTH=1.0;START_MULTIPLES=(1,2);starts.PERIOD_PROBE_ROUNDS=1"]

`starts` compares, on the series the screen passes, a periodic kernel
fitted from its own grid with its restarts (as shipped; cached in --cache,
`--refit` after a change of the fitter) against the same kernel started
from its smooth part's fit as KernelChoice starts it
(gpcore.choice.periodic_starts; gpcore.config.fitted_configs's candidate
config, changed by --started, and gpcore.choice's or gpcore.starts'
constants set from --settings, for the smooth and started fits only):
CPU seconds (one process, one thread), Newton evaluations per series,
fits stopped at max_iterations, and the series whose nll differs by more
than 0.01 nats.

A SPEC is a kernel, optionally with FitConfig settings:
"matern52+periodic:restarts=1:max_iterations=100". With `--screened`
periodic specs are fitted only on the series gpcore.choice.periodic_screen
passes (as KernelChoice does), so their seconds and Newton evaluations are
what they cost under auto; keep such fits in their own `--cache`.

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
choice").
"""
from __future__ import annotations

import argparse
import ast
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
CANDIDATE_SETS = {
    **{k: (k,) for k in ("rbf", "matern12", "matern52", "linear+rbf", "rbf+periodic",
                         "linear+rbf+periodic")},
    "old default": ("rbf", "matern52", "rbf+periodic", "matern52+periodic"),
    "rbf, m52": ("rbf", "matern52"),
    "m52, m12": ("matern52", "matern12"),
    "m52, lin+rbf": ("matern52", "linear+rbf"),
    "m52, m12, lin+rbf": ("matern52", "matern12", "linear+rbf"),
    "m52, m52+per": ("matern52", "matern52+periodic"),
    "m52, rbf+per": ("matern52", "rbf+periodic"),
    "m52, m12, m52+per": ("matern52", "matern12", "matern52+periodic"),
    "m52, lin+rbf, m52+per": ("matern52", "linear+rbf", "matern52+periodic"),
    "m52, m12, lin+rbf, m52+per": ("matern52", "matern12", "linear+rbf", "matern52+periodic"),
    "rbf, m12": ("rbf", "matern12"),
    "rbf, m12, lin+rbf": ("rbf", "matern12", "linear+rbf"),
    "rbf, m12, lin+rbf, lin+m12": ("rbf", "matern12", "linear+rbf", "linear+matern12"),
    "rbf, m12, rbf+per": ("rbf", "matern12", "rbf+periodic"),
    "rbf, m12, lin+rbf, rbf+per": ("rbf", "matern12", "linear+rbf", "rbf+periodic"),
    "rbf, m12, lin+rbf, lin+m12, rbf+per":
        ("rbf", "matern12", "linear+rbf", "linear+matern12", "rbf+periodic"),
    "rbf, m12, lin+rbf, rbf+per, m52+per":
        ("rbf", "matern12", "linear+rbf", "rbf+periodic", "matern52+periodic"),
    "rbf, m12, lin+rbf, rbf+per, lin+rbf+per":
        ("rbf", "matern12", "linear+rbf", "rbf+periodic", "linear+rbf+periodic"),
    "m52, m12, m52+per (1 start)": ("matern52", "matern12", "matern52+periodic:restarts=1"),
    "m52, m12, m52+per (1 start, 100 steps)":
        ("matern52", "matern12", "matern52+periodic:restarts=1:max_iterations=100"),
    "all eight": ("rbf", "matern12", "matern52", "linear+rbf", "linear+matern12", "rbf+periodic",
                  "matern52+periodic", "linear+rbf+periodic"),
}
# (screen's false-alarm rate or None: no screen, BIC margin, screen's
# fewest cycles in the span)
GUARDS = {"none": (None, 0.0, 2.0), "margin 6": (None, 6.0, 2.0), "margin 10": (None, 10.0, 2.0),
          "screen": (0.01, 0.0, 2.0), "screen + margin 6": (0.01, 6.0, 2.0),
          "screen 1e-3 + margin 6": (1e-3, 6.0, 2.0), "screen 1e-4 + margin 6": (1e-4, 6.0, 2.0),
          "screen 3 cycles + margin 6": (0.01, 6.0, 3.0),
          "screen 4 cycles + margin 6": (0.01, 6.0, 4.0)}
SETTINGS = {f"{name}; {guard}": (candidates, guard)
            for name, candidates in CANDIDATE_SETS.items()
            for guard in (GUARDS if any(P in k for k in candidates) else ("none",))}


def _cases(name: str, every: int = 1):
    """[(Series, forecast Case or None, seasonal flag or None)] of a set;
    the seasonal set's every `every`-th series, the forecast split's
    (`every` > 1) `every` series spread over it."""
    from gpcore import Series

    if name in ("tune", "holdout"):
        import forecast

        return [(Series(c.series_id, c.t, c.y), c, None)
                for c in forecast.cases(name, every if every > 1 else None)]
    import seasonal

    return [(c.series, None, c.seasonal) for c in seasonal.cases()[::every]]


def _path(set_name: str, kernel: str, every: int = 1) -> str:
    suffix = f".every{every}" if every > 1 else ""
    name = kernel.replace("+", "_").replace(":", ".").replace("=", "")
    return os.path.join(CACHE, f"{set_name}{suffix}.{name}.json")


def fit(set_name: str, kernels, every: int = 1, screened: bool = False) -> None:
    """Fits and caches each kernel of `kernels` (`parse_spec`'s specs) not
    yet cached on the set."""
    import forecast

    forecast.one_thread()
    import gpcore
    from gpcore import FitConfig
    from gpcore.choice import periodic_screen
    from gpcore.predict import predict
    from gpcore.threads import configure_threads, skip_graph_rewrites

    configure_threads(1, PROCESSES)
    skip_graph_rewrites()
    chosen = _cases(set_name, every)
    series = [s for s, _, _ in chosen]
    os.makedirs(CACHE, exist_ok=True)
    for kernel in kernels:
        if os.path.exists(_path(set_name, kernel, every)):
            continue
        name, settings = parse_spec(kernel)
        fitter = gpcore.build_fitter(FitConfig(kernel=name, **settings), copies=PROCESSES)
        # As KernelChoice, with --screened: a periodic kernel fits only the
        # series periodic_screen passes, so its seconds are auto's cost.
        fitted = [i for i, s in enumerate(series)
                  if not (screened and _is_periodic(name)) or periodic_screen(s.t, s.y)]
        fitter.fit([series[i] for i in fitted[:2]])  # the trace, off the clock
        start = time.perf_counter()
        results = dict(zip(fitted, fitter.fit([series[i] for i in fitted])))
        seconds = time.perf_counter() - start
        work = dict(fitter.work)
        rows = []
        for i, (s, case, _) in enumerate(chosen):
            r = results.get(i)
            if r is None:
                rows.append({"status": "screened out", "bic": None, "nll": None,
                             "periodic": False, "stop": None, "scores": None, "params": None})
                continue
            row = {"status": r.status, "bic": r.bic, "nll": r.nll,
                   "periodic": any(c.get("period") is not None for c in r.components or []),
                   "stop": r.stop_reason, "scores": None,
                   "params": r.to_row() if r.status == "ok" else None}
            if r.status == "ok" and case is not None:
                mean, sd = predict(s, r, case.t_test, include_noise=True)
                row["scores"] = forecast.scores(case, mean, mean - forecast.Z * sd,
                                                mean + forecast.Z * sd)
            rows.append(row)
        with open(_path(set_name, kernel, every), "w") as f:
            json.dump({"kernel": kernel, "seconds": seconds, "work": work,
                       "ids": [s.series_id for s in series], "rows": rows}, f)
        print(f"{kernel}: {seconds:.1f} s, {len(fitted)} series, "
              f"{work['member_evaluations'] / max(len(fitted), 1):.1f} Newton evaluations "
              "per series", flush=True)


def parse_spec(spec: str) -> tuple[str, dict]:
    """"kernel" or "kernel:restarts=1:max_iterations=100" -> (kernel, FitConfig settings)."""
    name, *pairs = spec.split(":")
    return name, {k: int(v) for k, v in (pair.split("=") for pair in pairs)}


def _is_periodic(name: str) -> bool:
    return P in name


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
        false_alarm, margin, cycles = GUARDS[guard]
        # As KernelChoice: no screen without a non-periodic candidate.
        screen = (false_alarm is None or all(P in k for k in candidates)
                  or periodic_screen(s.t, s.y, false_alarm=false_alarm, min_cycles=cycles))
        results, rows = [], {}
        for k in candidates:
            row = fits[k]["rows"][i]
            if P in k and (not screen or row["status"] == "screened out"):
                continue
            rows[parse_spec(k)[0]] = row
            results.append(FitResult(s.series_id, row["status"], parse_spec(k)[0], s.t.size,
                                     bic=row["bic"]))
        skipped += not screen
        best = choose_fit(results, margin=margin)
        row = rows.get(best.kernel)
        periodic.append(bool(row and row["status"] == "ok" and row["periodic"]))
        sc = row["scores"] if row else None
        mase.append(sc["mase"] if sc else np.nan)
        coverage.append(sc["coverage"] if sc else np.nan)
        msis.append(sc["msis"] if sc else np.nan)
    seconds = sum(fits[k]["seconds"] for k in candidates)
    return Scored("", mase, coverage, msis, periodic, seconds, skipped)


def table(set_name: str, settings=SETTINGS, every: int = 1) -> str:
    chosen = _cases(set_name, every)
    fits = {}
    for k in sorted({k for c, _ in settings.values() for k in c}):
        if os.path.exists(_path(set_name, k, every)):
            with open(_path(set_name, k, every)) as f:
                fits[k] = json.load(f)
            if "rows" not in fits[k]:
                del fits[k]
    settings = {n: v for n, v in settings.items() if all(k in fits for k in v[0])}
    kernels = sorted(fits)
    forecast_set = chosen[0][1] is not None
    lines = []
    if forecast_set:
        import forecast

        plain = [not forecast.subsets(c)["seasonal"] for _, c, _ in chosen]
        lines += [f"{len(chosen)} series of forecast.py's {set_name} split ({sum(plain)} not in "
                  "its seasonal subset)", "",
                  "| candidates; guard | mean MASE | geo-mean MASE | 95 % cover | mean MSIS "
                  "| periodic chosen (on non-seasonal) | series screened out "
                  "| wall s (sum of candidates) |",
                  "|---|--:|--:|--:|--:|--:|--:|--:|"]
    else:
        plain = [f is False for _, _, f in chosen]
        lines += [f"{len(chosen)} series of seasonal.py (every {every}-th; "
                  f"{sum(not p for p in plain)} seasonal, "
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
                         f"{sum(r.periodic)} ({sum(p and q for p, q in zip(r.periodic, plain))}) | "
                         f"{r.skipped_periodic} | {r.seconds:.1f} |")
        else:
            on = np.array(r.periodic)
            seasonal_mask = np.array([f is True for _, _, f in chosen])
            lines.append(f"| {name} | {on[seasonal_mask].sum()} / {seasonal_mask.sum()} | "
                         f"{on[~seasonal_mask].sum()} / {(~seasonal_mask).sum()} | "
                         f"{r.skipped_periodic} | {r.seconds:.1f} |")
    lines += ["", "Per kernel alone: " + ", ".join(
        f"{k} {fits[k]['seconds']:.1f} s" for k in kernels)]
    return "\n".join(lines)


def starts(set_name: str, kernel: str, settings: str | None, started_spec: str = "",
           refit: bool = False) -> str:
    """The `starts` comparison (module docstring) as lines of text."""
    import forecast

    forecast.one_thread()
    import gpcore.choice as choice
    from gpcore import kernels
    from gpcore import FitConfig, GPFitter
    from gpcore.config import fitted_configs
    from gpcore.threads import configure_threads, skip_graph_rewrites

    configure_threads(1, 1)
    skip_graph_rewrites()
    series = [s for s, _, _ in _cases(set_name) if choice.periodic_screen(s.t, s.y)]
    grid = _grid_reference(set_name, kernel, series, refit)  # before --settings: as shipped
    set_constants(settings, {"": choice, "starts": gpcore_starts()})
    smooth_kernel = choice.smooth_part(kernels.kernel(kernel))
    # Both candidates as KernelChoice builds them (the smooth one starting
    # once, without the far probes), the started one with --started's settings.
    smooth_config, config = fitted_configs(FitConfig(kernel="auto",
                                                     candidates=(smooth_kernel, kernel)))
    smooth = GPFitter(smooth_config, name="smooth")
    config = dataclasses.replace(config, **parse_spec("x:" + started_spec)[1] if started_spec
                                 else {})
    started = GPFitter(config, name="started")
    for f in (smooth, started):
        f.fit(series[:2])  # the trace, off the clock
        f.work.update(dict.fromkeys(f.work, 0))
    clock = time.process_time()
    smooth_fits = smooth.fit(series)
    seconds = [time.process_time() - clock]
    given = [choice.periodic_starts(s, r, kernel) for s, r in zip(series, smooth_fits)]
    clock = time.process_time()
    fits: list = [None] * len(series)
    for group in choice.length_groups([s.t.size for s in series]):  # as KernelChoice
        for k, r in zip(group, started.fit([series[k] for k in group], [given[k] for k in group])):
            fits[k] = r
    seconds.append(time.process_time() - clock)
    lines = [f"{len(series)} series of {set_name} pass the screen; {kernel}, started with "
             f"jumps={config.jumps}, max_iterations={config.max_iterations}"
             f"{', ' + started_spec if started_spec else ''}; settings "
             f"{settings or 'as shipped'}", "",
             "| fit | CPU s | Newton evaluations per series | at max_iterations |",
             "|---|--:|--:|--:|"]
    stopped = lambda rows: sum(r.get("stop") == "max_iterations" for r in rows)
    lines.append(f"| smooth part | {seconds[0]:.1f} | "
                 f"{smooth.work['member_evaluations'] / len(series):.1f} | "
                 f"{sum(r.stop_reason == 'max_iterations' for r in smooth_fits)} |")
    lines.append(f"| grid, {grid['restarts']} starts (cached) | {grid['cpu_s']:.1f} | "
                 f"{grid['evaluations'] / len(series):.1f} | {stopped(grid['rows'])} |")
    lines.append(f"| from the smooth fit | {seconds[1]:.1f} | "
                 f"{started.work['member_evaluations'] / len(series):.1f} | "
                 f"{sum(r.stop_reason == 'max_iterations' for r in fits)} |")
    lines += ["", "| series | grid period | grid nll | started period | started nll |",
              "|---|--:|--:|--:|--:|"]
    worse = better = 0
    period = lambda r: next(c["period"] for c in r.components if c["period"] is not None)
    for s, a, b in zip(series, grid["rows"], fits):
        if a["status"] != "ok" or b.status != "ok":
            lines.append(f"| {s.series_id} | {a['status']} | | {b.status} | |")
            continue
        worse += b.nll > a["nll"] + 0.01
        better += b.nll < a["nll"] - 1.0
        if abs(b.nll - a["nll"]) > 0.01:
            lines.append(f"| {s.series_id} | {a['period']:.3g} | {a['nll']:.2f} | "
                         f"{period(b):.3g} | {b.nll:.2f} |")
    lines += ["", f"started worse than the grid by > 0.01 nats: {worse}; better by > 1: {better}"]
    return "\n".join(lines)


def constants(settings: str | None, modules: dict) -> list:
    """[(module, NAME, value)] of each "MODULE.NAME=VALUE" of `settings`
    (";"-separated; a bare NAME is modules[""]'s; VALUE a number or a
    tuple). A NAME its module lacks is refused: set anyway, it would change
    nothing and the run would report the shipped constant as the lever."""
    prefixes = ", ".join(f"{m}.NAME" if m else "NAME" for m in modules)
    out = []
    for pair in (settings or "").split(";"):
        if not pair:
            continue
        name, sep, value = pair.partition("=")
        module, _, name = name.strip().rpartition(".")
        if not sep or module not in modules:
            raise SystemExit(f"--settings {pair!r}: give NAME=VALUE with NAME as {prefixes}")
        if not hasattr(modules[module], name):
            raise SystemExit(f"--settings {pair!r}: {modules[module].__name__} has no constant "
                             f"{name!r}; give one it defines")
        try:
            out.append((modules[module], name, ast.literal_eval(value.strip())))
        except (ValueError, SyntaxError):
            raise SystemExit(f"--settings {pair!r}: VALUE must be a number or a tuple") from None
    return out


def set_constants(settings: str | None, modules: dict) -> None:
    """Sets each constant of `settings` (see constants) on its module."""
    for module, name, value in constants(settings, modules):
        setattr(module, name, value)


def gpcore_starts():
    import gpcore.starts
    return gpcore.starts


def _grid_reference(set_name: str, kernel: str, series, refit: bool) -> dict:
    """`kernel` fitted from its own grid with its default restarts on
    `series`, as shipped: per series status, nll and period, the fit's CPU
    seconds and Newton evaluations; cached in CACHE (`--refit` after a
    change of the fitter)."""
    from gpcore import FitConfig, GPFitter

    path = _path(set_name, kernel).replace(".json", ".grid_reference.json")
    if os.path.exists(path) and not refit:
        with open(path) as f:
            cached = json.load(f)
        if cached["ids"] == [s.series_id for s in series]:
            return cached
    fitter = GPFitter(FitConfig(kernel=kernel), name="grid")
    fitter.fit(series[:2])  # the trace, off the clock
    fitter.work.update(dict.fromkeys(fitter.work, 0))
    clock = time.process_time()
    fits = fitter.fit(series)
    cpu = time.process_time() - clock
    rows = [{"status": r.status, "nll": r.nll, "stop": r.stop_reason,
             "period": next((c["period"] for c in r.components or [] if c["period"] is not None),
                            None)} for r in fits]
    out = {"ids": [s.series_id for s in series], "cpu_s": cpu, "restarts": fitter.config.restarts,
           "evaluations": fitter.work["member_evaluations"], "rows": rows}
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(out, f)
    return out


def main(argv=None) -> int:
    global CACHE  # pylint: disable=global-statement  (one cache folder per run)
    parser = argparse.ArgumentParser(prog="benchmarks/auto_choice.py",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=("fit", "table", "starts"))
    parser.add_argument("--set", choices=("tune", "holdout", "seasonal"), default="tune")
    parser.add_argument("--kernels", default="rbf,matern12")
    parser.add_argument("--every", type=int, default=1,
                        help="the seasonal set's every k-th series only; on a forecast split, "
                             "k series spread over it")
    parser.add_argument("--screened", action="store_true",
                        help="fit periodic kernels only on the series periodic_screen passes")
    parser.add_argument("--cache", default=CACHE, help="folder of the per-kernel fits")
    parser.add_argument("--settings", default=None,
                        help="table: only the settings whose name contains this text; starts: "
                             "gpcore.choice constants (or starts.NAME: gpcore.starts') to set "
                             "for the started fit, NAME=VALUE;NAME=VALUE")
    parser.add_argument("--started", default="",
                        help="starts: FitConfig settings of the started candidate, as a SPEC's: "
                             "jumps=1:max_iterations=100")
    parser.add_argument("--refit", action="store_true",
                        help="starts: refit the cached grid reference")
    args = parser.parse_args(argv)
    CACHE = args.cache
    if args.what == "fit":
        fit(args.set, [k for k in args.kernels.split(",") if k], args.every, args.screened)
        return 0
    if args.what == "starts":
        import gpcore.choice
        constants(args.settings, {"": gpcore.choice, "starts": gpcore_starts()})  # refused now
        kernel = args.kernels if args.kernels != parser.get_default("kernels") \
            else "matern52+periodic"
        print(starts(args.set, kernel, args.settings, args.started, args.refit))
        return 0
    settings = {k: v for k, v in SETTINGS.items() if args.settings is None or args.settings in k}
    print(table(args.set, settings, args.every))
    return 0


if __name__ == "__main__":
    sys.exit(main())

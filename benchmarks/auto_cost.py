"""Where `--kernel auto`'s time goes, candidate by candidate, beside `rbf`.

    python benchmarks/auto_cost.py [--split tune|holdout|real] [--count N]
        [--candidates matern52,matern12,...] [--settings "choice.NAME=VALUE;starts.NAME=VALUE;config.NAME=VALUE"] [--out FILE.json]

On forecast.py's split (`real`: the twelve held-out real sets' 2,264
series, `REAL_SETS`, with no forecast to score), in one process on one
TensorFlow thread (CPU seconds, which a shared machine disturbs less than
wall time): `rbf` (the
default kernel) fitted alone, then a KernelChoice of the candidates, each
candidate's fit calls timed where KernelChoice makes them, and the screen
(`choice.fits_periodic`) and the periodic starts (`choice.periodic_starts`)
timed apart. Per candidate: series fitted, CPU s, Newton member evaluations
per series, compiled batches, members per series, padded points per
series, fits at max_iterations. Per periodic length group: series, padded
length, CPU s, evaluations per series. Then what each candidate buys: the
calibrated forecast scores (forecast.py's MASE and 95 % cover) of auto's
choice, and of the choice made again (`choice.choose_fit`) without each
candidate, and how often each candidate is chosen.

`--settings` sets module constants after rbf's fit and before auto's
fitters are built and traced (gpcore.choice's, gpcore.starts',
gpcore.config's), for trying levers on the tune split: e.g.
"choice.GROUP_WORK_RATIO=2.0".
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)


# The held-out real sets (benchmarks/heldout_real*.py) that `--split real` fits.
REAL_SETS = ("heldout_real",) + tuple(f"heldout_real{i}" for i in range(2, 13))


def _series(split: str, count: int | None = None):
    """(forecast.py's cases of the split or None, the series to fit); with
    `count`, that many spread over the set (quick runs)."""
    import importlib

    import forecast
    import realdata
    from gpcore import Series
    if split == "real":
        return None, realdata.spread([s for name in REAL_SETS
                                      for s in importlib.import_module(name).real_series()], count)
    cases = forecast.cases(split, count)
    return cases, [Series(c.series_id, c.t, c.y) for c in cases]


def _modules() -> dict:
    """The modules --settings may set constants of, by prefix."""
    import gpcore.choice
    import gpcore.config
    import gpcore.starts

    return {"choice": gpcore.choice, "starts": gpcore.starts, "config": gpcore.config}


def _set_constants(settings: str | None) -> None:
    from auto_choice import set_constants

    set_constants(settings, _modules())


class _Timed:
    """Wraps a fitter's `fit`: CPU seconds and the calls' series and
    padded lengths, per call."""

    def __init__(self, fitter):
        self.fitter, self.calls = fitter, []
        self._fit = fitter.fit
        fitter.fit = self

    def __call__(self, series, starts_from=None):
        from gpcore.batching import padded_length
        before = dict(self.fitter.work)
        clock = time.process_time()
        out = self._fit(series, starts_from)
        work = {k: self.fitter.work[k] - before[k] for k in before}
        self.calls.append({"series": len(series), "cpu_s": time.process_time() - clock,
                           "padded": max((padded_length(int(r.n_points)) for r in out), default=0),
                           "at_max": sum(r.stop_reason == "max_iterations" for r in out), **work})
        return out


def _timed_function(module, name: str, totals: dict):
    inner = getattr(module, name)

    def timed(*args, **kwargs):
        clock = time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            totals[name] = totals.get(name, 0.0) + time.process_time() - clock
    setattr(module, name, timed)


def _scores(cases, series, results):
    """forecast.py's scores of each fit, or None (no cases: nothing held out)."""
    import forecast
    from gpcore.calibration import forecast as calibrated
    if cases is None:
        return [None] * len(series)
    out = []
    for case, s, r in zip(cases, series, results):
        if r is None or r.status != "ok":
            out.append(None)
            continue
        f = calibrated(s, r, case.t_test)
        out.append(forecast.scores(case, f.mean, *f.interval(forecast.LEVEL / 100)))
    return out


def _summary(scores) -> dict:
    import numpy as np
    ok = [s for s in scores if s is not None]
    if not ok:  # nothing scored: NaN
        return {"mase": float("nan"), "cover": float("nan"), "failed": 0}
    return {"mase": float(np.mean([s["mase"] for s in ok])),
            "cover": float(np.mean([s["coverage"] for s in ok])), "failed": len(scores) - len(ok)}


def run(split: str, candidates, settings: str | None, count: int | None = None) -> dict:
    import forecast
    forecast.one_thread()
    import gpcore.choice as choice
    from gpcore import FitConfig, GPFitter
    from gpcore.threads import configure_threads, skip_graph_rewrites

    configure_threads(1, 1)
    skip_graph_rewrites()
    cases, series = _series(split, count)
    cyclic = [s for s in series if choice.periodic_screen(s.t, s.y)][:2]

    rbf = GPFitter(FitConfig(kernel="rbf"), name="rbf")
    rbf.fit(series[:2])  # the trace, off the clock
    clock = time.process_time()
    rbf_fits = rbf.fit(series)
    rbf_cpu = time.process_time() - clock

    _set_constants(settings)  # after rbf's trace: rbf as shipped
    config = FitConfig(kernel="auto", candidates=tuple(candidates))
    auto = choice.KernelChoice(config)
    auto.fit(series[:2] + cyclic)  # every candidate's trace, off the clock
    timed = [_Timed(f) for f in auto.fitters]
    totals: dict = {}
    for name in ("fits_periodic", "periodic_starts", "choose_fit"):
        _timed_function(choice, name, totals)
    # KernelChoice.fit keeps each candidate's fits; catch them to score
    # the choice without each candidate (one the screen passed no series to
    # fitted none).
    per_candidate = {f.config.kernel.name: {} for f in auto.fitters}
    for f, t in zip(auto.fitters, timed):
        def keep(series_, starts_from=None, _t=t, _name=f.config.kernel.name):
            out = _t(series_, starts_from)
            per_candidate[_name].update(
                {s.series_id: r for s, r in zip(series_, out)})
            return out
        f.fit = keep
    choice.forget_screens()  # each series' screen is paid once, as in a command
    clock = time.process_time()
    chosen = auto.fit(series)
    auto_cpu = time.process_time() - clock

    names = [f.config.kernel.name for f in auto.fitters]
    rows = {}
    for name, t in zip(names, timed):
        fitted = sum(c["series"] for c in t.calls)
        rows[name] = {
            "series": fitted, "calls": len(t.calls), "cpu_s": sum(c["cpu_s"] for c in t.calls),
            "evaluations_per_series": sum(c["member_evaluations"] for c in t.calls) / max(fitted, 1),
            "batches": sum(c["batches"] for c in t.calls),
            "members_per_series": sum(c["members"] for c in t.calls) / max(fitted, 1),
            "at_max": sum(c["at_max"] for c in t.calls),
            "chosen": sum(r.kernel == name for r in chosen),
            "groups": [{k: c[k] for k in ("series", "padded", "cpu_s", "member_evaluations",
                                          "members", "batches")} for c in t.calls]}
    score_all = _summary(_scores(cases, series, chosen))
    without = {}
    for drop in names:
        kept = [n for n in names if n != drop]
        if not kept:
            continue
        again = []
        for s in series:
            fits = [per_candidate[n][s.series_id] for n in kept if s.series_id in per_candidate[n]]
            again.append(choice.choose_fit(fits) if fits else None)
        without[drop] = _summary(_scores(cases, series, again))
    return {"split": split, "settings": settings or "", "candidates": names,
            "series": len(series), "rbf_cpu_s": rbf_cpu,
            "rbf_evaluations_per_series": rbf.work["member_evaluations"] / len(series),
            "rbf": _summary(_scores(cases, series, rbf_fits)),
            "auto_cpu_s": auto_cpu, "auto": score_all, "timed_helpers_s": totals,
            "per_candidate": rows, "without": without,
            # Each candidate's nll per series: two records' optima compared.
            "nll": {name: {sid: r.nll for sid, r in fits.items() if r.status == "ok"}
                    for name, fits in per_candidate.items()},
            "chosen": {s.series_id: r.kernel for s, r in zip(series, chosen)},
            "screened": rows[names[-1]]["series"] if names else 0}


def report(r: dict) -> str:
    source = ("the held-out real sets" if r["split"] == "real"
              else f"forecast.py's {r['split']} split")
    lines = [f"{r['series']} series of {source}; candidates "
             f"{', '.join(r['candidates'])}; settings {r['settings'] or 'as shipped'}", "",
             f"rbf {r['rbf_cpu_s']:.2f} CPU s ({r['rbf_evaluations_per_series']:.1f} Newton ev. / "
             f"series; MASE {r['rbf']['mase']:.3f}, cover "
             f"{r['rbf']['cover']:.3f}); auto {r['auto_cpu_s']:.2f} CPU s "
             f"({r['auto_cpu_s'] / r['rbf_cpu_s']:.2f}x; MASE {r['auto']['mase']:.3f}, cover "
             f"{r['auto']['cover']:.3f})",
             "helpers: " + ", ".join(f"{k} {v:.2f} s" for k, v in r["timed_helpers_s"].items()), "",
             "| candidate | series | CPU s | Newton ev. / series | members / series | batches "
             "| at max_iterations | chosen | MASE without it | cover without it |",
             "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for name, row in r["per_candidate"].items():
        w = r["without"].get(name, {})
        lines.append(f"| {name} | {row['series']} | {row['cpu_s']:.2f} | "
                     f"{row['evaluations_per_series']:.1f} | {row['members_per_series']:.2f} | "
                     f"{row['batches']} | {row['at_max']} | {row['chosen']} | "
                     f"{w.get('mase', float('nan')):.3f} | {w.get('cover', float('nan')):.3f} |")
    periodic = [n for n in r["per_candidate"] if "periodic" in n]
    for name in periodic:
        lines += ["", f"{name}, per fit call (length group):", "",
                  "| series | padded n | CPU s | Newton ev. / series | members | batches |",
                  "|--:|--:|--:|--:|--:|--:|"]
        for g in r["per_candidate"][name]["groups"]:
            lines.append(f"| {g['series']} | {g['padded']} | {g['cpu_s']:.2f} | "
                         f"{g['member_evaluations'] / max(g['series'], 1):.1f} | {g['members']} | "
                         f"{g['batches']} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/auto_cost.py",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=("tune", "holdout", "real"), default="tune")
    parser.add_argument("--count", type=int, default=None,
                        help="only N series, spread over the set")
    parser.add_argument("--candidates", default=None,
                        help="auto's candidates, comma-separated (default: gpcore's)")
    parser.add_argument("--settings", default=None)
    parser.add_argument("--out", default=None, help="also write the record as JSON")
    args = parser.parse_args(argv)
    from auto_choice import constants
    constants(args.settings, _modules())  # a wrong NAME refused before any fit
    from gpcore.config import CANDIDATES
    candidates = args.candidates.split(",") if args.candidates else list(CANDIDATES)
    from gpcore import FitConfig
    try:  # refused now, not after rbf's fits
        FitConfig(kernel="auto", candidates=tuple(candidates))
    except ValueError as err:
        parser.error(f"--candidates {args.candidates}: {err}")
    r = run(args.split, candidates, args.settings, args.count)
    print(report(r))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(r, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Kernel sums on the seasonal set (benchmarks/seasonal.py): gpcore against
the scikit-learn peer, the periods found, and what kernel "auto" chooses.

    python benchmarks/seasonal_quality.py [--set seasonal|tuning] [--every K]
        [--kernel rbf+periodic] [--fresh] [--plain] [--candidates matern52,matern12,matern52+periodic]
        [--no-auto]

`--set tuning` judges the harmonic-rich tuning set of
benchmarks/seasonal_tuning.py instead of the seasonal set.

Measures (gap = nll_gpcore - nll_sklearn, nats, raw units; quality.py):
- on every seasonal series (synthetic and real), gpcore's `--kernel` against
  the peer's rbf+periodic at quality.REFERENCE_RESTARTS starts: the share
  within quality.TOLERANCE, the count worse by > quality.BAD_GAP;
- on the synthetic seasonal series, the share whose fitted period is within
  PERIOD_TOLERANCE of the true period or of 2 or 3 times it (a multiple
  still repeats the cycle; a fraction does not), and of the true period
  alone, for gpcore and for the peer; also on those with at least 2 cycles
  (a longer period is outside both sides' bounds, [spacing, span/2]);
- with `--plain`, on the non-seasonal series, gpcore's `--kernel` against
  the same peer: the count worse by > quality.BAD_GAP;
- kernel "auto" with `--candidates`: the share of seasonal series for which
  it picks a candidate with a periodic part, and of non-seasonal ones for
  which it picks one without;
- wall seconds of each (the peer's: its 2-process pool, when it ran).
The peer's fits are reused from benchmarks/results/seasonal-sklearn.json
when it holds them for this set, peer and scikit-learn version.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
if __name__ == "__main__":  # run as a script: gpcore from the checkout
    sys.path.insert(0, os.path.dirname(HERE))

import quality  # noqa: E402
from gpcore.config import CANDIDATES  # noqa: E402  (auto's own default: judge what users get)
import seasonal  # noqa: E402

PEER_KERNEL = "rbf+periodic"
CACHE = os.path.join(HERE, "results", "seasonal-sklearn.json")
# The sets this script judges: name -> (module building the cases, the
# peer's cache for its seasonal series, for its non-seasonal ones).
SETS = {
    "seasonal": ("seasonal", CACHE, os.path.join(HERE, "results", "seasonal-plain-sklearn.json")),
    "tuning": ("seasonal_tuning", os.path.join(HERE, "results", "seasonal-tuning-sklearn.json"),
               os.path.join(HERE, "results", "seasonal-tuning-plain-sklearn.json")),
}
PERIOD_TOLERANCE = 0.10  # relative
PERIOD_MULTIPLES = (1, 2, 3)


def period_hit(fitted, true: float, multiples=PERIOD_MULTIPLES) -> bool:
    """Whether the fitted period (None: none) is within PERIOD_TOLERANCE of
    true x one of `multiples`."""
    return fitted is not None and any(
        abs(fitted / (m * true) - 1) <= PERIOD_TOLERANCE for m in multiples)


def fitted_period(result):
    """The period of a FitResult's periodic component (units of t), or None."""
    for c in (result.components or []) if result.status == "ok" else []:
        if c.get("period") is not None:
            return float(c["period"])
    return None


@dataclasses.dataclass
class SeasonalComparison(quality.GapMeasures):
    """One run on the seasonal set.

    Attributes:
      kernel: gpcore's kernel against the peer's PEER_KERNEL.
      ids: [n] seasonal series ids; real: [n] bool; true_period: [n] (units of t);
      cycles: [n] true cycles per span.
      gaps: [n] nll_gpcore - nll_sklearn (quality.gaps).
      period_gpcore, period_sklearn: [n] fitted periods, None where none.
      gpcore_s, sklearn_s: wall seconds of the fits (sklearn_s: its pool's
        wall time when its fits were computed, None if unknown).
    """

    kernel: str
    ids: list
    real: np.ndarray
    true_period: np.ndarray
    cycles: np.ndarray
    gaps: np.ndarray
    period_gpcore: list
    period_sklearn: list
    gpcore_s: float
    sklearn_s: float | None
    evaluations: float = float("nan")  # Newton evaluations per series (all members)
    at_limit: int = 0  # fits stopped at max_iterations

    def period_rate(self, side: str, multiples=PERIOD_MULTIPLES, min_cycles: float = 0.0) -> float:
        """Share of synthetic seasonal series with at least `min_cycles`
        cycles whose period `side` ("gpcore" or "sklearn") found is a hit
        (period_hit)."""
        periods = getattr(self, f"period_{side}")
        hits = [period_hit(p, true, multiples)
                for p, true, real, cycles in zip(periods, self.true_period, self.real, self.cycles)
                if not real and cycles >= min_cycles]
        return float(np.mean(hits)) if hits else float("nan")


@dataclasses.dataclass
class PlainComparison(quality.GapMeasures):
    """gpcore's `kernel` against the peer on non-seasonal series: ids [n],
    gaps [n] (quality.gaps)."""

    kernel: str
    ids: list
    gaps: np.ndarray


@dataclasses.dataclass
class AutoChoice:
    """What kernel "auto" chose: [kernel name, or the status when not "ok"]
    on the seasonal and on the non-seasonal series, and the wall seconds
    of fitting both."""

    candidates: tuple
    seasonal: list
    plain: list
    seconds: float

    @property
    def periodic_share(self) -> float:
        """Share of seasonal series given a kernel with a periodic part."""
        return float(np.mean(["periodic" in k for k in self.seasonal]))

    @property
    def plain_share(self) -> float:
        """Share of non-seasonal series given a kernel without one."""
        return float(np.mean(["periodic" not in k for k in self.plain]))


def timed_fit(config, series, work: dict | None = None):
    """(results, wall seconds): `series` fitted by a fitter for `config`,
    built and traced before the clock starts; `work`, if given, gets the
    fitter's work counters of the timed fit and its process CPU seconds
    (`cpu_s`)."""
    import gpcore

    build = getattr(gpcore, "build_fitter", gpcore.GPFitter)  # "auto" needs build_fitter
    fitter = build(config)
    fitter.fit(series[:2])
    before = dict(getattr(fitter, "work", {}))
    start, cpu = time.perf_counter(), time.process_time()
    results = fitter.fit(series)
    seconds = time.perf_counter() - start
    if work is not None:
        work.update({k: v - before.get(k, 0) for k, v in getattr(fitter, "work", {}).items()})
        work["cpu_s"] = time.process_time() - cpu
    return results, seconds


def set_cases(name: str = "seasonal", every: int = 1):
    """(cases, the peer's cache for their seasonal series, for the others)
    of the set called `name` (SETS); every > 1: every `every`-th seasonal
    and non-seasonal case only (a sample for a busy machine: the peer takes
    7 CPU seconds a series), with caches of their own."""
    module, seasonal_cache, plain_cache = SETS[name]
    cases = importlib.import_module(module).cases()
    if every > 1:
        cases = ([c for c in cases if c.seasonal][::every]
                 + [c for c in cases if not c.seasonal][::every])
        seasonal_cache, plain_cache = (path.replace(".json", f"-every{every}.json")
                                       for path in (seasonal_cache, plain_cache))
    return cases, seasonal_cache, plain_cache


def compare(kernel: str = PEER_KERNEL, fresh: bool = False, cases=None,
            cache: str = CACHE) -> SeasonalComparison:
    """Fits the seasonal series of `cases` (default: the seasonal set) with
    gpcore (FitConfig defaults but `kernel`) and compares with the peer
    (cached in `cache` unless `fresh`)."""
    cases = [c for c in (seasonal.cases() if cases is None else cases) if c.seasonal]
    series = [c.series for c in cases]
    peer = quality.peer_fits(series, None if fresh else cache, PEER_KERNEL)  # before TF starts

    from gpcore import FitConfig

    work: dict = {}
    results, gpcore_s = timed_fit(FitConfig(kernel=kernel), series, work)
    return SeasonalComparison(
        kernel, [s.series_id for s in series], np.array([c.real for c in cases]),
        np.array([c.period for c in cases]),
        np.array([np.ptp(c.series.t) / c.period for c in cases]),
        quality.gaps(results, peer["nll"]),
        [fitted_period(r) for r in results], peer["period"], gpcore_s, peer.get("wall_s"),
        work.get("member_evaluations", 0) / max(len(series), 1),
        sum(r.stop_reason == "max_iterations" for r in results))


def plain_peer(cases, cache: str | None) -> list:
    """[nll or None] of the peer on the non-seasonal series of `cases`
    (cached in `cache` unless None)."""
    return quality.peer_fits([c.series for c in cases if not c.seasonal], cache, PEER_KERNEL)["nll"]


def compare_plain(kernel: str, cases, peer_nll) -> PlainComparison:
    """gpcore's `kernel` against the peer (plain_peer) on the non-seasonal
    series of `cases`."""
    from gpcore import FitConfig

    series = [c.series for c in cases if not c.seasonal]
    results, _ = timed_fit(FitConfig(kernel=kernel), series)
    return PlainComparison(kernel, [s.series_id for s in series], quality.gaps(results, peer_nll))


def choose(candidates=CANDIDATES, cases=None) -> AutoChoice:
    """Fits `cases` (default: the seasonal set, seasonal and not) with kernel
    "auto" and these candidates (FitConfig defaults otherwise)."""
    from gpcore import FitConfig

    cases = seasonal.cases() if cases is None else cases
    results, seconds = timed_fit(FitConfig(kernel="auto", candidates=tuple(candidates)),
                            [c.series for c in cases])
    kernels = [r.kernel if r.status == "ok" else r.status for r in results]
    return AutoChoice(tuple(candidates), [k for k, c in zip(kernels, cases) if c.seasonal],
                      [k for k, c in zip(kernels, cases) if not c.seasonal], seconds)


def table(c: SeasonalComparison, auto: AutoChoice | None = None,
          plain: PlainComparison | None = None) -> str:
    """The Markdown table of benchmarks/RESULTS.md, then the worst series."""
    synthetic = int((~c.real).sum())
    rows = [
        f"| measure | gpcore ({c.kernel}) | scikit-learn ({PEER_KERNEL}, "
        f"{quality.REFERENCE_RESTARTS} starts) |",
        "|---|--:|--:|",
        f"| seasonal series (synthetic + real) | {len(c.ids)} ({synthetic} + "
        f"{len(c.ids) - synthetic}) | same |",
        f"| within {quality.TOLERANCE} nats of scikit-learn or better | "
        f"{100 * c.share_within:.1f} % | (reference) |",
        f"| worse by > {quality.BAD_GAP:g} nat | {c.worse_than_bad_gap} | (reference) |",
        f"| period within {100 * PERIOD_TOLERANCE:.0f} % of 1, 2 or 3 x the true one "
        f"({synthetic} synthetic) | {100 * c.period_rate('gpcore'):.1f} % | "
        f"{100 * c.period_rate('sklearn'):.1f} % |",
        f"| period within {100 * PERIOD_TOLERANCE:.0f} % of the true one | "
        f"{100 * c.period_rate('gpcore', (1,)):.1f} % | "
        f"{100 * c.period_rate('sklearn', (1,)):.1f} % |",
        f"| period within {100 * PERIOD_TOLERANCE:.0f} % of 1, 2 or 3 x the true one, "
        f"{int(((~c.real) & (c.cycles >= 2)).sum())} synthetic with >= 2 cycles | "
        f"{100 * c.period_rate('gpcore', min_cycles=2):.1f} % | "
        f"{100 * c.period_rate('sklearn', min_cycles=2):.1f} % |",
        f"| worse by > 5 nats | {int(np.sum(c.gaps > 5))} | (reference) |",
        f"| Newton evaluations per series / fits stopped at max_iterations | "
        f"{c.evaluations:.1f} / {c.at_limit} | - |",
        f"| fit wall time, s | {c.gpcore_s:.1f} | "
        + ("cached" if c.sklearn_s is None else f"{c.sklearn_s:.1f} (2 processes)") + " |",
    ]
    if plain is not None:
        rows += [f"| {plain.kernel} on {len(plain.ids)} non-seasonal series: worse by > "
                 f"{quality.BAD_GAP:g} nat / within {quality.TOLERANCE} nats | "
                 f"{plain.worse_than_bad_gap} / {100 * plain.share_within:.1f} % | (reference) |"]
    if auto is not None:
        rows += [
            f"| auto ({', '.join(auto.candidates)}): periodic choice on "
            f"{len(auto.seasonal)} seasonal series | {100 * auto.periodic_share:.1f} % | - |",
            f"| auto: non-periodic choice on {len(auto.plain)} non-seasonal series | "
            f"{100 * auto.plain_share:.1f} % | - |",
            f"| auto fit wall time (all {len(auto.seasonal) + len(auto.plain)} series), s | "
            f"{auto.seconds:.1f} | - |",
        ]
    worst = c.worst()
    if worst:
        rows += ["", "Worst gaps (nats): " + ", ".join(f"{i} ({g:+.2f})" for i, g in worst)]
    return "\n".join(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/seasonal_quality.py",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--set", default="seasonal", choices=sorted(SETS),
                        help="the seasonal set, or the harmonic-rich tuning set")
    parser.add_argument("--kernel", default=PEER_KERNEL, help="gpcore's kernel against the peer")
    parser.add_argument("--every", type=int, default=1,
                        help="judge every k-th series of the set only (its own peer cache)")
    parser.add_argument("--plain", action="store_true",
                        help="also compare --kernel with the peer on the non-seasonal series")
    parser.add_argument("--candidates", default=",".join(CANDIDATES),
                        help="kernel 'auto' candidates, comma-separated")
    parser.add_argument("--no-auto", action="store_true", help="skip the kernel 'auto' part")
    parser.add_argument("--fresh", action="store_true",
                        help=f"refit scikit-learn instead of reusing {os.path.relpath(CACHE)}")
    args = parser.parse_args(argv)
    cases, seasonal_cache, plain_cache = set_cases(args.set, args.every)
    # The peer's fits first, before TensorFlow starts here.
    plain_nll = plain_peer(cases, None if args.fresh else plain_cache) if args.plain else None
    comparison = compare(args.kernel, args.fresh, cases, seasonal_cache)
    plain = compare_plain(args.kernel, cases, plain_nll) if args.plain else None
    auto = None if args.no_auto else choose(tuple(args.candidates.split(",")), cases)
    print(table(comparison, auto, plain))
    return 0


if __name__ == "__main__":
    sys.exit(main())

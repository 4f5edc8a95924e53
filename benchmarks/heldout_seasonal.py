"""The held-out seasonal set: kernel sums proven on series tuning never saw.

Built deterministically (SEED) and offline, with generators of its own (not
benchmarks/seasonal.py's, which the fitter is tuned on). COUNT // 2 series
have a cycle, the rest none:

- seasonal ("heldout/seasonal/<k>/<shape>/<sampling>"): a periodic part of
  one of five shapes, unit sd: a sawtooth (ramp and drop, 12 harmonics), a
  pulse train (narrow von Mises bumps, 2-12 % of the period wide), a
  square-ish wave (tanh of a sine, steepness 2-8), an ExpSineSquared draw
  with a SHORT length scale 0.3-0.7 (harmonic-rich) and a sinusoid; 1.5-10
  cycles in the span (log-uniform: about 15 % have fewer than two, whose
  period the two-cycle bound cannot reach); on a background of nothing, a
  line, a slow smooth draw (length scale 1-3 periods) or a slow random walk,
  0.2-2 times the cycle's sd; noise sd 0.02-1 times the cycle's sd
  (log-uniform).
- non-seasonal ("heldout/plain/<k>/<shape>/<sampling>"): a line, a
  logistic step, a random walk (with or without drift), an Ornstein-Uhlenbeck
  path, or a smooth draw (RBF or Matern-3/2, length scale 0.02-1 span),
  same noise rule.

Times: 80-300 points; regular, regular with runs of missing values, Poisson
(exponential spacings) or bursty (clusters); a third have one or two gaps
of 4-20 % of the span; 10 % of the rest have 3-10 % of the values missing;
span 10^U(-1, 4) units at an offset of U(-5e3, 5e3); values scaled by
10^U(-2, 3) and offset by U(-1e3, 1e3).

    python benchmarks/heldout_seasonal.py [--list] [--check] [--kernel rbf+periodic]
        [--count N] [--fresh]

`--check` fits with gpcore (FitConfig defaults but `--kernel`) and scores it
against the oracle (benchmarks/heldout_oracle.py, rbf+periodic, 4 starts,
cached in benchmarks/results/): the share within quality.TOLERANCE nats or
better, counts worse by > 1 and > 5 nats (all series, and the non-seasonal
half alone), and on the seasonal half the share whose period is within 10 %
of 1, 2 or 3 x the true one (on the series with at least two cycles, which
the bound allows, and on all).
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if __name__ == "__main__":  # run as a script: gpcore from the checkout
    sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from gpcore import Series  # noqa: E402

SEED = 7_331_2026  # not the tuning set's
COUNT = 160
POINTS = (80, 300)
CYCLES = (1.5, 10.0)
SHAPES = ("sawtooth", "pulses", "square", "expsinsq_short", "sine")
PLAIN_SHAPES = ("line", "logistic", "random_walk", "ou", "rbf", "matern32")
CACHE = os.path.join(HERE, "results", "heldout-seasonal-sklearn.json")
ORACLE_KERNEL = "rbf+periodic"
SEVERE_GAP = 5.0  # nats


@dataclasses.dataclass
class Case:
    """One series: its true period (units of t; None: no cycle)."""

    series: Series
    period: float | None

    @property
    def seasonal(self) -> bool:
        return self.period is not None

    @property
    def cycles(self) -> float | None:
        t = self.series.t
        return None if self.period is None else float((t[-1] - t[0]) / self.period)


def _unit(f: np.ndarray) -> np.ndarray:
    return (f - f.mean()) / max(f.std(), 1e-12)


def _times(rng, n: int) -> tuple[np.ndarray, np.ndarray, str]:
    """(times [n] sorted, missing mask [n], sampling name)."""
    sampling = rng.choice(["regular", "regular_runs", "poisson", "bursty"])
    if sampling in ("regular", "regular_runs"):
        u = np.arange(n, dtype=float)
    elif sampling == "poisson":
        u = np.cumsum(rng.exponential(1.0, n))
    else:  # clusters of 3-12 points close together, clusters far apart
        sizes = []
        while sum(sizes) < n:
            sizes.append(int(rng.integers(3, 13)))
        u = np.concatenate([c + np.sort(rng.uniform(0, 0.3 * s, s))
                            for c, s in zip(np.cumsum(rng.exponential(3.0, len(sizes))) * 4,
                                            sizes)])[:n]
        u = np.sort(u)  # clusters may overlap
    u = (u - u[0]) / (u[-1] - u[0])
    missing = np.zeros(n, bool)
    if rng.uniform() < 1 / 3:  # gaps: the points inside them are dropped, new ones drawn elsewhere
        for _ in range(int(rng.integers(1, 3))):
            width = rng.uniform(0.04, 0.2)
            start = rng.uniform(0.05, 0.95 - width)
            inside = (u > start) & (u < start + width)
            outside = u[~inside]
            u = np.sort(np.concatenate([outside, rng.choice(outside, inside.sum())
                                        + rng.uniform(-1e-3, 1e-3, inside.sum())]))
            u = np.clip(u, 0, 1)
        sampling += "+gap"
    if sampling.startswith("regular_runs"):
        for _ in range(int(rng.integers(2, 6))):
            start = int(rng.integers(0, n - 10))
            missing[start:start + int(rng.integers(3, 10))] = True
    elif rng.uniform() < 0.1:
        missing[rng.choice(n, int(n * rng.uniform(0.03, 0.1)), replace=False)] = True
        sampling += "+missing"
    span = 10 ** rng.uniform(-1, 4)
    return rng.uniform(-5e3, 5e3) + span * u, missing, sampling


def _cov_draw(rng, t, covariance) -> np.ndarray:
    d = np.abs(t[:, None] - t[None, :])
    k = covariance(d) + 1e-9 * np.eye(t.size)
    w, v = np.linalg.eigh(k)  # eigh: robust where clustered times make k singular
    return _unit(v @ (np.sqrt(np.clip(w, 0, None)) * rng.standard_normal(t.size)))


def _cycle(rng, t, period: float, shape: str) -> np.ndarray:
    phase = (t - t[0]) / period + rng.uniform()  # in cycles
    if shape == "sawtooth":  # ramp up, drop: harmonics of 1/k
        f = sum(np.sin(2 * np.pi * k * phase) / k for k in range(1, 13))
    elif shape == "pulses":
        kappa = 1 / (2 * np.pi * rng.uniform(0.02, 0.12)) ** 2  # von Mises width
        f = np.exp(kappa * (np.cos(2 * np.pi * phase) - 1))
    elif shape == "square":
        f = np.tanh(rng.uniform(2, 8) * np.sin(2 * np.pi * phase))
    elif shape == "expsinsq_short":
        ell = rng.uniform(0.3, 0.7)
        f = _cov_draw(rng, t, lambda d: np.exp(-2 * np.sin(np.pi * d / period) ** 2 / ell ** 2))
    else:
        f = np.sin(2 * np.pi * phase)
    return _unit(f)


def _random_walk(rng, t, drift: float = 0.0) -> np.ndarray:
    dt = np.diff(t, prepend=t[0])
    return _unit(np.cumsum(rng.standard_normal(t.size) * np.sqrt(dt + 1e-12) + drift * dt))


def _background(rng, t, period: float) -> tuple[np.ndarray, str]:
    kind = rng.choice(["none", "line", "smooth", "walk"])
    if kind == "none":
        return np.zeros_like(t), kind
    if kind == "line":
        f = _unit(t - t[0])
    elif kind == "smooth":
        ell = period * rng.uniform(1, 3)
        f = _cov_draw(rng, t, lambda d: np.exp(-0.5 * (d / ell) ** 2))
    else:
        f = _random_walk(rng, t)
        f = _unit(np.convolve(f, np.ones(5) / 5, mode="same"))  # slow: smoothed steps
    return rng.uniform(0.2, 2.0) * f, kind


def _plain(rng, t, shape: str) -> np.ndarray:
    span = t[-1] - t[0]
    if shape == "line":
        return _unit(t - t[0])
    if shape == "logistic":
        centre, width = rng.uniform(0.2, 0.8) * span, rng.uniform(0.03, 0.3) * span
        return _unit(1 / (1 + np.exp(-(t - t[0] - centre) / width)))
    if shape == "random_walk":
        return _random_walk(rng, t, drift=rng.choice([0.0, rng.normal(0, 3) / span]) * span)
    ell = span * 10 ** rng.uniform(-1.7, 0)
    if shape == "ou":
        return _cov_draw(rng, t, lambda d: np.exp(-d / ell))
    if shape == "matern32":
        return _cov_draw(rng, t, lambda d: (1 + np.sqrt(3) * d / ell) * np.exp(-np.sqrt(3) * d / ell))
    return _cov_draw(rng, t, lambda d: np.exp(-0.5 * (d / ell) ** 2))


def _finish(rng, t, missing, signal, sd: float) -> np.ndarray:
    y = rng.uniform(-1e3, 1e3) + 10 ** rng.uniform(-2, 3) * (
        signal + sd * 10 ** rng.uniform(np.log10(0.02), 0) * rng.standard_normal(t.size))
    y[missing] = np.nan
    return y


def _seasonal_case(rng, k: int) -> Case:
    n = int(rng.integers(POINTS[0], POINTS[1] + 1))
    t, missing, sampling = _times(rng, n)
    period = (t[-1] - t[0]) / 10 ** rng.uniform(*np.log10(CYCLES))
    shape = SHAPES[k % len(SHAPES)]
    cycle = _cycle(rng, t, period, shape)
    background, kind = _background(rng, t, period)
    y = _finish(rng, t, missing, cycle + background, 1.0)
    return Case(Series(f"heldout/seasonal/{k}/{shape}+{kind}/{sampling}", t, y), float(period))


def _plain_case(rng, k: int) -> Case:
    n = int(rng.integers(POINTS[0], POINTS[1] + 1))
    t, missing, sampling = _times(rng, n)
    shape = PLAIN_SHAPES[k % len(PLAIN_SHAPES)]
    y = _finish(rng, t, missing, _plain(rng, t, shape), 1.0)
    return Case(Series(f"heldout/plain/{k}/{shape}/{sampling}", t, y), None)


def drawn(seed: int, seasonal_case, plain_case, seasonal_count: int, plain_count: int) -> tuple:
    """A set's Cases drawn from one generator seeded `seed`: seasonal_count
    of seasonal_case(rng, k), then plain_count of plain_case(rng, k); ids
    unique."""
    rng = np.random.default_rng(seed)
    out = [seasonal_case(rng, k) for k in range(seasonal_count)]
    out += [plain_case(rng, k) for k in range(plain_count)]
    ids = [c.series.series_id for c in out]
    assert len(ids) == len(set(ids)), "duplicate series ids"
    return tuple(out)


def spread_copies(built, count: int | None = None) -> list[Case]:
    """Fresh copies of a set's Cases `built`; with `count`, that many spread
    evenly over it (quick runs)."""
    import realdata

    every = [Case(Series(c.series.series_id, c.series.t.copy(), c.series.y.copy()), c.period)
             for c in built]
    return realdata.spread(every, count)


def set_cases(seed: int, seasonal_case, plain_case, seasonal_count: int, plain_count: int):
    """A set's `cases(count=None)`: its Cases drawn once (`drawn`), each call
    fresh copies (`spread_copies`): the seasonal ones, then the others."""
    built = functools.lru_cache(maxsize=1)(
        lambda: drawn(seed, seasonal_case, plain_case, seasonal_count, plain_count))

    def cases(count: int | None = None) -> list[Case]:
        """The set (seasonal, then non-seasonal), fresh arrays; with `count`,
        that many spread evenly over it (quick runs)."""
        return spread_copies(built(), count)

    return cases


cases = set_cases(SEED, _seasonal_case, _plain_case, COUNT // 2, COUNT - COUNT // 2)


# ---- scoring -------------------------------------------------------------------

@dataclasses.dataclass
class Score:
    kernel: str
    measures: object  # heldout_oracle.Gaps
    seasonal: np.ndarray  # [n] bool
    cycles: list  # [n] true cycles in the span, None without
    period_hits: list  # [n] period_hit, None on non-seasonal
    true_period: list  # [n] units of t, None on non-seasonal
    fitted_period: list  # [n] gpcore's, None without one
    gpcore_s: float
    oracle_s: float
    evaluations: float = float("nan")  # Newton evaluations per series (all members)
    at_limit: int = 0  # fits stopped at max_iterations

    def _share(self, mask) -> float:
        hits = [h for h, m in zip(self.period_hits, mask) if m]
        return float(np.mean(hits)) if hits else float("nan")

    def fractions(self, mask) -> int:
        """How many of `mask`'s series gpcore fitted at 1/2 or 1/3 of the
        true period (within 10 %): a harmonic taken for the cycle."""
        from seasonal_quality import period_hit

        return sum(m and p is not None and period_hit(p, true, (0.5, 1 / 3))
                   for m, p, true in zip(mask, self.fitted_period, self.true_period))

    def to_json(self) -> dict:
        return {"kernel": self.kernel, "ids": [str(i) for i in self.measures.ids],
                "gaps": [float(g) for g in self.measures.gaps],
                "true_period": self.true_period, "fitted_period": self.fitted_period,
                "cycles": self.cycles}

    def table(self) -> str:
        import quality

        g = self.measures
        plain = ~self.seasonal
        two = np.array([c is not None and c >= 2 for c in self.cycles])
        rows = [
            f"| measure | gpcore ({self.kernel}) |", "|---|--:|",
            f"| series (seasonal + non-seasonal) | {len(g.ids)} ({int(self.seasonal.sum())} + "
            f"{int(plain.sum())}) |",
            f"| within {quality.TOLERANCE} nats of the oracle or better | "
            f"{100 * g.share_within:.1f} % |",
            f"| seasonal: within {quality.TOLERANCE} nats or better; worse by > "
            f"{quality.BAD_GAP:g} / > {SEVERE_GAP:g} nats | "
            f"{100 * np.mean(g.gaps[self.seasonal & ~np.isnan(g.gaps)] <= quality.TOLERANCE):.1f} %; "
            f"{int(np.sum(g.gaps[self.seasonal] > quality.BAD_GAP))} / "
            f"{int(np.sum(g.gaps[self.seasonal] > SEVERE_GAP))} |",
            f"| worse by > {quality.BAD_GAP:g} nat / > {SEVERE_GAP:g} nats | "
            f"{g.worse_than_bad_gap} / {int(np.sum(g.gaps > SEVERE_GAP))} |",
            f"| non-seasonal: worse by > {quality.BAD_GAP:g} nat | "
            f"{int(np.sum(g.gaps[plain] > quality.BAD_GAP))} of {int(plain.sum())} |",
            f"| seasonal, >= 2 cycles: period within 10 % of 1, 2 or 3 x the true one | "
            f"{100 * self._share(two):.1f} % of {int(two.sum())} |",
            f"| seasonal, all: period within 10 % of 1, 2 or 3 x the true one | "
            f"{100 * self._share(self.seasonal):.1f} % of {int(self.seasonal.sum())} |",
            f"| seasonal, >= 2 cycles: period at 1/2 or 1/3 of the true one (10 %) | "
            f"{self.fractions(two)} of {int(two.sum())} |",
            f"| Newton evaluations per series / fits stopped at max_iterations | "
            f"{self.evaluations:.1f} / {self.at_limit} |",
            f"| gpcore fit wall s / oracle wall s (2 processes) | {self.gpcore_s:.1f} / "
            + ("cached" if self.oracle_s is None else f"{self.oracle_s:.1f}") + " |",
        ]
        if g.own_nll:
            rows.append(f"| scored by the fitter's own nll (kernel unknown to numpy) | {g.own_nll} |")
        worst = g.worst()
        if worst:
            rows += ["", "Worst gaps (nats): " + ", ".join(f"{i} ({v:+.2f})" for i, v in worst)]
        return "\n".join(rows)


def cache_path(cache: str, count: int | None) -> str:
    """The oracle's cache for `count` series of a set (None: all), so that a
    quick run does not overwrite the whole set's fits."""
    return cache if count is None else cache.replace(".json", f"-count{count}.json")


def check(kernel: str = "rbf+periodic", count: int | None = None, fresh: bool = False,
          chosen: list | None = None, cache: str = CACHE) -> Score:
    """Fits `chosen` (default: this set, `count` of it) with gpcore (FitConfig
    defaults but `kernel`) and scores it against the oracle cached in `cache`."""
    import heldout_oracle
    from seasonal_quality import fitted_period, period_hit

    chosen = cases(count) if chosen is None else chosen
    series = [c.series for c in chosen]
    oracle = heldout_oracle.oracle_fits(series, ORACLE_KERNEL,
                                        None if fresh else cache_path(cache, count))
    from gpcore import FitConfig

    work: dict = {}
    results, seconds = heldout_oracle.fit_gpcore(FitConfig(kernel=kernel), series, work)
    periods = [fitted_period(r) for r in results]
    hits = [None if c.period is None else period_hit(p, c.period)
            for c, p in zip(chosen, periods)]
    return Score(kernel, heldout_oracle.gaps(series, results, oracle["fits"]),
                 np.array([c.seasonal for c in chosen]), [c.cycles for c in chosen], hits,
                 [c.period for c in chosen], periods, seconds, oracle.get("wall_s"),
                 work.get("member_evaluations", 0) / max(len(series), 1),
                 sum(r.stop_reason == "max_iterations" for r in results))


def command(argv, prog: str, doc: str, set_cases, cache: str) -> int:
    """The command line of a held-out seasonal set: `set_cases(count)` gives
    its cases, `cache` holds its oracle's fits."""
    parser = argparse.ArgumentParser(prog=prog, description=doc.split("\n")[0])
    parser.add_argument("--list", action="store_true", help="print the series")
    parser.add_argument("--check", action="store_true", help="fit and score against the oracle")
    parser.add_argument("--oracle", action="store_true", help="only fit and cache the oracle")
    parser.add_argument("--kernel", default="rbf+periodic", help="gpcore's kernel (any FitConfig kernel)")
    parser.add_argument("--count", type=int, default=None, help="only N series, spread over the set")
    parser.add_argument("--fresh", action="store_true", help="refit the oracle, ignore its cache")
    parser.add_argument("--out", default=None, help="--check: per-series gaps and periods (JSON)")
    args = parser.parse_args(argv)
    if args.list or not (args.check or args.oracle):
        for c in set_cases(args.count):
            s = c.series
            cycles = "" if c.period is None else f"{c.cycles:.1f} cycles"
            print(f"{s.series_id}\t{s.t.size}\t{np.isfinite(s.y).sum()}\t{s.t[0]:g}..{s.t[-1]:g}"
                  f"\t{cycles}")
    if args.oracle:
        import heldout_oracle

        fits = heldout_oracle.oracle_fits([c.series for c in set_cases(args.count)], ORACLE_KERNEL,
                                          None if args.fresh else cache_path(cache, args.count))
        print(f"oracle: {len(fits['fits'])} fits, wall {fits.get('wall_s', 0):.0f} s")
    if args.check:
        score = check(args.kernel, args.count, args.fresh, chosen=set_cases(args.count), cache=cache)
        print(score.table())
        if args.out:
            import json

            with open(args.out, "w") as f:
                json.dump(score.to_json(), f)
    return 0


def main(argv=None) -> int:
    return command(argv, "benchmarks/heldout_seasonal.py", __doc__, cases, CACHE)


if __name__ == "__main__":
    sys.exit(main())

"""Is `--kernel auto`'s periodic screen calibrated? Its pass rate on null
series and on series with a true cycle (docs/design.md, "Kernel choice",
*The screen's false alarm*).

    python benchmarks/screen_calibration.py [--count N] [--sizes 24,60,150,400]
        [--seed S] [--no-ablation] [--out FILE.md]
    python benchmarks/screen_calibration.py --sets [--out FILE.md]

gpcore.choice.periodic_screen passes a series to auto's periodic candidate
when its false-alarm probability, 1 - (1 - exp(-z))^K (z the highest
periodogram peak over the prewhitened residual's variance, K "independent"
frequencies), is below `false_alarm` (config.SCREEN_FALSE_ALARM, 0.01).
This script draws N series per cell (numpy only, seeded per cell) and
counts the ones the screen itself passes (`choice._judged`, the verdict
without its memory), at 0.01 and at 0.05; each rate is given with its
binomial standard error sqrt(p (1 - p) / N).

Null series (no cycle; every pass is a false alarm), at n = 24, 60, 150,
400 points:
  white      N(0, 1)
  ar1 0.5    AR(1), phi 0.5, from its stationary distribution
  ar1 0.9    the same, phi 0.9
  walk       a random walk (cumulative N(0, 1) steps)
  line       a line rising 5 noise sd over the span, plus N(0, 1): the
             screen removes the line exactly, so it reads as white noise
each on three time layouts, one value per observation:
  regular    daily, no gaps
  missing    daily, max(1, 3 % of n) single days missing at random (the
             process runs in calendar time; the steps of 2 send the series
             to the screen's index judgement)
  trading    weekdays only (weekend gaps of 3 days), judged at the index
Series with a true cycle, at regular times: a sine or a sawtooth of 3, 5
or 10 cycles per span, random phase, scaled to a signal-to-noise ratio
(signal sd over noise sd) of 0.25, 0.5 or 1, plus N(0, 1).

Each null and cycle cell also gives the rate with K scaled by
SCREEN_OVERSAMPLE ("K x 4"; the ablation also by 2): the screen takes its
maximum over a band sampled SCREEN_OVERSAMPLE times per 1 / span while K
counts one frequency per 1 / span. Scaling K by S turns the screen's
probability p into 1 - (1 - p)^S (the same as calling it with
false_alarm 1 - (1 - a)^(1 / S)); it is measured so, from the copy's p. Each cycle cell also gives the rate at 0.01 without the
lag-1 prewhitening (the copy below), which a strong slow cycle's own
autocorrelation turns against it. Each null and cycle cell also gives the
rate at 0.01 of a lever, not the screen: the prewhitening's coefficient
taken from the residual less the sinusoid of its own highest peak
("phi after its peak").

The white-noise ablation (off with `--no-ablation`) finds which term of
the screen raises its false alarm. It recomputes the screen's
false-alarm probability with `false_alarm_probability` (a copy of
`choice._judged` with switches; every series of every cell is checked to
give the screen's own verdict at both settings, and the disagreements are
printed) with: the maximum over independent frequencies only
(oversample 1), no lag-1 prewhitening (phi 0), the mean removed instead of
the line, and all three.

`--sets` instead counts, on the project's tuning and proof sets
(`SETS`: forecast.py's halves, seasonal.py and the four held-out seasonal
sets), the series the screen judges and how many of those pass as shipped
and with "phi after its peak", by group (true cycles in the span, or no
cycle; forecast.py's "seasonal" subset where there is no true period).

The screen is numpy (gpcore.choice._judged, gpcore.starts.even_periodogram);
importing gpcore loads TensorFlow, which costs a few seconds and runs no
graph here.
"""
from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np

SIZES = (24, 60, 150, 400)
NULLS = ("white", "ar1 0.5", "ar1 0.9", "walk", "line")
LAYOUTS = ("regular", "missing", "trading")
SHAPES = ("sine", "sawtooth")
CYCLES = (3, 5, 10)
SNRS = (0.25, 0.5, 1.0)
SETTINGS = (0.01, 0.05)
# The ablation's variants of the screen: (oversample, prewhiten, line).
VARIANTS = {"as shipped": (None, True, True), "oversample 1": (1, True, True),
            "no prewhitening": (None, False, True), "mean, not line": (None, True, False),
            "all three": (1, False, False)}
# About 3 minutes on one core of the 2-core Xeon (RESULTS.md).
COUNT = 2000
# Probabilities below this are one verdict: a series passed unjudged (0)
# or failed before the test (1) never sits at a threshold.
UNJUDGED, FAILED = 0.0, 1.0


def null_values(kind: str, rng, count: int, n: int) -> np.ndarray:
    """[count, n] values of a null process at n consecutive steps."""
    e = rng.standard_normal((count, n))
    if kind in ("white",):
        return e
    if kind == "line":
        return e + np.linspace(0.0, 5.0, n)
    if kind == "walk":
        return np.cumsum(e, axis=1)
    phi = float(kind.split()[1])
    out = np.empty_like(e)
    out[:, 0] = e[:, 0] / math.sqrt(1 - phi * phi)  # stationary start
    for i in range(1, n):
        out[:, i] = phi * out[:, i - 1] + e[:, i]
    return out


def layout(kind: str, rng, count: int, n: int, values) -> list[tuple[np.ndarray, np.ndarray]]:
    """count (t [n] in days, y [n]) of a layout; values(m) draws [count, m]."""
    if kind == "regular":
        return [(np.arange(n, dtype=float), y) for y in values(n)]
    if kind == "trading":
        days = np.arange(2 * n + 7)
        weekdays = days[days % 7 < 5][:n].astype(float)
        return [(weekdays, y) for y in values(n)]
    gone = max(1, round(0.03 * n))  # "missing"
    out = []
    for y in values(n + gone):
        keep = np.ones(n + gone, bool)
        keep[rng.choice(np.arange(1, n + gone - 1), gone, replace=False)] = False
        out.append((np.arange(n + gone, dtype=float)[keep], y[keep]))
    return out


def cycle_values(shape: str, cycles: float, snr: float, rng, count: int, n: int) -> np.ndarray:
    """[count, n] of a sine or sawtooth of `cycles` per span, random phase,
    signal sd snr, plus N(0, 1)."""
    x = np.linspace(0.0, 1.0, n) * cycles + rng.uniform(0, 1, (count, 1))
    if shape == "sine":
        signal = math.sqrt(2) * np.sin(2 * np.pi * x)
    else:
        signal = math.sqrt(12) * (x % 1.0 - 0.5)
    return snr * signal + rng.standard_normal((count, n))


def false_alarm_probability(t, y, oversample=None, prewhiten=True, line=True,
                            phi_after_peak=False) -> float:
    """`choice._judged`'s false-alarm probability 1 - (1 - exp(-z))^K of
    series (t [n], y [n]), with the band's oversampling (None:
    SCREEN_OVERSAMPLE), the lag-1 prewhitening and the line removal
    switchable, and with phi_after_peak the prewhitening's lag-1
    coefficient taken from the residual less the sinusoid of its own
    highest peak in the band (a lever, not the screen: a strong cycle's
    autocorrelation then no longer damps it); UNJUDGED where the screen passes the series unjudged,
    FAILED where it fails it before the test. The screen passes the series
    at a false alarm a where this is < a."""
    from gpcore import choice
    from gpcore.starts import even_periodogram
    oversample = oversample or choice.SCREEN_OVERSAMPLE
    min_cycles = choice.SCREEN_MIN_CYCLES
    t, y = choice._finite_sorted(t, y)
    n = t.size
    span = float(t[-1] - t[0]) if n else 0.0
    if n < 8 or span <= 0:
        return FAILED
    steps = np.diff(t)
    if steps.min() <= 0:
        return UNJUDGED
    if steps.max() > choice.SCREEN_REGULAR * steps.min():
        if not choice._index_regular(steps):
            return UNJUDGED
        t = np.arange(n, dtype=float)
        span = float(n - 1)
    x = (t - t[0]) / span
    r = y - (np.polyval(np.polyfit(x, y, 1), x) if line else y.mean())
    denominator = float(r @ r)
    if denominator <= n * (choice.LINE_ROUNDING * np.spacing(float(np.max(np.abs(y))))) ** 2:
        return FAILED
    phi = float(np.clip(r[1:] @ r[:-1] / denominator, 0.0, 0.99)) if prewhiten else 0.0
    if prewhiten and phi_after_peak:
        nyquist = 0.5 * (n - 1)
        band = np.arange(min_cycles, nyquist, 1.0 / oversample)
        if band.size:
            power = even_periodogram(x, r - r.mean(), min_cycles, 1.0 / oversample, band.size)
            wave = 2 * np.pi * band[np.argmax(power)] * x
            basis = np.column_stack([np.cos(wave), np.sin(wave)])
            e = r - basis @ np.linalg.lstsq(basis, r, rcond=None)[0]
            phi = float(np.clip(e[1:] @ e[:-1] / float(e @ e), 0.0, 0.99))
    w, tw = r[1:] - phi * r[:-1], x[1:]
    w = w - w.mean()
    variance = float(w @ w) / w.size
    nyquist = 0.5 * (w.size - 1)
    band = np.arange(min_cycles, nyquist, 1.0 / oversample)
    if band.size == 0 or variance <= 0:
        return FAILED
    power = even_periodogram(tw, w, min_cycles, 1.0 / oversample, band.size) / w.size
    independent = max(1.0, nyquist - min_cycles)
    z = float(power.max()) / variance
    return float(-np.expm1(independent * np.log1p(-np.exp(-z))))


def scaled(p: np.ndarray, scale: float) -> np.ndarray:
    """The false-alarm probabilities p with K scaled by `scale`:
    1 - (1 - p)^scale (the verdicts UNJUDGED and FAILED kept)."""
    with np.errstate(divide="ignore"):  # log1p(-1) at FAILED, not used
        return np.where((p == UNJUDGED) | (p == FAILED), p, -np.expm1(scale * np.log1p(-p)))


def rate(passed: np.ndarray) -> str:
    """'r ± se %' of a boolean sample: its pass rate and binomial sd."""
    p = float(np.mean(passed))
    return f"{100 * p:.2f} ± {100 * math.sqrt(p * (1 - p) / passed.size):.2f}"


def judged(series, settings=SETTINGS) -> tuple[dict, np.ndarray, int]:
    """({a: [count] verdicts of choice._judged at false alarm a}, [count]
    false_alarm_probability as shipped, disagreements between the two)."""
    from gpcore import choice
    p = np.array([false_alarm_probability(t, y) for t, y in series])
    verdicts = {}
    loosest = max(settings)
    wide = np.array([choice._judged(t, y, loosest, choice.SCREEN_MIN_CYCLES)[0] for t, y in series])
    for a in settings:
        # The verdict is monotone in a: only the series passed at the
        # loosest setting can pass at a stricter one.
        v = wide.copy()
        if a != loosest:
            v[wide] = [choice._judged(*series[i], a, choice.SCREEN_MIN_CYCLES)[0]
                       for i in np.flatnonzero(wide)]
        verdicts[a] = v
    disagree = sum(int(np.sum(verdicts[a] != (p < a))) for a in settings)
    return verdicts, p, disagree


def run(count: int = COUNT, seed: int = 0, ablation: bool = True, sizes=SIZES) -> dict:
    """The tables as rows of cells: {"null": [...], "cycle": [...],
    "ablation": [...]} (each row a dict: its labels, then {setting:
    (passed, count)}), and "disagreements" (mirror vs screen)."""
    from gpcore import config
    scale = config.SCREEN_OVERSAMPLE
    out = {"null": [], "cycle": [], "ablation": [], "disagreements": 0}
    cell = 0
    for kind in NULLS:
        for n in sizes:
            for where in LAYOUTS:
                cell += 1
                rng = np.random.default_rng([seed, cell])
                series = layout(where, rng, count, n,
                                lambda m: null_values(kind, rng, count, m))
                verdicts, p, disagree = judged(series)
                out["disagreements"] += disagree
                row = {"series": kind, "n": n, "times": where}
                row.update({f"{a}": verdicts[a] for a in SETTINGS})
                row.update({f"{a}, K x {scale}": scaled(p, scale) < a for a in SETTINGS})
                row["0.01, phi after its peak"] = np.array(
                    [false_alarm_probability(t, y, phi_after_peak=True) for t, y in series]) < 0.01
                out["null"].append(row)
                if ablation and kind == "white":
                    ab = {"n": n, "times": where}
                    for name, (over, pre, line) in VARIANTS.items():
                        q = p if name == "as shipped" else np.array(
                            [false_alarm_probability(t, y, over, pre, line) for t, y in series])
                        for a in SETTINGS:
                            ab[f"{name}, {a}"] = q < a
                    for s in (2, scale):
                        for a in SETTINGS:
                            ab[f"K x {s}, {a}"] = scaled(p, s) < a
                    out["ablation"].append(ab)
    for shape in SHAPES:
        for cycles in CYCLES:
            for snr in SNRS:
                for n in sizes:
                    cell += 1
                    rng = np.random.default_rng([seed, cell])
                    series = layout("regular", rng, count, n,
                                    lambda m: cycle_values(shape, cycles, snr, rng, count, m))
                    verdicts, p, disagree = judged(series)
                    out["disagreements"] += disagree
                    row = {"cycle": shape, "cycles": cycles, "snr": snr, "n": n}
                    row.update({f"{a}": verdicts[a] for a in SETTINGS})
                    row.update({f"{a}, K x {scale}": scaled(p, scale) < a for a in SETTINGS})
                    row["0.01, no prewhitening"] = np.array(
                        [false_alarm_probability(t, y, prewhiten=False) for t, y in series]) < 0.01
                    row["0.01, phi after its peak"] = np.array(
                        [false_alarm_probability(t, y, phi_after_peak=True)
                         for t, y in series]) < 0.01
                    out["cycle"].append(row)
    return out


# The project's sets the lever is tried on: (module, role). forecast.py's
# halves have no true period; their "seasonal" subset stands in for one.
SETS = (("forecast:tune", "tune"), ("forecast:holdout", "proof"), ("seasonal", "tune"),
        ("heldout_seasonal", "proof"), ("heldout_seasonal2", "proof"),
        ("heldout_seasonal3", "proof"), ("heldout_seasonal4", "proof"))


def _set_series(name: str) -> list[tuple[np.ndarray, np.ndarray, str]]:
    """[(t, y, group)] of a project set; group "no cycle", or by the true
    cycles in the span ("< 3", "3-6", ">= 6"; forecast.py's halves:
    "seasonal" by its subsets rule, else "not seasonal")."""
    import importlib

    if name.startswith("forecast:"):
        import forecast

        return [(c.t, c.y, "seasonal" if forecast.subsets(c)["seasonal"] else "not seasonal")
                for c in forecast.cases(name.split(":")[1])]
    out = []
    for c in importlib.import_module(name).cases():
        t, y = c.series.t, c.series.y
        if c.period is None:
            group = "no cycle"
        else:
            cycles = float(np.ptp(t)) / c.period
            group = "< 3" if cycles < 3 else "3-6" if cycles < 6 else ">= 6"
        out.append((t, y, group))
    return out


def on_sets(names=SETS) -> list[dict]:
    """Per project set and group: series, those the screen judges (the
    others pass unjudged, under either rule), and of those how many pass at
    0.01 as shipped and with "phi after its peak"."""
    rows = []
    for name, role in names:
        groups: dict = {}
        for t, y, group in _set_series(name):
            p = false_alarm_probability(t, y)
            g = groups.setdefault(group, [0, 0, 0, 0])
            g[0] += 1
            if p == UNJUDGED:
                continue
            g[1] += 1
            g[2] += p < 0.01
            g[3] += false_alarm_probability(t, y, phi_after_peak=True) < 0.01
        for group, (count, judged_count, shipped, lever) in sorted(groups.items()):
            rows.append({"set": name, "role": role, "group": group, "series": count,
                         "judged": judged_count, "pass, shipped": int(shipped),
                         "pass, phi after its peak": int(lever)})
    return rows


def sets_markdown(rows: list[dict]) -> str:
    heads = list(rows[0])
    lines = ["| " + " | ".join(heads) + " |",
             "|" + "|".join("---" if isinstance(rows[0][h], str) else "--:" for h in heads) + "|"]
    lines += ["| " + " | ".join(str(v) for v in row.values()) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def markdown(rows: list[dict], title: str) -> str:
    """A table: label columns as they are, verdict columns as 'rate ± se'."""
    if not rows:
        return ""
    heads = list(rows[0])
    lines = [f"**{title}**", "", "| " + " | ".join(heads) + " |",
             "|" + "|".join("---" if isinstance(rows[0][h], (str, int, float)) else "--:"
                            for h in heads) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(rate(v) if isinstance(v, np.ndarray) else str(v)
                                       for v in row.values()) + " |")
    return "\n".join(lines) + "\n"


def report(out: dict, count: int) -> str:
    from gpcore import config
    k = config.SCREEN_OVERSAMPLE
    head = (f"{count} series per cell; pass rate ± binomial sd, in %. Columns 0.01 and 0.05: "
            f"the screen at that false alarm; 'K x {k}': with its independent frequencies "
            f"scaled by SCREEN_OVERSAMPLE. Disagreements of the copy with the screen: "
            f"{out['disagreements']}.\n")
    return "\n".join([head,
                      markdown(out["null"], "Null series (every pass a false alarm)"),
                      markdown(out["ablation"], "White noise: which term raises the false alarm"),
                      markdown(out["cycle"], "A true cycle at regular times (every pass a hit)")])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=COUNT, help="series per cell")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)),
                        help="points per series, comma-separated")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-ablation", dest="ablation", action="store_false",
                        help="skip the white-noise ablation")
    parser.add_argument("--sets", action="store_true",
                        help="instead: the verdicts on the project's tuning and proof sets")
    parser.add_argument("--out", help="also write the tables to this markdown file")
    args = parser.parse_args(argv)
    if args.sets:
        text = sets_markdown(on_sets())
        print(text)
        if args.out:
            with open(args.out, "w") as f:
                f.write(text)
        return 0
    if args.count < 1:
        parser.error(f"--count must be at least 1; got {args.count}")
    try:
        sizes = tuple(int(v) for v in args.sizes.split(","))
    except ValueError:
        sizes = ()
    if not sizes or min(sizes) < 8:
        parser.error(f"--sizes must be whole numbers of points, each at least 8 (the screen "
                     f"judges no shorter series), comma-separated; got {args.sizes!r}")
    start = time.process_time()
    out = run(args.count, args.seed, args.ablation, sizes)
    text = report(out, args.count)
    text += f"\n({time.process_time() - start:.0f} CPU s)\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 1 if out["disagreements"] else 0


if __name__ == "__main__":
    sys.exit(main())

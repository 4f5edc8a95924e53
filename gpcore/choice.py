"""KernelChoice: kernel "auto", one GPFitter per candidate kernel and, per
series, the fit with the lowest BIC.

BIC = 2 nll + k log n penalises a sum's extra parameters, so a periodic
component is kept only where the likelihood gain pays for its three
parameters (docs/design.md, "Kernel choice"). Each candidate's fitter is
built once and traced once, like any GPFitter; the candidates fit the same
batches one after another.

Periodic candidates are guarded twice (docs/design.md, "Kernel choice"):
they are fitted only on series whose periodogram shows a cycle repeated
SCREEN_MIN_CYCLES (3) times standing out of the series' own red noise
(`periodic_screen`), and one is chosen only where its BIC beats the best
non-periodic candidate's by PERIODIC_MARGIN (`choose_fit`). BIC alone put
cycles of 4-26 years on macroeconomic trends.
"""
from __future__ import annotations

import dataclasses
import hashlib
import numbers
import threading
from typing import Optional, Sequence

import numpy as np

from gpcore.config import (AUTO, PERIODIC_MARGIN, SCREEN_FALSE_ALARM, SCREEN_MIN_CYCLES,
                           SCREEN_INDEX_SHARE, SCREEN_OVERSAMPLE, SCREEN_REGULAR,
                           START_MULTIPLES, FitConfig, check_memory, checked, fitted_configs,
                           is_started, smooth_part)
from gpcore.batching import finite_points, padded_length, summed_work
from gpcore.fitter import GPFitter
from gpcore.kernels import LINEAR, PERIOD_BOUNDS, SUM, kernel as kernel_named
from gpcore.result import OK, FitResult
from gpcore.series import Series, listed
from gpcore.starts import even_periodogram, periodogram_peaks

# auto's periodic candidate starts from its smooth part's fit
# (`periodic_starts`) and its own grid's best point, instead of the grid's
# restarts (docs/design.md, "Kernel choice"): a periodic component at
# config.START_MULTIPLES of the screen's peak period (within the periods'
# upper bound), of this length scale: a sharp shape's (0.15-0.25 fitted on
# the tune split's monthly series); from 1.0, qgas stayed 152 nats above
# its grid fit, the smooth part's fitted noise holding the cycle.
START_PERIODIC_LENGTH = 0.3
# The periodic candidate fits its screened series in groups of similar
# length (`length_groups`): on the tune split's 20 screened series one
# batch padded the 54-point series to 240; groups within 1.25x of padded
# work took the candidate's fits from 30.3 to 20.3 CPU s, the same optima.
GROUP_WORK_RATIO = 1.25
# The screen takes a series for a line where what its line leaves is
# rounding: an rms of at most this many float64 steps (ulps) of max|y|,
# about 5x the most a line left (docs/design.md, "Kernel choice", *The
# guard*). At 1e-12 max|y| (4,500 ulps) a cycle of 1e-3 around 1e9, ten
# thousand steps of its values, was taken for a line: y + b lost the
# periodic fit that y had.
LINE_ROUNDING = 256


class KernelChoice:
    """Fits every candidate of config (kernel "auto") and keeps, per series,
    the lowest BIC; `bic_margin` is the runner-up's BIC minus the choice's."""

    def __init__(self, config: FitConfig, twin: "KernelChoice | None" = None):
        """twin: a KernelChoice of the same config whose candidates' traces
        this one's share (gpcore/traced.py)."""
        checked(config, "KernelChoice", AUTO)
        if config.kernel != AUTO:
            raise ValueError(f"KernelChoice needs kernel {AUTO!r}; got {config.kernel_name!r}")
        self.config = config
        # Here, not only in each candidate's GPFitter: a started candidate's
        # config alone does not say that it runs its given starts
        # (config.fitted_starts).
        check_memory(config)  # this machine's, where the fit runs
        candidates = fitted_configs(config)
        # A periodic candidate whose smooth part is a candidate too starts
        # from that fit (`periodic_starts`), without the jumps
        # (fitted_configs).
        self.warm = [is_started(c.kernel, config.candidates) for c in candidates]
        twins = twin.fitters if twin is not None else [None] * len(candidates)
        self.fitters = [GPFitter(candidate, name=f"fitter_{i}", twin=other)
                        for i, (candidate, other) in enumerate(zip(candidates, twins))]

    @property
    def tracing_count(self) -> int:
        """Total traces of the candidates' compiled fits (one each)."""
        return sum(f.tracing_count for f in self.fitters)

    @property
    def work(self) -> dict:
        """The candidates' work counters, summed."""
        return summed_work(self.fitters)

    def fit(self, series: Sequence[Series]) -> list[FitResult]:
        """One FitResult per series, in order: the chosen candidate's, or
        (no candidate fitted) a candidate's reason under "auto" (`choose_fit`).
        Periodic candidates fit only the series `periodic_screen` passes
        (all series when every candidate is periodic)."""
        series = listed(series)
        periodic = [f.config.kernel.has_period for f in self.fitters]
        screened = [i for i, s in enumerate(series) if fits_periodic(self.config, s)]
        # The non-periodic candidates first: a periodic one starts from its
        # smooth part's fit where that is a candidate (`periodic_starts`).
        per_candidate: list = [None] * len(self.fitters)
        for c, (fitter, has_period) in enumerate(zip(self.fitters, periodic)):
            if not has_period:
                per_candidate[c] = fitter.fit(series)
        names = [f.config.kernel.name for f in self.fitters]
        for c, (fitter, has_period) in enumerate(zip(self.fitters, periodic)):
            if not has_period:
                continue
            given = None
            if self.warm[c]:
                smooth_fits = per_candidate[names.index(smooth_part(fitter.config.kernel))]
                given = [periodic_starts(series[i], smooth_fits[i], names[c]) for i in screened]
            placed: list = [None] * len(series)
            for group in length_groups([finite_points(series[i]) for i in screened]):
                fits = fitter.fit([series[screened[k]] for k in group],
                                  None if given is None else [given[k] for k in group])
                for k, r in zip(group, fits):
                    placed[screened[k]] = r
            per_candidate[c] = placed
        return [choose_fit([fits[i] for fits in per_candidate if fits[i] is not None])
                for i in range(len(series))]


def fits_periodic(config: FitConfig, s: Series) -> bool:
    """Whether KernelChoice (config: kernel "auto") fits series s with its
    periodic candidates: always where every candidate is periodic, never
    where none is (no periodogram to pay), else where s is short enough for
    them and `periodic_screen` passes it. gpcore.batching's cost_of charges
    them by this answer."""
    configs = fitted_configs(config)
    periodic = [c for c in configs if c.kernel.has_period]
    if len(periodic) == len(configs):
        return True
    if not periodic:
        return False
    # Series too long for the periodic candidates are not screened (the
    # periodogram's cost grows as n^2); the others fit them in O(n).
    longest = min(c.max_points for c in periodic)
    try:
        return finite_points(s) <= longest and periodic_screen(s.t, s.y)
    except (TypeError, ValueError, IndexError):
        # Not numbers, or t and y of different lengths: nothing to screen;
        # the candidates' fitters skip it and say why.
        return False


def length_groups(lengths: Sequence[int]) -> list[list[int]]:
    """Indices of `lengths` (points per series) in groups of similar
    length, shortest first: a group's longest padded length cubed is at
    most GROUP_WORK_RATIO x its shortest's. The screened series are a
    sparse subset of a fit call, so one compiled batch of them spans
    lengths far apart, and every member pays the longest's n^3
    (docs/design.md, "Kernel choice")."""
    order = sorted(range(len(lengths)), key=lambda k: lengths[k])
    groups: list[list[int]] = []
    for k in order:
        if not groups or (padded_length(lengths[k]) ** 3
                          > GROUP_WORK_RATIO * padded_length(lengths[groups[-1][0]]) ** 3):
            groups.append([])
        groups[-1].append(k)
    return groups


def _is_periodic(kernel: str) -> bool:
    """Whether a fit's kernel (FitResult.kernel, a name) has a period."""
    return kernel_named(kernel).has_period


def choose_fit(fits: list[FitResult], margin: Optional[float] = None) -> FitResult:
    """The lowest-BIC fit of one series' candidates (FitResult.kernel each),
    a periodic one only where its BIC is more than `margin` (default
    PERIODIC_MARGIN) below every non-periodic fit's (at exactly `margin`
    the simpler fit stays); `bic_margin` is the
    runner-up's BIC minus the choice's. No fit ok: the reason of the fit
    whose kernel's name sorts first, under "auto". An exact BIC tie goes
    to the name that sorts first too: the choice, and so the nightly
    fingerprint, does not depend on the candidates' order (docs/design.md,
    "Kernel choice")."""
    margin = PERIODIC_MARGIN if margin is None else margin
    ok = [r for r in fits if r.status == OK]
    if not ok:
        return dataclasses.replace(min(fits, key=lambda r: r.kernel), kernel=AUTO)
    plain = [r.bic for r in ok if not _is_periodic(r.kernel)]
    bar = min(plain) - margin if plain else np.inf
    ranked = sorted((r for r in ok if not _is_periodic(r.kernel) or r.bic < bar),
                    key=lambda r: (r.bic, r.kernel))
    best = ranked[0]
    runner_up = min((r.bic for r in ok if r is not best), default=None)
    return dataclasses.replace(best, bic_margin=None if runner_up is None else runner_up - best.bic)


def periodic_starts(s: Series, smooth: FitResult, kernel: str) -> Optional[list[dict]]:
    """Starts (FitResult.params mappings of `kernel`, a sum with one
    periodic component; GPFitter.fit's starts_from) for series s from
    `smooth`, the fit of kernel's smooth part: its components, mean and
    noise variance as fitted, and a periodic component of
    the smooth part's first stationary amplitude (its noise variance where
    the smooth part is a line alone) and length scale START_PERIODIC_LENGTH
    at the screen's peak period p and at 2p and 3p where those are at most
    half the span (a sharp cycle's top peak is often its second or third
    harmonic; docs/design.md, "Kernel choice"). None (the fitter's own
    grid) where smooth is not fitted or kernel has not one periodic
    component."""
    parts = kernel.split(SUM)
    if smooth is None or smooth.status != OK or sum(map(_is_periodic, parts)) != 1:
        return None
    period = screen_period(s.t, s.y)
    if period is None:
        return None
    longest = PERIOD_BOUNDS[1] * float(np.ptp(_finite_sorted(s.t, s.y)[0]))
    periods = [m * period for m in START_MULTIPLES if m * period <= longest] or [longest]
    # The first stationary part's variance (y^2). A line's amplitude is a
    # slope's variance (y^2 per unit of t squared): a start that moved with
    # t's unit, 1e-7 for t in seconds where days gave 0.01. With the line
    # alone, its fit's noise, which holds the cycle.
    first = next((c["amplitude"] for c in smooth.components if c["kernel"] != LINEAR.name),
                 smooth.noise_variance)
    out = []
    for p in periods:
        fitted = iter(smooth.components)
        components = [{"kernel": part, "amplitude": first, "length_scale": START_PERIODIC_LENGTH,
                       "period": p} if _is_periodic(part) else dict(next(fitted))
                      for part in parts]
        out.append({"kernel": kernel, "mean": smooth.mean, "components": components,
                    "noise_variance": smooth.noise_variance})
    return out


def screen_period(t, y) -> Optional[float]:
    """The period (units of t) of the highest periodogram peak that
    `periodic_screen` judges, or, for a series it passes unjudged, of the
    series less its straight line (as the sums' grid); None where the
    screen fails it."""
    passed, period = _screen(t, y)
    if not passed:
        return None
    if period is None:
        t, y = _finite_sorted(t, y)
        x = t - t[0]
        peaks = periodogram_peaks(x, y - np.polyval(np.polyfit(x, y, 1), x), 1,
                                  shortest_cycles=1 / PERIOD_BOUNDS[1])
        period = float(peaks[0])
    return period


def _finite_sorted(t, y):
    t, y = np.asarray(t, float), np.asarray(y, float)
    keep = np.isfinite(t) & np.isfinite(y)
    t, y = t[keep], y[keep]
    order = np.argsort(t, kind="stable")
    return t[order], y[order]


def periodic_screen(t, y, false_alarm: float = SCREEN_FALSE_ALARM,
                    min_cycles: float = SCREEN_MIN_CYCLES) -> bool:
    """Whether series (t [n], y [n]; non-finite points dropped) shows a
    cycle worth a periodic fit: the highest periodogram peak at periods of
    at most span / min_cycles, of the series less its straight line and
    prewhitened by its lag-1 autocorrelation (so that neither a trend's nor
    a random walk's low-frequency power is a cycle), is higher than white
    noise reaches with probability `false_alarm` over the band's
    nyquist - min_cycles independent frequencies (Fisher's g test:
    P / variance ~ Exp(1)). `false_alarm` is that test's nominal level, not
    the rate (config.SCREEN_FALSE_ALARM). Series whose steps differ by
    more than SCREEN_REGULAR x are judged at their index (point number)
    where they are regular in it (`_index_regular`: trading days), and pass
    unjudged otherwise."""
    return _screen(t, y, false_alarm, min_cycles)[0]


def _screen(t, y, false_alarm: float = SCREEN_FALSE_ALARM,
            min_cycles: float = SCREEN_MIN_CYCLES) -> tuple[bool, Optional[float]]:
    """(periodic_screen's verdict, the period in units of t of the peak it
    judged: None where it passes a series unjudged or fails it before),
    remembered by the series' content (`_screened`)."""
    t, y = np.asarray(t, float), np.asarray(y, float)
    # y's squares overflowed past ~1e154 (a cycle at 1e190 judged a line)
    # and underflowed below ~1e-154: a power of two puts max |y| in
    # [0.5, 1), exactly, so an ordinary series' verdict is the same to the bit.
    top = np.max(np.abs(y), initial=0.0, where=np.isfinite(y))
    y = np.ldexp(y, -np.frexp(top)[1]) if top > 0 else y
    digest = hashlib.blake2b(digest_size=16)
    digest.update(t.tobytes())
    digest.update(y.tobytes())
    # The module's constants too: benchmarks try others at run time.
    key = (digest.digest(), t.size, false_alarm, min_cycles,
           SCREEN_OVERSAMPLE, SCREEN_REGULAR, SCREEN_INDEX_SHARE)
    verdict = _screened.get(key)
    if verdict is None:
        verdict = _judged(t, y, false_alarm, min_cycles)
        _screened.put(key, verdict)
    return verdict


# A command asks for one series' verdict up to four times (its batch's
# cost, the fit call's estimate, the fit, the periodic starts), in one
# process: the periodograms after the first were about 5 % of an auto
# command's CPU on the held-out real sets (docs/design.md, "Kernel
# choice", *The screen once, and faster*). Verdicts by (digest of t and y,
# points, the screen's settings), oldest out first: about 16 MB at most.
SCREEN_MEMORY = 1 << 16


class _Verdicts:
    """Verdicts by key, at most `most` (the oldest out first), behind a lock
    for the DoFns' threads. An object, not a module-level dict: the trace
    cache's key (gpcore/trace_cache.py) hashes a gpcore module's dicts by
    their contents, its other objects by their type."""

    def __init__(self, most: int):
        self.most = most
        self._held: dict = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._held)

    def get(self, key):
        with self._lock:
            return self._held.get(key)

    def put(self, key, verdict) -> None:
        with self._lock:
            while self._held and len(self._held) >= self.most:
                self._held.pop(next(iter(self._held)))  # the oldest
            self._held[key] = verdict

    def clear(self) -> None:
        with self._lock:
            self._held.clear()


_screened = _Verdicts(SCREEN_MEMORY)


def forget_screens() -> None:
    """Empties the screen's memory of verdicts (`_screened`): benchmarks
    clear it so that each verdict is paid once, as in a command."""
    _screened.clear()


def _judged(t, y, false_alarm: float, min_cycles: float) -> tuple[bool, Optional[float]]:
    """`_screen`'s verdict, computed."""
    t, y = _finite_sorted(t, y)
    n = t.size
    span = float(t[-1] - t[0]) if n else 0.0
    if n < 8 or span <= 0:
        return False, None
    steps = np.diff(t)
    if steps.min() <= 0:
        return True, None
    time_per_unit = 1.0  # of the span the periodogram sees
    if steps.max() > SCREEN_REGULAR * steps.min():
        if not _index_regular(steps):
            # Prewhitening at the index lag needs near-regular times; on gaps
            # and irregular times it missed 7 of 48 cycles: fit, do not judge.
            return True, None
        # Trading days (weekends out), a few missing steps: regular in the
        # index, where the lag-1 prewhitening is exact; judged there.
        time_per_unit = span / (n - 1)
        t = np.arange(n, dtype=float)
        span = float(n - 1)
    x = (t - t[0]) / span
    r = y - np.polyval(np.polyfit(x, y, 1), x)
    denominator = float(r @ r)
    if denominator <= n * (LINE_ROUNDING * np.spacing(float(np.max(np.abs(y))))) ** 2:
        return False, None  # a line, to rounding
    # Prewhitening at the index lag: exact for regular series.
    phi = float(np.clip(r[1:] @ r[:-1] / denominator, 0.0, 0.99))
    w, tw = r[1:] - phi * r[:-1], x[1:]
    w = w - w.mean()
    variance = float(w @ w) / w.size
    nyquist = 0.5 * (w.size - 1)
    band = np.arange(min_cycles, nyquist, 1.0 / SCREEN_OVERSAMPLE)  # cycles per span
    if band.size == 0 or variance <= 0:
        return False, None
    power = even_periodogram(tw, w, min_cycles, 1.0 / SCREEN_OVERSAMPLE, band.size) / w.size
    # One frequency per 1 / span, though the maximum is over SCREEN_OVERSAMPLE
    # per 1 / span: a nominal level (config.SCREEN_FALSE_ALARM).
    independent = max(1.0, nyquist - min_cycles)
    z = float(power.max()) / variance
    passed = bool(-np.expm1(independent * np.log1p(-np.exp(-z))) < false_alarm)
    return passed, span * time_per_unit / float(band[np.argmax(power)])


def _index_regular(steps: np.ndarray) -> bool:
    """Whether the steps [n - 1] are whole multiples of the smallest (to
    1 %) and at least SCREEN_INDEX_SHARE of them single steps."""
    units = steps / steps.min()
    return bool(np.all(np.abs(units - np.round(units)) < 0.01)
                and np.mean(np.round(units) == 1) >= SCREEN_INDEX_SHARE)


def work_by_kernel(fitter) -> dict[str, dict]:
    """{kernel: the `work` counters of its GPFitters, summed} of a
    build_fitter fitter: one kernel for a GPFitter, each candidate's under
    "auto", the copies' summed under SideBySide. A GPFitter's counters
    include its long series' (its MarkovFitter's, for the counters both
    keep): the manifest's work per kernel covers every series fitted."""
    inner = getattr(fitter, "fitters", None)
    if inner is None:
        work = dict(fitter.work)
        long_fitter = getattr(fitter, "long_fitter", None)
        if long_fitter is not None:
            for key in work.keys() & long_fitter.work.keys():
                work[key] += long_fitter.work[key]
        return {fitter.config.kernel_name: work}
    merged: dict[str, dict] = {}
    for part in inner:
        for kernel, work in work_by_kernel(part).items():
            into = merged.setdefault(kernel, dict.fromkeys(work, 0))
            for key, value in work.items():
                into[key] += value
    return merged


def build_fitter(config: FitConfig, copies: int = 1):
    """The fitter for config: a GPFitter, or a KernelChoice under "auto";
    with copies > 1, that many of them side by side on threads (SideBySide),
    for a process with as many cores: twins of the first, sharing its
    traces (gpcore/traced.py)."""
    checked(config, "build_fitter")
    if isinstance(copies, bool) or not isinstance(copies, numbers.Integral) or copies < 1:
        raise ValueError(f"copies must be a whole number >= 1 (fitters side by side, one "
                         f"per core); got {copies!r}")

    def build(k, twin=None):
        if config.kernel == AUTO:
            return KernelChoice(config, twin=twin)
        return GPFitter(config, name="gp_fitter" + (f"_{k}" if k else ""), twin=twin)

    first = build(0)
    if copies <= 1:
        return first
    from gpcore.side_by_side import SideBySide
    return SideBySide([first] + [build(k, twin=first) for k in range(1, copies)])

"""How to hand series to GPFitter.fit: what one series costs and how much
work one call should carry.

gpcore owns the padding and batching policy, the way a RunInference
ModelHandler reports its batching arguments: the pipeline only groups
series by `bucket` until their `cost_of` reaches `seconds_per_call`, and hands
each group to one fit call. Inside a call the fitter sorts by length and
cuts compiled batches of `FitConfig.batch_size` (docs/design.md, "The
fitter"). Bounded calls matter on Dataflow: an element cannot be split,
and a retried bundle redoes all of its work.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Optional

import numpy as np

from gpcore.config import AUTO, FitConfig, fitted_configs, takes_markov_path
from gpcore.kernels import components
from gpcore.starts import (GRID_RESCORED, PROBES_RESCORED, far_probe_count, grid_piece_points,
                           grid_shape, probe_count)

# Padded lengths are rounded up to a multiple of this, so that similar
# batches share shapes; the compiled function accepts any length.
LENGTH_QUANTUM = 8
# ... and never to a multiple of this: TensorFlow's Cholesky takes 1.3-1.8x
# as long on a side of 256, 512, 1,024, ... doubles as on one a quantum
# longer (docs/design.md, "Padded lengths off multiples of 256").
SLOW_CHOLESKY_SIDE = 256

# A compiled batch holds series padded to at most this multiple of its
# shortest's padded length: a member padded from n to N points costs
# (N / n)^3 of its own fit (N / n on the O(n) path), which `cost` does not
# charge (15 series of 5-8 points batched with one of 400 took 48x the
# flops of the same fitted apart; docs/design.md, "Batching is gpcore's").
MAX_PADDING_RATIO = 2

# Largest compiled batch of a dense fit, in covariance elements (batch
# members x N x N; a series longer than it fills a batch alone): what one
# fitter's memory bound counts (gpcore.config.batch_bytes).
MAX_BATCH_ELEMENTS = 1 << 23

# Target estimated work per fit call, seconds of one core.
SECONDS_PER_CALL = 15.0
# ... at most: a call is one element, which Dataflow cannot split and a
# retried bundle redoes whole, and calls ran up to 4x their estimates
# (docs/design.md, "Cost per kernel"): 15 minutes estimated, an hour of one
# core at worst. Beyond it a bundle's series went out in one call (1e308
# acted as the refused inf).
MAX_SECONDS_PER_CALL = 900.0

# Calibration of `cost`, measured on this project's 2-core machines with one
# TensorFlow thread (docs/design.md, "Cost per kernel"): the flop count below
# at 15 GFLOP/s, times a measured factor per kernel structure, but never
# below the structure's FLOOR_SECONDS (short series), plus about a
# millisecond of Python work per series.
FLOPS_PER_SECOND = 1.5e10
SECONDS_PER_SERIES = 1e-3
# Per kernel structure (components, has a period): Newton evaluations per
# start, and CPU seconds over the flop model's at the measured evaluations
# (what the count misses: the periodic kernel's sin, a sum's elementwise
# passes, per-step overhead). Measured by
#   python benchmarks/cost.py --count 400 --kernels rbf,matern32,matern52,periodic
#   python benchmarks/cost.py --count 60 --kernels rbf+periodic,periodic,linear+rbf,linear+rbf+periodic,matern12
# on benchmarks/realdata.py's and benchmarks/seasonal.py's sets: the larger
# of the two sets' figures, rounded up for sums, whose calls vary most
# (each figure and its run: docs/design.md, "Cost per kernel"). A structure
# not measured takes the dearest figures (three components with a period):
# the safe side. Sums with a period, with their jumps to longer periods
# (docs/design.md, "Sums of kernels"), measured again by
#   python benchmarks/cost.py --count 16 --kernels auto,matern52+periodic
# three components with a period were measured before the jumps only, and
# take that figure times JUMP_EVALUATION_FACTOR, the jumps' measured rise
# of a sum's Newton evaluations per series, rounded up.
JUMP_EVALUATION_FACTOR = 2.8
COST_FIGURES = {
    (1, False): (4.8, 2.0),   # rbf, matern12, matern32, matern52
    (1, True): (10.6, 2.1),   # periodic (a single kernel: no jumps)
    (2, False): (10.0, 1.3),  # linear+rbf
    (2, True): (52.0, 2.2),   # rbf+periodic, matern52+periodic
    (3, True): (30.0 * JUMP_EVALUATION_FACTOR, 1.9),  # linear+rbf+periodic, before the jumps
}
DEAREST = (3, True)
# Sums with a period fitted without the jumps (FitConfig.jumps), per start
# of FitConfig.restarts: two components are auto's periodic candidate
# started from its smooth part's fit, with its starts that fall behind
# stopped (FitConfig.stop_behind), measured by
#   python benchmarks/cost.py --kernels auto --count 60 --seconds_per_fit_call 5
# (8.8 and 7.9 on the two sets, rounded up; the CPU factor kept from the
# run before, at load 17-21, as the safe side: 1.4 at load 1); three, the
# figures cost.py measured before the jumps existed.
NO_JUMP_FIGURES = {(2, True): (9.0, 2.5), (3, True): (30.0, 1.9)}
# A dense fit's CPU seconds per series are at least these, per kernel
# structure (the key of COST_FIGURES), whatever its flops: a compiled
# batch's steps are so many TensorFlow ops whatever the length, and series
# of under 48 points also take more Newton evaluations than COST_FIGURES
# (7.6-8.8 per start for rbf, 30-43 for sums). The flop model alone put
# auto's short series at a twelfth to a seventeenth of their CPU, so a call
# of them ran up to 17x its target. Measured by
#   python benchmarks/cost.py --count 1000 --sets short,generated-short
# on "short" (realdata.py's 69 series under 48 points): the largest CPU per
# series of each structure less SECONDS_PER_SERIES, rounded up; (2, False)
# and the dearest raised to a single kernel's and the measured sums' floor,
# the safe side; auto's periodic candidate, never fitted on "short" (its
# screen passed none), takes its structure's floor with the jumps, also the
# safe side (docs/design.md, "Cost per kernel", *Short series*).
FLOOR_SECONDS = {
    (1, False): 0.0025,  # rbf 3.4, matern52 3.1, matern12 2.2 ms a series
    (1, True): 0.006,    # periodic 6.8
    (2, False): 0.0025,  # linear+rbf 2.2
    (2, True): 0.020,    # matern52+periodic 20.2, rbf+periodic 16.5
    (3, True): 0.025,    # linear+rbf+periodic 20.9
}
# Restarts to other basins of a length-scale grid run only where the grid
# shows one: on about a quarter of real series, rarely on series drawn from
# the model (docs/design.md, "Restarts from other basins"; docs/scale.md).
BASIN_RESTART_SHARE = 0.25
# ... but on rough series, whose neighbouring values are nearly
# uncorrelated (white noise, small counts: lag-one correlation of the
# values in time order under ROUGH_BELOW), the grid shows other basins on
# every one, and each start takes about twice the Newton evaluations of
# COST_FIGURES' (1, no period): a call of them ran 2.1-2.5x its estimate
# (rbf, matern52, matern12 at 100-200 points; 5x the smooth draws' ratio at
# 400-800). There a kernel of that structure with a length-scale grid is
# charged ROUGH_EVALUATIONS per start on every one of its restarts.
# Chosen on AR(1) draws (phi 0-0.99) by
#   python benchmarks/shapes.py --shapes rough_rbf,rough_matern52,rough_matern12,rough_matern32,rough_auto,ar_rbf --count 160 --seed 0
# (the threshold: where a series' evaluations step from 5-12 to 25-28; the
# figure: the largest rough set's, rbf's 9.0 a start, rounded up), checked
# once on Poisson counts (seed 1), which no figure used (docs/design.md,
# "Cost per kernel", *Rough series*).
ROUGH_BELOW = 0.3
ROUGH_EVALUATIONS = 9.5


# The O(n) path (gpcore/markov_fitter.py) on series over MARKOV_ABOVE
# points: CPU seconds of a matern32 fit (state dimension 2), the window's
# stages (fixed) plus so much per point; times (D / 2)^MARKOV_STATE_EXPONENT
# for a state of dimension D, and MARKOV_SUM_FACTOR for a sum (a 4x larger
# grid and 3-5x the whole-series Newton evaluations), all measured by
#   python benchmarks/long_series.py --kernels matern32,matern12,matern32+matern12,matern52+matern12
# The model errs long on the matern32 fits (by how much at each length:
# design.md); the sums' factor errs long and stays until more than one draw
# per length is measured, harmlessly:
# every sum over MARKOV_ABOVE points is estimated above the default
# SECONDS_PER_CALL, so it fills a call alone whatever the factor (the
# figures: docs/design.md, "Long series: Markov kernels").
MARKOV_SECONDS_WINDOW = 4.0
MARKOV_SECONDS_PER_POINT = 8.0e-5
MARKOV_STATE_EXPONENT = 1.25
MARKOV_SUM_FACTOR = 5.5


def markov_seconds(kernel, n: int) -> float:
    """Estimated CPU seconds of an O(n) fit of n points."""
    parts = components(kernel)
    dimension = sum({"matern12": 1, "matern32": 2, "matern52": 3}[b.name] for b in parts)
    return ((MARKOV_SECONDS_WINDOW + MARKOV_SECONDS_PER_POINT * n)
            * (dimension / 2.0) ** MARKOV_STATE_EXPONENT
            * (MARKOV_SUM_FACTOR if len(parts) > 1 else 1.0))


def structure(kernel) -> tuple[int, bool]:
    """(components, has a period): the key of COST_FIGURES."""
    return len(components(kernel)), bool(kernel.has_period)


def cost_figures(kernel, jumps: bool = True) -> tuple[float, float]:
    """(Newton evaluations per start, CPU factor) of kernel, fitted with
    or without the sums' jumps (FitConfig.jumps)."""
    if not jumps and structure(kernel) in NO_JUMP_FIGURES:
        return NO_JUMP_FIGURES[structure(kernel)]
    return COST_FIGURES.get(structure(kernel), COST_FIGURES[DEAREST])


def floor_seconds(kernel) -> float:
    """The least CPU seconds a dense fit of kernel costs a series."""
    return FLOOR_SECONDS.get(structure(kernel), FLOOR_SECONDS[DEAREST])


def summed_work(fitters) -> dict:
    """The `work` counters of several fitters, summed key by key."""
    return {key: sum(f.work[key] for f in fitters) for key in fitters[0].work}


def finite_points(series) -> int:
    """The points of a Series (t [n], y [n]) where both are finite, as
    gpcore.series.clean counts them; its rows where they are not numbers
    (the fitters then say why)."""
    try:
        t = np.asarray(series.t, dtype=np.float64).reshape(-1)
        y = np.asarray(series.y, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        return int(np.size(series.y))
    if t.shape != y.shape:
        return y.size
    return int((np.isfinite(t) & np.isfinite(y)).sum())


def compiled_batches(ready, batch_size: int, length, room):
    """Consecutive compiled batches of `ready`, (index, CleanSeries) pairs
    sorted by length: each of at most batch_size members, cut where a
    member would pad (`length`: padded_length, or quantised_length on the
    O(n) path) to more than MAX_PADDING_RATIO times the first's, and to at
    most room(longest padded length) members (the fitter's memory bound);
    every batch holds at least one."""
    start = 0
    while start < len(ready):
        end = min(start + batch_size, len(ready))
        longest = MAX_PADDING_RATIO * length(ready[start][1].n_points)
        while length(ready[end - 1][1].n_points) > longest:
            end -= 1
        size = max(1, min(end - start, room(length(ready[end - 1][1].n_points))))
        yield ready[start:start + size]
        start += size


def padded_length(n: int) -> int:
    """The length a series of n points is padded to in a compiled batch:
    n rounded up to the quantum, one quantum more where that is a multiple
    of SLOW_CHOLESKY_SIDE (masked points cost their flops, 0.8-3 %, and
    change nothing else)."""
    padded = quantised_length(n)
    return padded + past_slow_side(padded)


def past_slow_side(n: int) -> int:
    """Points to add to a matrix side of n so that its Cholesky is not on
    a multiple of SLOW_CHOLESKY_SIDE: LENGTH_QUANTUM there, else 0."""
    return LENGTH_QUANTUM if n % SLOW_CHOLESKY_SIDE == 0 else 0


def quantised_length(n: int) -> int:
    """n rounded up to a multiple of LENGTH_QUANTUM."""
    return -(-n // LENGTH_QUANTUM) * LENGTH_QUANTUM


def length_bucket(n: int) -> int:
    """Series of n points share a bucket with those up to the next power
    of 2: within a bucket, sorted batches pad little."""
    return max(n - 1, 0).bit_length()


def flops_per_value(n: int) -> float:
    """Floating-point operations of one likelihood value at N points: the
    Cholesky (N^3/3) and the kernel matrix (~10 N^2)."""
    return n ** 3 / 3.0 + 10.0 * n ** 2


def flops_per_grid(kernel, n: int, far_probes: bool = True) -> float:
    """... of scoring one series' start grid and probes at N points: every
    point on pieces of min(grid_piece_points, N) points (the last one
    padded, as GPFitter cuts them), then the best few and (where
    `far_probes`, FitConfig.far_probes) the far probes on the whole series."""
    rows, columns = grid_shape(kernel)
    probes = probe_count(kernel, far_probes)
    size = min(grid_piece_points(kernel), n)
    pieces = -(-n // size)
    flops = (rows * columns + probes) * pieces * flops_per_value(size)
    if pieces > 1:
        rescored = min(GRID_RESCORED, rows * columns) + min(PROBES_RESCORED, probes)
        flops += rescored * flops_per_value(n)
    return flops + far_probe_count(kernel, far_probes) * flops_per_value(n)


def flops_per_newton_evaluation(n: int, n_params: int) -> float:
    """... and of value, gradient and Hessian with P parameters: the
    Cholesky, the inverse (two triangular solves with N right-hand sides,
    2 N^3), one matrix product per kernel parameter (2 N^3 each) and
    ~40 N^2 elementwise."""
    return n ** 3 / 3.0 + 2.0 * n ** 3 + 2.0 * (n_params - 1) * n ** 3 + 40.0 * n ** 2


def expected_starts(kernel, restarts: int, rough: bool = False) -> float:
    """Newton starts a series of `kernel` runs on average with `restarts`
    (all of them on a rough series: `is_rough`)."""
    if kernel.has_length_axis and not rough:
        return 1.0 + BASIN_RESTART_SHARE * (restarts - 1)
    return float(restarts)


def takes_rough_figures(kernel) -> bool:
    """Whether a dense fit of kernel costs more on a rough series
    (ROUGH_EVALUATIONS): one component, no period, a length-scale grid."""
    return structure(kernel) == (1, False) and bool(kernel.has_length_axis)


def lag_one_correlation(series) -> float:
    """The lag-one autocorrelation of a Series' finite values in time
    order; 1.0 where there is nothing to correlate (under 3 finite points,
    equal values, not numbers)."""
    try:
        t = np.asarray(series.t, dtype=np.float64).reshape(-1)
        y = np.asarray(series.y, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        return 1.0
    if t.shape != y.shape:
        return 1.0
    finite = np.isfinite(t) & np.isfinite(y)
    t, y = t[finite], y[finite]
    if y.size < 3:
        return 1.0
    y = y[np.argsort(t, kind="stable")]
    # Scaled to at most 1 first: values near float64's limits overflowed
    # the mean and the sums, a numpy warning that PYTHONWARNINGS=error
    # turns into a failed cost estimate.
    y = y / np.max(np.abs(y)) if np.max(np.abs(y)) > 0 else y
    y = y - y.mean()
    energy = float(np.dot(y, y))
    return float(np.dot(y[1:], y[:-1]) / energy) if energy > 0 else 1.0


def is_rough(series) -> bool:
    """Whether a Series is rough for the cost model: lag-one correlation
    under ROUGH_BELOW."""
    return lag_one_correlation(series) < ROUGH_BELOW


@dataclasses.dataclass(frozen=True)
class Batching:
    """Batching hints for one FitConfig.

    Attributes:
      config: the fitter's configuration (kernel and restarts set the cost).
      seconds_per_call: target estimated work per fit call (core-seconds).
    """

    config: FitConfig
    seconds_per_call: float = SECONDS_PER_CALL

    def __post_init__(self):
        if not self.seconds_per_call > 0:
            raise ValueError(f"seconds_per_call must be > 0; got {self.seconds_per_call!r}")

    def cost(self, n_points: int, periodic: Optional[bool] = None,
             rough: bool = False) -> float:
        """Estimated core-seconds to fit one series of n_points points. Under
        kernel "auto", with every candidate, but the periodic ones only where
        `periodic` (gpcore.choice.fits_periodic: whether auto fits them on
        the series) is not False; None charges them, the safe side. `rough`
        (`is_rough`): a single kernel with a length-scale grid runs every
        restart at ROUGH_EVALUATIONS."""
        # The path and the skip as the fitters decide them; the dense flops
        # at the length a dense batch pads to.
        n = quantised_length(max(int(n_points), 1))
        dense = padded_length(n)
        seconds = SECONDS_PER_SERIES
        skip_periodic = periodic is False and self.config.kernel == AUTO
        for config in fitted_configs(self.config):
            kernel = config.kernel
            if skip_periodic and kernel.has_period:
                continue  # auto does not fit it on this series
            if takes_markov_path(kernel, n):
                seconds += markov_seconds(kernel, n)
                continue
            if n > config.max_points:
                continue  # skipped: no fit
            evaluations, factor = cost_figures(kernel, config.jumps)
            rough_fit = rough and takes_rough_figures(kernel)
            if rough_fit:
                evaluations = max(evaluations, ROUGH_EVALUATIONS)
            flops = factor * (flops_per_grid(kernel, dense, config.far_probes)
                              + expected_starts(kernel, config.restarts, rough_fit) * evaluations
                              * flops_per_newton_evaluation(dense, len(kernel.parameters) + 1))
            seconds += max(flops / FLOPS_PER_SECOND, floor_seconds(kernel))
        return seconds

    def cost_of(self, series, n: Optional[int] = None) -> float:
        """`cost` of one Series (t [n], y [n]); under kernel "auto", of the
        candidates auto fits on it (gpcore.choice.fits_periodic: its
        periodic screen, a periodogram; docs/design.md, "Cost per kernel").
        n is its finite points (finite_points, counted here unless given),
        as the fitters count them: they choose the path (dense or O(n)) and
        the skip by them, and at MARKOV_ABOVE the two differ 13x. A rough
        series (`is_rough`) is charged as such where a dense fit of a
        kernel with the rough figures follows."""
        n = finite_points(series) if n is None else n
        # Rough only where it changes the estimate: a dense fit of a kernel
        # that takes the rough figures (of 3 points or more: is_rough).
        rough = n >= 3 and any(not takes_markov_path(k, n) and n <= most
                               for k, most in self._rough_fits) and is_rough(series)
        if self.config.kernel != AUTO:
            # Asked as before where not rough: cost(n) alone.
            return self.cost(n, rough=True) if rough else self.cost(n)
        # Here, not at the top: gpcore.choice imports this module (and
        # TensorFlow, which an auto fit call loads anyway).
        from gpcore.choice import fits_periodic
        return self.cost(n, fits_periodic(self.config, series), rough)

    @functools.cached_property
    def _rough_fits(self) -> tuple:
        """(kernel, max_points) of the fitted configs that take the rough
        figures (takes_rough_figures): asked once, not per series."""
        return tuple((c.kernel, c.max_points) for c in fitted_configs(self.config)
                     if takes_rough_figures(c.kernel))

    def bucket(self, n_points: int) -> int:
        """Series in one bucket may share a fit call."""
        return length_bucket(int(n_points))

    def is_full(self, seconds: float) -> bool:
        """A call carrying this much estimated work should go now."""
        return seconds >= self.seconds_per_call

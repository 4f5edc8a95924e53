"""Where the optimiser may go and where it starts: bounds and a search grid
per series, in standardised units (t in [0, 1], y with zero mean and unit
variance).

Real series are often bimodal in (length scale, noise ratio): a long length
scale with high noise competes with a short one with low noise, and a
single data-driven start lands in the wrong basin on about one series in
eight (docs/design.md, "Measured facts"). So the fitter scores a grid over
both, value only (a Cholesky each, no inverse: about a ninth of a Newton
evaluation), and starts Newton from the best grid point; restarts start
from other basins of the grid (local minima away from the best) or, where
the grid's rows are not one ordered axis, from the next-best points. A
denser grid in length scale finds the right basin more often
(docs/design.md, "The fitter"). Bounds keep flat likelihoods from drifting
to 0 or infinity; they are set relative to the data's spacing and span.

Each kernel owns its bounds and its start rows (Kernel.bounds, start_rows
in gpcore/kernels.py); this module holds the search-wide policy: the noise
ratios, the periodogram's candidate periods, the pieces, the probes and
the jumps.
"""
from __future__ import annotations

import numpy as np

from gpcore.kernels import PERIOD_BOUNDS, Kernel, components

# Noise-to-signal ratios r scored at every grid length scale: from nearly
# noise-free (real yearly series often are) to noise as strong as the signal.
NOISE_GRID = (1e-5, 1e-3, 3e-2, 1.0)
NOISE_BOUNDS = (1e-8, 1e6)
PERIODS = 3            # periodogram peaks scored as candidate periods
PERIODOGRAM_OVERSAMPLE = 4  # frequency steps per 1/span: peaks are ~1/span wide
PERIODOGRAM_MAX_FREQUENCIES = 20000


# The grid is scored on consecutive pieces of at most this many points,
# taken as independent; kernels with a period see the whole series. The
# best GRID_RESCORED points are then scored on the whole series ...
GRID_PIECE_POINTS = 32
GRID_RESCORED = 3
# ... only where those points' piece values are within this many nats of
# each other: farther apart, the whole series never reordered them on the
# real-data set (at 1 or 3 nats it did, on 3 and 2 series of 337), and
# series drawn from the model mostly have one clear best point.
RESCORE_WITHIN = 10.0
# Restarts go to other basins of a length-scale grid whose value is within
# this many nats of the grid's best: farther ones almost never won on real
# series, and on series drawn from the model they are mostly spurious
# (docs/design.md, "Restarts from other basins").
BASIN_WITHIN = 10.0
# Probes: after Newton, each series' optimum has neighbours a grid step or
# less away in length scale that the grid cannot tell apart (two minima
# x1.4-1.7 apart). The fitter scores a small grid of PROBE_LENGTHS x
# PROBE_NOISES times the optimum (on pieces, as the search grid), then the best
# PROBES_RESCORED on the whole series, and where one is lower Newton runs
# again from it (docs/design.md, "Probes around the optimum"). Only for
# kernels with a length axis; the others' grids are crossed differently.
PROBE_LENGTHS = (0.6, 0.75, 1.33, 1.66)
PROBE_NOISES = (0.3, 1.0)
PROBES_RESCORED = 1
# Far probes: the optimum's length scale x FAR_PROBE_LENGTHS at its noise
# ratio, always scored on the whole series. On trending and random-walk
# series a short length scale with low noise is a narrow basin of its own,
# 2-3.5x below a long one with high noise; on pieces those probes rank
# below the near ones, so they are never rescored (docs/design.md, "Probes
# around the optimum").
# The likelihood of a stock or commodity window is rugged: minima a few
# per cent apart in length scale along a ridge where the noise ratio
# follows the length scale, 0.3-1.2 nats apart. So more far probes sit on
# that ridge, each at the optimum's noise ratio x FAR_PROBE_NOISES (one per
# length; docs/design.md, "Probes around the optimum").
# The seventh, x 3.75 (x 2.25), reaches a river's daily flow's longer,
# noisier basin: on two catchments' discharge the better optimum lay at
# x 3.7-3.8 with the noise ratio x 2.3-2.45, 0.39-0.53 nats lower, behind
# barriers of 1.3 and 7.7 nats, where the probes of before on that side lie
# 0.5-8 nats above the optimum: the longer ridge run starts from the
# nearest (x 1.25), which falls back, and on one series the gate is shut
# (its best probe 7 nats up), so this one is scored on every series
# (seventh held-out real set 98.2 % -> 99.1 % within 0.01 nats; workload a
# +1.6 % CPU per series, Newton evaluations 4.70 either way;
# docs/design.md, "Probes around the optimum", *A longer, noisier basin*).
# The last, x 0.5 (x 0.03), reaches a near-periodic ECG's low-noise valley
# off the ridge: on a 500 Hz lead's window the better optimum lay at x 0.52
# with the noise ratio x 0.006, 18.2 nats lower, behind a wall of 12-17
# nats, where every probe of before lies 9.9-140 nats above the optimum
# (so the gate is shut and no ridge probe is scored); it lies 12.5 nats
# below, and Newton from it reaches the valley (eighth held-out real set:
# 98.8 % -> 99.4 %, 1 -> 0 worse by > 1 nat; the other sets unchanged;
# workload a +1.5 % CPU per series over 13 pairs, Newton evaluations 4.70
# either way; docs/design.md, "Probes around the optimum", *A low-noise
# valley*).
FAR_PROBE_LENGTHS = (0.3, 0.6, 0.7, 0.75, 1.5, 2.2, 3.75, 0.5)
FAR_PROBE_NOISES = (1.0, 1.0, 0.7, 1.0, 1.5, 1.5, 2.25, 0.03)
# Ridge probes further out, scored (on the whole series) only where the
# probes above show the likelihood flat along the ridge, their best within
# RIDGE_WITHIN nats of the optimum (so not at all without far probes). On
# the first two held-out real sets the better optimum lay at x 0.43-0.49
# with the noise ratio x 0.5-0.65 (yields, fertility, retail jobs), x
# 0.77-0.8 with x 0.5-0.8 (hourly temperature, mining jobs), x 1.25 (x
# 1.25) and x 3.3 (x 1; hourly dew point), each in a valley too narrow for
# the probes beside it, and there the best of those probes was 0.02-3.0
# nats above the optimum. A whole-series probe costs about a Cholesky, so
# scoring these on every series would cost workload a a quarter more
# (docs/design.md, "Probes around the optimum"). The short two, x 0.24
# (x 0.3) and x 0.35 (x 1.7), reach a near-periodic ECG's narrow valley at
# a quarter of the broad basin's length scale, behind a 25-nat barrier,
# and a log wage's neighbouring basin (fourth held-out real set); gated
# (half of workload a's series pass), they cost it about 2 % more CPU
# (docs/design.md, "Probes around the optimum", *Short ridge probes*).
# The last, x 1.8 (x 2.25), reaches a weather station's temperature
# window's valley 3.2 nats below the optimum, behind a 1.4-nat barrier,
# where the probes of before on the longer side lie 1.35-4.0 nats above
# it (sixth held-out real set: 99.4 % -> 100 %, 1 -> 0 worse by > 1 nat;
# workload a: +1.5 % CPU per series, Newton evaluations 4.70 either way;
# docs/design.md, "Probes around the optimum", *A longer, noisier valley*).
RIDGE_PROBE_LENGTHS = (0.45, 0.75, 0.8, 1.25, 3.3, 0.24, 0.35, 1.8)
RIDGE_PROBE_NOISES = (0.5, 0.5, 0.8, 1.25, 1.0, 0.3, 1.7, 2.25)
RIDGE_WITHIN = 3.5
# Ridge runs: there the likelihood along the ridge is rugged, and the
# valley of a better optimum can be narrower than the step between probes:
# the probes on either side of it score above the optimum, and none
# restarts Newton. So where the ridge is flat, two of the series' other
# members run on from its best probe at a shorter and at a longer length
# scale, whatever their value, where that is within RIDGE_RUN_WITHIN nats
# of the optimum (at RIDGE_WITHIN they cost workload a far more Newton
# evaluations; docs/design.md, "Probes around the optimum"). RIDGE_RUNS = 0
# turns them off.
RIDGE_RUNS = 1
RIDGE_RUN_WITHIN = 1.0
# Rounds of probes for kernels with a length axis (as PERIOD_PROBE_ROUNDS
# below for those with a period).
PROBE_ROUNDS = 1
# Period probes, for kernels with a periodic part: a sharp cycle (a ramp, a
# pulse) has strong harmonics, and the fit can settle on half or a third of
# the true period, where the likelihood has a basin too; a period p/m is a
# special case of p, so p with a matching shape is never worse; and a fit
# at 3p can lie 12 nats above one at 2p. After Newton the fitter scores
# each periodic component's period x PERIOD_PROBE_MULTIPLES, with its length
# scale x 1 / multiple (the same smoothness in units of t) and x 1, on the
# whole series, and Newton runs on from the best where it is lower
# (docs/design.md, "Sums of kernels"). Pulses narrower than a tenth of the
# cycle have 4th and 5th harmonics as strong as the 2nd, and the fit can
# settle there: at p/5 two pulses a cycle lay 41 nats above p, with the
# probe at 5x lower than it; no product of 2, 3 and 3/2 is 5, so
# HIGH_HARMONIC_MULTIPLES are probed too (value only, as the others).
HIGH_HARMONIC_MULTIPLES = (4.0, 5.0)
PERIOD_PROBE_MULTIPLES = (2.0, 3.0, 1 / 2, 3 / 2, 2 / 3, 1 / 3) + HIGH_HARMONIC_MULTIPLES
# Jumps, for sums with a periodic part: in each of the first JUMP_ROUNDS
# rounds of probes each series' other members (its starts that did not win)
# run on from the next best of the period probes at these multiples,
# whatever their value: on a cycle taken at p/3 or p/2 the probe at 3p
# keeps the fraction's other parameters and scores worse, yet Newton from
# it went 9-115 nats lower. 3 rounds (all 6 such probes with 3 starts) cost
# 2.8x the Newton evaluations of none; 1 round is the cheaper form
# (docs/design.md, "Sums of kernels").
JUMP_PROBE_MULTIPLES = (2.0, 3.0, 3 / 2)
JUMP_ROUNDS = 3
# Jumps down, for the same sums: a fit can also settle at a period longer
# than the cycle and no multiple of it (near a periodogram peak at 1.58p,
# where p is about 2/3 of it); there the jumps up leave the period's bounds
# and were all clipped to span/2, the same start for each. So the jumps
# are taken in order: those up within the bounds (best-scored first, as
# before), then the period probes at these fractions (length scale x 1/m)
# within the bounds; a jump clipped to a bound is not run. Each series'
# other members take them in that order, in as many rounds as before
# (docs/design.md, "Sums of kernels").
JUMP_DOWN_MULTIPLES = (1 / 2, 2 / 3)
# Shape probes, for sums with a periodic part: at the right period a sum
# still has basins of its own in its other parameters (a small rbf with a
# short length scale beside the cycle, or a long one carrying a trend).
# Each smooth component's length scale x SHAPE_PROBE_LENGTHS, with its
# variance x 1 and x SHAPE_PROBE_FADE; each periodic component's length
# scale x SHAPE_PROBE_PERIODIC_LENGTHS; the noise ratio x SHAPE_PROBE_NOISES
# (docs/design.md, "Sums of kernels"). The smooth components' rows are
# far probes (FitConfig.far_probes), as the short probes below are.
SHAPE_PROBE_LENGTHS = (0.1, 0.3, 3.0)
SHAPE_PROBE_FADE = 0.01
SHAPE_PROBE_PERIODIC_LENGTHS = (0.5, 2.0)
SHAPE_PROBE_NOISES = (0.1, 10.0)
# Short probes, for the same sums: where a smooth component fades (its
# length scale at the upper bound, its variance tiny), its other basin is a
# short length scale with a variance below the noise's, a wiggle the noise
# alone does not explain; no multiple of the faded optimum reaches it. So
# its length scale is also set to SHORT_PROBE_LENGTHS x its lower bound
# (about 0.4-10 spacings, or 0.0015-0.04 spans), with its variance
# SHORT_PROBE_VARIANCES x the noise variance.
SHORT_PROBE_LENGTHS = (1.5, 4.0, 12.0, 40.0)
SHORT_PROBE_VARIANCES = (0.03, 0.3)
# Alias probes, for sums with a periodic part: on (nearly) regular times a
# period of k median spacings x (1 + delta) beats slowly against the
# sampling, and with a short periodic length scale l the periodic part
# becomes a short smooth component (about l / (2 pi delta) x k spacings
# long on the lags it correlates) with an echo at lag ~ k / delta: a basin
# far from any multiple of a cycle's period, which scikit-learn's restarts
# found 0.8-5.1 nats below gpcore's fits of three seasonal series
# (docs/design.md, "Periods the data can support"). Each row (k, L, q, f)
# moves each periodic component to period k x its lower bound (one median spacing) x (1 + k l / (2 pi L)), length
# scale ALIAS_PROBE_LENGTH, variance q x the noise variance, and scales the
# smooth components' length scales by f (the rest as at the optimum).
# Value only, as the other probes; scored where FitConfig.far_probes (not
# under auto, whose forecasts an alias does not serve). () turns them off.
ALIAS_PROBE_LENGTH = 0.1
ALIAS_PROBES = ((1, 3.0, 1.0, 1.0), (1, 3.0, 3.0, 1.0), (1, 5.0, 1.0, 1.0), (1, 5.0, 3.0, 1.0),
                (1, 3.0, 1.0, 2.0), (1, 3.0, 3.0, 2.0), (1, 5.0, 1.0, 2.0), (1, 5.0, 3.0, 2.0),
                (2, 3.0, 0.3, 1.0), (2, 3.0, 1.0, 1.0), (2, 5.0, 0.3, 1.0), (2, 5.0, 1.0, 1.0))
# Echo probes, for the same sums, only where a periodic component sits at
# such an alias (its period within ECHO_NEAR above 1 or 2 median
# spacings): the alias kernel echoes at lag ~ spacing / delta, and where
# the echo falls inside the span it correlates points that far apart: a
# comb of narrow basins in delta, 0.5-2 nats apart. Each probe moves delta
# so that the echo falls at ECHO_PROBES x the span, the length scale
# scaled alike (the short lag kernel kept); where FitConfig.far_probes.
# () turns them off.
ECHO_PROBES = tuple(round(0.6 + 0.025 * i, 3) for i in range(17))  # 0.6-1.0
ECHO_NEAR = 0.05
# Clipped jumps run: how many of a series' jumps clipped to a period bound
# (all start at span/2) its other members run after the unclipped ones,
# where FitConfig.far_probes (0: none). A series of fewer than two cycles
# can have its optimum at span/2, where every jump up is clipped.
CLIPPED_JUMP_RUNS = 1
# Rounds of probes: Newton runs on from the best probe, and its new optimum
# is probed again, until no probe is lower or the rounds are spent.
PERIOD_PROBE_ROUNDS = 3
# Newton steps a start takes before FitConfig.stop_behind may stop it
# (5 and 3 stopped as much on forecast.py's tune split, 10 less;
# docs/design.md, "Where auto's time goes").
BEHIND_AFTER = 5
# Where a config stops starts behind at all, a start this many nats behind
# its series' best after FAR_BEHIND_AFTER steps stops sooner: auto's
# periodic starts that end far behind mostly are so from their first step
# (14 % fewer of its Newton evaluations on forecast.py's tune split). Not
# 5 or 10: a sharp cycle's start at its true period can begin that far
# behind (docs/design.md, "Kernel choice", *Far behind sooner*).
FAR_BEHIND = 20.0
FAR_BEHIND_AFTER = 1
# In a sum of kernels, and where a config stops starts behind, a start
# whose value fell by less than SLOW_NATS over its last SLOW_STEPS Newton
# steps stops (newton.minimize's `slow`), free for the probe rounds: on
# forecast.py's holdout split one start of auto's periodic candidate
# crawled 395 steps along a ridge for less than 1e-3 nats, half of its
# 240-point series' Newton work; sums alone took 4-21 % fewer evaluations
# (docs/design.md, "Kernel choice", *A crawl stops*).
SLOW_STEPS = 10
SLOW_NATS = 1e-3


def grid_piece_points(kernel: Kernel) -> int:
    """Longest piece a grid value is computed on (points)."""
    return 1 << 30 if kernel.has_period else GRID_PIECE_POINTS


def probe_count(kernel: Kernel, far_probes: bool = True) -> int:
    """Probes around each optimum: PROBE_LENGTHS x PROBE_NOISES for a kernel
    with a length axis, period_probes', shape_probes' and short_probes' rows
    for one with a period (fewer without `far_probes`)."""
    if kernel.has_period:
        return (len(period_probes(kernel)) + len(shape_probes(kernel, far_probes))
                + len(short_probes(kernel, far_probes)))
    return len(PROBE_LENGTHS) * len(PROBE_NOISES) if kernel.has_length_axis else 0


def far_probe_count(kernel: Kernel, far_probes: bool = True) -> int:
    """Far probes around each optimum, scored on the whole series, where
    `far_probes` (FitConfig.far_probes), else none: FAR_PROBE_LENGTHS for a
    kernel with a length axis, the alias probes for a sum with a periodic
    part (`alias_probes`; the echo probes, which only series at an alias
    score, are not counted)."""
    if not far_probes:
        return 0
    return len(FAR_PROBE_LENGTHS) if kernel.has_length_axis else len(alias_probes(kernel))


def ridge_probes() -> np.ndarray:
    """[R, 2] log offsets (length scale, noise ratio) of the ridge probes
    from an optimum: RIDGE_PROBE_LENGTHS by RIDGE_PROBE_NOISES."""
    return np.log(np.array([RIDGE_PROBE_LENGTHS, RIDGE_PROBE_NOISES], dtype=float).T.reshape(-1, 2))


def far_probes() -> np.ndarray:
    """[F, 2] log offsets (length scale, noise ratio) of the far probes from
    an optimum: FAR_PROBE_LENGTHS, each with its FAR_PROBE_NOISES factor
    (1 where that tuple is shorter)."""
    noises = tuple(FAR_PROBE_NOISES[:len(FAR_PROBE_LENGTHS)])
    noises += (1.0,) * (len(FAR_PROBE_LENGTHS) - len(noises))
    return np.log(np.array([FAR_PROBE_LENGTHS, noises], dtype=float).T.reshape(-1, 2))


def period_probes(kernel: Kernel) -> np.ndarray:
    """[Q, K] log offsets from an optimum's kernel parameters (the noise
    ratio is kept): for each periodic component and each multiple m of
    PERIOD_PROBE_MULTIPLES, its period x m with its length scale x 1/m and
    x 1."""
    names = kernel.parameters
    rows = []
    for c, base in enumerate(components(kernel)):
        if not base.has_period:
            continue
        suffix = f"_{c}" if len(components(kernel)) > 1 else ""
        period, length = names.index(f"period{suffix}"), names.index(f"length_scale{suffix}")
        for m in PERIOD_PROBE_MULTIPLES:
            for shrink in (1.0 / m, 1.0):
                row = np.zeros(len(names))
                row[period], row[length] = np.log(m), np.log(shrink)
                rows.append(row)
    return np.array(rows).reshape(-1, len(names))


def periodic_sum_parts(kernel: Kernel) -> list:
    """The components of a sum with a periodic part, the kernels whose
    probes move one part at a time; [] for any other kernel."""
    parts = components(kernel)
    return parts if len(parts) > 1 and kernel.has_period else []


def periodic_parts(kernel: Kernel) -> list[int]:
    """Indices of the periodic components of a sum with a periodic part."""
    return [c for c, base in enumerate(periodic_sum_parts(kernel)) if base.has_period]


def smooth_parts(kernel: Kernel) -> list[int]:
    """Indices of the components with a length scale and no period of a sum
    with a periodic part."""
    return [c for c, base in enumerate(periodic_sum_parts(kernel))
            if "length_scale" in base.parameters and not base.has_period]


def jump_probes(kernel: Kernel) -> np.ndarray:
    """[J] int32 columns of the period probes (period_probes' rows, which
    come first among the restart hook's probes) whose multiple is in
    JUMP_PROBE_MULTIPLES: for a sum with a periodic part, the longer
    periods its other members run from in the first round (none for other
    kernels)."""
    if not periodic_sum_parts(kernel):
        return np.zeros(0, np.int32)
    per_component = [m for m in PERIOD_PROBE_MULTIPLES for _ in (0, 1)]  # (1/m, 1) per m
    count = len(period_probes(kernel)) // len(per_component)
    return np.array([i for i, m in enumerate(per_component * count) if m in JUMP_PROBE_MULTIPLES],
                    np.int32)


def down_jump_probes(kernel: Kernel) -> np.ndarray:
    """[D] int32 columns of the period probes whose multiple is in
    JUMP_DOWN_MULTIPLES, with the length scale x 1/m, for a sum with a
    periodic part (none for other kernels): the jumps taken after those up
    within the bounds."""
    if not periodic_sum_parts(kernel):
        return np.zeros(0, np.int32)
    per_component = [m for m in PERIOD_PROBE_MULTIPLES for _ in (0, 1)]  # (1/m, 1) per m
    count = len(period_probes(kernel)) // len(per_component)
    shrunk = [i % 2 == 0 for i in range(len(per_component))]  # the length x 1/m of each pair
    return np.array([i for i, (m, first) in enumerate(zip(per_component * count, shrunk * count))
                     if m in JUMP_DOWN_MULTIPLES and first], np.int32)


def shape_probes(kernel: Kernel, far_probes: bool = True) -> np.ndarray:
    """[Q, K + 1] log offsets from an optimum's kernel parameters and noise
    ratio, for a sum with a periodic part (none for other kernels): each
    smooth component's length scale x SHAPE_PROBE_LENGTHS with its variance
    x 1 and x SHAPE_PROBE_FADE (only where `far_probes`, FitConfig.far_probes:
    they reach another basin of the smooth part, for the nll alone), each
    periodic component's length scale x SHAPE_PROBE_PERIODIC_LENGTHS, and
    the noise ratio x SHAPE_PROBE_NOISES.

    The first component's variance is the unit the others' ratios and the
    noise ratio are measured in: fading it raises all of those instead.
    """
    names, parts = kernel.parameters, periodic_sum_parts(kernel)
    if not parts:
        return np.zeros((0, len(names) + 1))
    ratios = [i for i, name in enumerate(names) if name.startswith("variance_ratio_")]
    rows = []

    def fade(row, c):
        if c:
            row[names.index(f"variance_ratio_{c}")] += np.log(SHAPE_PROBE_FADE)
        else:
            row[ratios] -= np.log(SHAPE_PROBE_FADE)
            row[-1] -= np.log(SHAPE_PROBE_FADE)
        return row

    for c, base in enumerate(parts):
        if "length_scale" not in base.parameters or not (base.has_period or far_probes):
            continue
        length = names.index(f"length_scale_{c}")
        for m in (SHAPE_PROBE_PERIODIC_LENGTHS if base.has_period else SHAPE_PROBE_LENGTHS):
            row = np.zeros(len(names) + 1)
            row[length] = np.log(m)
            rows.append(row)
            if not base.has_period:
                rows.append(fade(row.copy(), c))
    for m in SHAPE_PROBE_NOISES:
        row = np.zeros(len(names) + 1)
        row[-1] = np.log(m)
        rows.append(row)
    return np.array(rows)


def short_probes(kernel: Kernel, far_probes: bool = True) -> list[tuple[int, float, float]]:
    """(component, length scale x its lower bound, variance x the noise's)
    of every short probe: SHORT_PROBE_LENGTHS x SHORT_PROBE_VARIANCES for
    each smooth component of a sum with a periodic part where `far_probes`
    (FitConfig.far_probes; none for other kernels)."""
    if not far_probes:
        return []
    return [(c, a, q) for c in smooth_parts(kernel)
            for a in SHORT_PROBE_LENGTHS for q in SHORT_PROBE_VARIANCES]


def alias_probes(kernel: Kernel) -> list[tuple[int, float, float, float, float]]:
    """(periodic component, k, delta, variance x the noise's, smooth length
    factor) of every alias probe: ALIAS_PROBES for each periodic component
    of a sum (none for other kernels), delta = k l / (2 pi L) with l =
    ALIAS_PROBE_LENGTH."""
    return [(c, k, k * ALIAS_PROBE_LENGTH / (2.0 * np.pi * length), q, f)
            for c in periodic_parts(kernel) for k, length, q, f in ALIAS_PROBES]


def echo_components(kernel: Kernel) -> list[int]:
    """The periodic components of a sum that get echo probes (none where
    ECHO_PROBES is empty, and for other kernels)."""
    return periodic_parts(kernel) if ECHO_PROBES else []


def behind_rules(stop_behind: float) -> tuple[tuple[float, int], ...]:
    """Newton's (nats, steps) rules for stopping a start behind its
    series' best (gpcore/newton.py) for FitConfig.stop_behind (nats): none
    where it is 0, else stop_behind after BEHIND_AFTER steps and the
    larger of it and FAR_BEHIND after FAR_BEHIND_AFTER."""
    if not stop_behind > 0:
        return ()
    return ((stop_behind, BEHIND_AFTER), (max(stop_behind, FAR_BEHIND), FAR_BEHIND_AFTER))


def slow_rule(kernel: Kernel, stop_behind: float) -> tuple[int, float] | None:
    """Newton's (steps, nats) rule for stopping a start that has slowed to
    a crawl (gpcore/newton.py): SLOW_STEPS and SLOW_NATS for a sum of
    kernels (whose fading components make ridges) and where
    FitConfig.stop_behind is set; else none (single kernels)."""
    return (SLOW_STEPS, SLOW_NATS) if len(components(kernel)) > 1 or stop_behind > 0 else None


def grid_shape(kernel: Kernel) -> tuple[int, int]:
    """(kernel-parameter rows, noise columns) of every series' grid."""
    return kernel.grid_size(PERIODS), len(NOISE_GRID)


def median_spacing(t: np.ndarray) -> float:
    """Median positive gap between sorted times t [n] (repeats skipped)."""
    gaps = np.diff(t)
    gaps = gaps[gaps > 0]
    return float(np.median(gaps)) if gaps.size else 1.0


def bounds(kernel: Kernel, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lower [P], upper [P]) log bounds: the kernel's own (Kernel.bounds,
    from t's median spacing), then log r."""
    lower, upper = kernel.bounds(median_spacing(t))
    return (np.log(lower + [NOISE_BOUNDS[0]]), np.log(upper + [NOISE_BOUNDS[1]]))


def search_grid(kernel: Kernel, t: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(kernel rows [G1, K], noise columns [G2]), both log, for one series:
    the kernel's start rows (Kernel.start_rows), from the periodogram's
    PERIODS highest peaks where it has a period.

    Args:
      kernel: the kernel fitted (rows follow its `parameters` order).
      t: [n] sorted times in [0, 1]. y: [n] standardised values.
    """
    periods = None
    if kernel.has_period:
        if len(components(kernel)) > 1:
            # The trend would dominate the periodogram's low frequencies:
            # remove a line first, and look for cycles seen at least twice.
            y = y - np.polyval(np.polyfit(t, y, 1), t)
        periods = _repeated(periodogram_peaks(t, y, PERIODS, shortest_cycles=1 / PERIOD_BOUNDS[1]))
    return kernel.start_rows(median_spacing(t), periods), np.log(NOISE_GRID)


def _repeated(periods: np.ndarray) -> np.ndarray:
    """Exactly PERIODS periods: fewer peaks are repeated (same grid shape)."""
    return periods[np.arange(PERIODS) % periods.size]


def periodogram_peaks(t: np.ndarray, y: np.ndarray, count: int,
                      shortest_cycles: float = 1.0) -> np.ndarray:
    """[<=count] periods (units of t) at the highest periodogram peaks.

    Frequencies run from `shortest_cycles` cycles per span up to half the mean sampling rate
    in steps of 1/(PERIODOGRAM_OVERSAMPLE x span): a peak is about 1/span
    wide, so a coarser grid misses the true period's basin on long series.
    """
    n = y.size
    span = max(float(t[-1] - t[0]), 1e-300)
    f_max = max(2.0, 0.5 * (n - 1)) / span
    step = 1.0 / (PERIODOGRAM_OVERSAMPLE * span)
    f_min = shortest_cycles / span
    f_max = max(f_max, 2.0 * f_min)
    count_f = int(min(PERIODOGRAM_MAX_FREQUENCIES, max(8, (f_max - f_min) / step)))
    freqs = np.linspace(f_min, f_max, count_f)
    power = even_periodogram(t, y, f_min, (f_max - f_min) / max(count_f - 1, 1), count_f)
    is_peak = np.r_[power[0] > power[1],
                    (power[1:-1] > power[:-2]) & (power[1:-1] >= power[2:]),
                    power[-1] > power[-2]]
    peaks = np.flatnonzero(is_peak)
    if peaks.size == 0:
        return np.array([0.5 * span])
    best = peaks[np.argsort(power[peaks])[::-1][:count]]
    return 1.0 / freqs[best]


def even_periodogram(t: np.ndarray, y: np.ndarray, lowest: float, step: float,
                     count: int) -> np.ndarray:
    """[count] unnormalised power |sum_i y_i exp(-2 pi i f t_i)|^2 of y [n]
    at times t [n] for the evenly spaced frequencies f = lowest + k step
    (cycles per unit of t), k < count, to round-off (1e-14 of the peak at
    150 points, 4e-13 at 3,000, against the direct sums).

    Frequency k = a m + b (m ~ sqrt(count)) factors its phase as
    exp(-2 pi i (lowest + a m step) t) exp(-2 pi i b step t); both factors
    are running products of one exponential each, and one [m, n] x
    [n, count / m] product sums them: 25x faster than count x n cosines and
    sines at 150 points (docs/design.md, "Kernel choice", *The screen once,
    and faster*). The screen and `periodogram_peaks` use it."""
    m = max(1, int(np.ceil(np.sqrt(count))))
    phase = -2j * np.pi * t
    coarse = _powers(np.exp(phase * (m * step)), -(-count // m)) * (y * np.exp(phase * lowest))
    sums = (_powers(np.exp(phase * step), m) @ coarse.T).T.reshape(-1)[:count]  # k = a m + b
    return sums.real ** 2 + sums.imag ** 2


def _powers(w: np.ndarray, count: int) -> np.ndarray:
    """[count, n] w [n] to the powers 0 .. count - 1, as running products
    (round-off grows as count x eps: 1e-14 at count 50)."""
    out = np.empty((count, w.size), complex)
    out[0] = 1.0
    out[1:] = w
    return np.cumprod(out, axis=0)

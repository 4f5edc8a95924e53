"""Bounds, search grid and periodogram starts, against numpy references."""
import numpy as np
import pytest
import tensorflow as tf

import gp_reference as ref
from gpcore import FitConfig, GPFitter, starts
from gpcore.kernels import distances, kernel as kernel_named
from gpcore.search import Pieces


def test_bounds_follow_the_data_spacing_and_span(rng):
    dense = np.linspace(0.0, 1.0, 2001)  # spacing 5e-4
    sparse = np.linspace(0.0, 1.0, 11)
    lo_dense, hi_dense = starts.bounds(kernel_named("rbf"), dense)
    lo_sparse, _ = starts.bounds(kernel_named("rbf"), sparse)
    assert np.exp(lo_dense[0]) == pytest.approx(0.25 * 5e-4)
    assert np.exp(lo_sparse[0]) == pytest.approx(1e-3)  # at least span / 1000
    assert np.exp(hi_dense[0]) == pytest.approx(10.0)
    assert np.exp([lo_dense[-1], hi_dense[-1]]) == pytest.approx(starts.NOISE_BOUNDS)
    lo_p, hi_p = starts.bounds(kernel_named("periodic"), sparse)
    # Periods from one spacing to half the span: a cycle seen at least twice.
    assert np.exp(lo_p[1]) == pytest.approx(0.1) and np.exp(hi_p[1]) == pytest.approx(0.5)
    lo_s, hi_s = starts.bounds(kernel_named("rbf+periodic"), sparse)
    assert np.exp([lo_s[3], hi_s[3]]) == pytest.approx([0.1, 0.5])


def test_period_probes_multiply_each_periodic_component_s_period():
    kernel = kernel_named("rbf+periodic")  # length_scale_0, variance_ratio_1, length_scale_1, period_1
    offsets = np.exp(starts.period_probes(kernel))
    multiples = starts.PERIOD_PROBE_MULTIPLES
    assert {2.0, 3.0} <= set(multiples)
    assert offsets.shape == (2 * len(multiples), 4)
    # period x each multiple m, with its length scale x 1/m or unchanged; the rest unchanged
    expected = [[1, 1, shrink, m] for m in multiples for shrink in (1 / m, 1)]
    np.testing.assert_allclose(offsets, expected)
    assert starts.period_probes(kernel_named("periodic+rbf+periodic")).shape == (
        4 * len(multiples), 7)


def test_jump_probes_are_the_period_probes_at_longer_multiples_of_a_sum():
    kernel = kernel_named("rbf+periodic")
    offsets = np.exp(starts.period_probes(kernel))
    jumps = starts.jump_probes(kernel)
    assert len(jumps) == 2 * len(starts.JUMP_PROBE_MULTIPLES)  # length x 1/m and x 1 each
    np.testing.assert_allclose(sorted(set(offsets[jumps, 3])), sorted(starts.JUMP_PROBE_MULTIPLES))
    assert all(m > 1 for m in starts.JUMP_PROBE_MULTIPLES)  # longer periods only
    two = starts.jump_probes(kernel_named("periodic+rbf+periodic"))
    assert len(two) == 4 * len(starts.JUMP_PROBE_MULTIPLES)
    assert starts.jump_probes(kernel_named("periodic")).size == 0  # single kernels: none
    assert starts.jump_probes(kernel_named("rbf")).size == 0


def test_down_jumps_are_the_period_probes_at_shorter_multiples_of_a_sum():
    kernel = kernel_named("rbf+periodic")
    offsets = np.exp(starts.period_probes(kernel))
    down = starts.down_jump_probes(kernel)
    assert len(down) == len(starts.JUMP_DOWN_MULTIPLES)  # length x 1/m only
    np.testing.assert_allclose(sorted(offsets[down, 3]), sorted(starts.JUMP_DOWN_MULTIPLES))
    np.testing.assert_allclose(offsets[down, 2] * offsets[down, 3], 1.0)
    assert all(m < 1 for m in starts.JUMP_DOWN_MULTIPLES)
    assert not set(down) & set(starts.jump_probes(kernel))
    assert len(starts.down_jump_probes(kernel_named("periodic+rbf+periodic"))) == 2 * len(
        starts.JUMP_DOWN_MULTIPLES)
    assert starts.down_jump_probes(kernel_named("periodic")).size == 0  # single kernels: none


def test_jumps_go_up_within_the_bounds_then_down_and_never_to_a_clipped_period():
    fitter = GPFitter(FitConfig(kernel="rbf+periodic"))
    up, down = starts.jump_probes(fitter.kernel), starts.down_jump_probes(fitter.kernel)
    probes = len(starts.period_probes(fitter.kernel))
    rng = np.random.default_rng(3)
    scored = rng.permutation(probes).astype(float)[None]                  # [1, Q]
    points = np.zeros((1, probes, 5))
    unclipped = points.copy()
    clipped = up[[0, 3]]  # two jumps up whose period left the bounds
    unclipped[0, clipped, 3] = 0.7
    columns, order, run = fitter.search.jump_order(up, tf.constant(scored), tf.constant(points),
                                                 tf.constant(unclipped))
    taken = np.asarray(columns)[order.numpy()[0]]
    within = [c for c in up if c not in clipped]
    expected = (sorted(within, key=lambda c: scored[0, c]) + sorted(down, key=lambda c: scored[0, c])
                + sorted(clipped, key=lambda c: scored[0, c]))
    assert list(taken) == expected
    assert run.numpy().tolist() == [len(within) + len(down)]


def test_far_probes_pair_each_length_with_its_noise_factor(monkeypatch):
    offsets = np.exp(starts.far_probes())
    assert offsets.shape == (len(starts.FAR_PROBE_LENGTHS), 2)
    np.testing.assert_allclose(offsets[:, 0], starts.FAR_PROBE_LENGTHS)
    np.testing.assert_allclose(offsets[:, 1], starts.FAR_PROBE_NOISES)
    # A noise factor not given is 1: the optimum's noise ratio.
    monkeypatch.setattr(starts, "FAR_PROBE_LENGTHS", (0.3, 0.6, 2.0))
    monkeypatch.setattr(starts, "FAR_PROBE_NOISES", (0.5,))
    np.testing.assert_allclose(np.exp(starts.far_probes()), [[0.3, 0.5], [0.6, 1], [2, 1]])
    assert starts.far_probe_count(kernel_named("rbf")) == 3
    assert starts.far_probe_count(kernel_named("periodic")) == 0
    assert starts.far_probe_count(kernel_named("rbf"), far_probes=False) == 0


def test_a_sums_far_probes_are_its_alias_probes():
    sum_ = kernel_named("rbf+periodic")
    assert starts.far_probe_count(sum_) == len(starts.ALIAS_PROBES) == len(starts.alias_probes(sum_))
    assert starts.far_probe_count(sum_, far_probes=False) == 0
    assert starts.echo_components(sum_) == [1] and starts.echo_components(kernel_named("rbf")) == []
    # Row (k, L, q, f): period k x (1 + k l / (2 pi L)) spacings, l = ALIAS_PROBE_LENGTH.
    for (c, k, delta, q, f), row in zip(starts.alias_probes(sum_), starts.ALIAS_PROBES):
        assert (c, k, q, f) == (1, row[0], row[2], row[3])
        np.testing.assert_allclose(delta, k * starts.ALIAS_PROBE_LENGTH / (2 * np.pi * row[1]))


def test_shape_and_short_probes_move_one_part_of_a_sum_at_a_time():
    kernel = kernel_named("rbf+periodic")  # length_scale_0, variance_ratio_1, length_scale_1, period_1
    offsets = np.exp(starts.shape_probes(kernel))  # [Q, 4 + noise ratio]
    fade = 1 / starts.SHAPE_PROBE_FADE
    expected = [row for m in starts.SHAPE_PROBE_LENGTHS
                for row in ([m, 1, 1, 1, 1], [m, fade, 1, 1, fade])]  # the rbf faded: the rest rise
    expected += [[1, 1, m, 1, 1] for m in starts.SHAPE_PROBE_PERIODIC_LENGTHS]
    expected += [[1, 1, 1, 1, m] for m in starts.SHAPE_PROBE_NOISES]
    np.testing.assert_allclose(offsets, expected)
    short = starts.short_probes(kernel)
    assert short == [(0, a, q) for a in starts.SHORT_PROBE_LENGTHS
                     for q in starts.SHORT_PROBE_VARIANCES]
    assert starts.probe_count(kernel) == len(starts.period_probes(kernel)) + len(offsets) + len(short)
    # Without the far probes (auto's candidates) the smooth part keeps its
    # length: no short probes and no smooth-length rows; the periodic
    # length and noise rows stay.
    near = np.exp(starts.shape_probes(kernel, far_probes=False))
    np.testing.assert_allclose(near, expected[2 * len(starts.SHAPE_PROBE_LENGTHS):])
    assert starts.short_probes(kernel, far_probes=False) == []
    assert starts.probe_count(kernel, far_probes=False) == (len(starts.period_probes(kernel))
                                                            + len(near))
    # Other kernels keep the period probes alone; the second rbf of a longer
    # sum fades through its own ratio.
    assert starts.shape_probes(kernel_named("periodic")).shape == (0, 3)
    assert starts.short_probes(kernel_named("periodic")) == [] == starts.short_probes(
        kernel_named("rbf+matern52"))
    second = kernel_named("periodic+rbf")  # variance_ratio_1 is the rbf's
    faded = np.exp(starts.shape_probes(second))[len(starts.SHAPE_PROBE_PERIODIC_LENGTHS) + 1]
    assert faded[second.parameters.index("variance_ratio_1")] == pytest.approx(
        starts.SHAPE_PROBE_FADE)
    assert faded[-1] == 1.0 and faded[second.parameters.index("length_scale_1")] == pytest.approx(
        starts.SHAPE_PROBE_LENGTHS[0])


def test_a_short_probe_puts_a_component_at_a_variance_below_the_noise():
    fitter = GPFitter(FitConfig(kernel="rbf+periodic"))
    optimum = tf.constant(np.log([[5.0, 1e3, 0.5, 0.3, 2e-2]]), tf.float64)  # rbf faded: long, tiny
    lo = tf.constant(np.log([[1e-3, 1e-6, 1e-2, 0.01, 1e-8]]), tf.float64)
    x = np.exp(fitter.search.short_probe(optimum, lo, 0, 4.0, 0.3).numpy()[0])
    # The rbf at 4 x its bound with 0.3 x the noise variance; the periodic
    # part's and the noise's variances unchanged (in units of the old rbf's).
    assert x[0] == pytest.approx(4e-3)
    rbf_variance = 0.3 * 2e-2  # old units
    assert x[1] * rbf_variance == pytest.approx(1e3) and x[-1] * rbf_variance == pytest.approx(2e-2)
    np.testing.assert_allclose(x[2:4], [0.5, 0.3])


@pytest.mark.parametrize("name", ["rbf", "periodic", "rbf+periodic", "matern52+rbf+periodic"])
def test_grid_lies_inside_the_bounds(rng, name):
    kernel = kernel_named(name)
    t = np.sort(rng.uniform(0.0, 1.0, 200)); t = (t - t[0]) / np.ptp(t)
    y = rng.normal(size=200)
    rows, columns = starts.search_grid(kernel, t, y)
    lower, upper = starts.bounds(kernel, t)
    assert lower.shape == upper.shape == (len(kernel.parameters) + 1,)
    assert (rows.shape, columns.shape) == ((starts.grid_shape(kernel)[0], len(kernel.parameters)),
                                           (starts.grid_shape(kernel)[1],))
    assert np.all(rows >= lower[:-1] - 1e-12) and np.all(rows <= upper[:-1] + 1e-12)
    assert np.all(columns >= lower[-1]) and np.all(columns <= upper[-1])


@pytest.mark.parametrize("n", [300, 1500, 4000])
def test_periodogram_finds_the_period_of_long_series(rng, n):
    # The first peak must sit in the true period's basin (within ~1/span of
    # its frequency): a 400-point frequency grid missed it at 4,000 points.
    t = np.sort(rng.uniform(0.0, 1.0, n))
    period = 1.0 / 37.3
    y = np.sin(2 * np.pi * t / period) + 0.5 * rng.normal(size=n)
    found = starts.periodogram_peaks(t, y, 3)
    assert abs(1.0 / found[0] - 1.0 / period) < 0.5


@pytest.mark.parametrize("n, lowest, step, count", [(8, 3.0, 0.25, 1), (150, 3.0, 0.25, 287),
                                                    (151, 0.5, 0.1, 290), (3000, 2.0, 0.25, 5993)])
def test_even_periodogram_matches_the_direct_sums(rng, n, lowest, step, count):
    # numpy reference: the power sum_i y_i exp(-2 pi i f t_i) at each
    # frequency, on irregular times. Tolerance 1e-11 of the peak: both
    # round phases of up to 2 pi f t ~ 1e4 rad (about 1e-12 each) and the
    # running products add count / m ~ 80 roundings.
    t = np.sort(rng.uniform(0.0, 1.0, n))
    y = rng.normal(size=n)
    freqs = lowest + step * np.arange(count)
    direct = np.abs(np.exp(-2j * np.pi * np.outer(freqs, t)) @ y) ** 2
    even = starts.even_periodogram(t, y, lowest, step, count)
    assert even.shape == (count,)
    assert np.max(np.abs(even - direct)) < 1e-11 * np.max(direct)
    assert np.argmax(even) == np.argmax(direct)


def _profiled_nll_numpy(kernel, t, y, shape, ratio, size=None):
    """min over mean and amplitude of -log N(y | mean, s^2 A), A = K + ratio I
    with K taken block-diagonal over consecutive pieces of `size` points
    (the last one shorter; None: one piece): GLS mean and ML scale."""
    k = ref.kernel_matrix(kernel, t, t, 1.0, shape[0], shape[1] if len(shape) > 1 else None)
    piece = np.arange(t.size) // (size or t.size)
    a = np.where(piece[:, None] == piece[None, :], k, 0.0) + ratio * np.eye(t.size)
    a_inv = np.linalg.inv(a)
    one = np.ones_like(y)
    mean = one @ a_inv @ y / (one @ a_inv @ one)
    scale2 = (y - mean) @ a_inv @ (y - mean) / y.size
    cov = scale2 * a
    return 0.5 * ((y - mean) @ np.linalg.solve(cov, y - mean) + np.linalg.slogdet(cov)[1]
                  + y.size * np.log(2 * np.pi))


def _other_basins_numpy(values, first):
    """Flat indices of the other basins of grid values [G1, G2] (NaN: +inf),
    best first: local minima over the 8 neighbours, more than one row or
    column from `first`, within starts.BASIN_WITHIN of the best value."""
    v = np.where(np.isfinite(values), values, np.inf)
    columns = v.shape[1]
    found = [i * columns + j for i in range(v.shape[0]) for j in range(columns)
             if np.isfinite(v[i, j]) and v[i, j] <= v[max(i - 1, 0):i + 2, max(j - 1, 0):j + 2].min()
             and max(abs(i - first // columns), abs(j - first % columns)) > 1
             and v[i, j] - v.min() <= starts.BASIN_WITHIN]
    return sorted(found, key=lambda k: (v.flat[k], k))


@pytest.mark.parametrize("kernel, n", [("matern52", 40), ("rbf", 100), ("rbf", 60), ("periodic", 40)])
def test_grid_scores_equal_numpy_and_restarts_start_from_other_basins(rng, kernel, n):
    """Values on pieces (a block-diagonal covariance); the first start is the
    best of the best few by their whole-series value; restarts go to the
    other basins (a length-scale grid) or down the order (periodic)."""
    fitter = GPFitter(FitConfig(kernel=kernel))
    t, y = ref.sample(rng, kernel, n, noise_variance=0.05, period=0.3 if kernel == "periodic" else None,
                      length_scale=0.8 if kernel == "periodic" else 0.1, span=1.0)
    if n == 60:  # two regimes: a smooth half and a rough one (several basins)
        y[n // 2:] = rng.normal(size=n - n // 2)
    t, y = (t - t[0]) / np.ptp(t), (y - y.mean()) / y.std()
    rows, columns = starts.search_grid(fitter.kernel, t, y)
    count = rows.shape[0] * columns.size  # one member per grid point, all of one series
    one = lambda a: tf.constant(a[None])
    feature = fitter.kernel.feature(distances(one(t), one(t)))
    mask = one(np.ones_like(y))
    start, others, values = fitter.search.grid_start(
        feature, Pieces(fitter.kernel, one(t), one(y), mask), one(y), mask, one(rows),
        one(columns), tf.zeros([count], tf.int32), tf.range(count))
    size = min(n, starts.grid_piece_points(fitter.kernel))
    pieces = -(-n // size)
    assert pieces == (1 if kernel == "periodic" else -(-n // starts.GRID_PIECE_POINTS))
    scored = lambda piece: np.array([[_profiled_nll_numpy(kernel, t, y, np.exp(r), np.exp(c), piece)
                                      for c in columns] for r in rows]).reshape(-1)
    expected = scored(size)
    # Same likelihood, TF against numpy's inverse: float64 round-off.
    np.testing.assert_allclose(values.numpy()[0].reshape(-1), expected, rtol=1e-8)
    order = np.argsort(expected)
    head = order[:starts.GRID_RESCORED]
    if pieces > 1 and expected[head[-1]] - expected[head[0]] < starts.RESCORE_WITHIN:
        # the best few, close on pieces: ordered by the whole series
        order = np.r_[head[np.argsort(scored(None)[head])], order[starts.GRID_RESCORED:]]
    if fitter.kernel.has_length_axis:
        basins = _other_basins_numpy(expected.reshape(rows.shape[0], -1), order[0])
        assert int(others.numpy()[0]) == len(basins)
        order = np.r_[order[0], basins].astype(int)
        if n == 60:
            assert len(basins) >= 1
    else:
        assert int(others.numpy()[0]) == count - 1
    for rank in range(len(order)):  # restart k starts from the k-th point of that order
        row, column = divmod(order[rank], columns.size)
        np.testing.assert_allclose(start.numpy()[rank], np.r_[rows[row], columns[column]])


def test_other_basins_are_local_minima_away_from_the_first_start():
    from gpcore.search import other_basins

    values = 10.0 + np.add.outer(np.arange(7.0), np.arange(4.0))  # one basin, at (0, 0)
    values[0, 0] = 0.0
    values[1, 1] = 0.5   # a minimum next to (0, 0): the same basin
    values[1, 3] = 3.0   # two columns away
    values[4, 0] = 5.0   # three rows away
    values[6, 0] = 1.5
    values[6, 3] = 10.5  # a minimum, but more than BASIN_WITHIN = 10 above the best
    values[3, 3] = np.nan  # not positive definite: never a basin
    flat = lambda row, column: row * 4 + column

    def restarts(first):
        order, others = other_basins(tf.constant(values[None]), tf.constant([first]))
        return order.numpy()[0][:1 + int(others.numpy()[0])].tolist()

    assert restarts(flat(0, 0)) == [flat(0, 0), flat(6, 0), flat(1, 3), flat(4, 0)]
    # From (1, 2), (1, 1) and (1, 3) are its neighbours; (0, 0) is not.
    assert restarts(flat(1, 2)) == [flat(1, 2), flat(0, 0), flat(6, 0), flat(4, 0)]


def test_a_sum_s_bounds_and_grid_are_its_components_with_a_ratio_after_the_first():
    from gpcore import kernels

    spacing, periods = 0.02, np.array([0.1, 0.25, 0.3])
    rbf, periodic = kernels.RBF(), kernels.Periodic()
    total = rbf + periodic
    lower, upper = total.bounds(spacing)
    ratio = kernels.VARIANCE_RATIO_BOUNDS
    assert lower == rbf.bounds(spacing)[0] + [ratio[0]] + periodic.bounds(spacing)[0]
    assert upper == rbf.bounds(spacing)[1] + [ratio[1]] + periodic.bounds(spacing)[1]
    assert len(lower) == len(total.parameters)
    rows = total.start_rows(spacing, periods)
    assert rows.shape == (total.grid_size(len(periods)), len(total.parameters))
    # Every rbf candidate with every ratio and period, in product order.
    expected = [(r,) + (np.log(w),) + p for (r,) in rbf.sum_options(spacing, periods)
                for w in kernels.VARIANCE_RATIO_GRID for p in periodic.sum_options(spacing, periods)]
    np.testing.assert_array_equal(rows, expected)
    assert rbf.has_length_axis and not (periodic.has_length_axis or total.has_length_axis)
    assert kernels.Linear().start_rows(spacing, None).shape == (1, 0)


def test_starts_stop_behind_by_two_rules_only_where_the_config_stops_them():
    # No rule where FitConfig.stop_behind is 0 (every kernel fitted alone).
    assert starts.behind_rules(0.0) == ()
    assert starts.behind_rules(FitConfig().stop_behind) == ()
    # Else stop_behind after BEHIND_AFTER steps, and a farther gap sooner.
    rules = starts.behind_rules(1.0)
    assert rules == ((1.0, starts.BEHIND_AFTER), (starts.FAR_BEHIND, starts.FAR_BEHIND_AFTER))
    assert starts.FAR_BEHIND > 1.0 and starts.FAR_BEHIND_AFTER < starts.BEHIND_AFTER
    # The far gap is never the nearer one.
    assert starts.behind_rules(2 * starts.FAR_BEHIND)[1][0] == 2 * starts.FAR_BEHIND
    # A start that slows to a crawl stops in a sum, and where starts behind
    # stop; a single kernel fitted alone runs on.
    rule = (starts.SLOW_STEPS, starts.SLOW_NATS)
    assert starts.slow_rule(kernel_named("rbf"), FitConfig().stop_behind) is None
    assert starts.slow_rule(kernel_named("periodic"), 0.0) is None
    for name in ("rbf+periodic", "linear+rbf", "matern52+periodic"):
        assert starts.slow_rule(kernel_named(name), 0.0) == rule
    assert starts.slow_rule(kernel_named("rbf"), 1.0) == rule


def test_repeated_times_do_not_shrink_the_median_spacing():
    # Repeats are skipped: the spacing (and the length-scale bound from
    # it) is numpy's median of the positive gaps, not a median pulled to 0.
    t = np.repeat(np.linspace(0.0, 1.0, 2001), 3)  # every time three times
    assert starts.median_spacing(t) == pytest.approx(np.median(np.diff(np.unique(t))),
                                                     rel=1e-12)
    lower, _ = starts.bounds(kernel_named("rbf"), t)
    assert np.exp(lower[0]) == pytest.approx(0.25 * 5e-4, rel=1e-12)


def test_periodogram_reaches_half_the_sampling_rate():
    # A cycle of 2.5 spacings (0.4 of the sampling rate, above a quarter
    # of it) is found: frequencies run up to half the mean rate. Within
    # the grid's step, 1 / (4 span) in frequency: 2.5^2 / 400 in period.
    t = np.arange(100.0)
    y = np.sin(2 * np.pi * t / 2.5)
    assert starts.periodogram_peaks(t, y, 1)[0] == pytest.approx(2.5, abs=2.5 ** 2 / 400)


def test_a_sum_s_periods_come_from_the_series_less_its_line(rng):
    # A steep line and a small cycle of a tenth of the span: a line's
    # periodogram falls as 1/f, and its first harmonics outweigh the cycle
    # unless the line is removed first. The grid's periods (one per row,
    # the last column) must include the cycle's, within the grid's step.
    t = np.linspace(0.0, 1.0, 200)
    y = 10.0 * t + 0.5 * np.sin(2 * np.pi * t / 0.1) + 0.05 * rng.normal(size=t.size)
    y = (y - y.mean()) / y.std()
    rows, _ = starts.search_grid(kernel_named("rbf+periodic"), t, y)
    periods = np.exp(rows[:, -1])
    assert np.min(np.abs(periods - 0.1)) < 0.1 ** 2 / 4


def test_length_grids_run_from_their_spacings_to_their_spans():
    # Log-spaced from 1 median spacing (2 in a sum) to 2 spans, not from
    # the lower bound (a quarter spacing): numpy's geomspace, to round-off.
    spacing = 0.01
    rbf = kernel_named("rbf")
    np.testing.assert_allclose(np.exp(rbf.start_rows(spacing, None)[:, 0]),
                               np.geomspace(spacing, 2.0, 10), rtol=1e-12)
    np.testing.assert_allclose([v for (v,) in np.exp(rbf.sum_options(spacing, None))],
                               np.geomspace(2 * spacing, 2.0, 4), rtol=1e-12)


def test_the_grid_scores_each_of_the_periodogram_s_highest_peaks():
    # Three cycles of a fifth, an eighth and a thirteenth of the span, of
    # falling amplitude: the periodic grid's rows take all three periods
    # (PERIODS of them), each within the grid's step p^2 / 4 (span 1).
    t = np.linspace(0.0, 1.0, 400)
    cycles = (0.2, 0.125, 1 / 13)
    y = sum(a * np.sin(2 * np.pi * t / p) for a, p in zip((3.0, 2.0, 1.0), cycles))
    rows, _ = starts.search_grid(kernel_named("periodic"), t, (y - y.mean()) / y.std())
    periods = np.unique(np.exp(rows[:, -1]))
    assert periods.size == starts.PERIODS == 3
    np.testing.assert_allclose(np.sort(periods), np.sort(cycles), atol=0.2 ** 2 / 4)

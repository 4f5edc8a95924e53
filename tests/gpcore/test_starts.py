"""Bounds, search grid and periodogram starts, against numpy references."""
import numpy as np
import pytest
import tensorflow as tf

import gp_reference as ref
from gpcore import FitConfig, GPFitter, starts
from gpcore.kernels import distances, kernel as kernel_named


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
    assert np.exp(lo_p[1]) == pytest.approx(0.1) and np.exp(hi_p[1]) == pytest.approx(1.0)


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


@pytest.mark.parametrize("kernel, n", [("matern52", 40), ("rbf", 100), ("periodic", 40)])
def test_grid_scores_equal_numpy_and_restarts_start_from_the_best_points(rng, kernel, n):
    """Values on pieces (a block-diagonal covariance), the best few ordered
    by their whole-series value, restarts down that order."""
    fitter = GPFitter(FitConfig(kernel=kernel))
    t, y = ref.sample(rng, kernel, n, noise_variance=0.05, period=0.3 if kernel == "periodic" else None,
                      length_scale=0.8 if kernel == "periodic" else 0.1, span=1.0)
    t, y = (t - t[0]) / np.ptp(t), (y - y.mean()) / y.std()
    rows, columns = starts.search_grid(fitter.kernel, t, y)
    count = rows.shape[0] * columns.size  # one member per grid point, all of one series
    tile = lambda a, n=count: tf.constant(np.repeat(a[None], n, axis=0))
    feature = fitter.kernel.feature(distances(tile(t), tile(t)))
    start, values = fitter._grid_start(tile(t), feature, tile(y), tile(np.ones_like(y)),
                                       tile(rows, 1), tile(columns, 1),
                                       tf.zeros([count], tf.int32), tf.range(count))
    size = min(n, starts.grid_piece_points(fitter.kernel))
    pieces = -(-n // size)
    assert pieces == (1 if kernel == "periodic" else -(-n // starts.GRID_PIECE_POINTS))
    scored = lambda piece: np.array([[_profiled_nll_numpy(kernel, t, y, np.exp(r), np.exp(c), piece)
                                      for c in columns] for r in rows]).reshape(-1)
    expected = scored(size)
    # Same likelihood, TF against numpy's inverse: float64 round-off.
    np.testing.assert_allclose(values.numpy()[0].reshape(-1), expected, rtol=1e-8)
    order = np.argsort(expected)
    if pieces > 1:  # the best few, ordered by the whole series
        head = order[:starts.GRID_RESCORED]
        order = np.r_[head[np.argsort(scored(None)[head])], order[starts.GRID_RESCORED:]]
    for rank in range(count):  # restart k starts from the k-th point of that order
        row, column = divmod(order[rank], columns.size)
        np.testing.assert_allclose(start.numpy()[rank], np.r_[rows[row], columns[column]])

"""The backtest's split and scores (pipeline/backtest.py) against numpy."""
import numpy as np
from scipy.stats import norm

from gpcore import Series
from gpcore.series import split
from pipeline import backtest


def test_split_holds_out_the_last_finite_points_by_time():
    t = np.array([5.0, 1.0, 3.0, 2.0, 4.0, 6.0])
    y = np.array([50.0, 10.0, np.nan, 20.0, 40.0, np.nan])
    cut = split(Series("a", t, y), 2)
    np.testing.assert_array_equal(cut.t_held, [4.0, 5.0])
    np.testing.assert_array_equal(cut.y_held, [40.0, 50.0])
    # Missing values stay with the fitted part (the fitter drops them).
    np.testing.assert_array_equal(cut.fitted.t, [1.0, 2.0, 3.0, 6.0])
    np.testing.assert_array_equal(cut.fitted.y, [10.0, 20.0, np.nan, np.nan])
    assert split(Series("a", t, y), 9).t_held.size == 4


def test_scores_under_log_are_on_the_original_scale_with_log_scale_intervals():
    rng = np.random.default_rng(2)
    y_fit = np.exp(rng.normal(size=30))
    y_held = np.exp(rng.normal(size=5))
    mean, sd = rng.normal(size=5), rng.uniform(0.5, 1.5, 5)
    half = norm.ppf(0.975) * sd  # any interval on the log scale: scores takes its bounds
    got = backtest.scores(np.log(y_held), mean, mean - half, mean + half, np.log(y_fit), "log")
    scale = np.mean(np.abs(np.diff(y_fit)))
    assert np.isclose(got["holdout_scale"], scale, rtol=1e-12)
    assert np.isclose(got["holdout_mase"], np.mean(np.abs(y_held - np.exp(mean))) / scale,
                      rtol=1e-12)
    lo, hi = np.exp(mean - norm.ppf(0.975) * sd), np.exp(mean + norm.ppf(0.975) * sd)
    assert got["holdout_coverage_95"] == np.mean((y_held >= lo) & (y_held <= hi))


def test_a_constant_fitted_part_has_no_mase():
    got = backtest.scores(np.array([1.0]), np.array([1.0]), np.array([0.0]), np.array([2.0]),
                          np.ones(5))
    assert got["holdout_mase"] is None and got["holdout_scale"] == 0.0


def test_a_point_without_a_time_is_not_held_out():
    # Its value is finite, its time is not: the fitter drops it, so it is
    # neither fitted nor scored.
    t = np.array([1.0, 2.0, 3.0, np.nan])
    y = np.array([10.0, 20.0, 30.0, 40.0])
    cut = split(Series("a", t, y), 1)
    np.testing.assert_array_equal(cut.t_held, [3.0])
    np.testing.assert_array_equal(cut.y_held, [30.0])


def test_the_naive_scale_skips_missing_values_and_needs_two():
    # mean |y_i - y_(i-1)| of the finite values in order: |4 - 1|, |2 - 4|.
    assert backtest.naive_scale(np.array([1.0, np.nan, 4.0, 2.0])) == 2.5
    assert backtest.naive_scale(np.array([1.0, 4.0])) == 3.0
    assert np.isnan(backtest.naive_scale(np.array([1.0, np.nan])))


def test_coverage_counts_points_above_the_upper_bound_as_outside():
    got = backtest.scores(np.array([0.0, 5.0, -5.0, 1.0]), np.zeros(4), -np.ones(4),
                          np.ones(4), np.array([0.0, 1.0, 3.0]))
    assert got["holdout_coverage_95"] == 0.5  # 0 and 1 inside [-1, 1]; 5 and -5 not
    assert got["holdout_scale"] == 1.5 and got["holdout_mase"] == (0 + 5 + 5 + 1) / 4 / 1.5


def test_a_scale_past_float64s_largest_is_null_not_infinity():
    # Fitted values near float64's largest (missing-value codes): the naive
    # differences overflow; a score that is not a number is written null.
    got = backtest.scores(np.array([1.0]), np.array([1.0]), np.array([0.0]), np.array([2.0]),
                          np.array([1e308, -1e308, 1e308]))
    assert got["holdout_scale"] is None and got["holdout_mase"] is None

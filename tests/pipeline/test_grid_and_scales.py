"""The step rule (pipeline/grid.py) and the value transforms (pipeline/io/scales.py)."""
import numpy as np
import pytest

from gpcore import Series
from pipeline import grid
from pipeline.io import scales


def test_regular_data_with_gaps_has_its_median_step():
    rng = np.random.default_rng(0)
    days = np.sort(rng.choice(200, size=170, replace=False)).astype(float)  # ~15 % missing
    assert grid.median_step(days) == (1.0, None)
    months = np.cumsum([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31] * 3).astype(float)
    step, reason = grid.median_step(months)
    assert reason is None and step == np.median(np.diff(months))
    # Repeated times count once; NaN times are left out.
    assert grid.median_step(np.array([0.0, 0.0, 1.0, 2.0, np.nan, 3.0])) == (1.0, None)


def test_random_times_and_single_times_have_no_step():
    rng = np.random.default_rng(1)
    shares = []
    for seed in range(20):
        t = np.cumsum(np.random.default_rng(seed).exponential(1.0, 200))
        assert grid.median_step(t) == (None, grid.IRREGULAR)
        d = np.diff(t)
        shares.append(np.mean(np.abs(d - np.median(d)) <= 0.1 * np.median(d)))
    # The rule's margin: about 7 % of exponential spacings are near their median.
    assert max(shares) < 0.2
    assert grid.median_step(np.array([5.0, 5.0])) == (None, grid.FEW_TIMES)
    assert grid.median_step(rng.uniform(size=0)) == (None, grid.FEW_TIMES)


def test_step_and_horizon_offsets_and_the_coarse_rule():
    np.testing.assert_allclose(10.0 + grid.step_offsets(0.5, 3), [10.5, 11.0, 11.5])
    np.testing.assert_allclose(10.0 + grid.horizon_offsets(6.0, 3), [12.0, 14.0, 16.0])
    assert grid.coarse(0.3, [1.0]) and not grid.coarse(0.25, [1.0])
    assert not grid.coarse(100.0, []) and not grid.coarse(100.0, [None])


@pytest.mark.parametrize("name,y", [("log", [0.5, 2.0, 1e6]), ("log1p", [0.0, 3.0, 1e-9])])
def test_transforms_invert(name, y):
    y = np.array(y + [np.nan])
    back = scales.inverse(name, scales.forward(name, y))
    np.testing.assert_allclose(back, y, rtol=1e-15)
    assert scales.problem(name, y) is None


def test_values_a_transform_cannot_take_are_named():
    assert "2 value(s) <= 0 (smallest -1)" in scales.problem("log", np.array([1.0, 0.0, -1.0]))
    assert "1 negative value(s)" in scales.problem("log1p", np.array([0.0, -0.5, np.nan]))
    assert scales.problem("none", np.array([-5.0])) is None
    # Values at missing times are not observations (dropped with the time).
    assert scales.problem("log", np.array([1.0, 0.0, -1.0]), np.array([0.0, np.nan, np.inf])) is None
    assert "1 value(s) <= 0" in scales.problem("log", np.array([0.0, 0.0]), np.array([0.0, np.nan]))
    series = Series("a", np.arange(3.0), np.array([1.0, np.e, np.nan]))
    np.testing.assert_allclose(scales.transformed("log", series).y, [0.0, 1.0, np.nan])
    np.testing.assert_array_equal(series.y, [1.0, np.e, np.nan])  # the input is not changed
    np.testing.assert_allclose(scales.transformed("log1p", series).y,
                               [np.log(2.0), np.log(1.0 + np.e), np.nan], rtol=1e-15)
    assert scales.transformed("none", series) is series

"""The posterior curve and the plot titles made from a params row."""
import numpy as np

from gpcore.predict import predict
from gpcore.series import Series
from pipeline.report.build import GRID_MAX, GRID_MIN, posterior_curve, title
from report_helpers import params_row


def test_curve_covers_the_data_with_a_margin_and_is_the_posterior():
    t = np.linspace(10.0, 30.0, 25)
    series = Series("a", t, np.sin(t))
    row = params_row("a", length_scale=0.01, noise_variance=0.04)
    curve = posterior_curve(series, row)
    assert curve.t[0] == 9.0 and curve.t[-1] == 31.0  # 5% of the span either side
    assert curve.t.size == GRID_MAX  # a short length scale needs the finest grid
    mean, std = predict(series, row, curve.t)
    np.testing.assert_array_equal(curve.mean, mean)
    np.testing.assert_allclose(curve.std_y, np.sqrt(std ** 2 + 0.04), rtol=1e-12)
    assert posterior_curve(series, dict(row, length_scale=100.0)).t.size == GRID_MIN


def test_title_names_the_parameters():
    row = params_row("a", kernel="periodic", period=7.25, noise_variance=0.25, nll=45.0,
                     n_points=30, converged=False, stop_reason="max_iterations", at_bound=True,
                     iterations=100)
    head, tail = title(row).split("\n")
    assert head.startswith("a · periodic") and "period 7.25" in head and "(sd 0.5)" in head
    assert "nll 45 (1.5 per point)" in tail
    assert "NOT converged (max_iterations) at a bound after 100" in tail
    skipped = params_row("b", status="skipped", n_points=2, error="few")
    assert title(skipped) == "b · rbf · skipped, 2 finite points"

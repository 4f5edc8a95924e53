"""MarkovFitter (O(n), gpcore/markov_fitter.py) against the dense GPFitter,
and GPFitter's hand-over of long series to it.

Both fitters maximise the same profiled likelihood to Newton's tolerance
(FitConfig.tolerance, 1e-4 nats of predicted decrease), so their nll agree
to that tolerance and their parameters to about its square root in log
units on these well-determined series (1e-2 relative, a margin of ~10 over
what was measured: 3e-5).
"""
import numpy as np
import pytest

from gpcore.config import DENSE_MAX_POINTS, MARKOV_ABOVE, MARKOV_MAX_POINTS, FitConfig
from gpcore.fitter import GPFitter
from gpcore.markov_fitter import secant_update
from gpcore.result import OK, SKIPPED
from gpcore.series import Series


def matern32_series(n, seed, length_scale=0.5, noise=0.1):
    """A matern32 draw on irregular times in [0, 10] with repeated times
    and missing values."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0.0, 10.0, n))
    t[5:8] = t[5]
    z = np.sqrt(3.0) * np.abs(t[:, None] - t[None]) / length_scale
    cov = (1.0 + z) * np.exp(-z) + 1e-9 * np.eye(n)
    y = np.linalg.cholesky(cov) @ rng.normal(size=n) + noise * rng.normal(size=n) + 3.0
    y[20:25] = np.nan
    return Series(f"s{n}_{seed}", t, y)


@pytest.fixture(scope="module")
def fitter():
    return GPFitter(FitConfig(kernel="matern32"))


def test_markov_fit_agrees_with_dense_fit(fitter):
    batch = [matern32_series(n, seed) for n, seed in ((200, 1), (400, 2), (800, 3))]
    markov = fitter.long_fitter.fit(batch)
    dense = fitter.fit(batch)  # every series is short: the dense path
    tolerance = fitter.config.tolerance
    for a, b in zip(markov, dense):
        assert a.status == b.status == OK and a.converged
        assert abs(a.nll - b.nll) <= 10 * tolerance
        np.testing.assert_allclose([a.length_scale, a.amplitude, a.noise_variance, a.mean],
                                   [b.length_scale, b.amplitude, b.noise_variance, b.mean],
                                   rtol=1e-2)
    # Another batch of other lengths: no new trace.
    fitter.long_fitter.fit([matern32_series(300, 4)])
    assert fitter.long_fitter.tracing_count == 1
    assert fitter.tracing_count == 1


def test_long_series_take_the_markov_path(fitter):
    rng = np.random.default_rng(5)
    n = MARKOV_ABOVE + 1000
    t = np.cumsum(rng.exponential(1.0, n))
    y = np.sin(t / 30.0) + 0.3 * rng.normal(size=n)
    short = matern32_series(300, 6)
    long, fitted_short = fitter.fit([Series("long", t, y), short])
    assert long.status == OK and long.converged and long.n_points == n
    assert fitted_short.status == OK
    # The long series' fit is the Markov fitter's own.
    alone = fitter.long_fitter.fit([Series("long", t, y)])[0]
    assert alone.nll == pytest.approx(long.nll, abs=1e-9)
    assert fitter.long_fitter.tracing_count == 1


def test_the_markov_path_pads_to_the_quantum_not_off_the_slow_cholesky_side(fitter, monkeypatch):
    # 507 finite points: quantised to 512. A dense batch pads that to 520
    # (its Cholesky is slow on a multiple of 256); the O(n) path factors no
    # whole matrix, so it keeps 512.
    import gpcore.fitter as dense
    from gpcore.batching import padded_length, quantised_length

    widths = []

    class Recorded(dense._StandardisedBatch):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            widths.append(self.t.shape[1])

    monkeypatch.setattr(dense, "_StandardisedBatch", Recorded)
    result = fitter.long_fitter.fit([matern32_series(512, 7)])[0]
    assert result.status == OK and result.n_points == 507
    assert widths == [quantised_length(507)] == [512] and padded_length(507) == 520


def test_a_twins_long_fitter_shares_the_trace_and_fits_alike(fitter):
    twin = GPFitter(fitter.config, twin=fitter)  # a side-by-side copy (gpcore/traced.py)
    assert twin.long_fitter is not fitter.long_fitter
    series = [matern32_series(300, 7)]
    ours = fitter.long_fitter.fit(series)[0]
    theirs = twin.long_fitter.fit(series)[0]
    # The same graph on the same inputs: the same fit, bit for bit.
    assert (theirs.status, theirs.nll, theirs.length_scale) == (ours.status, ours.nll,
                                                                ours.length_scale)
    assert twin.long_fitter.tracing_count == fitter.long_fitter.tracing_count == 1
    # Each assigned the optimum to its own variables.
    for a, b in zip(fitter.long_fitter.log_parameters, twin.long_fitter.log_parameters):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        assert a is not b


def _work(fitter, series):
    """(results, work counters spent) of one fit call of the Markov fitter."""
    before = dict(fitter.work)
    results = fitter.fit(series)
    return results, {k: fitter.work[k] - before[k] for k in before}


def test_a_warm_start_skips_the_window_stage_and_fits_as_well(fitter):
    """The next night (1 % of points appended to a series longer than the
    window): started from last night's parameters, the fit skips the
    window's Newton, takes fewer evaluations, no more of the whole series,
    and ends within Newton's tolerance of the cold fit
    (docs/design.md, "Long series: Markov kernels"); a series beside it
    without a warm start fits cold. One trace serves both kinds of batch."""
    long = fitter.long_fitter
    rng = np.random.default_rng(8)
    n = MARKOV_ABOVE + 2000
    tonight = []
    for sid in ("warm", "cold"):
        t = np.cumsum(rng.exponential(1.0, n))
        tonight.append(Series(sid, t, np.sin(t / 30.0) + 0.3 * rng.normal(size=n)))
    last_night = long.fit([Series(s.series_id, s.t[:-n // 100], s.y[:-n // 100])
                           for s in tonight])
    (cold, other), cold_work = _work(long, tonight)
    (warm, other_beside), warm_work = _work(long, [
        Series(tonight[0].series_id, tonight[0].t, tonight[0].y, last_night[0].params),
        tonight[1]])
    assert warm.status == OK and warm.converged and warm.warm_started
    assert not (cold.warm_started or other.warm_started or other_beside.warm_started)
    assert abs(warm.nll - cold.nll) <= 10 * fitter.config.tolerance
    assert other_beside.nll == pytest.approx(other.nll, abs=1e-9)
    assert warm_work["warm_started"] == 1 and cold_work["warm_started"] == 0
    assert warm_work["series_evaluations"] <= cold_work["series_evaluations"]
    assert warm_work["member_evaluations"] < cold_work["member_evaluations"]
    assert long.tracing_count == 1


def test_a_warm_start_that_is_not_used_leaves_the_cold_fit_bit_for_bit(fitter):
    """A warm start that scores above the grid's best point on the window
    (a noise 10^6 times the signal), or of another kernel, is not a start:
    warm_started false, and the fit is the cold one exactly."""
    long = fitter.long_fitter
    series = matern32_series(700, 10)
    cold = long.fit([series])[0]
    far = dict(cold.params, noise_variance=1e6 * cold.amplitude ** 2)
    foreign = dict(cold.params, kernel="matern52",
                   components=[dict(cold.components[0], kernel="matern52")])
    for warm_start in (far, foreign):
        got = long.fit([Series(series.series_id, series.t, series.y, warm_start)])[0]
        assert not got.warm_started
        assert (got.nll, got.params, got.iterations) == (cold.nll, cold.params, cold.iterations)
    assert long.tracing_count == 1


def test_kernels_without_state_space_form_skip_long_series_naming_those_that_fit():
    config = FitConfig(kernel="rbf+periodic")
    assert config.max_points == DENSE_MAX_POINTS
    assert FitConfig(kernel="matern52+matern12").max_points == MARKOV_MAX_POINTS
    n = DENSE_MAX_POINTS + 1
    fitter = GPFitter(config)
    result = fitter.fit([Series("long", np.arange(n, dtype=float), np.sin(np.arange(n) / 9.0))])[0]
    assert result.status == SKIPPED
    assert "matern12, matern32, matern52" in result.error and "O(n)" in result.error
    assert fitter.long_fitter is None


def test_a_markov_kernel_over_max_points_is_told_its_cost_grows_as_n():
    """A series over max_points is skipped with the advice to raise it; for
    a Markov kernel past MARKOV_ABOVE its cost grows as n, not n^3 (a dense
    kernel's, which the same advice keeps below it)."""
    t = np.arange(MARKOV_ABOVE + 100, dtype=float)
    long = Series("long", t, np.sin(t / 9.0))
    fitter = GPFitter(FitConfig(kernel="matern32", max_points=MARKOV_ABOVE))
    for fitted in (fitter, fitter.long_fitter):
        result = fitted.fit([long])[0]
        assert result.status == SKIPPED
        assert "max_points=4096" in result.error and "n^3" not in result.error
        assert f"grows as n past {MARKOV_ABOVE} points" in result.error
    short = FitConfig(kernel="matern32", max_points=100)
    assert "cost grows as n^3" in GPFitter(short).fit([Series("s", t[:200], t[:200])])[0].error


def test_secant_update_meets_the_secant_condition():
    """BFGS: the updated Hessian maps the step to the gradient change
    (against numpy, to round-off), stays symmetric, and is left as it is
    where the pair shows negative curvature."""
    rng = np.random.default_rng(8)
    h = np.array([[[4.0, 1.0], [1.0, 3.0]]] * 2)
    x, step = rng.normal(size=(2, 2)), rng.normal(size=(2, 2))
    truth = np.array([[2.5, 0.4], [0.4, 5.0]])
    g = rng.normal(size=(2, 2))
    change = step @ truth                       # a quadratic's gradient change
    change[1] = -change[1]                      # member 1: negative curvature
    updated = secant_update(x, g, h, x + step, g + change, np.zeros_like(h)).numpy()
    np.testing.assert_allclose(updated[0] @ step[0], change[0], rtol=1e-12)
    np.testing.assert_allclose(updated[0], updated[0].T, rtol=1e-12)
    np.testing.assert_array_equal(updated[1], h[1])


def test_secant_update_cuts_newton_steps_on_a_wrong_hessian():
    """The whole-series stage's case: exact gradients of a quadratic, a
    Hessian 1.6x too large along one direction (as the window's was at
    10^6 points). Newton alone converges linearly; with the update it
    reaches the same minimum (to the tolerance's square root) in fewer
    evaluations."""
    import tensorflow as tf
    from gpcore import newton
    rotation = np.array([[0.8, -0.6], [0.6, 0.8]])
    truth = rotation @ np.diag([1e4, 3e3]) @ rotation.T
    wrong = rotation @ np.diag([1.6e4, 3e3]) @ rotation.T
    minimum = np.array([[0.3, -0.2]])

    def evaluate(x, members):
        d = x - minimum
        return (0.5 * tf.reduce_sum(d * tf.linalg.matvec(truth, d), -1),
                tf.linalg.matvec(truth, d), tf.tile(wrong[None], [tf.shape(x)[0], 1, 1]), {})

    start = tf.constant([[0.0, 0.0]], tf.float64)
    box = dict(lower=tf.constant([[-5.0, -5.0]], tf.float64),
               upper=tf.constant([[5.0, 5.0]], tf.float64), max_iterations=50, tolerance=1e-4)
    plain = newton.minimize(evaluate, start, **box)
    secant = newton.minimize(evaluate, start, hessian_update=secant_update, **box)
    for r in (plain, secant):
        assert int(r.status[0]) == newton.CONVERGED
        np.testing.assert_allclose(r.position.numpy(), minimum, atol=1e-3)
    assert int(secant.evaluations) < int(plain.evaluations)


def test_modified_secant_takes_the_cubic_curvature_at_the_new_point():
    """With values, the update's curvature along the step is the cubic's
    at x_new: exact for a cubic objective (1-D: f = a x^3 + b x^2, f'' = 6 a
    x + 2 b, against the formula), and plain BFGS for a quadratic, whose
    cubic term is 0 (against the update without values, to round-off)."""
    a, b = 0.5, 3.0
    f = lambda x: a * x ** 3 + b * x ** 2
    df = lambda x: 3 * a * x ** 2 + 2 * b * x
    x, x_new = np.array([[0.2]]), np.array([[0.9]])
    h = np.array([[[10.0]]])
    cubic = secant_update(x, df(x), h, x_new, df(x_new), h, f=f(x[:, 0]), f_new=f(x_new[:, 0]))
    np.testing.assert_allclose(cubic.numpy()[0, 0, 0], 6 * a * 0.9 + 2 * b, rtol=1e-12)
    rng = np.random.default_rng(3)
    truth = np.array([[2.5, 0.4], [0.4, 5.0]])
    quad = lambda v: 0.5 * np.einsum("mi,ij,mj->m", v, truth, v)
    x, step = rng.normal(size=(1, 2)), rng.normal(size=(1, 2))
    h = np.array([[[4.0, 1.0], [1.0, 3.0]]])
    args = (x, x @ truth, h, x + step, (x + step) @ truth, h)
    np.testing.assert_allclose(secant_update(*args, f=quad(x), f_new=quad(x + step)).numpy(),
                               secant_update(*args).numpy(), rtol=1e-10)


def test_modified_secant_cuts_newton_steps_on_a_curved_objective():
    """The whole-series stage's case beyond the quadratic: exact gradients of
    an objective whose curvature changes along the steps (e^u - 1 - u in
    rotated coordinates, minimum 0), a fixed Hessian off by up to 1.6x,
    starts tenths away. From each start both updates reach the minimum
    within the tolerance; with values (the cubic's curvature) never in
    more evaluations than plain BFGS, and in fewer over the three."""
    import tensorflow as tf
    from gpcore import newton
    rotation = np.array([[0.8, -0.6], [0.6, 0.8]])
    minimum = np.array([[0.3, -0.2]])
    box = dict(lower=tf.constant([[-5.0, -5.0]], tf.float64),
               upper=tf.constant([[5.0, 5.0]], tf.float64), max_iterations=50, tolerance=1e-4)
    plain_update = lambda *args, f, f_new: secant_update(*args)
    counts = []
    for wrong, start in [((1.0, 1.2), [-0.2, 0.3]), ((1.6, 1.0), [0.0, 0.0]),
                         ((1.0, 0.8), [-0.2, 0.5])]:
        hessian = rotation @ np.diag([1e4 * wrong[0], 3e3 * wrong[1]]) @ rotation.T

        def evaluate(x, members, hessian=hessian):
            z = tf.linalg.matvec(rotation.T, x - minimum)
            u, v = z[:, 0], z[:, 1]
            value = 1e4 * (tf.exp(u) - 1.0 - u) + 3e3 * (tf.exp(v) - 1.0 - v)
            gradient = tf.stack([1e4 * (tf.exp(u) - 1.0), 3e3 * (tf.exp(v) - 1.0)], -1)
            return (value, tf.linalg.matvec(rotation, gradient),
                    tf.tile(hessian[None], [tf.shape(x)[0], 1, 1]), {})

        x0 = tf.constant([start], tf.float64)
        runs = [newton.minimize(evaluate, x0, hessian_update=update, **box)
                for update in (plain_update, secant_update)]
        for r in runs:
            assert int(r.status[0]) == newton.CONVERGED
            assert float(r.value[0]) <= 1e-4
            np.testing.assert_allclose(r.position.numpy(), minimum, atol=1e-3)
        counts.append([int(r.evaluations) for r in runs])
    plain, cubic = np.array(counts).T
    assert (cubic <= plain).all() and cubic.sum() < plain.sum(), counts


def test_a_batch_does_not_pad_short_series_to_a_long_ones_length(fitter):
    """On the O(n) path a member padded from n to N points costs N / n of
    its own fit: series over twice a batch's shortest go in a batch of
    their own (gpcore.batching.MAX_PADDING_RATIO), as on the dense path."""
    before = fitter.long_fitter.work["points"]
    results = fitter.long_fitter.fit([matern32_series(200, 7), matern32_series(800, 8)])
    assert [r.status for r in results] == [OK, OK]
    assert fitter.long_fitter.work["points"] - before == 200 + 800


def test_modified_secant_holds_the_cubic_correction_within_half_of_s_y():
    """On f = exp(x) from 0 by a step of 2, the cubic's correction theta =
    6 (f - f_new) + 3 (g + g_new) s = 12.0 exceeds half of s'y = 12.8: it
    is held at 6.4, so the 1-D update is (s'y + s'y / 2) / s^2 (worked by
    hand here; the same arithmetic, 1e-12)."""
    x, x_new = np.array([[0.0]]), np.array([[2.0]])
    h = np.array([[[1.0]]])
    f, g, g_new = np.exp(x[:, 0]), np.exp(x), np.exp(x_new)
    ys = float((g_new - g)[0, 0] * 2.0)
    theta = float(6 * (f - np.exp(x_new[:, 0]))[0] + 3 * (g + g_new)[0, 0] * 2.0)
    assert theta > 0.5 * ys  # the case held
    updated = secant_update(x, g, h, x_new, g_new, h, f=f, f_new=np.exp(x_new[:, 0]))
    np.testing.assert_allclose(updated.numpy()[0, 0, 0], 1.5 * ys / 4.0, rtol=1e-12)

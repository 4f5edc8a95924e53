"""The O(n) posterior (gpcore/markov_predict.py: a forward and a reversed
Kalman filter) against gpcore.predict's dense posterior (one Cholesky), at
new times before, inside and after the data, at observed and repeated
times. Both are exact: they agree to round-off (measured ~1e-13); 1e-9 of
the amplitude is far above that and far below any real difference."""
import numpy as np
import pytest
from scipy.linalg import solve_triangular

import gp_reference as ref
from gpcore import markov_predict, predict
from gpcore.config import MARKOV_ABOVE
from gpcore.series import Series

PARAMS = {
    "matern12": [dict(kernel="matern12", amplitude=1.3, length_scale=0.7)],
    "matern32": [dict(kernel="matern32", amplitude=1.3, length_scale=0.7)],
    "matern52+matern12": [dict(kernel="matern52", amplitude=1.3, length_scale=0.7),
                          dict(kernel="matern12", amplitude=0.4, length_scale=2.0)],
}


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_posterior_equals_dense_posterior(name):
    rng = np.random.default_rng(0)
    t = np.sort(rng.uniform(0.0, 10.0, 400))
    t[5:8] = t[5]
    y = np.sin(t) + 0.2 * rng.normal(size=t.size)
    t_new = np.r_[rng.uniform(-1.0, 12.0, 50), t[:5], t[5]]
    p = predict.checked_params(dict(kernel=name, mean=0.2, noise_variance=0.04,
                                    components=PARAMS[name]))
    dense_mean, dense_sd = predict.predict(Series("s", t, y), p, t_new)  # 400 points: dense
    mean, var = markov_predict.posterior(p, t, y, t_new)
    np.testing.assert_allclose(mean, dense_mean, rtol=0, atol=1.3e-9)
    np.testing.assert_allclose(np.sqrt(var), dense_sd, rtol=0, atol=1.3e-9)


def test_predict_takes_the_o_n_path_for_long_series():
    """A series over MARKOV_ABOVE points: predict's answer is the O(n)
    posterior's (the dense one would need an n x n Cholesky)."""
    rng = np.random.default_rng(1)
    n = MARKOV_ABOVE + 500
    t = np.cumsum(rng.exponential(1.0, n))
    y = np.sin(t / 30.0) + 0.3 * rng.normal(size=n)
    t_new = t[-1] + np.arange(1.0, 20.0)
    p = predict.checked_params(dict(kernel="matern32", mean=0.0, noise_variance=0.09,
                                    components=[dict(kernel="matern32", amplitude=1.0,
                                                     length_scale=30.0)]))
    mean, sd = predict.predict(Series("s", t, y), p, t_new)
    expected, var = markov_predict.posterior(p, t, y, t_new)
    np.testing.assert_array_equal(mean, expected)
    np.testing.assert_array_equal(sd, np.sqrt(var))
    assert np.all(np.diff(sd) > 0)  # uncertainty grows past the data's end


def test_component_means_of_a_long_sum_add_up_to_the_mean():
    rng = np.random.default_rng(2)
    n = MARKOV_ABOVE + 200
    t = np.cumsum(rng.exponential(1.0, n))
    y = np.sin(t / 30.0) + 0.3 * rng.normal(size=n)
    t_new = np.linspace(t[0], t[-1] + 50.0, 40)
    p = dict(kernel="matern52+matern12", mean=0.1, noise_variance=0.09,
             components=PARAMS["matern52+matern12"])
    mean, _ = predict.predict(Series("s", t, y), p, t_new)
    parts = predict.component_means(Series("s", t, y), p, t_new)
    assert len(parts) == 2
    np.testing.assert_allclose(parts[0] + parts[1] + 0.1, mean, atol=1e-9)


@pytest.mark.parametrize("name", ["matern32", "matern52+matern12"])
def test_posterior_of_3000_clock_times_equals_a_numpy_dense_posterior(name):
    """Times as a job meets them: epoch seconds (1.7e9) on a minute clock,
    repeated times, an hour-long gap; mean and sd of the latent f against
    numpy's Cholesky (gp_reference's kernels, times less their first:
    exact on this clock). Measured 4e-13 of the amplitude; asserted 1e-9."""
    rng = np.random.default_rng(3)
    t = 1.7e9 + 60.0 * np.sort(rng.integers(0, 2500, 3000)).astype(float)
    t[t > t[1500]] += 3600.0
    y = np.sin(t / 18_000.0) + 0.2 * rng.normal(size=t.size)
    t_new = np.r_[t[-1] + 60.0 * np.arange(1, 40), t[:5], rng.uniform(t[0], t[-1], 30)]
    scale = 18_000.0
    components = [dict(c, length_scale=c["length_scale"] * scale) for c in PARAMS[name]]
    p = predict.checked_params(dict(kernel=name, mean=0.2, noise_variance=0.04,
                                    components=components))
    mean, var = markov_predict.posterior(p, t, y, t_new)
    cov = lambda a, b: ref.components_matrix(  # noqa: E731
        [dict(c, period=None) for c in components], a - t[0], b - t[0])
    chol = np.linalg.cholesky(cov(t, t) + 0.04 * np.eye(t.size))
    v = solve_triangular(chol, cov(t, t_new), lower=True)
    expected = 0.2 + v.T @ solve_triangular(chol, y - 0.2, lower=True)
    expected_var = np.diag(cov(t_new, t_new)) - np.sum(v * v, axis=0)
    amplitude = np.sqrt(sum(c["amplitude"] ** 2 for c in components))
    np.testing.assert_allclose(mean, expected, rtol=0, atol=1e-9 * amplitude)
    np.testing.assert_allclose(np.sqrt(var), np.sqrt(expected_var), rtol=0, atol=1e-9 * amplitude)


def test_a_noise_free_long_series_is_interpolated_as_the_dense_path_does():
    """noise_variance 0 on a series over MARKOV_ABOVE points: the dense path
    takes it (jitter only where A's Cholesky fails), the O(n) one gave NaN
    (matern12, matern32) or a TensorFlow error (matern52). matern12 is
    Markov in its value alone, so its noise-free posterior at t* is the
    Ornstein-Uhlenbeck bridge between t*'s neighbours, written out here.
    Tolerance: predict's first non-zero jitter, 1e-10 amplitude^2, is a
    noise sd of 1e-5 amplitude at the data."""
    n, a, ell, level = MARKOV_ABOVE + 100, 2.0, 30.0, 0.5
    rng = np.random.default_rng(4)
    t = np.arange(float(n))
    y = level + a * np.sin(t / 40.0) + 0.1 * rng.normal(size=n)
    t_new = np.array([7.0, 100.5, 2000.25, t[-1] + 3.0])
    series = Series("s", t, y)
    mean, sd = predict.predict(series, dict(kernel="matern12", mean=level, noise_variance=0.0,
                                            amplitude=a, length_scale=ell), t_new)
    k = lambda d: a * a * np.exp(-np.abs(d) / ell)  # noqa: E731
    expected_mean, expected_var = [], []
    for x in t_new:
        near = t[[np.searchsorted(t, x, "right") - 1]] if x >= t[-1] or x in t else \
            t[np.searchsorted(t, x) - 1:np.searchsorted(t, x) + 1]
        cov = k(near[:, None] - near[None, :])
        cross = k(x - near)
        resid = y[np.searchsorted(t, near)] - level
        expected_mean.append(level + cross @ np.linalg.solve(cov, resid))
        expected_var.append(a * a - cross @ np.linalg.solve(cov, cross))
    np.testing.assert_allclose(mean, expected_mean, rtol=0, atol=1e-6 * a)
    np.testing.assert_allclose(sd, np.sqrt(np.maximum(expected_var, 0)), rtol=0, atol=2e-5 * a)
    # The smoother kernels on a smooth series (noisy data would need wild
    # swings between points): through the data, with the parts adding up.
    series = Series("s", t, level + a * np.sin(t / 40.0))
    for name in ("matern32", "matern52", "matern52+matern12"):
        components = [dict(c, length_scale=ell) for c in PARAMS.get(name, [dict(kernel=name,
                                                                               amplitude=a)])]
        p = dict(kernel=name, mean=level, noise_variance=0.0, components=components)
        mean, sd = predict.predict(series, p, t[:50])  # at observed times: the data
        np.testing.assert_allclose(mean, series.y[:50], rtol=0, atol=1e-4 * a, err_msg=name)
        assert np.all(sd < 1e-4 * a), name
        parts = predict.component_means(series, p, t[:50])
        np.testing.assert_allclose(sum(parts) + level, mean, rtol=0, atol=1e-9 * a)

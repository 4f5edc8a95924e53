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

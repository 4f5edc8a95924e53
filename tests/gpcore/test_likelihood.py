"""The masked likelihood against tfd.GaussianProcess and numpy."""
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_probability as tfp

import gp_reference as ref
from gpcore import likelihood
from gpcore.kernels import distances, kernel as kernel_named

tfd = tfp.distributions
tfb = tfp.bijectors


def unit_kernel_matrix(name, t, *params):
    """[C, N, N] unit kernel matrix of times t [C, N] from the kernel table."""
    kernel = kernel_named(name)
    return kernel.matrix(kernel.feature(distances(t, t)), [p for p in params if p is not None])


def _gp_nll_loss(t, y, amplitude, length_scale, noise):
    """Plain GP loss reading TransformedVariables (the project's origin story)."""
    kmat = amplitude ** 2 * unit_kernel_matrix("rbf", t[None], tf.reshape(tf.convert_to_tensor(length_scale), [1]))
    mask = tf.ones_like(y)[None]
    return likelihood.negative_log_likelihood(
        kmat, tf.reshape(noise, [1]), y[None], mask, tf.zeros([1], tf.float64))[0]


def test_transformed_variable_into_tf_function_gets_gradients(rng):
    # Regression: a TransformedVariable passed into a tf.function GP loss must
    # give non-None gradients on its trainable variable, equal to eager ones.
    t, y = ref.sample(rng, "rbf", 40)
    t, y = tf.constant(t), tf.constant(y)
    params = [tfp.util.TransformedVariable(v, tfb.Softplus(), dtype=tf.float64)
              for v in (1.3, 0.7, 0.05)]

    def gradients(loss_fn):
        variables = [p.trainable_variables[0] for p in params]
        with tf.GradientTape() as tape:
            loss = loss_fn(t, y, *params)
        return tape.gradient(loss, variables)

    eager = gradients(_gp_nll_loss)
    compiled = tf.function(lambda: gradients(tf.function(_gp_nll_loss)))()
    for e, c in zip(eager, compiled):
        assert c is not None and e is not None
        assert np.isfinite(c.numpy()) and abs(c.numpy()) > 0
        np.testing.assert_allclose(c.numpy(), e.numpy(), rtol=1e-10)


@pytest.mark.parametrize("kernel", ["rbf", "matern12", "matern32", "matern52", "periodic"])
def test_masked_likelihood_equals_truncated_and_tfd(rng, kernel):
    n_obs, n_pad = 37, 64
    period = 2.5 if kernel == "periodic" else None
    t, y = ref.sample(rng, kernel, n_obs, amplitude=1.7, length_scale=0.9,
                      noise_variance=0.05, mean=0.3, period=period)
    missing = rng.choice(n_obs, 6, replace=False)
    observed = np.setdiff1d(np.arange(n_obs), missing)
    amp, ls, noise, mean = 1.7, 0.9, 0.05, 0.3

    tp, yp, mp = np.zeros(n_pad), np.zeros(n_pad), np.zeros(n_pad)
    tp[:n_obs], yp[:n_obs], mp[observed] = t, y, 1.0
    tp[n_obs:] = t[-1]
    yp[missing] = 1e6  # a masked value must not matter, however wild

    def nll(tt, yy, mm):
        per = None if period is None else tf.constant([period], tf.float64)
        kmat = amp ** 2 * unit_kernel_matrix(kernel, tf.convert_to_tensor(tt)[None],
                                             tf.constant([ls], tf.float64), per)
        return likelihood.negative_log_likelihood(
            kmat, tf.constant([noise], tf.float64), tf.convert_to_tensor(yy)[None],
            tf.convert_to_tensor(mm)[None], tf.constant([mean], tf.float64))[0]

    masked = tf.function(nll)(tp, yp, mp).numpy()  # compiled, as in the fitter
    to, yo = t[observed], y[observed]
    truncated = nll(to, yo, np.ones_like(to)).numpy()
    # tfd.GaussianProcess with a unit-amplitude kernel, on y rescaled by the
    # amplitude (the density of y is that of y / amp, divided by amp^n).
    gp = tfd.GaussianProcess(
        ref.tfp_kernel(kernel, 1.0, ls, period),
        index_points=to[:, None], observation_noise_variance=noise / amp ** 2,
        jitter=0.0)  # tfd adds 1e-6 to the diagonal by default
    tfd_nll = -gp.log_prob((yo - mean) / amp).numpy() + to.size * np.log(amp)
    numpy_nll = ref.nll(kernel, to, yo, mean, amp, ls, noise, period)

    assert masked == pytest.approx(truncated, rel=ref.RTOL_LIKELIHOOD)
    assert masked == pytest.approx(tfd_nll, rel=ref.RTOL_LIKELIHOOD)
    assert masked == pytest.approx(numpy_nll, rel=ref.RTOL_LIKELIHOOD)


def test_profiled_likelihood_is_the_maximum_over_mean_and_scale(rng):
    t, y = ref.sample(rng, "matern52", 50, amplitude=2.0, noise_variance=0.1, mean=4.0)
    t, y = (t - t[0]) / np.ptp(t), (y - y.mean()) / y.std()
    ls, ratio = 0.15, 0.05
    kmat = unit_kernel_matrix("matern52", tf.constant(t[None]), tf.constant([ls], tf.float64))
    nll, mean, scale2 = (v.numpy()[0] for v in likelihood.profiled_nll(
        kmat, tf.constant([ratio], tf.float64), tf.constant(y[None]), tf.ones([1, 50], tf.float64)))
    amp = np.sqrt(scale2)
    at_max = ref.nll("matern52", t, y, mean, amp, ls, ratio * scale2)
    assert nll == pytest.approx(at_max, rel=1e-10)
    for d_mean, d_amp in [(0.05, 1.0), (-0.05, 1.0), (0.0, 1.05), (0.0, 0.95)]:
        assert ref.nll("matern52", t, y, mean + d_mean, amp * d_amp, ls,
                       ratio * scale2 * d_amp ** 2) > at_max


@pytest.mark.parametrize("kernel", ["rbf", "matern12", "matern32", "matern52", "periodic",
                                    "linear", "rbf+periodic", "matern52+rbf+periodic",
                                    "linear+rbf", "linear+rbf+periodic"])
def test_newton_terms_match_autodiff_of_the_profiled_likelihood(rng, kernel):
    # Gradient and Hessian in (log shape parameters, log r) against TF's own
    # second-order autodiff through the Cholesky of the same objective, with
    # padding and a missing point masked and a jitter on the diagonal. Sums
    # cover the variance ratios and the cross-component (zero) terms.
    period = 0.3 if kernel == "periodic" else None
    t, y = ref.sample(rng, "periodic" if period else "rbf", 45, noise_variance=0.05,
                      period=period, span=1.0)
    t, y = (t - t[0]) / np.ptp(t), (y - y.mean()) / y.std()
    mask = np.ones((1, 48)); mask[0, 45:] = 0.0; mask[0, 3] = 0.0
    tp = tf.constant(np.concatenate([t, np.full(3, t[-1])])[None])
    yp = tf.constant(np.concatenate([y, np.zeros(3)])[None])
    m = tf.constant(mask)
    kern = kernel_named(kernel)
    values = {"length_scale": 0.2, "period": 0.3, "variance_ratio": 0.5}
    shape = [values[name.rstrip("_0123456789")] for name in kern.parameters]
    x = tf.constant([np.log(shape + [0.1])], tf.float64)
    jitter = 1e-6
    feature = kern.feature(distances(tp, tp), tp - 0.5, tp - 0.5)  # linear: from the centre
    count = len(kern.parameters)

    def value(x):
        k = kern.matrix(feature, tf.unstack(tf.exp(x[:, :-1]), num=count, axis=-1))
        return likelihood.profiled_nll(k, tf.exp(x[:, -1]) + jitter, yp, m)[0]

    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            v = value(x)
        g = inner.gradient(v, x)
    h = outer.batch_jacobian(g, x)
    k, first, second = kern.matrix_and_derivatives(
        feature, tf.unstack(tf.exp(x[:, :-1]), num=count, axis=-1))
    nll, gradient, hessian, _, _ = likelihood.profiled_nll_newton(
        k, first, second, tf.exp(x[:, -1]) + jitter, x[:, -1], yp, m)
    np.testing.assert_allclose(nll.numpy(), v.numpy(), rtol=1e-12)
    # Both exact; autodiff through the Cholesky accumulates more round-off.
    np.testing.assert_allclose(gradient.numpy(), g.numpy(), rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(hessian.numpy(), h.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("kernel", ["rbf", "matern52", "matern12"])
def test_float32_hessian_products_leave_value_and_gradient_exact(rng, kernel):
    # The float32 products feed only the Hessian. Its tolerance: each
    # product sums 40 float32 roundings (eps 6e-8) of terms whose sum
    # cancels by up to 10x here, so about 1e-5 relative; 1e-4 leaves room.
    t, y = ref.sample(rng, "rbf", 40, noise_variance=0.05, span=1.0)
    t, y = (t - t[0]) / np.ptp(t), (y - y.mean()) / y.std()
    kern = kernel_named(kernel)
    tc = tf.constant(t[None])
    shape = [tf.constant([0.2], tf.float64)]
    k, first, second = kern.matrix_and_derivatives(kern.feature(distances(tc, tc)), shape)
    args = (k, first, second, tf.constant([0.1], tf.float64), tf.constant(np.log([0.1])),
            tf.constant(y[None]), tf.ones([1, 40], tf.float64))
    exact = likelihood.profiled_nll_newton(*args)
    single = likelihood.profiled_nll_newton(*args, hessian_dtype=tf.float32)
    for e, s in zip(exact[:2] + exact[3:], single[:2] + single[3:]):
        np.testing.assert_array_equal(s.numpy(), e.numpy())
    assert single[2].dtype == tf.float64
    np.testing.assert_allclose(single[2].numpy(), exact[2].numpy(), rtol=1e-4)
    assert np.abs(single[2].numpy() - exact[2].numpy()).max() > 0  # float32 did the products


def _numpy_profile(kmat, ratio, y):
    """(nll, mean, s^2) of y [n] under s^2 (kmat + ratio I) at the GLS mean and
    s^2, by np.linalg.solve and slogdet: the closed forms of profiled_nll."""
    a = kmat + ratio * np.eye(y.size)
    ones = np.ones(y.size)
    mean = ones @ np.linalg.solve(a, y) / (ones @ np.linalg.solve(a, ones))
    scale2 = (y - mean) @ np.linalg.solve(a, y - mean) / y.size
    nll = 0.5 * (y.size * (np.log(2 * np.pi) + np.log(scale2) + 1.0) + np.linalg.slogdet(a)[1])
    return nll, mean, scale2


def test_profiled_likelihood_ignores_the_values_at_masked_points(rng):
    # profiled_nll and profiled_nll_newton take y "masked entries
    # ignored": a masked value, however wild, changes nothing, and both
    # equal numpy's profile of the observed points alone. Tolerance: the
    # same closed forms by Cholesky and by LU on a 30-point matrix of
    # condition ~1e3, 1e-10 relative.
    t, y = ref.sample(rng, "matern52", 36, noise_variance=0.05, span=1.0)
    t, y = (t - t[0]) / np.ptp(t), (y - y.mean()) / y.std()
    mask = np.ones(36); mask[[4, 11, 30, 33, 34, 35]] = 0.0
    wild = np.where(mask > 0, y, 1e6)
    keep = mask > 0
    kmat = unit_kernel_matrix("matern52", tf.constant(t[None]), tf.constant([0.2], tf.float64))
    ratio = tf.constant([0.05], tf.float64)
    expected = _numpy_profile(kmat.numpy()[0][np.ix_(keep, keep)], 0.05, y[keep])
    got = likelihood.profiled_nll(kmat, ratio, tf.constant(wild[None]), tf.constant(mask[None]))
    np.testing.assert_allclose([v.numpy()[0] for v in got], expected, rtol=1e-10)
    kern = kernel_named("matern52")
    tc = tf.constant(t[None])
    k, first, second = kern.matrix_and_derivatives(kern.feature(distances(tc, tc)),
                                                   [tf.constant([0.2], tf.float64)])
    terms = [likelihood.profiled_nll_newton(k, first, second, ratio, tf.math.log(ratio),
                                            tf.constant(v[None]), tf.constant(mask[None]))
             for v in (wild, y * mask)]
    np.testing.assert_allclose(terms[0][0].numpy()[0], expected[0], rtol=1e-10)
    for wild_term, zero_term in zip(*terms):
        np.testing.assert_allclose(wild_term.numpy(), zero_term.numpy(), rtol=1e-10, atol=1e-12)

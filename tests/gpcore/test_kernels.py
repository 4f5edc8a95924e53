"""The kernel table against TFP's kernels, and its derivatives against autodiff."""
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_probability as tfp

import gp_reference as ref
from gpcore import kernels

psd = tfp.math.psd_kernels
NAMES = ("rbf", "matern32", "matern52", "periodic")


def _params(name):
    return [0.7, 0.3] if name == "periodic" else [0.4]


@pytest.mark.parametrize("name", NAMES)
def test_matrix_equals_tfp_kernel(rng, name):
    kernel = kernels.kernel(name)
    t = np.sort(rng.uniform(0.0, 3.0, 25))
    params = _params(name)
    ours = kernel.matrix(kernel.feature(kernels.distances(tf.constant(t[None]), tf.constant(t[None]))),
                         [tf.constant([p], tf.float64) for p in params])[0].numpy()
    theirs = ref.tfp_kernel(name, 1.0, *params).matrix(t[:, None], t[:, None])
    # Same formulas, different operation order: float64 round-off only.
    np.testing.assert_allclose(ours, theirs.numpy(), rtol=1e-12, atol=1e-14)


def test_distances_keep_precision_at_large_offsets():
    # Unix seconds: x^2 + y^2 - 2xy cancels ~1e18 to get ~1e2; |t_i - t_j| is exact here.
    t = 1.7e9 + np.arange(0.0, 600.0, 60.0)
    d = kernels.distances(tf.constant(t), tf.constant(t)).numpy()
    np.testing.assert_array_equal(d, np.abs(t[:, None] - t[None, :]))
    expanded = psd.ExponentiatedQuadratic(1.0, 60.0).matrix(t[:, None], t[:, None]).numpy()
    assert np.abs(expanded - np.exp(-0.5 * (d / 60.0) ** 2)).max() > 1e-3  # why we don't


@pytest.mark.parametrize("name", NAMES)
def test_derivatives_match_autodiff(rng, name):
    kernel = kernels.kernel(name)
    t = np.sort(rng.uniform(0.0, 1.0, 12))
    feature = kernel.feature(kernels.distances(tf.constant(t[None]), tf.constant(t[None])))
    log_params = tf.constant(np.log([_params(name)]), tf.float64)  # [1, K]
    k_count = log_params.shape[-1]

    def matrix(x):
        return kernel.matrix(feature, tf.unstack(tf.exp(x), axis=-1))

    with tf.GradientTape(persistent=True) as outer:
        outer.watch(log_params)
        with tf.GradientTape(persistent=True) as inner:
            inner.watch(log_params)
            k = matrix(log_params)
        first_auto = inner.batch_jacobian(k, log_params)  # [1, N, N, K]
    second_auto = outer.batch_jacobian(first_auto, log_params)  # [1, N, N, K, K]
    k_ours, first, second = kernel.matrix_and_derivatives(
        feature, tf.unstack(tf.exp(log_params), axis=-1))
    np.testing.assert_allclose(k_ours.numpy(), k.numpy(), rtol=1e-14)
    for i in range(k_count):
        np.testing.assert_allclose(first[i].numpy(), first_auto.numpy()[..., i],
                                   rtol=1e-9, atol=1e-12)
        for j in range(i, k_count):
            np.testing.assert_allclose(second[(i, j)].numpy(), second_auto.numpy()[..., i, j],
                                       rtol=1e-9, atol=1e-12)


def test_table_describes_each_kernel_once():
    assert kernels.KERNELS == NAMES
    assert [kernels.kernel(n).has_period for n in NAMES] == [False, False, False, True]
    assert kernels.PERIODIC.time_parameters == ("period",)  # its length scale is unitless
    assert kernels.RBF.time_parameters == ("length_scale",)
    with pytest.raises(ValueError, match="kernel must be one of rbf, matern32"):
        kernels.kernel("cosine")

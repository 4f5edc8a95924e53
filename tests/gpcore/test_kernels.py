"""The kernel table against TFP's kernels, and its derivatives against autodiff."""
import pickle

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_probability as tfp

import gp_reference as ref
from gpcore import kernels

psd = tfp.math.psd_kernels
NAMES = ("rbf", "matern12", "matern32", "matern52", "periodic", "linear")
# Sums with a kernel of the times (linear) beside ones of distances, and
# matern12's derivatives inside a sum's variance ratios.
SUMS = ("linear+rbf", "linear+rbf+periodic", "matern12+linear", "rbf+matern12+periodic")
VALUES = {"length_scale": 0.4, "period": 0.3, "variance_ratio": 0.6}


def _params(name):
    """A value per shape parameter, in the kernel's order."""
    if name == "periodic":
        return [0.7, 0.3]
    return [VALUES[p.rstrip("_0123456789")] for p in kernels.kernel(name).parameters]


def _feature(kernel, t):
    """The kernel's feature of times t [N], from their midpoint (the centre)."""
    tc = tf.constant((t - ref.centre(t))[None])
    return kernel.feature(kernels.distances(tc, tc), tc, tc)


@pytest.mark.parametrize("name", NAMES)
def test_matrix_equals_tfp_kernel(rng, name):
    kernel = kernels.kernel(name)
    t = np.sort(rng.uniform(0.0, 3.0, 25))
    params = _params(name)
    ours = kernel.matrix(_feature(kernel, t), [tf.constant([p], tf.float64) for p in params])[0]
    if name == "linear":  # TFP's Linear, bias 0, shifted to the centre, on the raw times
        theirs = ref.tfp_kernel(name, 1.0, None, centre=ref.centre(t))
    else:
        theirs = ref.tfp_kernel(name, 1.0, *params)
    # Same formulas, different operation order: float64 round-off only.
    np.testing.assert_allclose(ours.numpy(), theirs.matrix(t[:, None], t[:, None]).numpy(),
                               rtol=1e-12, atol=1e-14)


def test_linear_needs_the_times():
    d = kernels.distances(tf.zeros([1, 3], tf.float64), tf.zeros([1, 3], tf.float64))
    with pytest.raises(ValueError, match="linear kernel is a function of the times"):
        kernels.LINEAR.feature(d)


def test_periodic_sines_from_the_times_equal_those_of_the_distances(rng):
    # The fit's feature (the times given) forms sin and cos of each phase
    # by angle subtraction; the distance alone takes tf.sin of each phase.
    # A short period on a long irregular series: phases up to ~500 rad,
    # which carry a relative round-off of ~1e-16, so ~5e-14 rad, times the
    # slope of an entry in the phase (k: at most 4 / l^2 = 25; the second
    # derivatives grow as phase^2 / l^2, to ~1e7). Hence 1e-12 on k against
    # sines in extended precision (numpy's long double, 64-bit mantissa),
    # and 5e-12 of each array's largest entry between the two ways: both
    # round-off, far below any error of the formulas (a wrong sign or factor
    # moves entries by their own size). The diagonal is exactly 1.
    kernel = kernels.kernel("periodic")
    t = np.sort(rng.uniform(0.0, 1.0, 300))
    length_scale, period = 0.4, 0.003
    tc = tf.constant((t - ref.centre(t))[None])
    params = [tf.constant([v], tf.float64) for v in (length_scale, period)]
    by_times = kernel.matrix_and_derivatives(kernel.feature(kernels.distances(tc, tc), tc, tc),
                                             params)
    by_distance = kernel.matrix_and_derivatives(kernel.feature(kernels.distances(tc, tc)), params)
    long_t = t.astype(np.longdouble) - np.longdouble(ref.centre(t))
    phase = (long_t[:, None] - long_t[None, :]) * (np.longdouble(np.pi) / np.longdouble(period))
    exact = np.exp(-2.0 * np.sin(phase) ** 2 / np.longdouble(length_scale) ** 2)
    for way in (by_times, by_distance):
        np.testing.assert_allclose(way[0][0].numpy(), exact.astype(np.float64), rtol=0, atol=1e-12)
    for ours, theirs in zip(tf.nest.flatten(by_times), tf.nest.flatten(by_distance)):
        theirs = theirs.numpy()
        np.testing.assert_allclose(ours.numpy(), theirs, rtol=0, atol=5e-12 * np.abs(theirs).max())
    np.testing.assert_array_equal(np.diag(by_times[0][0].numpy()), 1.0)


def test_distances_keep_precision_at_large_offsets():
    # Unix seconds: x^2 + y^2 - 2xy cancels ~1e18 to get ~1e2; |t_i - t_j| is exact here.
    t = 1.7e9 + np.arange(0.0, 600.0, 60.0)
    d = kernels.distances(tf.constant(t), tf.constant(t)).numpy()
    np.testing.assert_array_equal(d, np.abs(t[:, None] - t[None, :]))
    expanded = psd.ExponentiatedQuadratic(1.0, 60.0).matrix(t[:, None], t[:, None]).numpy()
    assert np.abs(expanded - np.exp(-0.5 * (d / 60.0) ** 2)).max() > 1e-3  # why we don't


@pytest.mark.parametrize("name", NAMES + SUMS)
def test_derivatives_match_autodiff(rng, name):
    kernel = kernels.kernel(name)
    t = np.sort(rng.uniform(0.0, 1.0, 12))
    feature = _feature(kernel, t)
    log_params = tf.constant(np.log([_params(name)]).reshape(1, -1), tf.float64)  # [1, K]
    k_count = log_params.shape[-1]

    def matrix(x):
        return kernel.matrix(feature, tf.unstack(tf.exp(x), num=k_count, axis=-1))

    with tf.GradientTape(persistent=True) as outer:
        outer.watch(log_params)
        with tf.GradientTape(persistent=True) as inner:
            inner.watch(log_params)
            k = matrix(log_params)
        first_auto = inner.batch_jacobian(k, log_params) if k_count else None  # [1, N, N, K]
    k_ours, first, second = kernel.matrix_and_derivatives(
        feature, tf.unstack(tf.exp(log_params), num=k_count, axis=-1))
    np.testing.assert_allclose(k_ours.numpy(), k.numpy(), rtol=1e-14)
    assert len(first) == k_count  # linear alone: nothing to differentiate
    if not k_count:
        return
    second_auto = outer.batch_jacobian(first_auto, log_params).numpy()  # [1, N, N, K, K]
    for i in range(k_count):
        np.testing.assert_allclose(first[i].numpy(), first_auto.numpy()[..., i],
                                   rtol=1e-9, atol=1e-12)
        for j in range(i, k_count):
            # A pair left out of the dict is zero (different components of a sum).
            ours = second[(i, j)].numpy() if (i, j) in second else np.zeros_like(k.numpy())
            np.testing.assert_allclose(ours, second_auto[..., i, j], rtol=1e-9, atol=1e-12)


def test_table_describes_each_kernel_once():
    assert kernels.KERNELS == NAMES
    assert [kernels.kernel(n).has_period for n in NAMES] == [False] * 4 + [True, False]
    assert kernels.PERIODIC.time_parameters == ("period",)  # its length scale is unitless
    assert kernels.RBF.time_parameters == kernels.MATERN12.time_parameters == ("length_scale",)
    assert kernels.LINEAR.parameters == () and kernels.LINEAR.amplitude_per_time
    assert not any(kernels.kernel(n).amplitude_per_time for n in NAMES[:-1])
    assert kernels.kernel("linear+rbf+periodic").parameters == (
        "variance_ratio_1", "length_scale_1", "variance_ratio_2", "length_scale_2", "period_2")
    with pytest.raises(ValueError, match="kernel must be one of rbf, matern12, matern32"):
        kernels.kernel("cosine")
    # Two lines through one centre are one line: the sum would not be identifiable.
    with pytest.raises(ValueError, match="linear at most once; got 'linear\\+rbf\\+linear'"):
        kernels.kernel("linear+rbf+linear")


def test_kernels_are_classes_named_after_the_maths_composed_with_plus():
    rbf_periodic = kernels.RBF() + kernels.Periodic()
    assert isinstance(rbf_periodic, kernels.Sum) and rbf_periodic.name == "rbf+periodic"
    # The parser and `+` build equal values, with equal hashes: a kernel is
    # its structure, and its name is the string rows and fingerprints carry.
    assert rbf_periodic == kernels.kernel("rbf+periodic")
    assert hash(rbf_periodic) == hash(kernels.kernel("rbf+periodic"))
    assert rbf_periodic != kernels.kernel("periodic+rbf") != kernels.Periodic()
    assert len({kernels.Matern52(), kernels.kernel("matern52"), kernels.Matern32()}) == 2
    three = kernels.Linear() + kernels.RBF() + kernels.Periodic()  # a sum plus a kernel: flat
    assert three.components == (kernels.Linear(), kernels.RBF(), kernels.Periodic())
    assert three.parameters == kernels.kernel("linear+rbf+periodic").parameters
    for name in NAMES + SUMS:
        assert kernels.kernel(name).name == name
        assert pickle.loads(pickle.dumps(kernels.kernel(name))) == kernels.kernel(name)
    assert kernels.RBF() != "rbf"  # a string is parsed, never compared
    # Python's sum() starts from 0: it builds the same sum, in order.
    assert sum([kernels.Linear(), kernels.RBF(), kernels.Periodic()]) == three
    assert sum([kernels.RBF()]) == kernels.RBF()
    with pytest.raises(TypeError):
        1 + kernels.RBF()  # no constant kernel: the amplitude is fitted
    with pytest.raises(ValueError, match="linear at most once"):
        three + kernels.Linear()
    with pytest.raises(AttributeError, match="immutable"):
        kernels.RBF().name = "matern12"


def test_fit_config_parses_a_name_once_and_holds_the_kernel():
    from gpcore import FitConfig
    from gpcore.config import AUTO, SUM_RESTARTS, fitted_configs

    given = FitConfig(kernel="rbf+periodic")
    assert given.kernel == kernels.RBF() + kernels.Periodic() and given.kernel_name == "rbf+periodic"
    assert given == FitConfig(kernel=kernels.RBF() + kernels.Periodic())
    assert hash(given) == hash(FitConfig(kernel=kernels.RBF() + kernels.Periodic()))
    assert given.restarts == SUM_RESTARTS and pickle.loads(pickle.dumps(given)) == given
    auto = FitConfig(kernel=AUTO, candidates=("rbf", "matern52+periodic"))
    assert (auto.kernel, auto.kernel_name) == (AUTO, AUTO)  # a sentinel, not a kernel
    assert [c.kernel for c in fitted_configs(auto)] == [kernels.RBF(),
                                                         kernels.Matern52() + kernels.Periodic()]
    with pytest.raises(ValueError, match="kernel must be one of"):
        FitConfig(kernel="rbf*periodic")


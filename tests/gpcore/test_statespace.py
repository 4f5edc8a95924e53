"""The O(n) state-space likelihood (gpcore/statespace.py) against three
independent references: gpcore's dense profiled likelihood (one Cholesky),
tfd.GaussianProcess, and a numpy Kalman filter written here from the SDE
(scipy's matrix exponential and Lyapunov solver, no closed forms shared).

Tolerances: the nll to a relative 1e-8 and its gradient to 1e-6, as
docs/design.md ("Long series: Markov kernels") states; both paths are
exact, so the differences are round-off of O(n) sums of float64 terms.
"""
import math

import numpy as np
import pytest
import scipy.linalg
import tensorflow as tf
import tensorflow_probability as tfp

from gpcore import likelihood, statespace
from gpcore.kernels import distances, kernel

KERNELS = ("matern12", "matern32", "matern52", "matern32+matern12", "matern52+matern12+matern32")


def awkward_series(n, seed):
    """Irregular times with a long gap and repeated times; values with
    missing points inside and a masked (padded) end."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0.0, 1.0, n))
    t[n // 3:] += 0.5                      # a gap of half the span
    t[10:14] = t[10]                       # four repeats of one time
    t[n // 2 + 1] = t[n // 2]
    y = np.sin(25.0 * t) + 0.2 * rng.normal(size=n) + 1.5
    mask = np.ones(n)
    mask[n // 5:n // 5 + 7] = 0.0          # missing points
    mask[-(n // 20):] = 0.0                # a ragged end
    return t, y, mask


def parameters(name, seed=0):
    """[1]-shaped tensors for each shape parameter (length scales ~0.02-0.2,
    variance ratios 0.3-1) and a noise ratio."""
    rng = np.random.default_rng(seed)
    values = [rng.uniform(0.3, 1.0) if p.startswith("variance_ratio") else rng.uniform(0.02, 0.2)
              for p in kernel(name).parameters]
    return [tf.constant([v], tf.float64) for v in values], tf.constant([0.05], tf.float64)


def dense_nll(name, params, noise, t, y, mask):
    k = kernel(name)
    tt = tf.constant(t[None])
    kmat = k.matrix(k.feature(distances(tt, tt), tt - 0.5, tt - 0.5), params)
    return likelihood.profiled_nll(kmat, noise, tf.constant(y[None]), tf.constant(mask[None]))


def markov_nll(name, params, noise, t, y, mask, parallel=True, chunk_points=None):
    return statespace.profiled_nll(kernel(name), params, noise, tf.constant(t[None]),
                                   tf.constant(y[None]), tf.constant(mask[None]), parallel,
                                   chunk_points)


@pytest.mark.parametrize("name", KERNELS)
def test_nll_equals_dense_nll(name):
    t, y, mask = awkward_series(600, seed=1)
    params, noise = parameters(name)
    dense = dense_nll(name, params, noise, t, y, mask)
    for parallel in (True, False):
        fast = markov_nll(name, params, noise, t, y, mask, parallel)
        for a, b in zip(dense, fast):  # nll, mean, scale2
            np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-8)


@pytest.mark.parametrize("name", ["matern32", "matern52+matern12"])
def test_nll_equals_dense_nll_at_4096_points(name):
    t, y, mask = awkward_series(4096, seed=2)
    params, noise = parameters(name, seed=3)
    dense = dense_nll(name, params, noise, t, y, mask)[0].numpy()
    fast = markov_nll(name, params, noise, t, y, mask)[0].numpy()
    np.testing.assert_allclose(fast, dense, rtol=1e-8)


@pytest.mark.parametrize("name,n", [("matern12", 2048), ("matern32", 2048), ("matern52", 1024),
                                    ("matern32+matern12", 1024)])
def test_gradient_equals_dense_gradient(name, n):
    """Autodiff through the scan against autodiff through the Cholesky, in
    the fitter's coordinates (log parameters, log noise ratio)."""
    t, y, mask = awkward_series(n, seed=4)
    params, noise = parameters(name, seed=5)
    x = tf.math.log(tf.concat(params + [noise], 0))

    def gradient(nll_of):
        with tf.GradientTape() as tape:
            tape.watch(x)
            values = tf.unstack(tf.exp(x))
            value = nll_of(name, [v[None] for v in values[:-1]], values[-1][None], t, y, mask)[0][0]
        return tape.gradient(value, x).numpy()

    dense, fast = gradient(dense_nll), gradient(markov_nll)
    np.testing.assert_allclose(fast, dense, rtol=1e-6, atol=1e-6 * np.abs(dense).max())


@pytest.mark.parametrize("name,chunk_points", [("matern32", 50), ("matern52+matern12", 7),
                                               ("matern12", 128)])
def test_chunked_scan_equals_dense_nll_and_gradient(name, chunk_points):
    """The scan in chunks (5 to 86 of a 600-point series, edges falling in
    the repeats, the missing run and the padded end) and its hand-made
    gradient (recomputed chunk by chunk, adjoint of the state carried
    back), in a tf.function as the fitter runs it, against the dense nll
    and autodiff through the Cholesky; same tolerances as above."""
    t, y, mask = awkward_series(600, seed=12)
    params, noise = parameters(name, seed=13)
    x0 = tf.math.log(tf.concat(params + [noise], 0))

    def gradient(nll_of):
        def value_and_gradient(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                values = tf.unstack(tf.exp(x))
                value = nll_of(name, [v[None] for v in values[:-1]], values[-1][None],
                               t, y, mask)[0][0]
            return value, tape.gradient(value, x)
        return [v.numpy() for v in tf.function(value_and_gradient, autograph=False)(x0)]

    (dense, dense_g), (fast, fast_g) = gradient(dense_nll), gradient(
        lambda *args: markov_nll(*args, chunk_points=chunk_points))
    np.testing.assert_allclose(fast, dense, rtol=1e-8)
    np.testing.assert_allclose(fast_g, dense_g, rtol=1e-6, atol=1e-6 * np.abs(dense_g).max())


def numpy_kalman_nll(name, params, noise, mean, scale2, t, y, mask):
    """-log N(y_obs | mean, scale2 (K1 + noise I)) by a Kalman filter built
    from the SDE's drift F and diffusion L of each Matern component
    (Hartikainen & Sarkka 2010): Pinf solves F P + P F' + L q L' = 0 with q
    set so that Pinf[0, 0] = 1, transitions are expm(F dt)."""
    blocks_f, blocks_p = [], []
    names = name.split("+")
    for c, base in enumerate(names):
        d = {"matern12": 1, "matern32": 2, "matern52": 3}[base]
        length = params[f"length_scale_{c}" if len(names) > 1 else "length_scale"]
        weight = params.get(f"variance_ratio_{c}", 1.0)
        lam = math.sqrt(2 * d - 1) / length
        f = np.diag(np.ones(d - 1), 1)
        f[-1, :] = -np.array([math.comb(d, k) * lam ** (d - k) for k in range(d)])
        spread = np.zeros((d, d))
        spread[-1, -1] = 1.0
        p = scipy.linalg.solve_continuous_lyapunov(f, -spread)
        blocks_f.append(f)
        blocks_p.append(weight * p / p[0, 0])
    f, pinf = scipy.linalg.block_diag(*blocks_f), scipy.linalg.block_diag(*blocks_p)
    h = np.concatenate([np.eye(1, b.shape[0])[0] for b in blocks_f])
    m, p = np.zeros(f.shape[0]), pinf.copy()
    total, previous = 0.0, None
    for tk, yk, ok in zip(t, y, mask):
        if previous is not None:
            a = scipy.linalg.expm(f * (tk - previous))
            m, p = a @ m, a @ p @ a.T + pinf - a @ pinf @ a.T
        previous = tk
        if not ok:
            continue
        s = scale2 * (h @ p @ h + noise)
        v = yk - mean - scale2 ** 0.5 * (h @ m)
        total += 0.5 * (math.log(2 * math.pi * s) + v * v / s)
        gain = p @ h * scale2 / s
        m = m + gain * v / scale2 ** 0.5
        p = p - np.outer(gain, h @ p)
    return total


@pytest.mark.parametrize("name", ["matern12", "matern32", "matern52", "matern52+matern12"])
def test_nll_equals_numpy_kalman_filter(name):
    """The profiled nll is the full nll at the profiled mean and scale."""
    t, y, mask = awkward_series(300, seed=6)
    params, noise = parameters(name, seed=7)
    nll, mean, scale2 = (v.numpy()[0] for v in markov_nll(name, params, noise, t, y, mask))
    named = dict(zip(kernel(name).parameters, (float(p[0]) for p in params)))
    reference = numpy_kalman_nll(name, named, float(noise[0]), mean, scale2, t, y, mask)
    np.testing.assert_allclose(nll, reference, rtol=1e-8)


def test_nll_equals_tfp_gaussian_process():
    """matern32 against tfd.GaussianProcess at the profiled mean and scale."""
    t, y, mask = awkward_series(500, seed=8)
    params, noise = parameters("matern32", seed=9)
    nll, mean, scale2 = (v.numpy()[0] for v in markov_nll("matern32", params, noise, t, y, mask))
    keep = mask > 0
    gp = tfp.distributions.GaussianProcess(
        tfp.math.psd_kernels.MaternThreeHalves(amplitude=np.sqrt(scale2),
                                               length_scale=float(params[0][0])),
        index_points=t[keep, None], observation_noise_variance=scale2 * float(noise[0]), jitter=0.0,
        mean_fn=lambda x: tf.fill(tf.shape(x)[:-1], tf.constant(mean, tf.float64)))
    np.testing.assert_allclose(nll, -gp.log_prob(y[keep]).numpy(), rtol=1e-8)


@pytest.mark.parametrize("name, seed, lengths, chunk_points", [
    ("matern52", 10, (100, 173), None),  # one chunk (the default size)
    ("matern32+matern12", 14, (120, 201), 40),  # chunks of 20 steps per row
])
def test_batch_rows_are_independent(name, seed, lengths, chunk_points):
    """Rows of a batch of different lengths (padding masked), in one chunk
    or in several, give each row's own nll, computed alone in one chunk."""
    params, noise = parameters(name, seed=seed)
    rows = [awkward_series(n, seed=seed + 1 + n) for n in lengths]
    width = max(lengths)
    t, y, mask = (np.stack([np.r_[r[i], np.full(width - r[i].size, r[i][-1] if i == 0 else 0.0)]
                            for r in rows]) for i in range(3))
    both = statespace.profiled_nll(kernel(name), [tf.concat([p, p], 0) for p in params],
                                   tf.concat([noise, noise], 0), tf.constant(t), tf.constant(y),
                                   tf.constant(mask), chunk_points=chunk_points)[0].numpy()
    alone = [markov_nll(name, params, noise, *r)[0].numpy()[0] for r in rows]
    np.testing.assert_allclose(both, alone, rtol=1e-10)

"""Masked Gaussian-process marginal likelihoods, batched over series.

Padding and missing values are masks: a masked point's row and column of the
covariance are replaced by those of the identity and its value by zero, so
it adds exactly nothing to the log-determinant or the quadratic form. The
masked likelihood therefore equals the likelihood of the observed points
alone, to round-off.
"""
from __future__ import annotations

import math

import tensorflow as tf

LOG_2PI = math.log(2.0 * math.pi)


def masked_covariance(kmat: tf.Tensor, noise: tf.Tensor, mask: tf.Tensor) -> tf.Tensor:
    """Covariance of the observed points, identity on masked ones.

    Args:
      kmat: [C, N, N] kernel matrix.
      noise: [C] observation-noise variance.
      mask: [C, N] 1.0 where observed, 0.0 where missing or padding.
    Returns:
      [C, N, N] m m^T * (K + noise I) + diag(1 - m).
    """
    outer = mask[:, :, tf.newaxis] * mask[:, tf.newaxis, :]
    diag = mask * noise[:, tf.newaxis] + (1.0 - mask)
    return outer * kmat + tf.linalg.diag(diag)


def negative_log_likelihood(kmat, noise, y, mask, mean):
    """-log N(y_obs | mean, K + noise I) over the observed points.

    Args:
      kmat: [C, N, N] kernel matrix including its amplitude.
      noise: [C] noise variance. y: [C, N]. mask: [C, N]. mean: [C].
    Returns:
      [C] negative log marginal likelihood, nats.
    """
    chol = tf.linalg.cholesky(masked_covariance(kmat, noise, mask))
    resid = (y - mean[:, tf.newaxis]) * mask
    z = tf.linalg.triangular_solve(chol, resid[..., tf.newaxis])[..., 0]  # [C, N]
    n = tf.reduce_sum(mask, axis=-1)
    log_det = 2.0 * tf.reduce_sum(tf.math.log(tf.linalg.diag_part(chol)), axis=-1)
    return 0.5 * (tf.reduce_sum(z * z, axis=-1) + log_det + n * LOG_2PI)


def profiled_negative_log_likelihood(kmat_unit, noise_ratio, y, mask):
    """Likelihood with the constant mean and the overall scale profiled out.

    With covariance s^2 (K1 + r I), the maximum-likelihood mean is the GLS
    estimate mu = 1'A^-1 y / 1'A^-1 1 and the scale s^2 = (y-mu)'A^-1(y-mu) / n,
    where A = K1 + r I. Both are closed forms, so the optimiser only searches
    the kernel's shape parameters and r: fewer parameters, fewer evaluations.

    Args:
      kmat_unit: [C, N, N] unit-amplitude kernel matrix K1.
      noise_ratio: [C] r = noise variance / kernel variance.
      y: [C, N] values (masked entries ignored). mask: [C, N].
    Returns:
      (nll [C], mean [C], scale2 [C]): the profiled negative log likelihood
      (nats) and the maximising mean and kernel variance s^2. Gradients flow
      through nll only (mean and scale2 are reported, not differentiated).
    """
    return _profiled_nll_of_covariance(
        masked_covariance(kmat_unit, noise_ratio, mask), y, mask)


@tf.custom_gradient
def _profiled_nll_of_covariance(cov, y, mask):
    """Profiled nll of a [C, N, N] covariance A, with an analytic gradient.

    Because mu and s^2 maximise the likelihood, d nll / dA is the partial
    derivative at fixed mu, s^2 (envelope theorem):
        d nll / dA = 1/2 (A^-1 - alpha alpha' / s^2),  alpha = A^-1 (y - mu).
    Autodiff through the Cholesky costs about 8x the forward pass here;
    this costs one Cholesky solve more.
    """
    chol = tf.linalg.cholesky(cov)
    rhs = tf.stack([y * mask, mask], axis=-1)  # [C, N, 2]
    z = tf.linalg.triangular_solve(chol, rhs)  # [C, N, 2]
    zy, z1 = z[..., 0], z[..., 1]
    yy = tf.reduce_sum(zy * zy, axis=-1)
    y1 = tf.reduce_sum(zy * z1, axis=-1)
    one1 = tf.reduce_sum(z1 * z1, axis=-1)
    mean = y1 / one1
    n = tf.reduce_sum(mask, axis=-1)
    scale2 = (yy - y1 * mean) / n
    log_det = 2.0 * tf.reduce_sum(tf.math.log(tf.linalg.diag_part(chol)), axis=-1)
    nll = 0.5 * (n * (LOG_2PI + tf.math.log(scale2) + 1.0) + log_det)

    def gradient(d_nll, d_mean, d_scale2):
        del d_mean, d_scale2  # reported only; see the docstring
        resid = (y - mean[:, tf.newaxis]) * mask
        alpha = tf.linalg.cholesky_solve(chol, resid[..., tf.newaxis])  # [C, N, 1]
        eye = tf.eye(tf.shape(cov)[-1], batch_shape=tf.shape(cov)[:1], dtype=cov.dtype)
        weights = (tf.linalg.cholesky_solve(chol, eye)
                   - tf.matmul(alpha, alpha, transpose_b=True) / scale2[:, None, None])
        return 0.5 * d_nll[:, None, None] * weights, None, None

    return (nll, mean, scale2), gradient

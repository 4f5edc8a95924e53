"""Masked Gaussian-process marginal likelihoods, batched over series.

Padding and missing values are masks: a masked point's row and column of the
covariance are replaced by those of the identity and its value by zero, so
it adds exactly nothing to the log-determinant or the quadratic form. The
masked likelihood therefore equals the likelihood of the observed points
alone, to round-off.

The fitter's objective is the *profiled* likelihood: with covariance
s^2 (K1 + r I), the maximum-likelihood constant mean (the GLS estimate) and
scale s^2 have closed forms, so only the kernel's shape parameters and the
noise ratio r are searched. `profiled_nll` gives its value (one Cholesky);
`profiled_nll_newton` adds its exact gradient and Hessian in log-parameter
coordinates (docs/design.md, "The fitter").
"""
from __future__ import annotations

import math

import numpy as np
import tensorflow as tf

from gpcore.kernels import components

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
    return with_noise(masked_kernel(kmat, mask), noise)


def masked_kernel(kmat, mask):
    """(m m^T * K [C, N, N], diag K [C, N], m, 1 - m [C, N]): the parts of
    `masked_covariance` that do not depend on the noise, computed once for
    all the noise ratios scored with one kernel matrix (expand_dims, not
    [:, :, None]: fewer graph nodes to trace, the same arithmetic;
    docs/design.md, "Build")."""
    outer = tf.expand_dims(mask, 2) * tf.expand_dims(mask, 1)
    return outer * kmat, tf.linalg.diag_part(kmat), mask, 1.0 - mask


def with_noise(masked, noise):
    """`masked_covariance` from `masked_kernel`'s parts and the noise [C]."""
    off_diagonal, kdiag, mask, missing = masked
    return tf.linalg.set_diag(off_diagonal, mask * (kdiag + tf.expand_dims(noise, 1)) + missing)


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


def observed(y, mask):
    """(rhs [C, N, 2]: masked y and the mask; n [C]: observed points): what
    every covariance scored against rows y, mask [C, N] shares."""
    return tf.stack([y * mask, mask], axis=-1), tf.reduce_sum(mask, axis=-1)


def _whitened(cov, rhs):
    """(chol, L^-1 y, L^-1 1) of A = cov = L L', rhs from `observed`: [C, N]
    each but the factor."""
    chol = tf.linalg.cholesky(cov)
    zy, z1 = tf.unstack(tf.linalg.triangular_solve(chol, rhs), axis=-1)
    return chol, zy, z1


def _sums(zy, z1):
    """(y'A^-1 y, y'A^-1 1, 1'A^-1 1) per row from `_whitened`'s L^-1 y, L^-1 1."""
    return (tf.reduce_sum(zy * zy, axis=-1), tf.reduce_sum(zy * z1, axis=-1),
            tf.reduce_sum(z1 * z1, axis=-1))


def _solves(cov, rhs):
    """Cholesky of A = cov and the sums the profile needs, per row:
    (chol, y'A^-1 y, y'A^-1 1, 1'A^-1 1, log|A|), rhs from `observed`."""
    chol, zy, z1 = _whitened(cov, rhs)
    log_det = 2.0 * tf.reduce_sum(tf.math.log(tf.linalg.diag_part(chol)), axis=-1)
    return (chol, *_sums(zy, z1), log_det)


def _profiled(yy, y1, one1, log_det, n):
    """nll, GLS mean and scale s^2 from the sums of `_solves` (see `_profile`)."""
    mean = y1 / one1
    scale2 = (yy - y1 * mean) / n
    nll = 0.5 * (n * (LOG_2PI + tf.math.log(scale2) + 1.0) + log_det)
    return nll, mean, scale2


def _profile(cov, rows):
    """Cholesky of A = cov and the profiled nll, GLS mean and scale s^2;
    rows: `observed(y, mask)`.

    With A = K1 + r I: mu = 1'A^-1 y / 1'A^-1 1, s^2 = (y-mu)'A^-1(y-mu) / n,
    nll = n/2 (log 2 pi + log s^2 + 1) + 1/2 log|A|. Non-positive-definite
    covariances give NaN (CPU Cholesky does not raise).
    """
    rhs, n = rows
    chol, *sums = _solves(cov, rhs)
    return (chol,) + _profiled(*sums, n)


def profiled_nll(kmat_unit, noise_ratio, y, mask):
    """The profiled negative log likelihood alone: one Cholesky, no inverse.

    Args:
      kmat_unit: [C, N, N] unit-amplitude kernel matrix K1.
      noise_ratio: [C] r = noise variance / kernel variance.
      y: [C, N] values (masked entries ignored). mask: [C, N].
    Returns:
      (nll [C], mean [C], scale2 [C]): nats, and the maximising mean and
      kernel variance s^2.
    """
    return profiled_nll_observed(kmat_unit, noise_ratio, mask, observed(y, mask))


def profiled_nll_observed(kmat_unit, noise_ratio, mask, rows):
    """`profiled_nll` with rows = `observed(y, mask)` computed by the caller,
    once for every kernel matrix it scores against the same rows."""
    _, nll, mean, scale2 = _profile(masked_covariance(kmat_unit, noise_ratio, mask), rows)
    return nll, mean, scale2


def innovations(kmat_unit, noise_ratio, mask, rows):
    """[C, N] standardised one-step prediction errors of the rows in time
    order, w = L^-1 (y - mu 1) / s with A = L L' and the profiled mean mu and
    scale s^2 (`profiled_nll`): independent N(0, 1) where the series is a
    draw of the model at these parameters; 0 at masked points (the end
    of a padded row). rows: `observed(y, mask)`."""
    rhs, n = rows
    _, zy, z1 = _whitened(masked_covariance(kmat_unit, noise_ratio, mask), rhs)
    _, mean, scale2 = _profiled(*_sums(zy, z1), 0.0, n)  # log|A| not needed
    return (zy - tf.expand_dims(mean, 1) * z1) * mask / tf.expand_dims(tf.sqrt(scale2), 1)


def profiled_nll_blocks(kmat_unit, noise_ratio, y, mask, blocks):
    """`profiled_nll` with the covariance taken block-diagonal: the series
    cut into `blocks` consecutive pieces that share the mean and scale but
    not their correlation. Scores a start at a fraction of a full Cholesky.

    Args:
      kmat_unit: [C * blocks, L, L] unit kernel matrices of the pieces
        (row c * blocks + b is piece b of row c).
      noise_ratio: [C * blocks]. y, mask: [C * blocks, L].
      blocks: pieces per row (an int or a scalar int32 tensor).
    Returns:
      (nll [C], mean [C], scale2 [C]).
    """
    return profiled_nll_columns(kmat_unit, [noise_ratio], y, mask, blocks)[0]


def profiled_nll_columns(kmat_unit, noise_ratios, y, mask, blocks):
    """`profiled_nll_blocks` of one kernel matrix with each of the noise
    ratios (a list of [C * blocks]): a list of (nll, mean, scale2). The
    masked kernel and the rows' sums are computed once for all of them."""
    masked = masked_kernel(kmat_unit, mask)
    rhs, n = observed(y, mask)
    by_row = tf.stack([-1, blocks])  # [C * blocks] -> [C, blocks], once for all the sums
    per_row = lambda v: tf.reduce_sum(tf.reshape(v, by_row), axis=-1)
    n = per_row(n)
    results = []
    for noise_ratio in noise_ratios:
        _, *sums = _solves(with_noise(masked, noise_ratio), rhs)
        results.append(_profiled(*(per_row(v) for v in sums), n))
    return results


def profiled_nll_newton(kmat, dkmats, d2kmats, noise_ratio, log_noise_ratio, y, mask,
                        hessian_dtype=None):
    """Profiled nll with its gradient and Hessian in (log shape, log r).

    With q = min_mu (y-mu)'A^-1(y-mu), P the GLS projector (dP = -P dA P),
    alpha = P y and A_i = dA/dtheta_i:
        q_i  = -alpha' A_i alpha
        q_ij = 2 alpha' A_i P A_j alpha - alpha' A_ij alpha
        f_i  = (q_i / s^2 + tr(A^-1 A_i)) / 2
        f_ij = (q_ij / s^2 - q_i q_j / (n s^4)
                + tr(A^-1 A_ij) - tr(A^-1 A_i A^-1 A_j)) / 2.
    The noise direction is A_r = r diag(m), so only kernel directions need
    a matrix product (one GEMM each).

    Args:
      kmat: [C, N, N] unit kernel matrix K1 (unmasked; masked here).
      dkmats: list of K kernel-parameter derivatives [C, N, N] (d/dlog p).
      d2kmats: dict (i, j) -> [C, N, N] second derivatives, i <= j < K;
        a missing pair is zero.
      noise_ratio: [C] r plus any jitter (the diagonal added to K1).
      log_noise_ratio: [C] log r, the searched coordinate (without jitter).
      y, mask: [C, N].
      hessian_dtype: the dtype of the Hessian's matrix products A^-1 A_i
        (None: the inputs'). float32 halves their cost, the largest part of
        an evaluation's; the value and gradient stay exact, and Newton
        needs its Hessian only for the step's direction and the
        convergence test (docs/design.md, "The Hessian's products in
        float32").
    Returns:
      (nll [C], gradient [C, K+1], hessian [C, K+1, K+1], mean [C], scale2 [C]).
    """
    rows = observed(y, mask)
    chol, nll, mean, scale2 = _profile(masked_covariance(kmat, noise_ratio, mask), rows)
    r = tf.exp(log_noise_ratio)
    n = rows[1]
    # B = A^-1 restricted to observed points (zero rows/columns elsewhere):
    # solving against diag(m) instead of I spares masking the derivatives.
    b = tf.linalg.cholesky_solve(chol, tf.linalg.diag(mask))  # [C, N, N]
    # alpha = A^-1 (y - mu), w = A^-1 1: one pass over b for both.
    alpha, w = tf.unstack(tf.matmul(b, tf.stack([(y - tf.expand_dims(mean, 1)) * mask, mask], axis=-1)),
                          axis=-1)
    one1 = tf.reduce_sum(w * mask, axis=-1)
    k = len(dkmats)
    # Directions A_i alpha (masked rows: derivatives are not masked).
    v = [mask * tf.linalg.matvec(d, alpha) for d in dkmats] + [tf.expand_dims(r, 1) * alpha]
    # P v = A^-1 v - A^-1 1 (1'A^-1 v) / (1'A^-1 1), all directions in one pass.
    pv = tf.unstack(tf.matmul(b, tf.stack(v, axis=-1)), axis=-1)
    pv = [p - w * tf.expand_dims(tf.reduce_sum(w * vi, axis=-1) / one1, 1) for p, vi in zip(pv, v)]
    q1 = [-tf.reduce_sum(alpha * vi, axis=-1) for vi in v]
    trace_b = tf.linalg.trace(b)
    ld1 = [_inner(b, d) for d in dkmats] + [r * trace_b]
    # A^-1 A_i, kernel directions: A^-1 cast once for all of them.
    b_h = b if hessian_dtype in (None, b.dtype) else tf.cast(b, hessian_dtype)
    products = [_product(b_h, d, b.dtype) for d in dkmats]
    alpha2 = tf.reduce_sum(alpha * alpha, axis=-1)
    # Shared by the Hessian's entries, made once: fewer graph nodes to trace
    # (the function runtime merges copies when it runs, Grappler or not;
    # docs/design.md, "Build").
    transposed = [tf.linalg.matrix_transpose(a) for a in products]
    n_s4, minus_r = n * scale2 * scale2, -r

    def second(i, j):
        q = 2.0 * tf.reduce_sum(v[i] * pv[j], axis=-1)
        if i < k and j < k:
            ld = -_inner(products[i], transposed[j])
            d2 = d2kmats.get((i, j))  # absent: zero (different components of a sum)
            if d2 is not None:
                q -= tf.reduce_sum(alpha * tf.linalg.matvec(d2, alpha), axis=-1)
                ld += _inner(b, d2)
        elif i < k:  # kernel x noise: A_ir = 0
            ld = minus_r * _inner(products[i], b)
        else:  # noise x noise: A_rr = A_r
            q -= r * alpha2
            ld = r * trace_b - r * r * _inner(b, b)
        return 0.5 * (q / scale2 - q1[i] * q1[j] / n_s4 + ld)

    p = k + 1
    gradient = tf.stack([0.5 * (q1[i] / scale2 + ld1[i]) for i in range(p)], axis=-1)
    rows = [[None] * p for _ in range(p)]
    for i in range(p):
        for j in range(i, p):
            rows[i][j] = rows[j][i] = second(i, j)
    hessian = tf.stack([tf.stack(row, axis=-1) for row in rows], axis=-2)
    return nll, gradient, hessian, mean, scale2


def _product(b_h, d, dtype):
    """b_h d [C, N, N] in b_h's dtype, returned in dtype (d's). Only the
    product: a float32 sum over N N elements would round differently at
    each padded length, and a series' fit would then depend on its batch
    companions (docs/design.md, "The Hessian's products in float32")."""
    if b_h.dtype == dtype:
        return tf.matmul(b_h, d)
    return tf.cast(tf.matmul(b_h, tf.cast(d, b_h.dtype)), dtype)


def _inner(a, b, transpose=False):
    """[C] sum_ij a_ij b_ij (or b_ji with transpose): tr(a' b) or tr(a b)."""
    if transpose:
        b = tf.linalg.matrix_transpose(b)
    return tf.reduce_sum(a * b, axis=[-2, -1])


def bic(kernel, nll: float, n_points: int) -> float:
    """2 nll + k log n, with k the free parameters: the mean, the noise
    variance, and each component's amplitude and shape parameters."""
    count = 2 + sum(1 + len(base.parameters) for base in components(kernel))
    return 2.0 * nll + count * np.log(n_points)

"""Whether a fit leaves structure in its residuals: the check that decides
where the far and ridge probes run under the balanced search
(FitConfig.probe_check).

Where a series is a draw of the model at the fitted parameters, its
standardised one-step prediction errors (`likelihood.innovations`) are
independent N(0, 1). Where they are not, the model describes the series
badly at that optimum, its likelihood is rugged, and a basin of another
length scale and noise ratio can lie lower: the far probes look for it
(docs/design.md, "Balanced search"). Two standard tests, each at level
0.05:
- Ljung-Box's portmanteau of the errors' autocorrelations at lags 1 to
  LAGS (chi-squared with LAGS degrees of freedom where they are
  independent): correlation the kernel left;
- Jarque-Bera's of their skewness and kurtosis (chi-squared with 2):
  tails or asymmetry no Gaussian process has.
"""
from __future__ import annotations

import tensorflow as tf

# Lags of the portmanteau, and each test's 95 % point (level 0.05): scipy's
# chi2.isf(0.05, 10) and chi2.isf(0.05, 2) = -2 log 0.05. On series drawn
# from the model (workload a) the two together pass 11 % of fits to the
# probes, about the 10 % two tests at 0.05 should.
LAGS = 10
LJUNG_BOX_LIMIT = 18.307
JARQUE_BERA_LIMIT = 5.991


def ljung_box(w: tf.Tensor, mask: tf.Tensor, lags: int = LAGS) -> tf.Tensor:
    """[C] Q = n (n + 2) sum_k r_k^2 / (n - k), k = 1..lags, of errors w
    [C, N] (time order, masked points 0 and at the end), r_k their lag-k
    autocorrelation about 0 over the n observed points."""
    n = tf.reduce_sum(mask, axis=-1)
    power = tf.reduce_sum(w * w, axis=-1)
    q = tf.zeros_like(n)
    for k in range(1, lags + 1):
        r = tf.reduce_sum(w[:, k:] * w[:, :-k], axis=-1) / power
        q += r * r / (n - k)
    return n * (n + 2.0) * q


def jarque_bera(w: tf.Tensor, mask: tf.Tensor) -> tf.Tensor:
    """[C] JB = n / 6 (S^2 + (K - 3)^2 / 4) of errors w [C, N] (masked
    points 0), with S and K their skewness and kurtosis about 0."""
    n = tf.reduce_sum(mask, axis=-1)
    w2 = w * w
    variance = tf.reduce_sum(w2, axis=-1) / n
    skew = tf.reduce_sum(w2 * w, axis=-1) / n / variance ** 1.5
    kurtosis = tf.reduce_sum(w2 * w2, axis=-1) / n / (variance * variance)
    return n / 6.0 * (skew * skew + (kurtosis - 3.0) ** 2 / 4.0)


def fails(w: tf.Tensor, mask: tf.Tensor) -> tf.Tensor:
    """[C] bool: either test rejects independent N(0, 1) errors at its
    level; also where a statistic is not finite (no reason to spare the
    probes)."""
    q, jb = ljung_box(w, mask), jarque_bera(w, mask)
    return ~((q <= LJUNG_BOX_LIMIT) & (jb <= JARQUE_BERA_LIMIT))

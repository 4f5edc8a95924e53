"""Unit-amplitude covariance functions, by name.

The amplitude is profiled out of the likelihood (see likelihood.py), so every
kernel here has amplitude 1; its other parameters are batch vectors [C].
"""
from __future__ import annotations

import tensorflow as tf
import tensorflow_probability as tfp

psd = tfp.math.psd_kernels


def unit_kernel(kernel: str, length_scale: tf.Tensor, period: tf.Tensor | None = None):
    """A PositiveSemidefiniteKernel with batch shape [C] and amplitude 1.

    Args:
      kernel: "rbf", "matern32", "matern52" or "periodic".
      length_scale: [C] length scales, in the units of t (for "periodic", in
        the units of the sine argument, as tfp's ExpSinSquared defines it).
      period: [C] periods in the units of t; only for "periodic".
    """
    one = tf.ones([], dtype=length_scale.dtype)
    if kernel == "rbf":
        return psd.ExponentiatedQuadratic(amplitude=one, length_scale=length_scale)
    if kernel == "matern32":
        return psd.MaternThreeHalves(amplitude=one, length_scale=length_scale)
    if kernel == "matern52":
        return psd.MaternFiveHalves(amplitude=one, length_scale=length_scale)
    if kernel == "periodic":
        return psd.ExpSinSquared(amplitude=one, length_scale=length_scale, period=period)
    raise ValueError(f"unknown kernel {kernel!r}")


def unit_kernel_matrix(kernel: str, t: tf.Tensor, length_scale: tf.Tensor,
                       period: tf.Tensor | None = None) -> tf.Tensor:
    """[C, N, N] covariance of times t [C, N] under unit-amplitude kernels [C]."""
    x = t[..., tf.newaxis]  # [C, N, 1]: one feature dimension
    return unit_kernel(kernel, length_scale, period).matrix(x, x)

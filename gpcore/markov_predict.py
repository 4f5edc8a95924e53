"""The exact posterior of a Markov kernel at new times in O(n + m): two
Kalman filters, one forward and one on the reversed series.

A stationary Matern process reversed in time is the same process, its
state with odd derivatives negated (statespace.time_reversal). At a new
time t*, the forward filter gives p(x* | observations at t <= t*) =
N(m_f, P_f), the reversed one p(x* | observations at t > t*) = N(m_b, P_b);
the posterior is p(x* | before) p(after | x*), with p(after | x*) =
p(x* | after) / p(x*) (prior N(0, Pinf)): a pseudo-observation of
precision L = P_b^-1 - Pinf^-1 and information P_b^-1 m_b, so
P = (I + P_f L)^-1 P_f and m = (I + P_f L)^-1 (m_f + P_f P_b^-1 m_b).
Used by gpcore.predict for series over config.MARKOV_ABOVE points
(docs/design.md, "Long series: Markov kernels").
"""
from __future__ import annotations

import numpy as np
import tensorflow as tf

from gpcore import statespace
from gpcore.kernels import components, kernel as kernel_named


def posterior(p: dict, t: np.ndarray, y: np.ndarray, t_new: np.ndarray, parts: bool = False):
    """(mean [m], variance [m]) of the latent f at t_new; with parts, the
    list of each component's posterior mean [m] instead (less the constant
    mean, as gpcore.predict.component_means).

    Args:
      p: checked params (gpcore.predict.checked_params) of a Markov kernel.
      t, y: [n] observed times and values, finite. t_new: [m] times.
    """
    kernel = kernel_named(p["kernel"])
    given = p["components"]
    amp2 = given[0]["amplitude"] ** 2
    values = []
    for c, _ in enumerate(components(kernel)):
        if c:
            values.append(given[c]["amplitude"] ** 2 / amp2)
        values.append(given[c]["length_scale"])
    params = [tf.constant([v], tf.float64) for v in values]
    noise = tf.constant([p["noise_variance"] / amp2], tf.float64)
    # Observations first at equal times: the forward filter sees them, the
    # reversed one does not, so the two sets are disjoint.
    times = np.r_[t, t_new]
    new = np.r_[np.zeros(t.size, bool), np.ones(t_new.size, bool)]
    order = np.lexsort((new, times))
    z = np.r_[(y - p["mean"]) / np.sqrt(amp2), np.zeros(t_new.size)][order]
    mask = (~new[order]).astype(float)
    times = times[order]

    def states(tt, zz, mm):
        mean, cov = statespace.filtered(kernel, params, noise, tf.constant(tt[None]),
                                        tf.constant(zz[None]), tf.constant(mm[None]),
                                        with_states=True)
        return mean.numpy()[0], cov.numpy()[0]

    m_f, p_f = states(times, z, mask)
    m_b, p_b = (v[::-1] for v in states(-times[::-1], z[::-1], mask[::-1]))
    signs = np.array(statespace.time_reversal(kernel))
    m_b, p_b = m_b * signs, p_b * signs[:, None] * signs[None, :]
    at = ~mask.astype(bool)
    m_f, p_f, m_b, p_b = m_f[at], p_f[at], m_b[at], p_b[at]
    _, _, pinf = statespace.model(kernel, params, tf.zeros([1, 1], tf.float64))
    pinf = pinf.numpy()[0]
    inv_b = np.linalg.inv(p_b)
    precision = inv_b - np.linalg.inv(pinf)
    eye = np.eye(pinf.shape[0])
    left = np.linalg.inv(eye + p_f @ precision)
    cov = left @ p_f
    mean = np.einsum("mij,mj->mi", left, m_f + np.einsum("mij,mjk,mk->mi", p_f, inv_b, m_b))
    h = statespace.observation_vector(kernel).numpy()
    # Back to the caller's order of t_new.
    where = order[at] - t.size
    if parts:
        means, start = [], 0
        for base in components(kernel):
            d = statespace.STATE_DIMENSION[base.name]
            part = np.empty(t_new.size)
            part[where] = np.sqrt(amp2) * mean[:, start]
            means.append(part)
            start += d
        return means
    f_mean, f_var = np.empty(t_new.size), np.empty(t_new.size)
    f_mean[where] = p["mean"] + np.sqrt(amp2) * (mean @ h)
    f_var[where] = amp2 * np.einsum("i,mij,j->m", h, cov, h)
    return f_mean, np.maximum(f_var, 0.0)

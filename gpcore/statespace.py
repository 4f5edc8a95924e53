"""Exact O(n) likelihoods of Markov kernels from their state-space form.

A Matern kernel with nu = d - 1/2 (matern12, matern32, matern52: d = 1, 2,
3) is the covariance of the first coordinate of a d-dimensional linear SDE
dx = F x dt + L dW, stationary covariance Pinf; a sum of them stacks the
states block-diagonally. On sorted times, x_k = A_k x_{k-1} + q_k with
A_k = exp(F dt_k) and q_k ~ N(0, Pinf - A_k Pinf A_k'): a repeated time
(dt = 0) gives A = I and no new noise. The observation is y_k = H x_k + e_k
with e_k ~ N(0, r) (unit kernel variance, noise ratio r; likelihood.py).

The Kalman filter whitens the data exactly: its innovations v_k / sqrt(S_k)
are L^-1 y for the Cholesky factor L of K1 + r I. Run on two columns (y and
the constant 1) they give the sums the profiled likelihood needs (y'A^-1 y,
y'A^-1 1, 1'A^-1 1, log|A|) without any N x N matrix.

The filter runs as a parallel associative scan over per-step elements
(Sarkka & Garcia-Fernandez 2021, "Temporal parallelization of Bayesian
smoothers"): 2 log2(n) sequential levels of elementwise work instead of n
sequential steps, which in a TensorFlow graph cost tens of microseconds each
(docs/design.md, "Long series: Markov kernels"). A masked point (missing or
padding) is a step without an observation (H = 0). The first step starts
from the stationary prior: A = 0, Q = Pinf.

For the likelihood (profiled_nll) the scan runs in chunks of time steps,
each from the previous chunk's last state, with a gradient that recomputes
one chunk at a time (chunked_sums): memory is one chunk's tape plus O(n)
inputs. filtered(), for the smoother's states, is one scan of the series.

Shapes: time axis first inside the scan, [n, C, d, d], so that batched
matrix products broadcast over (n, C).
"""
from __future__ import annotations

import functools
import math

import tensorflow as tf

from gpcore.kernels import Kernel, components

LOG_2PI = math.log(2.0 * math.pi)

# The unchunked scan's levels (filtered): series up to 2^MAX_LEVELS points.
MAX_LEVELS = 21
MAX_POINTS = 1 << MAX_LEVELS

# Points (members x time steps) per chunk of the chunked scan: the gradient
# keeps one chunk's intermediates (docs/design.md, "Long series: Markov
# kernels"); a chunk has at least MIN_CHUNK_STEPS steps.
CHUNK_POINTS = 1 << 15
MIN_CHUNK_STEPS = 1 << 10

# States up to this size multiply by broadcasting (`_matmul`).
SMALL_STATE = 3

# Base kernels with an exact state-space form, and their state dimension.
STATE_DIMENSION = {"matern12": 1, "matern32": 2, "matern52": 3}


def state_dimension(kernel: Kernel) -> int:
    return sum(STATE_DIMENSION[base.name] for base in components(kernel))


def _component_model(name: str, length_scale, weight):
    """(lam [C], nilpotent N [C, d, d], Pinf [C, d, d]) of one component:
    F = N - lam I, with (F + lam I)^d = 0, so exp(F dt) is a finite sum."""
    d = STATE_DIMENSION[name]
    lam = math.sqrt(2.0 * d - 1.0) / length_scale  # sqrt(2 nu) / l
    zero, one = tf.zeros_like(lam), tf.ones_like(lam)
    w = weight
    if d == 1:
        n = tf.zeros_like(lam)[:, None, None]
        pinf = w[:, None, None] * one[:, None, None]
    elif d == 2:
        # F = [[0, 1], [-lam^2, -2 lam]]; N = F + lam I.
        n = tf.stack([tf.stack([lam, one], -1), tf.stack([-lam * lam, -lam], -1)], -2)
        pinf = w[:, None, None] * tf.stack([tf.stack([one, zero], -1),
                                             tf.stack([zero, lam * lam], -1)], -2)
    else:
        # F = [[0, 1, 0], [0, 0, 1], [-lam^3, -3 lam^2, -3 lam]].
        l2 = lam * lam
        n = tf.stack([tf.stack([lam, one, zero], -1),
                      tf.stack([zero, lam, one], -1),
                      tf.stack([-l2 * lam, -3.0 * l2, -2.0 * lam], -1)], -2)
        kappa = l2 / 3.0
        pinf = w[:, None, None] * tf.stack([tf.stack([one, zero, -kappa], -1),
                                             tf.stack([zero, kappa, zero], -1),
                                             tf.stack([-kappa, zero, l2 * l2], -1)], -2)
    return lam, n, pinf


def _transition(lam, nil, dt):
    """exp(F dt) [n, C, d, d] for dt [n, C]: e^{-lam dt} sum_k (N dt)^k / k!."""
    d = nil.shape[-1]
    eye = tf.eye(d, dtype=dt.dtype)
    term = eye + tf.zeros_like(dt)[..., None, None]
    total = term
    for k in range(1, d):
        term = tf.matmul(term, nil) * (dt / k)[..., None, None]
        total = total + term
    return tf.exp(-lam * dt)[..., None, None] * total


def _block_diagonal(blocks):
    """[..., D, D] from square blocks [..., d_c, d_c]."""
    if len(blocks) == 1:
        return blocks[0]
    return tf.linalg.LinearOperatorBlockDiag(
        [tf.linalg.LinearOperatorFullMatrix(b) for b in blocks]).to_dense()


def model(kernel: Kernel, params, dt, first_from_prior: bool = True):
    """Per-step transitions and process noise of kernel on steps dt.

    Args:
      kernel: a Markov kernel (config.is_markov). params: list of [C] tensors, its
        shape parameters in `parameters` order (variance ratios too).
      dt: [n, C] time steps. first_from_prior: dt[0] is ignored and the
        first step starts from the stationary prior (A = 0, Q = Pinf);
        False: every step is a transition (a chunk after the first).
    Returns:
      (A [n, C, D, D], Q [n, C, D, D], Pinf [C, D, D]).
    """
    parts = components(kernel)
    transitions, stationary = [], []
    for c, base in enumerate(parts):
        if len(parts) == 1:
            length, weight = params[0], tf.ones_like(params[0])
        else:
            ratio, shape = kernel.layout[c]
            length = params[shape[0]]
            weight = tf.ones_like(length) if ratio is None else params[ratio]
        lam, nil, pinf = _component_model(base.name, length, weight)
        transitions.append(_transition(lam, nil, dt))
        stationary.append(pinf)
    a = _block_diagonal(transitions)
    pinf = _block_diagonal(stationary)
    if first_from_prior:
        first = tf.range(tf.shape(dt)[0]) == 0
        a = tf.where(first[:, None, None, None], tf.zeros_like(a), a)
    q = pinf - tf.matmul(tf.matmul(a, pinf), a, transpose_b=True)
    # Symmetrise: round-off in A Pinf A' must not make Q asymmetric.
    q = 0.5 * (q + tf.linalg.matrix_transpose(q))
    return a, q, pinf


def time_reversal(kernel: Kernel):
    """[D] signs S: the reversed process's state is S x (odd derivatives flip)."""
    signs = []
    for base in components(kernel):
        signs += [(-1.0) ** i for i in range(STATE_DIMENSION[base.name])]
    return signs


def observation_vector(kernel: Kernel, dtype=tf.float64):
    return _observation_vector(kernel, dtype)


def _observation_vector(kernel: Kernel, dtype):
    """H [D]: the sum of each component's first state coordinate."""
    rows = []
    for base in components(kernel):
        d = STATE_DIMENSION[base.name]
        rows += [1.0] + [0.0] * (d - 1)
    return tf.constant(rows, dtype)


def _elements(a, q, h, obs, noise):
    """Associative-scan elements of each step (A, b, C, eta, J).

    a, q: [n, C, D, D]; h: [n, C, D] the observation row (0 where masked);
    obs: [n, C, K] K data columns (0 where masked); noise: [C].
    """
    s = tf.einsum("ncd,ncde,nce->nc", h, q, h) + noise  # [n, C]
    qh = tf.einsum("ncde,nce->ncd", q, h)               # Q H'
    gain = qh / s[..., None]                             # K [n, C, D]
    eye = tf.eye(a.shape[-1], dtype=a.dtype)
    ikh = eye - gain[..., :, None] * h[..., None, :]     # I - K H
    elem_a = tf.matmul(ikh, a)
    elem_b = gain[..., :, None] * obs[..., None, :]      # [n, C, D, K]
    elem_c = q - gain[..., :, None] * qh[..., None, :]   # (I - K H) Q = Q - K S K'
    elem_c = 0.5 * (elem_c + tf.linalg.matrix_transpose(elem_c))
    ha = tf.einsum("ncd,ncde->nce", h, a)                # H A [n, C, D]
    elem_eta = ha[..., :, None] * (obs / s[..., None])[..., None, :]  # A'H' S^-1 y
    elem_j = ha[..., :, None] * (ha / s[..., None])[..., None, :]     # A'H' S^-1 H A
    return elem_a, elem_b, elem_c, elem_eta, elem_j


def _matmul(a, b, transpose_a=False, transpose_b=False):
    """Batched product of small matrices [..., D, D] x [..., D, K]: for D
    up to SMALL_STATE as a broadcast multiply and sum, which on CPU took a
    fraction of BatchMatMul's time per tiny matrix (docs/design.md, "Long
    series: Markov kernels")."""
    if transpose_a:
        a = tf.linalg.matrix_transpose(a)
    if transpose_b:
        b = tf.linalg.matrix_transpose(b)
    if a.shape[-1] > SMALL_STATE:
        return tf.matmul(a, b)
    return tf.reduce_sum(a[..., :, :, None] * b[..., None, :, :], axis=-2)


def _inverse(m):
    """[..., D, D] inverses: closed form for D <= 2, else tf.linalg.inv."""
    d = m.shape[-1]
    if d == 1:
        return 1.0 / m
    if d == 2:
        a, b, c, e = m[..., 0, 0], m[..., 0, 1], m[..., 1, 0], m[..., 1, 1]
        det = a * e - b * c
        return tf.stack([tf.stack([e, -b], -1), tf.stack([-c, a], -1)], -2) / det[..., None, None]
    return tf.linalg.inv(m)


def _combine(first, second):
    """Element of (first then second): Sarkka & Garcia-Fernandez's operator."""
    a_i, b_i, c_i, eta_i, j_i = first
    a_j, b_j, c_j, eta_j, j_j = second
    eye = tf.eye(a_i.shape[-1], dtype=a_i.dtype)
    w = _inverse(eye + _matmul(c_i, j_j))               # (I + C_i J_j)^-1
    aw = _matmul(a_j, w)
    a = _matmul(aw, a_i)
    b = _matmul(aw, b_i + _matmul(c_i, eta_j)) + b_j
    c = _matmul(_matmul(aw, c_i), a_j, transpose_b=True) + c_j
    # (I + J_j C_i)^-1 = W' (C, J symmetric).
    a_w = _matmul(a_i, w, transpose_a=True, transpose_b=True)  # A_i' W'
    eta = _matmul(a_w, eta_j - _matmul(j_j, b_i)) + eta_i
    j = _matmul(_matmul(a_w, j_j), a_i) + j_i
    return a, b, 0.5 * (c + tf.linalg.matrix_transpose(c)), eta, 0.5 * (j + tf.linalg.matrix_transpose(j))


def _scan_parallel(elements):
    """Inclusive prefix combination of elements (tuple of [n, ...]) along
    axis 0 by pairs (Blelloch's scheme), unrolled to MAX_LEVELS levels of
    dynamic size: no conditionals in the graph. (tfp.math.scan_associative
    builds conditionals per level for an unknown length, and inside the
    fitter's loop its graph grew too large to run: docs/design.md, "Long
    series: Markov kernels".) An odd level is padded with the identity
    element (A = I, the rest 0)."""
    return _scan_level(elements, MAX_LEVELS)


def _identity_like(elements):
    a = elements[0]
    eye = tf.eye(a.shape[-1], dtype=a.dtype) + tf.zeros_like(a[:1])
    return (eye,) + tuple(tf.zeros_like(e[:1]) for e in elements[1:])


def _levels(steps: int) -> int:
    """Levels of the pairwise scan that cover `steps` steps."""
    return max(1, (steps - 1).bit_length())


def _scan_level(x, levels):
    if levels == 0:
        return x
    pairs_of, spread = _level_functions(x[0].shape[-1])
    padded, pairs = pairs_of(x)
    return spread(padded, _scan_level(pairs, levels - 1), tf.shape(x[0])[0])


@functools.lru_cache(maxsize=None)
def _level_functions(d: int):
    """The two halves of a level for state dimension d, as functions traced
    once and called per level: unrolled inline, the levels and their
    gradients made a graph too slow to trace (docs/design.md, "Long
    series: Markov kernels")."""
    square = tf.TensorSpec([None, None, d, d], tf.float64)
    column = tf.TensorSpec([None, None, d, 2], tf.float64)
    elements = (square, column, square, column, square)
    compiled = functools.partial(tf.function, autograph=False,
                                 experimental_attributes={"_noinline": True})

    def pairs(x):
        """(x padded to even length with the identity, its adjacent pairs combined)."""
        pad = tf.shape(x[0])[0] % 2
        padded = tuple(tf.concat([e, tf.repeat(i, pad, axis=0)], 0)
                       for e, i in zip(x, _identity_like(x)))
        return padded, _combine(tuple(e[0::2] for e in padded), tuple(e[1::2] for e in padded))

    def spread(padded, odd, n):
        """The prefixes of all n points from those ending at odd points."""
        later = _combine(tuple(e[:-1] for e in odd), tuple(e[2::2] for e in padded))
        even = tuple(tf.concat([e[:1], l], 0) for e, l in zip(padded, later))
        return tuple(tf.reshape(tf.stack([e, o], 1), tf.concat([[-1], tf.shape(e)[1:]], 0))[:n]
                     for e, o in zip(even, odd))

    return (compiled(pairs, input_signature=[elements]),
            compiled(spread, input_signature=[elements, elements,
                                              tf.TensorSpec([], tf.int32)]))


def filtered(kernel: Kernel, params, noise_ratio, t, y, mask, parallel: bool = True,
             with_states: bool = False):
    """Innovations of the Kalman filter on two data columns (y and 1).

    Args:
      kernel: Markov kernel. params: list of [C] shape parameters.
      noise_ratio: [C] r (plus any jitter). t, y, mask: [C, n], sorted t;
        masked points are ignored (their t must still be sorted, e.g. the
        last time repeated for padding).
      parallel: associative scan (True) or a sequential tf.scan.
      with_states: return the predicted states instead: (means [C, n, D]
        of the y column, covariances [C, n, D, D]), each step's state given
        the observations before it (at a masked step, also its filtered one).
    Returns:
      (v [C, n, 2] innovations of y and of 1, s [C, n] their variances);
      masked points have v = 0, s = 1.
    """
    dtype = t.dtype
    tt = tf.transpose(t)                                   # [n, C]
    dt = tf.concat([tf.zeros_like(tt[:1]), tt[1:] - tt[:-1]], axis=0)
    a, q, _ = model(kernel, params, dt)
    m = tf.transpose(mask)                                 # [n, C]
    h = _observation_vector(kernel, dtype)[None, None, :] * m[..., None]  # [n, C, D]
    obs = tf.stack([tf.transpose(y) * m, m], axis=-1)      # [n, C, 2]
    if parallel:
        elements = _elements(a, q, h, obs, noise_ratio)
        _, means, covs, _, _ = _scan_parallel(elements)   # filtered, [n, C, D, 2], [n, C, D, D]
        prev_mean = tf.concat([tf.zeros_like(means[:1]), means[:-1]], axis=0)
        prev_cov = tf.concat([tf.zeros_like(covs[:1]), covs[:-1]], axis=0)
        pred_mean = tf.matmul(a, prev_mean)                # [n, C, D, 2]
        pred_cov = tf.matmul(tf.matmul(a, prev_cov), a, transpose_b=True) + q
    else:
        pred_mean, pred_cov = _sequential_predictions(a, q, h, obs, noise_ratio)
    if with_states:
        return tf.transpose(pred_mean[..., 0], [1, 0, 2]), tf.transpose(pred_cov, [1, 0, 2, 3])
    s = tf.einsum("ncd,ncde,nce->nc", h, pred_cov, h) + noise_ratio
    v = obs - tf.einsum("ncd,ncdk->nck", h, pred_mean)
    s = m * s + (1.0 - m)
    return tf.transpose(v, [1, 0, 2]), tf.transpose(s)


def _sequential_predictions(a, q, h, obs, noise):
    """Predicted means [n, C, D, 2] and covariances [n, C, D, D], one step
    after another (tf.scan): what the parallel scan is measured against
    (benchmarks/long_series.py)."""
    d = a.shape[-1]
    batch = tf.shape(a)[1]

    def step(carry, elem):
        mean, cov = carry[:2]                              # filtered at k-1
        a_k, q_k, h_k, y_k = elem
        p_mean = tf.matmul(a_k, mean)
        p_cov = tf.matmul(tf.matmul(a_k, cov), a_k, transpose_b=True) + q_k
        ph = tf.einsum("cde,ce->cd", p_cov, h_k)
        s = tf.einsum("cd,cd->c", h_k, ph) + noise
        gain = ph / s[:, None]
        innovation = y_k - tf.einsum("cd,cdk->ck", h_k, p_mean)
        f_mean = p_mean + gain[:, :, None] * innovation[:, None, :]
        f_cov = p_cov - gain[:, :, None] * ph[:, None, :]
        return f_mean, f_cov, p_mean, p_cov

    means = tf.zeros([batch, d, 2], a.dtype)
    covs = tf.zeros([batch, d, d], a.dtype)
    out = tf.scan(step, (a, q, h, obs), initializer=(means, covs, means, covs))
    return out[2], out[3]


def whitened_sums(v, s, mask):
    """The profile's sums from innovations: (y'A^-1 y, y'A^-1 1, 1'A^-1 1,
    log|A|), each [C]; v [C, n, 2], s [C, n]."""
    vy, v1 = v[..., 0], v[..., 1]
    inv = mask / s
    return (tf.reduce_sum(vy * vy * inv, -1), tf.reduce_sum(vy * v1 * inv, -1),
            tf.reduce_sum(v1 * v1 * inv, -1), tf.reduce_sum(mask * tf.math.log(s), -1))


def profiled_nll(kernel: Kernel, params, noise_ratio, t, y, mask, parallel: bool = True,
                 chunk_points: int | None = None):
    """likelihood.profiled_nll in O(n) for a Markov kernel.

    Args:
      kernel: Markov kernel (unit amplitude). params: list of [C] shape
        parameters. noise_ratio: [C]. t, y, mask: [C, n], t sorted.
      parallel: the chunked parallel scan (True) or a sequential tf.scan.
      chunk_points: points (members x steps) per chunk of the parallel
        scan; default CHUNK_POINTS.
    Returns:
      (nll [C], mean [C], scale2 [C]), as likelihood.profiled_nll.
    """
    if parallel:
        yy, y1, one1, log_det = chunked_sums(kernel, params, noise_ratio, t, y, mask,
                                             chunk_points or CHUNK_POINTS)
    else:
        v, s = filtered(kernel, params, noise_ratio, t, y, mask, parallel)
        yy, y1, one1, log_det = whitened_sums(v, s, mask)
    n = tf.reduce_sum(mask, axis=-1)
    mean = y1 / one1
    scale2 = (yy - y1 * mean) / n
    nll = 0.5 * (n * (LOG_2PI + tf.math.log(scale2) + 1.0) + log_det)
    return nll, mean, scale2


def _chunk_sums(kernel, params, noise, dt, y, mask, prior_mean, prior_cov, first, levels):
    """One chunk of the filter: its whitened sums and its last state.

    Args:
      params, noise: [C] tensors. dt, y, mask: [m, C], time first; dt[0] the
        step from the previous chunk's last time (0 for the first chunk).
      prior_mean [C, D, 2], prior_cov [C, D, D]: the filtered state at the
        previous chunk's last time; first: this is the series' first chunk,
        whose prior is the stationary one (mean 0, Pinf), for any prior given.
      levels: the pairwise scan's levels, 2^levels >= m.
    Returns:
      (4 sums [C] as whitened_sums, filtered mean [C, D, 2] and covariance
      [C, D, D] after the chunk's last step).
    """
    a, q, pinf = model(kernel, params, dt, first_from_prior=False)
    prior_mean = tf.where(first, tf.zeros_like(prior_mean), prior_mean)
    prior_cov = tf.where(first, pinf, prior_cov)
    h = _observation_vector(kernel, dt.dtype)[None, None, :] * mask[..., None]  # [m, C, D]
    obs = tf.stack([y * mask, mask], axis=-1)                                  # [m, C, 2]
    # The first step's element conditions on the prior: A = 0, Q its
    # predicted covariance, and b shifted by its predicted mean
    # ((I - K H) m + K y = m + K (y - H m)).
    mean0 = tf.matmul(a[0], prior_mean)
    cov0 = tf.matmul(tf.matmul(a[0], prior_cov), a[0], transpose_b=True) + q[0]
    elements = _elements(tf.concat([tf.zeros_like(a[:1]), a[1:]], 0),
                         tf.concat([cov0[None], q[1:]], 0), h,
                         tf.concat([obs[:1] - tf.einsum("cd,cdk->ck", h[0], mean0)[None],
                                    obs[1:]], 0), noise)
    elements = (elements[0], tf.concat([elements[1][:1] + mean0[None], elements[1][1:]], 0),
                ) + elements[2:]
    _, means, covs, _, _ = _scan_level(elements, levels)   # filtered, [m, C, D, 2], [m, C, D, D]
    prev_mean = tf.concat([prior_mean[None], means[:-1]], axis=0)
    prev_cov = tf.concat([prior_cov[None], covs[:-1]], axis=0)
    pred_mean = tf.matmul(a, prev_mean)
    pred_cov = tf.matmul(tf.matmul(a, prev_cov), a, transpose_b=True) + q
    s = tf.einsum("ncd,ncde,nce->nc", h, pred_cov, h) + noise
    v = obs - tf.einsum("ncd,ncdk->nck", h, pred_mean)
    s = mask * s + (1.0 - mask)
    sums = whitened_sums(tf.transpose(v, [1, 0, 2]), tf.transpose(s), tf.transpose(mask))
    return sums, means[-1], covs[-1]


def chunked_sums(kernel: Kernel, params, noise_ratio, t, y, mask, chunk_points: int):
    """whitened_sums of the filter, run chunk after chunk of time steps.

    Each chunk is one parallel scan that starts from the previous chunk's
    last filtered state. The gradient is hand-made (tf.custom_gradient):
    the forward pass keeps only each chunk's starting state, and the
    backward pass recomputes one chunk at a time, from the last, under a
    tape, carrying the adjoint of the state back. Memory is therefore one
    chunk's autodiff intermediates plus O(n) inputs, and the work is the
    forward pass twice plus its gradient (docs/design.md, "Long series:
    Markov kernels").

    Args:
      params: list of [C] shape parameters. noise_ratio: [C].
      t, y, mask: [C, n], t sorted. chunk_points: members x steps per
        chunk; steps at least MIN_CHUNK_STEPS (or chunk_points if fewer).
    Returns:
      (y'A^-1 y, y'A^-1 1, 1'A^-1 1, log|A|), each [C].
    """
    least = min(MIN_CHUNK_STEPS, chunk_points)
    levels = _levels(max(least, chunk_points))
    dtype = t.dtype
    members, n = tf.shape(t)[0], tf.shape(t)[1]
    steps_cap = tf.maximum(least, chunk_points // members)
    chunks = (n + steps_cap - 1) // steps_cap
    steps = (n + chunks - 1) // chunks              # even chunks: padding < chunks
    pad = chunks * steps - n
    tt = tf.transpose(t)                             # [n, C]
    dt = tf.concat([tf.zeros_like(tt[:1]), tt[1:] - tt[:-1]], axis=0)
    # Padding: zero steps without observations leave the state as it is.
    shaped = lambda v: tf.reshape(tf.pad(v, [[0, pad], [0, 0]]), [chunks, steps, members])
    dt_c, y_c, mask_c = shaped(dt), shaped(tf.transpose(y)), shaped(tf.transpose(mask))
    d = state_dimension(kernel)
    zero_mean = tf.zeros(tf.stack([members, d, 2]), dtype)
    zero_cov = tf.zeros(tf.stack([members, d, d]), dtype)
    count = len(params)

    def chunk(i, theta, prior_mean, prior_cov):
        return _chunk_sums(kernel, list(theta[:count]), theta[count], dt_c[i], y_c[i], mask_c[i],
                           prior_mean, prior_cov, tf.equal(i, 0), levels)

    @tf.custom_gradient
    def sums_of(*theta):
        def body(i, total, prior_mean, prior_cov, starts_mean, starts_cov):
            sums, mean, cov = chunk(i, theta, prior_mean, prior_cov)
            return (i + 1, tuple(a + b for a, b in zip(total, sums)), mean, cov,
                    starts_mean.write(i, prior_mean), starts_cov.write(i, prior_cov))

        zeros = tuple(tf.zeros([members], dtype) for _ in range(4))
        _, total, _, _, starts_mean, starts_cov = tf.while_loop(
            lambda i, *_: i < chunks, body,
            (tf.constant(0), zeros, zero_mean, zero_cov,
             tf.TensorArray(dtype, size=chunks), tf.TensorArray(dtype, size=chunks)),
            parallel_iterations=1)
        starts_mean, starts_cov = starts_mean.stack(), starts_cov.stack()

        def gradient(*upstream):
            upstream = [tf.zeros([members], dtype) if u is None else u for u in upstream]

            def back(i, grads, adj_mean, adj_cov):
                prior_mean, prior_cov = starts_mean[i], starts_cov[i]
                with tf.GradientTape() as tape:
                    tape.watch([theta, prior_mean, prior_cov])
                    sums, mean, cov = chunk(i, theta, prior_mean, prior_cov)
                    target = (sum(tf.reduce_sum(u * s) for u, s in zip(upstream, sums))
                              + tf.reduce_sum(adj_mean * mean) + tf.reduce_sum(adj_cov * cov))
                g_theta, g_mean, g_cov = tape.gradient(
                    target, [list(theta), prior_mean, prior_cov],
                    unconnected_gradients=tf.UnconnectedGradients.ZERO)
                return (i - 1, tuple(a + b for a, b in zip(grads, g_theta)), g_mean, g_cov)

            _, grads, _, _ = tf.while_loop(
                lambda i, *_: i >= 0, back,
                (chunks - 1, tuple(tf.zeros_like(v) for v in theta), zero_mean, zero_cov),
                # One chunk at a time: the default (10) recomputes later
                # chunks ahead of their adjoint, keeping their tapes alive.
                parallel_iterations=1)
            return list(grads)

        return total, gradient

    return sums_of(*params, noise_ratio)

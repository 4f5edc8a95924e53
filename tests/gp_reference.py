"""Independent numpy reference for the GP model, for tests only.

Kernels follow tfp.math.psd_kernels' definitions; the likelihood is the
textbook Cholesky formula (Rasmussen & Williams, Algorithm 2.1). tfp_kernel
gives TFP's own kernels, the other independent reference.
"""
import numpy as np

# float64 round-off on an N=300 Cholesky is ~1e-13 relative; 1e-8 leaves room
# for the different operation order of TF and numpy.
RTOL_LIKELIHOOD = 1e-8


def kernel_matrix(kernel, t1, t2, amplitude, length_scale, period=None, centre=None):
    """amplitude^2 k(t1, t2); `linear` (amplitude: the slope's sd) measures
    times from `centre`, the midpoint of the fitted series' observed span."""
    d = np.abs(t1[:, None] - t2[None, :])
    if kernel == "linear":
        return amplitude ** 2 * np.outer(t1 - centre, t2 - centre)
    if kernel == "matern12":
        k = np.exp(-d / length_scale)
    elif kernel == "rbf":
        k = np.exp(-0.5 * (d / length_scale) ** 2)
    elif kernel == "matern32":
        r = np.sqrt(3.0) * d / length_scale
        k = (1.0 + r) * np.exp(-r)
    elif kernel == "matern52":
        r = np.sqrt(5.0) * d / length_scale
        k = (1.0 + r + r * r / 3.0) * np.exp(-r)
    elif kernel == "periodic":
        k = np.exp(-2.0 * np.sin(np.pi * d / period) ** 2 / length_scale ** 2)
    else:
        raise ValueError(kernel)
    return amplitude ** 2 * k


def nll(kernel, t, y, mean, amplitude, length_scale, noise_variance, period=None):
    """Negative log marginal likelihood of finite points of y, nats."""
    row = {"mean": mean, "noise_variance": noise_variance, "components": [
        {"kernel": kernel, "amplitude": amplitude, "length_scale": length_scale,
         "period": period}]}
    return row_nll(row, t, y)


def sample(rng, kernel, n, amplitude=1.0, length_scale=1.0, noise_variance=0.01,
           mean=0.0, period=None, span=10.0):
    """(t [n], y [n]): irregular times on [0, span] and a GP draw."""
    t = np.sort(rng.uniform(0.0, span, n))
    cov = kernel_matrix(kernel, t, t, amplitude, length_scale, period, centre(t))
    cov += (noise_variance + 1e-10) * np.eye(n)
    return t, mean + np.linalg.cholesky(cov) @ rng.standard_normal(n)


def tfp_kernel(kernel, amplitude, length_scale, period=None, centre=None):
    """TFP's PositiveSemidefiniteKernel of that name (float64 scalars);
    `linear` is TFP's Linear without bias, shifted to `centre`."""
    import tensorflow as tf
    import tensorflow_probability as tfp

    psd = tfp.math.psd_kernels
    if kernel == "linear":
        return psd.Linear(slope_amplitude=tf.constant(amplitude, tf.float64),
                          shift=tf.constant(centre, tf.float64))
    amp, ell = (tf.constant(v, tf.float64) for v in (amplitude, length_scale))
    if kernel == "periodic":
        return psd.ExpSinSquared(amp, ell, tf.constant(period, tf.float64))
    return {"rbf": psd.ExponentiatedQuadratic, "matern12": psd.MaternOneHalf,
            "matern32": psd.MaternThreeHalves, "matern52": psd.MaternFiveHalves}[kernel](amp, ell)


def centre(t):
    """The midpoint of the observed span of times t: `linear`'s centre."""
    return 0.5 * (np.min(t) + np.max(t))


def components_matrix(components, t1, t2, centre=None):
    """Sum over an output row's `components` of amplitude^2 k(t1, t2)."""
    return sum(kernel_matrix(c["kernel"], t1, t2, c["amplitude"], c["length_scale"],
                             c["period"], centre) for c in components)


def row_nll(row, t, y):
    """Negative log marginal likelihood (nats) of the finite points under an
    output row's mean, components and noise_variance, numpy only."""
    keep = np.isfinite(y)
    t, y = np.asarray(t, float)[keep], np.asarray(y, float)[keep]
    cov = (components_matrix(row["components"], t, t, centre(t))
           + row["noise_variance"] * np.eye(t.size))
    chol = np.linalg.cholesky(cov)
    z = np.linalg.solve(chol, y - row["mean"])
    return 0.5 * z @ z + np.log(np.diag(chol)).sum() + 0.5 * t.size * np.log(2 * np.pi)


def seasonal(rng, n, span=100.0, period=None, noise=0.3):
    """(t [n], y [n], period): irregular times on [0, span], a slow trend
    plus a non-sinusoidal cycle of period span/12..span/4, and noise."""
    period = period or span / rng.uniform(4.0, 12.0)
    t = np.sort(rng.uniform(0.0, span, n))
    phase = 2 * np.pi * t / period
    y = (0.02 * t + np.sin(phase) + 0.5 * np.sin(2 * phase + 1.0)
         + noise * rng.standard_normal(n))
    return t, y, period


def calibration(t, y, row, t_new, centre=None, points=None):
    """(scale, extra) of the calibrated interval at t_new [m] past t [n]
    (docs/design.md, "Forecast intervals"), numpy: extra [m], the GLS
    mean's variance; scale, sqrt(n / (n - 1)) (the fitted s^2 is Q / n,
    the flat-prior predictive's Q / (n - 1)) times the RMS of the
    standardised errors up to m points ahead of 16 rolling origins over
    the second half (each with its own GLS mean, solved afresh, over the
    same sqrt(n / (n - 1)) times its sd), clipped to [1, 4]: the
    interval's half-width is q * scale * sqrt(sd_observed^2 + extra).
    points: the n whose s^2 the fit profiled, where t [n] is a longer
    series' last window; by default t.size."""
    comps, noise, n = row["components"], row["noise_variance"], t.size
    points = n if points is None else points
    profiled = np.sqrt(points / (points - 1))
    kff = components_matrix(comps, t, t, centre)
    a = kff + noise * np.eye(n)
    a1 = np.linalg.solve(a, np.ones(n))
    extra = (1 - components_matrix(comps, t_new, t, centre) @ a1) ** 2 / a1.sum()
    errors = []
    for o in np.unique(np.linspace(max(n // 2, 2), n - 1, 16).round().astype(int)):
        ahead = np.arange(o, min(o + t_new.size, n))
        ao, kx = a[:o, :o], kff[ahead, :o]
        b1 = np.linalg.solve(ao, np.ones(o))
        level = b1 @ y[:o] / b1.sum()
        m = level + kx @ np.linalg.solve(ao, y[:o] - level)
        var = (kff[ahead, ahead] + noise - np.sum(kx * np.linalg.solve(ao, kx.T).T, axis=1)
               + (1 - kx @ b1) ** 2 / b1.sum())
        errors.append((y[ahead] - m) / (profiled * np.sqrt(var)))
    rms = np.sqrt(np.mean(np.concatenate(errors) ** 2))
    return profiled * np.clip(rms, 1.0, 4.0), extra

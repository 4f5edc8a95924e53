"""matern12, linear and linear+rbf fitted to series drawn from them: the
parameters come back, the fit is the optimum of an independent likelihood
(numpy, optimised by scipy), and its nll is tfd.GaussianProcess's."""
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_probability as tfp
from scipy import optimize

import gp_reference as ref
from gpcore import FitConfig, GPFitter, Series

tfd = tfp.distributions
SPAN = 100.0
SLOPES = (0.05, -0.2, 0.01)  # y per unit of t; the last within noise of zero
# scipy polishing gpcore's optimum may find this much lower (nats): the
# fitter's stopping tolerance, not another optimum.
OPTIMUM_SLACK = 0.01


def draw(kind, seed):
    """(t [n], y [n], truth) on [0, SPAN]."""
    rng = np.random.default_rng(seed)
    if kind == "matern12":
        t = np.sort(rng.uniform(0, SPAN, 150))
        cov = ref.kernel_matrix("matern12", t, t, 1.5, 10.0) + 0.01 * np.eye(t.size)
        return t, 2 + np.linalg.cholesky(cov) @ rng.standard_normal(t.size), dict(
            amplitude=1.5, length_scale=10.0, noise_variance=0.01)
    slope = SLOPES[seed]
    if kind == "linear":
        t = np.sort(rng.uniform(0, SPAN, 60))
        y = 2 + slope * (t - ref.centre(t)) + 0.5 * rng.standard_normal(t.size)
        return t, y, dict(slope=abs(slope), noise_variance=0.25)
    t = np.sort(rng.uniform(0, SPAN, 120))  # linear+rbf: a trend plus a smooth wiggle
    cov = ref.kernel_matrix("rbf", t, t, 0.8, 8.0) + 0.01 * np.eye(t.size)
    y = 2 + slope * (t - ref.centre(t)) + np.linalg.cholesky(cov) @ rng.standard_normal(t.size)
    return t, y, dict(slope=abs(slope), amplitude=0.8, length_scale=8.0, noise_variance=0.01)


@pytest.fixture(scope="module", params=["matern12", "linear", "linear+rbf"])
def fitted(request):
    kind = request.param
    data = [draw(kind, seed) for seed in range(3)]
    fits = GPFitter(FitConfig(kernel=kind)).fit(
        [Series(str(i), t, y) for i, (t, y, _) in enumerate(data)])
    return kind, data, fits


def test_fits_recover_the_parameters(fitted):
    kind, data, fits = fitted
    for (t, y, truth), fit in zip(data, fits):
        assert fit.status == "ok" and fit.converged and not fit.at_bound, fit
        parts = fit.components
        if kind == "matern12":
            (ou,) = parts
            # amplitude^2 / l is what a finite span pins down (the OU's
            # microergodic parameter): ~12 % sd at 150 points, so 30 %; l
            # itself only to a factor (10 length scales in the data), and
            # the noise, small beside the OU's own steps, to a factor 2.
            assert ou["amplitude"] ** 2 / ou["length_scale"] == pytest.approx(
                truth["amplitude"] ** 2 / truth["length_scale"], rel=0.3)
            assert truth["length_scale"] / 3 < ou["length_scale"] < truth["length_scale"] * 3
            assert truth["noise_variance"] / 2 < fit.noise_variance < truth["noise_variance"] * 2
            continue
        line = parts[0]
        assert line["kernel"] == "linear" and line["length_scale"] is None
        if kind == "linear":
            # One slope drawn: its sd comes back as |slope|, to within 3
            # standard errors of the least-squares slope.
            se = np.sqrt(truth["noise_variance"] / (t.size * t.var()))
            assert abs(line["amplitude"] - truth["slope"]) < 3 * se
            # Noise variance from 60 points: sd ~18 %, so 40 %.
            assert fit.noise_variance == pytest.approx(truth["noise_variance"], rel=0.4)
            continue
        wiggle = parts[1]
        # The wiggle (sd 0.8) tilts the best line by up to about
        # 0.8 / (SPAN / 2) = 0.016; its length scale from ~12 bumps to 30 %,
        # its amplitude to a factor 2; the noise from 120 points to 30 %.
        assert abs(line["amplitude"] - truth["slope"]) < 0.8 / (SPAN / 2)
        assert wiggle["length_scale"] == pytest.approx(truth["length_scale"], rel=0.3)
        assert truth["amplitude"] / 2 < wiggle["amplitude"] < truth["amplitude"] * 2
        assert fit.noise_variance == pytest.approx(truth["noise_variance"], rel=0.3)


def _row(kind, x):
    """An output row's parameters from x: mean, then logs of each
    component's amplitude (and length scale), then of the noise variance."""
    parts, i = [], 1
    for name in kind.split("+"):
        part = {"kernel": name, "amplitude": np.exp(x[i]), "length_scale": None, "period": None}
        i += 1
        if name != "linear":
            part["length_scale"] = np.exp(x[i])
            i += 1
        parts.append(part)
    return {"mean": x[0], "components": parts, "noise_variance": np.exp(x[i])}


def _x(fit):
    x = [fit.mean]
    for part in fit.components:
        x += [np.log(part["amplitude"])] + ([np.log(part["length_scale"])]
                                            if part["length_scale"] else [])
    return np.array(x + [np.log(fit.noise_variance)])


def test_fits_are_the_optimum_of_a_numpy_likelihood(fitted):
    """scipy (Nelder-Mead) on gp_reference.row_nll, from gpcore's optimum
    and from 0.5 away in every log coordinate, finds nothing lower."""
    kind, data, fits = fitted
    for (t, y, _), fit in zip(data, fits):
        x0 = _x(fit)
        assert ref.row_nll(_row(kind, x0), t, y) == pytest.approx(fit.nll, rel=1e-8)
        best = np.inf
        for shift in (0.0, 0.5, -0.5):
            start = x0 + np.r_[0.0, np.full(x0.size - 1, shift)]
            found = optimize.minimize(lambda x: ref.row_nll(_row(kind, x), t, y), start,
                                      method="Nelder-Mead",
                                      options={"xatol": 1e-7, "fatol": 1e-9, "maxiter": 5000})
            best = min(best, found.fun)
        assert fit.nll <= best + OPTIMUM_SLACK, (kind, fit.series_id, fit.nll, best)


def test_nll_is_tfd_gaussian_process_log_prob(fitted):
    """TFP's own kernels (MaternOneHalf, Linear shifted to the midpoint of
    the observed span, ExponentiatedQuadratic) at the fitted parameters."""
    kind, data, fits = fitted
    for (t, y, _), fit in zip(data, fits):
        kernel = None
        for part in fit.components:
            k = ref.tfp_kernel(part["kernel"], part["amplitude"], part["length_scale"],
                               centre=ref.centre(t))
            kernel = k if kernel is None else kernel + k
        gp = tfd.GaussianProcess(
            kernel, index_points=t[:, None],
            mean_fn=lambda x: tf.fill(tf.shape(x)[:-1], tf.constant(fit.mean, tf.float64)),
            observation_noise_variance=tf.constant(fit.noise_variance, tf.float64),
            jitter=0.0)
        # float64 Cholesky of n <= 150, done two ways: 1e-9 relative.
        assert -gp.log_prob(y).numpy() == pytest.approx(fit.nll, rel=1e-9)


def test_a_linear_fit_warm_starts_from_its_row(fitted):
    """search_start turns the row back into the optimiser's coordinates (a
    slope's amplitude times the span is a standardised one): refitting from
    it alone lands where the fit did."""
    import dataclasses

    from gpcore.parameters import search_start

    kind, data, fits = fitted
    fitter = GPFitter(FitConfig(kernel=kind, restarts=1, max_iterations=3))
    series = [dataclasses.replace(Series(str(i), t, y), warm_start=fit.params)
              for i, ((t, y, _), fit) in enumerate(zip(data, fits))]
    for s, fit in zip(series, fits):
        x = search_start(fitter.kernel, fit.params, np.ptp(s.t))
        scale = (fit.components[0]["amplitude"]
                 * (np.ptp(s.t) if kind.startswith("linear") else 1.0)) ** 2
        assert np.exp(x[-1]) == pytest.approx(fit.noise_variance / scale, rel=1e-12)
    # 3 Newton steps from the grid alone need not get there; from the warm start they do.
    for again, fit in zip(fitter.fit(series), fits):
        assert again.warm_started and again.nll == pytest.approx(fit.nll, abs=1e-3)


def test_what_the_new_kernels_search_and_count():
    """linear: only the noise ratio is searched (a grid of the noise ratios
    alone, one start, no probes), and BIC counts the mean, the noise and
    the slope's amplitude; matern12 is searched as rbf is."""
    from gpcore import starts
    from gpcore.config import default_restarts
    from gpcore.likelihood import bic
    from gpcore import kernels
    from gpcore.kernels import kernel

    t = np.linspace(0.0, 1.0, 20)
    line = kernel("linear")
    assert starts.grid_shape(line) == (1, len(starts.NOISE_GRID))
    assert starts.search_grid(line, t, t)[0].shape == (1, 0)
    assert [b.size for b in starts.bounds(line, t)] == [1, 1]
    assert (default_restarts(line), starts.probe_count(line)) == (1, 0)
    assert starts.grid_shape(kernel("matern12")) == starts.grid_shape(kernel("rbf"))
    assert default_restarts(kernel("matern12")) == default_restarts(kernel("rbf"))
    # The sum's grid: variance ratios for rbf and periodic, the line's nothing.
    three = kernel("linear+rbf+periodic")
    assert starts.grid_shape(three)[0] == (len(kernels.VARIANCE_RATIO_GRID) ** 2
                                           * kernels.SUM_LENGTH_GRID_SIZE * starts.PERIODS)
    for name, k in (("linear", 3), ("matern12", 4), ("linear+rbf", 5),
                    ("linear+rbf+periodic", 8)):
        assert bic(kernel(name), 10.0, 100) == pytest.approx(20.0 + k * np.log(100))

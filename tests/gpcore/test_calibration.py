"""gpcore.calibration against numpy references: the GLS mean's variance as
the limit of a flat prior on the mean, the rolling-origin errors by
explicit inverses, Student-t quantiles against scipy; and the intervals'
coverage on draws from the model itself."""
import numpy as np
import pytest
from scipy import stats

import gp_reference as ref
from gpcore import calibration
from gpcore.calibration import MAX_SCALE, ORIGINS, forecast, student_t_quantile
from gpcore.predict import checked_params, predict
from gpcore.series import Series

# A flat prior on the mean is the limit of a constant kernel of variance
# c^2 -> inf; at c^2 = 1e8 (amplitudes ~1) the difference is ~1/c^2
# relative, far below this.
FLAT_RTOL = 1e-5


def _params(kernel, mean, amplitude=1.0, length_scale=2.0, noise_variance=0.05):
    return {"kernel": kernel, "mean": mean, "amplitude": amplitude,
            "length_scale": length_scale, "period": None, "noise_variance": noise_variance}


def _gls_mean(kernel, t, y, p):
    a = (ref.kernel_matrix(kernel, t, t, p["amplitude"], p["length_scale"])
         + p["noise_variance"] * np.eye(t.size))
    w = np.linalg.solve(a, np.ones(t.size))
    return float(w @ y / w.sum())


@pytest.mark.parametrize("kernel", ["rbf", "matern52", "matern12"])
def test_forecast_sd_is_the_flat_prior_predictive_times_the_scale(kernel):
    rng = np.random.default_rng(3)
    t, y = ref.sample(rng, kernel, 50, amplitude=1.0, length_scale=2.0, noise_variance=0.05,
                      mean=4.0)
    p = _params(kernel, 0.0)
    p["mean"] = _gls_mean(kernel, t, y, p)  # the fitter's mean is the GLS one
    t_new = t[-1] + np.array([0.5, 2.0, 5.0, 20.0])
    f = forecast(Series("s", t, y), p, t_new)
    # The reference: the mean integrated out under a flat prior, i.e. a GP
    # with kernel K + c^2 11' around 0 (Rasmussen & Williams 2.7).
    c2 = 1e8
    k = lambda a, b: ref.kernel_matrix(kernel, a, b, 1.0, 2.0) + c2
    a = k(t, t) + 0.05 * np.eye(t.size)
    mean = k(t_new, t) @ np.linalg.solve(a, y)
    var = np.diag(k(t_new, t_new)) + 0.05 - np.einsum(
        "ij,ji->i", k(t_new, t), np.linalg.solve(a, k(t, t_new)))
    np.testing.assert_allclose(f.mean, mean, rtol=FLAT_RTOL)
    # p's scale stands for the fitter's maximum-likelihood Q / n; the
    # Student-t predictive's is Q / (n - 1).
    np.testing.assert_allclose(f.sd / f.scale, np.sqrt(var * 50 / 49), rtol=FLAT_RTOL)
    # Far beyond the data the mean's uncertainty is part of the sd: wider
    # than predict's.
    plain = predict(Series("s", t, y), p, t_new, include_noise=True)[1]
    assert f.sd[-1] / f.scale > plain[-1] * 1.01
    assert f.dof == t.size - 1


def test_rolling_errors_match_explicit_inverses():
    rng = np.random.default_rng(5)
    t, y = ref.sample(rng, "matern52", 40, length_scale=1.5, noise_variance=0.1, mean=2.0)
    p = checked_params(_params("matern52", 2.0, length_scale=1.5, noise_variance=0.1))
    tc = t - 0.5 * (t[0] + t[-1])
    kff = calibration.covariance(p, tc, tc)
    horizon = 5
    z = calibration.rolling_errors(p, tc, y, kff, calibration._cholesky(kff, 0.1), horizon)
    expected = []
    # The documented origins: ORIGINS evenly over the second half.
    for o in np.unique(np.linspace(t.size // 2, t.size - 1, ORIGINS).round().astype(int)):
        ahead = np.arange(o, min(o + horizon, t.size))
        a_inv = np.linalg.inv(ref.kernel_matrix("matern52", t[:o], t[:o], 1.0, 1.5)
                              + 0.1 * np.eye(o))
        ones = np.ones(o)
        level = ones @ a_inv @ y[:o] / (ones @ a_inv @ ones)
        k_star = ref.kernel_matrix("matern52", t[ahead], t[:o], 1.0, 1.5)
        mean = level + k_star @ a_inv @ (y[:o] - level)
        var = (1.0 + 0.1 - np.einsum("ij,jk,ik->i", k_star, a_inv, k_star)
               + (1 - k_star @ a_inv @ ones) ** 2 / (ones @ a_inv @ ones))
        expected.append((y[ahead] - mean) / np.sqrt(var))
    # float64 algebra two ways (Cholesky rows against explicit inverses of
    # well-conditioned 20-40 point matrices).
    np.testing.assert_allclose(z, np.concatenate(expected), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("dof", [1, 2, 3, 4, 7, 18, 45, 199, 200, 201, 239, 5000])
def test_student_t_quantile_matches_scipy(dof):
    for p in (0.6, 0.9, 0.975, 0.995, 0.025):
        # Bisection to 1e-12; the Cornish-Fisher expansion above 200
        # degrees of freedom is within 1e-7 relative there.
        assert student_t_quantile(p, dof) == pytest.approx(stats.t.ppf(p, dof), rel=1e-7)
    with pytest.raises(ValueError, match="p must be in"):
        student_t_quantile(1.0, dof)


def test_intervals_cover_about_95_percent_of_draws_from_the_model():
    """The model right (true parameters, GLS mean): scale stays near 1 and
    95 % intervals hold about 95 % of new observations (300 draws, 10 steps
    each: the binomial sd is ~0.4 %, the steps of one draw are correlated;
    calibration only widens, so up to ~98 %)."""
    rng = np.random.default_rng(7)
    inside, scales = [], []
    for i in range(300):
        t = np.arange(70.0)
        _, y = _draw(rng, t, "matern52", length_scale=6.0, noise_variance=0.1)
        train, test = slice(0, 60), slice(60, 70)
        p = _params("matern52", 0.0, length_scale=6.0, noise_variance=0.1)
        p["mean"] = _gls_mean("matern52", t[train], y[train], p)
        f = forecast(Series(f"s{i}", t[train], y[train]), p, t[test])
        lo, hi = f.interval(0.95)
        inside.append(np.mean((y[test] >= lo) & (y[test] <= hi)))
        scales.append(f.scale)
    assert 0.93 <= np.mean(inside) <= 0.985
    assert np.median(scales) < 1.2


def test_a_profiled_scale_gives_student_t_intervals_of_exact_coverage():
    """The shape known, the mean and the amplitude profiled from the data
    as the fitter profiles them (GLS mean, s^2 = Q / n: maximum
    likelihood): then (y* - mean) / sd is exactly Student-t with n - 1
    degrees of freedom when sd uses Q / (n - 1), the flat-prior
    predictive's scale (Santner et al., Design and Analysis of Computer
    Experiments, thm 4.1.2), so the intervals cover exactly their level.
    3 points: no rolling-origin widening. With Q / n they held 0.738 of
    80 % and 0.927 of 95 % (t_2's P(|T| < q sqrt(2/3)): 0.737, 0.928), with
    Q / (n - 1) 0.806 and 0.953. 1,200 independent
    draws, one new point each: the binomial sd is 1.2 % at 80 %, 0.63 %
    at 95 %; 3.5 sd allowed."""
    rng = np.random.default_rng(41)
    t, t_new, ratio, draws = np.array([0.0, 1.0, 2.5]), np.array([3.5]), 0.1, 1200
    every = np.r_[t, t_new]
    a_all = ref.kernel_matrix("rbf", every, every, 1.0, 2.0) + ratio * np.eye(4)
    ys = 3.0 + 1.7 * rng.standard_normal((draws, 4)) @ np.linalg.cholesky(a_all).T
    a_inv = np.linalg.inv(a_all[:3, :3])
    inside = {0.8: [], 0.95: []}
    for i, y in enumerate(ys):
        w = a_inv @ np.ones(3)
        mean = float(w @ y[:3] / w.sum())
        s2 = float((y[:3] - mean) @ a_inv @ (y[:3] - mean)) / 3  # the fitter's (ML)
        p = _params("rbf", mean, amplitude=np.sqrt(s2), noise_variance=ratio * s2)
        f = forecast(Series(f"s{i}", t, y[:3]), p, t_new)
        assert (f.dof, f.scale) == (2.0, 1.0)
        for level, flags in inside.items():
            lo, hi = f.interval(level)
            flags.append(lo[0] <= y[3] <= hi[0])
    for level, flags in inside.items():
        assert abs(np.mean(flags) - level) < 3.5 * np.sqrt(level * (1 - level) / draws), \
            (level, np.mean(flags))


def test_an_overconfident_model_is_widened():
    """A random walk forecast with a smooth rbf (long length scale, little
    noise): its own rolling errors are far wider than its sd says."""
    rng = np.random.default_rng(9)
    t = np.arange(80.0)
    y = np.cumsum(rng.standard_normal(80))
    p = _params("rbf", float(np.mean(y)), amplitude=float(np.std(y)), length_scale=8.0,
                noise_variance=1e-3)
    f = forecast(Series("walk", t, y), p, t[-1] + np.arange(1.0, 11.0))
    assert 1.5 < f.scale <= MAX_SCALE
    plain = predict(Series("walk", t, y), p, t[-1] + np.arange(1.0, 11.0), include_noise=True)[1]
    assert np.all(f.sd >= 1.5 * plain)


@pytest.mark.parametrize("kernel", ["rbf", "linear+rbf"])
def test_an_offset_in_y_moves_the_forecast_and_nothing_else(kernel):
    """y -> y + b moves the forecast's centre by b and leaves its scale and
    sd: a variation of 1e-3 on 1e9 is the same series as those values less
    1e9 (exact in float64: both near 1e9), the fitted mean less 1e9 too.
    The rolling errors took L^-1 y and its level apart at 1e9, where they
    agree to 7 of 16 digits: rbf's scale came out 1.6216 against 1.6192
    (a linear+rbf one elsewhere 1.096 against 1.0). Tolerances: 1e-9
    relative, the same arithmetic on numbers of the same size once measured
    from the mean; the centre is rounded at 1e9, 1.2e-7 a step."""
    rng = np.random.default_rng(11)
    t = np.arange(120.0)
    offset, small = 1e9, 1e-3
    on_offset = offset + small * (np.sin(t / 8.0) + 0.03 * np.cumsum(rng.standard_normal(120)))
    components = [{"kernel": k, "amplitude": small * (0.01 if k == "linear" else 1.0),
                   "length_scale": None if k == "linear" else 5.0, "period": None}
                  for k in kernel.split("+")]
    p = {"kernel": kernel, "mean": offset, "noise_variance": (1e-2 * small) ** 2,
         "components": components}
    t_new = t[-1] + np.arange(1.0, 6.0)
    raw = forecast(Series("s", t, on_offset), p, t_new)
    less = forecast(Series("s", t, on_offset - offset), dict(p, mean=0.0), t_new)
    assert less.scale > 1.0  # widened: the rolling errors count
    assert raw.scale == pytest.approx(less.scale, rel=1e-9)
    np.testing.assert_allclose(raw.sd, less.sd, rtol=1e-9)
    np.testing.assert_allclose(raw.mean - offset, less.mean, rtol=0, atol=2 * np.spacing(offset))


def test_short_series_are_not_scaled_but_keep_the_means_variance():
    """Under 4 points there are too few rolling errors to scale by, but the
    GLS mean's variance is still in the sd (as "Forecast intervals" says,
    for every series): the flat-prior predictive, as above."""
    t, y, t_new = np.array([0.0, 1.0, 2.0]), np.array([1.0, 2.0, 1.5]), np.array([3.0, 4.0])
    p = _params("rbf", 0.0)
    p["mean"] = _gls_mean("rbf", t, y, p)
    f = forecast(Series("s", t, y), p, t_new)
    assert (f.scale, f.dof) == (1.0, 2.0)
    k = lambda a, b: ref.kernel_matrix("rbf", a, b, 1.0, 2.0) + 1e8  # noqa: E731
    a = k(t, t) + 0.05 * np.eye(t.size)
    var = np.diag(k(t_new, t_new)) + 0.05 - np.einsum(
        "ij,ji->i", k(t_new, t), np.linalg.solve(a, k(t, t_new)))
    np.testing.assert_allclose(f.sd, np.sqrt(var * 3 / 2), rtol=FLAT_RTOL)  # Q / (n - 1)


def test_the_scale_is_the_rms_of_the_rolling_errors_kept_between_1_and_max_scale():
    """Never narrowed: a model whose noise is 200x the data's has rolling
    errors far under 1 and keeps scale 1; a level shift far past the
    model's sd is widened by MAX_SCALE, not by its errors' RMS."""
    rng = np.random.default_rng(13)
    t = np.arange(60.0)
    t_new = t[-1] + np.arange(1.0, 4.0)
    smooth = np.sin(t / 6.0) + 0.05 * rng.standard_normal(60)
    shifted = np.where(t < 45, 0.0, 100.0) + 0.01 * rng.standard_normal(60)
    for y, p, expected in (
            (smooth, _params("matern52", float(np.mean(smooth)), length_scale=6.0,
                             noise_variance=0.5), 1.0),
            (shifted, _params("rbf", float(np.mean(shifted)), length_scale=3.0,
                              noise_variance=1e-4), MAX_SCALE)):
        p = checked_params(p)
        tc = t - 0.5 * (t[0] + t[-1])
        kff = calibration.covariance(p, tc, tc)
        z = calibration.rolling_errors(p, tc, y, kff,
                                       calibration._cholesky(kff, p["noise_variance"]), 3)
        rms = np.sqrt(np.mean(z ** 2))
        assert (rms < 0.5) if expected == 1.0 else (rms > 2 * MAX_SCALE), rms
        assert forecast(Series("s", t, y), p, t_new).scale == expected
    assert MAX_SCALE == 4.0  # README and docs/design.md, "Forecast intervals": in [1, 4]


def test_the_default_horizon_is_the_new_times_past_the_last_observation():
    """Two of four new times lie past the data: the rolling errors look 2
    points ahead, as with horizon=2 (a random walk, on which an rbf's
    scale depends on the horizon)."""
    rng = np.random.default_rng(9)
    t = np.arange(80.0)
    y = np.cumsum(rng.standard_normal(80))
    p = _params("rbf", float(np.mean(y)), amplitude=float(np.std(y)), length_scale=3.0,
                noise_variance=0.1)  # scale 1.57 looking 2 ahead, 1.41 looking 4
    t_new = np.array([10.0, 20.5, 80.0, 81.0])
    scale = forecast(Series("walk", t, y), p, t_new).scale
    assert scale == forecast(Series("walk", t, y), p, t_new, horizon=2).scale
    assert scale != forecast(Series("walk", t, y), p, t_new, horizon=4).scale


def test_a_linear_component_is_centred_as_the_fit_centres_it():
    """linear+rbf on times far from 0: the sd is the flat-prior predictive
    (as above) of the kernel with linear centred on the middle of the
    observed span (gp_reference.centre), not on t = 0."""
    rng = np.random.default_rng(17)
    t = 1000.0 + np.sort(rng.uniform(0.0, 40.0, 40))
    y = 0.05 * (t - 1020.0) + np.sin(t / 3.0) + 0.1 * rng.standard_normal(40)
    comps = [{"kernel": "linear", "amplitude": 0.05, "length_scale": None, "period": None},
             {"kernel": "rbf", "amplitude": 1.0, "length_scale": 3.0, "period": None}]
    p = {"kernel": "linear+rbf", "mean": float(np.mean(y)), "noise_variance": 0.01,
         "components": comps}
    t_new = t[-1] + np.array([1.0, 5.0])
    f = forecast(Series("s", t, y), p, t_new)
    c2, c = 1e8, ref.centre(t)
    k = lambda a, b: ref.components_matrix(comps, a, b, c) + c2  # noqa: E731
    a = k(t, t) + 0.01 * np.eye(t.size)
    var = np.diag(k(t_new, t_new)) + 0.01 - np.einsum(
        "ij,ji->i", k(t_new, t), np.linalg.solve(a, k(t, t_new)))
    np.testing.assert_allclose(f.sd / f.scale, np.sqrt(var * 40 / 39), rtol=FLAT_RTOL)


def test_a_series_in_any_order_forecasts_alike():
    """forecast takes a Series as given (gpcore's users need not sort it):
    the rolling origins run in time order (a random walk under an rbf,
    whose scale, 1.57, is the errors' RMS, not a bound)."""
    rng = np.random.default_rng(9)
    t = np.arange(80.0)
    y = np.cumsum(rng.standard_normal(80))
    p = _params("rbf", float(np.mean(y)), amplitude=float(np.std(y)), length_scale=3.0,
                noise_variance=0.1)
    t_new = t[-1] + np.arange(1.0, 3.0)
    shuffled = rng.permutation(80)
    a = forecast(Series("s", t, y), p, t_new)
    b = forecast(Series("s", t[shuffled], y[shuffled]), p, t_new)
    # The same arithmetic on the same sorted points, up to predict's own
    # summation order.
    assert a.scale == pytest.approx(b.scale, rel=1e-9)
    np.testing.assert_allclose(a.sd, b.sd, rtol=1e-9)


def test_a_long_series_is_calibrated_on_its_last_window_of_points():
    """Past WINDOW points the mean's variance comes from the last WINDOW
    points (the flat-prior predictive given them) and dof from all."""
    rng = np.random.default_rng(23)
    n = calibration.WINDOW + 40
    t = np.arange(float(n))
    y = np.sin(t / 5.0) + 0.3 * rng.standard_normal(n)
    p = _params("rbf", float(np.mean(y)), length_scale=3.0, noise_variance=0.09)
    t_new = t[-1] + np.array([1.0, 30.0])
    f = forecast(Series("s", t, y), p, t_new)
    assert f.dof == n - 1
    last = t[-calibration.WINDOW:]
    k = lambda a, b: ref.kernel_matrix("rbf", a, b, 1.0, 3.0) + 1e8  # noqa: E731
    a = k(last, last) + 0.09 * np.eye(last.size)
    var = np.diag(k(t_new, t_new)) + 0.09 - np.einsum(
        "ij,ji->i", k(t_new, last), np.linalg.solve(a, k(last, t_new)))
    # Q / (n - 1) of all n points, whose s^2 the fit profiled.
    np.testing.assert_allclose(f.sd / f.scale, np.sqrt(var * n / (n - 1)), rtol=FLAT_RTOL)


def _draw(rng, t, kernel, length_scale, noise_variance):
    cov = ref.kernel_matrix(kernel, t, t, 1.0, length_scale) + noise_variance * np.eye(t.size)
    return t, np.linalg.cholesky(cov) @ rng.standard_normal(t.size)


@pytest.mark.parametrize("level", [95, -0.5, 0.0, 1.0, float("nan")])
def test_interval_refuses_a_level_outside_0_1(level):
    """interval(95) said "p must be in (0, 1); got 48.0" (its quantile's p),
    and interval(-0.5) gave lo above hi without a word."""
    rng = np.random.default_rng(5)
    t, y = ref.sample(rng, "rbf", 30)
    f = forecast(Series("s", t, y), _params("rbf", float(np.mean(y))), t[-1] + np.arange(1.0, 3.0))
    with pytest.raises(ValueError, match=f"level must be in \\(0, 1\\), e.g. 0.95 .*; got {level!r}"):
        f.interval(level)


def test_calibrating_many_series_keeps_no_memory_for_each_series_parameters():
    """calibration runs eager TensorFlow ops per series (the covariance's
    kernels, the triangular solve), and TensorFlow keeps a tensor (~560
    bytes, a Python block) for every distinct Python or NumPy scalar an op
    is given, never freed (docs/design.md, "Measured facts", *Long-running
    workers*): each series' parameters go in as arrays (lists). 3,000
    series of their own parameters, after 1,000 that settle the caches:
    +6 blocks; the kernels' 3 parameters given as scalars, +9,075."""
    import gc
    import sys

    rng = np.random.default_rng(31)
    t, y = ref.sample(rng, "rbf", 40)
    series, t_new = Series("s", t, y), t[-1] + np.linspace(0.5, 5.0, 10)

    def calls(first, count):
        for k in range(first, first + count):
            d = 1e-6 * k
            p = {"kernel": "rbf+periodic", "mean": 0.1 + d, "noise_variance": 0.05 * (1.0 + d),
                 "components": [{"kernel": "rbf", "amplitude": 1.0 + d, "length_scale": 2.0 + d},
                                {"kernel": "periodic", "amplitude": 0.5 + d,
                                 "length_scale": 0.7 + d, "period": 3.0 + d}]}
            forecast(series, p, t_new)

    calls(0, 1000)  # the posterior traced, and what settles
    gc.collect()
    before = sys.getallocatedblocks()
    calls(1000, 3000)
    gc.collect()
    assert sys.getallocatedblocks() - before < 1000

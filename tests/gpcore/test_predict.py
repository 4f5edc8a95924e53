"""gpcore.predict against a numpy reference and tfd.GaussianProcessRegressionModel."""
import re

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_probability as tfp

import gp_reference as ref
from readme_blocks import README, readme_python
from gpcore.predict import predict
from gpcore.result import FitResult
from gpcore.series import Series

tfd = tfp.distributions

KERNELS = ("rbf", "matern12", "matern32", "matern52", "periodic", "linear")


def assert_close(actual, expected, scale=1.0):
    """float64 tolerance for the same O(n^3) algebra done two ways: the
    Cholesky of a moderately conditioned n~40 matrix loses a few digits."""
    np.testing.assert_allclose(actual, expected, rtol=1e-7, atol=1e-9 * scale)


def make_series(rng, n=40, missing=True):
    t = np.sort(rng.uniform(0.0, 20.0, n))
    y = 3.0 + 2.0 * np.sin(0.7 * t) + 0.3 * rng.standard_normal(n)
    if missing:
        y[[3, 17]] = np.nan
        y[25] = np.inf
    return Series("s", t, y)


def make_params(kernel):
    return {"kernel": kernel, "mean": 3.0, "amplitude": 0.3 if kernel == "linear" else 1.7,
            "length_scale": {"periodic": 0.8, "linear": None}.get(kernel, 2.5),
            "period": 9.0 if kernel == "periodic" else None, "noise_variance": 0.09}


def numpy_predict(series, p, t_new, include_noise=False):
    """Textbook posterior (Rasmussen & Williams eq. 2.23-2.24), via np.linalg.solve."""
    ok = np.isfinite(series.y) & np.isfinite(series.t)
    t, y = series.t[ok], series.y[ok]
    shape = (p["amplitude"], p["length_scale"], p["period"], ref.centre(t))
    cov = ref.kernel_matrix(p["kernel"], t, t, *shape) + p["noise_variance"] * np.eye(t.size)
    cross = ref.kernel_matrix(p["kernel"], t_new, t, *shape)  # [m, n]
    mean = p["mean"] + cross @ np.linalg.solve(cov, y - p["mean"])
    prior = np.diag(ref.kernel_matrix(p["kernel"], t_new, t_new, *shape))
    var = prior - np.einsum("mn,nm->m", cross, np.linalg.solve(cov, cross.T))
    if include_noise:
        var = var + p["noise_variance"]
    return mean, np.sqrt(np.maximum(var, 0.0))


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("include_noise", [False, True])
def test_matches_numpy_reference(rng, kernel, include_noise):
    series = make_series(rng)
    p = make_params(kernel)
    t_new = np.linspace(-5.0, 25.0, 61)
    mean, std = predict(series, p, t_new, include_noise=include_noise)
    ref_mean, ref_std = numpy_predict(series, p, t_new, include_noise=include_noise)
    assert mean.dtype == np.float64 and std.dtype == np.float64
    assert mean.shape == std.shape == t_new.shape
    assert_close(mean, ref_mean, scale=3.0)
    assert_close(std, ref_std, scale=1.7)


@pytest.mark.parametrize("n", [255, 256, 257])
def test_a_series_on_the_slow_cholesky_side_predicts_the_same(rng, n):
    # At 256 observed points A is factored beside an identity block (the
    # Cholesky is slow on multiples of 256); the posterior is unchanged.
    series = make_series(rng, n=n, missing=False)
    p = make_params("matern52")
    t_new = np.linspace(-5.0, 25.0, 31)
    mean, std = predict(series, p, t_new, include_noise=True)
    ref_mean, ref_std = numpy_predict(series, p, t_new, include_noise=True)
    assert_close(mean, ref_mean, scale=3.0)
    assert_close(std, ref_std, scale=1.7)


@pytest.mark.parametrize("kernel", KERNELS)
def test_matches_tfp_regression_model(rng, kernel):
    series = make_series(rng)
    p = make_params(kernel)
    ok = np.isfinite(series.y)
    tfp_kernel = ref.tfp_kernel(kernel, p["amplitude"], p["length_scale"], p["period"],
                                ref.centre(series.t[ok]))
    t_new = np.linspace(-2.0, 22.0, 50)
    for include_noise in (False, True):
        gprm = tfd.GaussianProcessRegressionModel(
            kernel=tfp_kernel, index_points=t_new[:, None],
            observation_index_points=series.t[ok][:, None], observations=series.y[ok],
            observation_noise_variance=tf.constant(p["noise_variance"], tf.float64),
            predictive_noise_variance=tf.constant(
                p["noise_variance"] if include_noise else 0.0, tf.float64),
            mean_fn=lambda x: tf.fill(tf.shape(x)[:-1], tf.constant(p["mean"], tf.float64)),
            jitter=0.0)  # its default 1e-6 would shift the answer by about that
        mean, std = predict(series, p, t_new, include_noise=include_noise)
        assert_close(mean, gprm.mean().numpy(), scale=3.0)
        assert_close(std, gprm.stddev().numpy(), scale=1.7)


def test_interpolates_noise_free_data_and_reverts_to_prior_far_away(rng):
    t = np.sort(rng.uniform(0.0, 10.0, 15))
    series = Series("smooth", t, 3.0 + np.sin(t))  # smooth: exact interpolation is tame
    p = dict(make_params("rbf"), length_scale=1.0, noise_variance=1e-10)
    mean, std = predict(series, p, series.t)
    np.testing.assert_allclose(mean, series.y, atol=1e-4)
    assert np.all(std < 1e-3)
    mean, std = predict(series, p, np.array([1e4, -1e4]))
    np.testing.assert_allclose(mean, p["mean"], rtol=1e-12)
    np.testing.assert_allclose(std, p["amplitude"], rtol=1e-12)


def test_matern12_forecasts_are_markov_and_persist_at_long_length_scales(rng):
    """Noise-free, exp(-d/l) is Markov: past the last point the forecast
    depends on it alone, mean + exp(-h/l)(y_n - mean) with sd
    amplitude sqrt(1 - exp(-2h/l)); at l = 100 spans that is y_n to within
    a hundredth of (y_n - mean) for 1 span ahead, as a random walk's is."""
    t = np.sort(rng.uniform(0.0, 10.0, 30))
    y = np.cumsum(rng.standard_normal(t.size))
    p = dict(make_params("matern12"), length_scale=1e3, noise_variance=0.0)
    h = np.array([0.5, 3.0, 10.0])
    mean, std = predict(Series("walk", t, y), p, t[-1] + h)
    decay = np.exp(-h / p["length_scale"])
    # An OU covariance at l = 100 spans has condition number ~1e4: 1e-9.
    np.testing.assert_allclose(mean, p["mean"] + decay * (y[-1] - p["mean"]), rtol=1e-9)
    np.testing.assert_allclose(std, p["amplitude"] * np.sqrt(1.0 - decay ** 2), rtol=1e-7)
    assert np.all(np.abs(mean - y[-1]) <= 0.01 * abs(y[-1] - p["mean"]))


def test_linear_prior_grows_away_from_the_centre(rng):
    """A line's variance is amplitude^2 (t - c)^2 around c, the data's midpoint:
    its forecast sd grows linearly far from the data, where a stationary
    kernel's levels off."""
    series = make_series(rng, missing=False)
    p = make_params("linear")
    c = ref.centre(series.t)
    far = c + np.array([1e3, 2e3, -4e3])
    _, std = predict(series, p, far)
    np.testing.assert_allclose(std / np.abs(far - c), std[0] / 1e3, rtol=1e-3)
    assert std[0] < p["amplitude"] * 1e3  # the data pin the slope down a little


def test_no_finite_observations_gives_the_prior():
    series = Series("empty", np.arange(3.0), np.full(3, np.nan))
    p = make_params("matern52")
    mean, std = predict(series, p, np.linspace(0, 1, 4), include_noise=True)
    np.testing.assert_allclose(mean, 3.0)
    np.testing.assert_allclose(std, np.sqrt(1.7 ** 2 + 0.09))


def test_noise_free_repeated_times_use_jitter_and_stay_finite():
    series = Series("dup", np.array([0.0, 0.0, 1.0, 1.0]), np.array([1.0, 1.0, 2.0, 2.0]))
    p = dict(make_params("rbf"), noise_variance=0.0)
    mean, std = predict(series, p, np.array([0.0, 0.5, 1.0]))
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(std))
    np.testing.assert_allclose(mean[[0, 2]], [1.0, 2.0], atol=1e-5)


def test_accepts_fit_result_and_refuses_unfitted_one(rng):
    series = make_series(rng)
    p = make_params("periodic")
    fitted = FitResult(series_id="s", status="ok", n_points=37, **p)
    t_new = np.linspace(0, 20, 7)
    np.testing.assert_array_equal(predict(series, fitted, t_new)[0],
                                  predict(series, p, t_new)[0])
    with pytest.raises(ValueError, match="status 'failed'"):
        predict(series, FitResult("s", "failed", "rbf", 37, error="boom"), t_new)


@pytest.mark.parametrize("change, message", [
    ({"kernel": "cosine"}, "kernel must be one of"),
    ({"amplitude": None}, "amplitude.*must be a number"),
    ({"length_scale": -1.0}, "length_scale.*> 0"),
    ({"amplitude": 0.0}, "amplitude.*> 0"),  # a zero amplitude is no GP
    ({"noise_variance": -1e-3}, "noise_variance.*>= 0"),
    ({"mean": float("nan")}, "mean.*finite"),
    ({"kernel": "periodic", "period": None}, "period.*must be a number"),
    ({"kernel": "rbf+periodic"}, "need 'components'"),
    ({"kernel": "rbf+periodic", "components": [{"kernel": "periodic"}, {"kernel": "rbf"}]},
     "must list the kernels of 'rbf\\+periodic' in order"),
])
def test_bad_params_raise_value_error(rng, change, message):
    with pytest.raises(ValueError, match=message):
        predict(make_series(rng), dict(make_params("rbf"), **change), np.zeros(2))


@pytest.mark.parametrize("observed", [0, 40])
def test_an_amplitude_whose_variance_overflows_is_named(rng, observed):
    """amplitude 1e300 squares past float64: with no observed point predict
    raised OverflowError from the prior's variance, with some it said the
    covariance was not positive definite, naming no parameter."""
    series = make_series(rng, n=observed, missing=observed > 0)
    with pytest.raises(ValueError, match=r"params\['components'\]\[0\]\['amplitude'\].*"
                                         r"square overflows"):
        predict(series, dict(make_params("rbf"), amplitude=1e300), np.zeros(2))


@pytest.mark.parametrize("params", ["rbf", None, [1.0, 2.0]])
def test_params_that_are_no_mapping_are_named(rng, params):
    """A kernel name or None as params raised AttributeError: 'str' object
    has no attribute 'get'."""
    with pytest.raises(ValueError, match="params must be a FitResult or a mapping"):
        predict(make_series(rng), params, np.zeros(2))


@pytest.mark.parametrize("series", [
    lambda t, y: (t, y),  # the arrays themselves
    lambda t, y: {"series_id": "s", "t": t, "y": y},
    lambda t, y: None,
])
def test_a_series_that_is_no_series_is_named(rng, series):
    """The arrays (or a dict of them) given for series raised
    AttributeError: 'tuple' object has no attribute 't', naming neither
    the argument nor what it takes (GPFitter.fit names both)."""
    t, y = make_series(rng).t, make_series(rng).y
    with pytest.raises(ValueError, match=r"^series must be a gpcore\.Series; got a "
                                         r"(tuple|dict|NoneType): give Series\(series_id, t, "
                                         r"y\)$"):
        predict(series(t, y), make_params("rbf"), np.zeros(2))


def test_times_to_predict_at_of_two_dimensions_are_told_to_be_a_vector(rng):
    """t_new of shape (2, 3) was told "give a vector [n], one Series per
    series": advice for a series' own t and y, not the times to predict at."""
    with pytest.raises(ValueError, match=r"^t_new has shape \(2, 3\); give the times to "
                                         r"predict at as a vector \[m\] \(a row or a column "
                                         r"will do\)$"):
        predict(make_series(rng), make_params("rbf"), np.zeros((2, 3)))
    mean, _ = predict(make_series(rng), make_params("rbf"), np.zeros((1, 3)))  # a row will do
    assert mean.shape == (3,)


def test_params_may_name_their_kernel_by_value(rng):
    """Kernels are values (docs/design.md, "Kernels are values"): params
    built by hand with kernel=RBF() or RBF() + Periodic() predict as with
    their names, and warm-start a fit of that kernel."""
    from gpcore.kernels import RBF, Periodic

    series, t_new = make_series(rng), np.linspace(0.0, 25.0, 6)
    single = make_params("rbf")
    components = [{"kernel": "rbf", "amplitude": 1.5, "length_scale": 3.0, "period": None},
                  {"kernel": "periodic", "amplitude": 0.5, "length_scale": 0.8, "period": 9.0}]
    summed = {"kernel": "rbf+periodic", "mean": 3.0, "noise_variance": 0.09,
              "components": components}
    for p, k in ((single, RBF()), (summed, RBF() + Periodic())):
        np.testing.assert_array_equal(predict(series, dict(p, kernel=k), t_new),
                                      predict(series, p, t_new))
    from gpcore.parameters import search_start

    np.testing.assert_array_equal(search_start(RBF(), dict(single, kernel=RBF()), 20.0),
                                  search_start(RBF(), single, 20.0))
    from gpcore import FitConfig  # candidates by value too, kept as names

    assert FitConfig(kernel="auto", candidates=(RBF(), RBF() + Periodic())) == \
        FitConfig(kernel="auto", candidates=("rbf", "rbf+periodic"))


def test_component_means_of_a_line_plus_a_rough_part(rng):
    """linear+matern12: each part's mean amplitude_c^2 K_c(t*, t) A^-1 (y - mean)
    in numpy (the line's K about the data's midpoint), adding up to predict's."""
    from gpcore.predict import component_means

    series = make_series(rng)
    components = [{"kernel": "linear", "amplitude": 0.2, "length_scale": None, "period": None},
                  {"kernel": "matern12", "amplitude": 1.3, "length_scale": 4.0, "period": None}]
    p = {"kernel": "linear+matern12", "mean": 3.0, "noise_variance": 0.09,
         "components": components}
    ok = np.isfinite(series.y)
    t, y = series.t[ok], series.y[ok]
    t_new = np.linspace(-5.0, 25.0, 31)
    c = ref.centre(t)
    alpha = np.linalg.solve(ref.components_matrix(components, t, t, c) + 0.09 * np.eye(t.size),
                            y - 3.0)
    means = component_means(series, p, t_new)
    for part, mean in zip(components, means, strict=True):
        assert_close(mean, ref.components_matrix([part], t_new, t, c) @ alpha, scale=3.0)
    assert_close(sum(means), predict(series, p, t_new)[0] - 3.0, scale=3.0)
    line = means[0]
    assert_close(np.diff(line), np.full(30, line[1] - line[0]), scale=3.0)  # straight


def test_one_trace_per_kernel_for_every_series_and_grid_length(rng):
    """The posterior is a tf.function of [None] shapes: series of 5 to 90
    points on grids of 1 to 200 times run one graph per kernel, and
    prediction gives the mean and both sds of predict at once."""
    from gpcore.predict import compiled_posterior, prediction

    p = dict(make_params("matern52"), length_scale=3.1)
    for n, m in ((5, 1), (40, 61), (90, 200), (12, 7)):
        series = make_series(rng, n=n, missing=False)
        t_new = np.linspace(-5.0, 25.0, m)
        both = prediction(series, p, t_new)
        ref_mean, ref_sd = numpy_predict(series, p, t_new)
        assert_close(both.mean, ref_mean, scale=3.0)
        assert_close(both.sd, ref_sd, scale=1.7)
        assert_close(both.sd_observation, numpy_predict(series, p, t_new, True)[1], scale=1.7)
        np.testing.assert_array_equal(predict(series, p, t_new, include_noise=True)[1],
                                      both.sd_observation)
    assert compiled_posterior("matern52").experimental_get_tracing_count() == 1


def test_the_package_export_is_callable_as_predict(rng):
    """`from gpcore import predict` (and gpcore.predict) is the package's
    export; the import system binds the module gpcore.predict under that
    name, so the module itself must call as the function."""
    import gpcore
    from gpcore import predict as exported

    series, p, t_new = make_series(rng), make_params("rbf"), np.linspace(0.0, 25.0, 6)
    expected = predict(series, p, t_new, include_noise=True)
    for call in (exported, gpcore.predict):
        np.testing.assert_array_equal(call(series, p, t_new, include_noise=True), expected)
    assert exported.component_means is not None  # still the module too


def test_the_readmes_gpcore_examples_run_as_written(rng):
    """README's examples of the numerical core, copied as a reader copies
    them (fit, calibrated forecast, posterior), and its inline call for a
    linear part's centre under --holdout, which once passed fitted_centre
    two arguments it does not take. The README leaves the data to the
    reader: t, y, t2, y2, t_future, t_new; series and result are its
    first fit."""
    t, t2 = np.sort(rng.uniform(0.0, 100.0, 60)), np.sort(rng.uniform(0.0, 50.0, 40))
    space = {"t": t, "y": np.sin(t / 5.0) + 0.1 * rng.standard_normal(60),
             "t2": t2, "y2": np.cos(t2 / 3.0) + 0.1 * rng.standard_normal(40),
             "t_future": np.linspace(100.0, 110.0, 5)}
    exec(readme_python("from gpcore import FitConfig"), space)  # pylint: disable=exec-used
    assert [row["status"] for row in space["rows"]] == ["ok", "ok"]
    exec(readme_python("from gpcore.calibration import forecast"), space)  # pylint: disable=exec-used
    assert np.all(space["lo"] < space["f"].mean) and np.all(space["f"].mean < space["hi"])
    space.update(series=space["Series"]("a", t, space["y"]), result=space["results"][0],
                 t_new=space["t_future"])
    exec(readme_python("from gpcore.predict import predict"), space)  # pylint: disable=exec-used
    assert space["mean"].shape == space["std"].shape == (5,)
    # The centre a fit under --holdout 6 had: the midpoint of the first 54 points.
    (call,) = re.findall(r"`centre=(fitted_centre\(.*?\))`", README.read_text(), re.S)
    from gpcore.predict import fitted_centre
    from gpcore.series import split
    centre = eval(call, {"fitted_centre": fitted_centre, "split": split,  # pylint: disable=eval-used
                         "series": space["series"], "row": {"holdout_points": 6.0}})
    assert centre == pytest.approx(0.5 * (t[0] + t[53]), rel=1e-12)


@pytest.mark.parametrize("where", ["t_new", "t"])
def test_refuses_timestamps_as_times(rng, where):
    """datetime64 times became days (or ns) since 1970 silently, far from
    the data's units: the prior came back. The fit refuses them; so does predict."""
    series, p = make_series(rng), make_params("rbf")
    dates = np.datetime64("2020-01-01") + np.arange(series.t.size).astype("timedelta64[D]")
    t_new = dates[:3] if where == "t_new" else np.linspace(0.0, 5.0, 3)
    if where == "t":
        series = Series("s", dates, series.y)
    advice = "days since 1970-01-01 UTC for a row gpfit fitted on dates" if where == "t" else ""
    with pytest.raises(ValueError, match=f"{where} is not numeric \\(dtype datetime64.*{advice}"):
        predict(series, p, t_new)


@pytest.mark.parametrize("where, values", [("t_new", ["a"]), ("y", ["a"] * 40)])
def test_names_the_argument_that_is_not_numeric(rng, where, values):
    series, p = make_series(rng), make_params("rbf")
    t_new = values if where == "t_new" else np.zeros(2)
    if where == "y":
        series = Series("s", series.t, values)
    with pytest.raises(ValueError, match=f"{where} is not numeric"):
        predict(series, p, t_new)


def test_no_finite_observations_leave_a_line_out_of_the_prior_sd():
    # With no data the line's centre, and so its prior (t - c)^2 slope^2,
    # is unknown: the prior sd is the stationary parts' alone (predict's
    # docstring), the rbf's amplitude 1.7 here, not sqrt(1.7^2 + 0.3^2).
    series = Series("empty", np.arange(3.0), np.full(3, np.nan))
    p = {"kernel": "linear+rbf", "mean": 3.0, "noise_variance": 0.09, "components": [
        {"kernel": "linear", "amplitude": 0.3},
        {"kernel": "rbf", "amplitude": 1.7, "length_scale": 2.5}]}
    mean, std = predict(series, p, np.linspace(0.0, 100.0, 4))
    np.testing.assert_allclose(mean, 3.0)
    np.testing.assert_allclose(std, 1.7, rtol=1e-12)


def test_the_jitter_is_relative_to_the_amplitude(rng):
    # Noise-free repeated times need jitter (JITTERS, relative to
    # amplitude^2): the same series in units 10^4 times larger (y and the
    # amplitude x 10^-4, variances x 10^-8) predicts the same in those
    # units. An absolute jitter would weigh 10^8 times more there, and
    # smooth the posterior. Tolerance: the same jittered algebra,
    # rescaled; round-off of a Cholesky of condition ~1e10, 1e-6 relative.
    t = np.array([0.0, 0.0, 1.0, 1.0, 2.5, 4.0])
    y = np.array([1.0, 1.0, 2.0, 2.0, 1.5, 0.5])
    p = dict(make_params("rbf"), noise_variance=0.0)
    t_new = np.linspace(-1.0, 5.0, 9)
    mean, std = predict(Series("s", t, y), p, t_new)
    scaled = dict(p, mean=p["mean"] * 1e-4, amplitude=p["amplitude"] * 1e-4)
    mean4, std4 = predict(Series("s", t, y * 1e-4), scaled, t_new)
    np.testing.assert_allclose(mean4 * 1e4, mean, rtol=1e-6)
    np.testing.assert_allclose(std4 * 1e4, std, rtol=1e-6, atol=1e-7 * p["amplitude"])


def test_threads_first_predictions_at_once_build_and_trace_one_posterior():
    """lru_cache alone let threads that asked for a kernel's posterior at
    once each build a tf.function of their own, and each was traced on its
    first call (seconds of CPU with the GIL held). A switch interval of a
    microsecond makes the threads interleave inside the build."""
    import sys

    from gpcore.predict import compiled_posterior
    from thread_calls import at_once

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(5):
            compiled_posterior.cache_clear()
            got = at_once([lambda: compiled_posterior("matern32")] * 8)
            assert len({id(f) for f in got}) == 1
    finally:
        sys.setswitchinterval(interval)
    assert got[0].experimental_get_tracing_count() == 1


def test_compiled_posteriors_kept_are_bounded_least_recently_used_first(monkeypatch):
    """Every kernel name a process predicted with kept its traced posterior
    (5.5 MiB for a sum of three) for the process's life, and sums make 241
    names: a notebook trying them held over a GiB. At most MAX_POSTERIORS are
    kept; the least recently used goes (and its memory with it), the others
    are reused untraced."""
    import gc
    import weakref

    from gpcore import predict as module

    monkeypatch.setattr(module, "MAX_POSTERIORS", 2)
    module.compiled_posterior.cache_clear()
    rbf = module.compiled_posterior("rbf")
    gone = weakref.ref(rbf)
    matern = module.compiled_posterior("matern52")
    assert module.compiled_posterior("rbf") is rbf  # used again: now the most recent
    module.compiled_posterior("matern32")  # a third: matern52, the least recent, goes
    assert module.compiled_posterior("rbf") is rbf
    assert rbf.experimental_get_tracing_count() == 1
    again = module.compiled_posterior("matern52")
    assert again is not matern and again.experimental_get_tracing_count() == 1
    del rbf, matern, again
    module.compiled_posterior("periodic")  # rbf goes now
    gc.collect()
    assert gone() is None
    module.compiled_posterior.cache_clear()


@pytest.mark.parametrize("kernel", ["matern32", "matern52"])
@pytest.mark.parametrize("length_scale", [1e-154, 1e-300])
def test_matern_far_past_its_length_scale_is_uncorrelated_not_nan(kernel, length_scale):
    """Past z = sqrt(2 nu) d / l of about 1.3e154 matern52's z^2 overflowed
    (matern32's z itself past 1.8e308), and inf x exp(-z) = inf x 0 made the
    covariance NaN: predict refused the series as not positive definite.
    The kernel there is 0 exactly in float64 (exp(-z) is 0 past z = 746).

    numpy reference, exact algebra: at these length scales the observed
    points (1 apart) are uncorrelated, A = (a^2 + s^2) I, so each observed
    time has the posterior of its own point alone and every other time the
    prior; rtol 1e-12, a few roundings of float64 apart."""
    from gpcore.predict import component_means

    series = Series("s", np.array([0.0, 1.0, 2.0, 3.0]), np.array([0.1, 1.0, -0.5, 0.3]))
    a2, noise, mean = 1.5 ** 2, 0.1, 0.2
    p = {"kernel": kernel, "mean": mean, "noise_variance": noise, "amplitude": 1.5,
         "length_scale": length_scale}
    t_new = np.array([0.0, 2.0, 0.5, 1e6, 1e10])  # 1e10 / 1e-300: d / l is inf
    shrink = a2 / (a2 + noise)
    at = np.array([0.1, -0.5, mean, mean, mean]) - mean
    expected = mean + np.array([shrink, shrink, 0.0, 0.0, 0.0]) * at
    expected_sd = np.sqrt(a2 - np.array([a2 * shrink, a2 * shrink, 0.0, 0.0, 0.0]))
    got, sd = predict(series, p, t_new)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    np.testing.assert_allclose(sd, expected_sd, rtol=1e-12)
    (part,) = component_means(series, p, t_new)
    np.testing.assert_allclose(part, expected - mean, rtol=1e-12, atol=1e-300)


def test_a_matern52_fitted_at_a_tiny_time_scale_predicts_far_away():
    """Fitted on t = [0, 1e-300, 2e-300, 3e-300] and predicted at t = 1
    (d / l about 1e300): NaN before; the prior (mean, amplitude) now, as
    the kernel is 0 there (exact)."""
    from gpcore import FitConfig, build_fitter

    series = Series("tiny", np.array([0.0, 1e-300, 2e-300, 3e-300]),
                    np.array([0.1, 1.0, -0.5, 0.3]))
    fit = build_fitter(FitConfig(kernel="matern52")).fit([series])[0]
    assert fit.status == "ok", fit.error
    mean, sd = predict(series, fit, np.array([1.0, -1.0]))
    np.testing.assert_allclose(mean, fit.params["mean"], rtol=1e-12)
    np.testing.assert_allclose(sd, fit.params["amplitude"], rtol=1e-12)


def test_predicting_many_series_keeps_no_memory_for_each_noise_variance(rng):
    """TensorFlow keeps a tensor for every distinct Python scalar a
    function is called with (~560 bytes and a Python block each, never
    freed): a worker forecasting a million series, each with its own fitted
    noise variance, held about 0.6 GB for them (docs/design.md, "Measured
    facts", *Long-running workers*). Python's small-object blocks count
    them on every allocator: after 1,000 calls (which settle a few hundred
    blocks of caches either way), 3,000 distinct noise variances held 3,260
    more blocks; as 0-d arrays, 109."""
    import gc
    import sys

    series, t_new = make_series(rng, n=20, missing=False), np.linspace(20.0, 22.0, 10)
    p = make_params("rbf")

    def calls(first, count):
        for k in range(first, first + count):
            predict(series, dict(p, noise_variance=0.09 * (1.0 + 1e-6 * k), mean=3.0 + 1e-6 * k),
                    t_new)

    calls(0, 1000)  # the posterior built and traced, and what settles
    gc.collect()
    before = sys.getallocatedblocks()
    calls(1000, 3000)
    gc.collect()
    assert sys.getallocatedblocks() - before < 1000


def read_back_rows(rows: list[dict], folder) -> dict:
    """Output rows written to Parquet and read back as README's readers
    give one row of params/ (docs/design.md, "Contracts"): {reader: [rows]}."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = folder / "part-00000-of-00001.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    frame = pd.read_parquet(path)
    found = {"pandas": [row for _, row in frame.iterrows()],
             "pyarrow": pq.read_table(path).to_pylist(),
             "itertuples": list(frame.itertuples())}
    try:
        import polars as pl
        found["polars"] = list(pl.read_parquet(path).iter_rows(named=True))
    except ImportError:  # optional: the readers installed are checked
        pass
    return found


@pytest.mark.parametrize("status, error", [("skipped", "too few finite points: 2 (of 2)"),
                                           ("failed", "likelihood not finite")])
def test_a_row_of_an_unfitted_series_is_refused_naming_it_and_its_status(rng, tmp_path,
                                                                       status, error):
    """A skipped or failed row of params/ (NaN or null parameters) was
    refused "params['mean'] must be finite; got nan" (pandas) or "must be a
    number; got None" (pyarrow, polars): neither the series nor why it has
    no parameters, where a FitResult of it names both."""
    row = FitResult("short", status, "rbf", 2, error=error).to_row()
    for reader, (read,) in read_back_rows([row], tmp_path).items():
        with pytest.raises(ValueError, match=rf"^series 'short' has status '{status}', not "
                                             rf"'ok' \({re.escape(error)}\); only fitted series have "
                                             "parameters to predict with$"):
            predict(make_series(rng), read, np.zeros(2))


@pytest.mark.parametrize("kernel", ["rbf", "linear+rbf"])
def test_a_row_from_every_reader_predicts_as_numpy(rng, tmp_path, kernel):
    """A fitted row as pandas, pyarrow, polars and itertuples give it
    predicts as the numpy posterior of its parameters (assert_close: the
    same algebra done two ways). itertuples' namedtuple was refused
    "params must be a FitResult or a mapping ...; got a Pandas"."""
    series, t_new = make_series(rng), np.linspace(-5.0, 30.0, 9)
    parts = [{"kernel": "linear", "amplitude": 0.3, "length_scale": None, "period": None},
             {"kernel": "rbf", "amplitude": 1.7, "length_scale": 2.5, "period": None}]
    fitted = FitResult("s", "ok", kernel, 37, mean=3.0, noise_variance=0.09,
                       components=parts[-len(kernel.split("+")):])
    ok = np.isfinite(series.y)
    t, y = series.t[ok], series.y[ok]
    comps, c = fitted.params["components"], ref.centre(t)
    cov = ref.components_matrix(comps, t, t, c) + 0.09 * np.eye(t.size)
    cross = ref.components_matrix(comps, t_new, t, c)
    expected = 3.0 + cross @ np.linalg.solve(cov, y - 3.0)
    for reader, (row,) in read_back_rows([fitted.to_row()], tmp_path).items():
        assert_close(predict(series, row, t_new)[0], expected, scale=3.0)


@pytest.mark.parametrize("kernel", ["linear", "linear+rbf"])
@pytest.mark.parametrize("far", [1e200, -1e300, 1.7e308])
def test_a_posterior_past_float64_far_from_the_data_is_refused_not_nan(rng, kernel, far):
    """A linear part's prior variance amplitude^2 (t - c)^2 passes float64's
    largest past ~1e154 / amplitude from its centre: predict gave sd NaN
    (inf - inf) beside a finite mean, at 1.7e308 a NaN mean too, and
    component_means and calibration.forecast the same, without a word,
    where the command's forecast of those times refuses the series (its
    stddev "not a finite number"); component_means refuses only a mean
    that is not finite. 1e100 away the posterior is still
    numpy's (rtol 1e-7: the same algebra done two ways)."""
    from gpcore.calibration import forecast
    from gpcore.predict import component_means

    series = make_series(rng)
    parts = [{"kernel": "linear", "amplitude": 0.3, "length_scale": None, "period": None},
             {"kernel": "rbf", "amplitude": 1.7, "length_scale": 2.5, "period": None}]
    params = {"kernel": kernel, "mean": 3.0, "noise_variance": 0.09,
              "components": parts[:len(kernel.split("+"))]}
    refused = rf"^the posterior at t_new\[1\] = {re.escape(f'{far:g}')} is not finite in float64"
    for call in (predict, lambda *a: forecast(*a).sd):
        with pytest.raises(ValueError, match=refused):
            call(series, params, np.array([10.0, far]))
    if far < 1e300:  # the means alone are still finite: the line's extrapolation
        assert np.all(np.isfinite(component_means(series, params, np.array([10.0, far]))))
    else:
        with pytest.raises(ValueError, match=refused):
            component_means(series, params, np.array([10.0, far]))
    ok = np.isfinite(series.y)
    t, y, t_new = series.t[ok], series.y[ok], np.array([1e100])
    comps, c = params["components"], ref.centre(t)
    cov = ref.components_matrix(comps, t, t, c) + 0.09 * np.eye(t.size)
    cross = ref.components_matrix(comps, t_new, t, c)
    var = ref.components_matrix(comps, t_new, t_new, c)[0] - cross @ np.linalg.solve(cov, cross.T)[:, 0]
    mean, sd = predict(series, params, t_new)
    assert_close(mean, 3.0 + cross @ np.linalg.solve(cov, y - 3.0))
    assert_close(sd, np.sqrt(var))


@pytest.mark.parametrize("column", ["kernel", "mean", "noise_variance"])
def test_a_row_without_a_parameter_column_is_told_it_is_missing(rng, tmp_path, column):
    """A row of params/ read without one of its parameter columns (a
    selection of columns, another release's table) was told "params['mean']
    must be a number; got None", or "kernel must be one of ...; got None":
    a value, where there is no column."""
    row = FitResult("s", "ok", "rbf", 37, mean=3.0, noise_variance=0.09, amplitude=1.7,
                    length_scale=2.5).to_row()
    del row[column]
    for reader, (read,) in read_back_rows([row], tmp_path).items():
        with pytest.raises(ValueError, match=rf"^params has no {column!r}; give the row with "
                                             "its parameter columns"):
            predict(make_series(rng), read, np.zeros(2))


def test_a_table_given_for_a_row_is_told_to_select_the_row(rng, tmp_path):
    """params[params.series_id == "s"], the series' row still a one-row
    table, was refused "kernel must be one of ...; got 0    rbf" and
    pandas' printing of the column over three lines, naming no table; a
    polars DataFrame or an Arrow Table "params must be a FitResult or a
    mapping ...; got a DataFrame", not how to get one row of it."""
    import pandas as pd
    import pyarrow.parquet as pq

    row = FitResult("s", "ok", "rbf", 37, mean=3.0, noise_variance=0.09, amplitude=1.7,
                    length_scale=2.5).to_row()
    read_back_rows([row, dict(row, series_id="t")], tmp_path)  # writes the file
    path = tmp_path / "part-00000-of-00001.parquet"
    frame = pd.read_parquet(path)
    tables = {"pandas": (frame[frame.series_id == "s"], 1), "pyarrow": (pq.read_table(path), 2)}
    try:
        import polars as pl
        tables["polars"] = (pl.read_parquet(path), 2)
    except ImportError:  # optional: the readers installed are checked
        pass
    for reader, (table, rows) in tables.items():
        with pytest.raises(ValueError, match=rf"^params must be one row of params/, not a table "
                                             rf"\(a {type(table).__name__} of {rows} rows?\): "
                                             r"select the series' row, e\.g\. "):
            predict(make_series(rng), table, np.zeros(2))


@pytest.mark.parametrize("centre, got", [(float("nan"), "nan"), (float("inf"), "inf"),
                                         ("4.5", "'4.5'"), (np.datetime64("2024-01-01"), "")])
def test_a_centre_that_is_no_finite_number_is_named(rng, centre, got):
    """centre NaN or inf (a midpoint of no points, computed by hand) was
    told "the covariance of the 37 observed points is not positive
    definite ...; check noise_variance and amplitude", parameters that are
    fine; text or a timestamp (the midpoint of timestamps) raised numpy's
    UFuncTypeError or TypeError from a subtraction, naming nothing."""
    from gpcore.calibration import forecast
    from gpcore.predict import component_means

    params = {"kernel": "linear+rbf", "mean": 3.0, "noise_variance": 0.09, "components": [
        {"kernel": "linear", "amplitude": 0.3, "length_scale": None, "period": None},
        {"kernel": "rbf", "amplitude": 1.7, "length_scale": 2.5, "period": None}]}
    for call in (predict, component_means, forecast):
        with pytest.raises(ValueError, match=rf"^centre must be a finite number in the units of "
                                             rf"t \(fitted_centre's\) or None; got {got}"):
            call(make_series(rng), params, np.zeros(2), centre=centre)

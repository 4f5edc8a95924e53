"""Sums of kernels and kernel "auto": the fit, its row and the choice."""

import numpy as np
import pytest

import gp_reference as ref
from gpcore import FitConfig, GPFitter, KernelChoice, Series, build_fitter, kernels, starts
from gpcore.choice import periodic_starts
from gpcore.config import fitted_configs
from gpcore.predict import predict


@pytest.fixture(scope="module")
def seasonal_series():
    rng = np.random.default_rng(7)
    return [(Series(f"s{i}", t, y), period)
            for i, (t, y, period) in enumerate(ref.seasonal(rng, int(rng.integers(120, 200)))
                                               for _ in range(6))]


@pytest.fixture(scope="module")
def sum_fits(seasonal_series, fitter_for):
    fitter = fitter_for(FitConfig(kernel="rbf+periodic"))
    return fitter, fitter.fit([s for s, _ in seasonal_series])


def test_sum_rows_carry_components_and_recompute_their_nll(seasonal_series, sum_fits):
    _, fits = sum_fits
    for (series, period), fit in zip(seasonal_series, fits):
        row = fit.to_row()
        assert row["status"] == "ok" and row["kernel"] == "rbf+periodic"
        assert [c["kernel"] for c in row["components"]] == ["rbf", "periodic"]
        assert row["amplitude"] is row["length_scale"] is row["period"] is None
        assert row["components"][0]["period"] is None
        # The row alone reproduces the nll: numpy against TF's profiled
        # likelihood, float64 round-off in a ~200-point Cholesky.
        assert ref.row_nll(row, series.t, series.y) == pytest.approx(row["nll"], rel=1e-8)
        # 2 (mean, noise) + rbf (amplitude, length) + periodic (amplitude, length, period).
        assert row["bic"] == pytest.approx(2 * row["nll"] + 7 * np.log(row["n_points"]))
        found = row["components"][1]["period"]
        assert min(abs(found / period - m) for m in (1, 2, 3)) < 0.1


@pytest.mark.parametrize("kernel", ["matern32", "matern52", "periodic", "rbf+rbf",
                                    "matern52+periodic"])
def test_every_kernels_row_recomputes_its_nll(kernel, seasonal_series, fitter_for):
    """README, "Output": the row alone reproduces nll, to 1e-6 of
    max(|nll|, n) (float64 round-off), for the kernels the other tests'
    rows leave out (rbf, matern12, linear, linear+rbf, rbf+periodic and
    linear+rbf+periodic are checked there)."""
    series = [s for s, _ in seasonal_series[:2]]
    for s, fit in zip(series, fitter_for(FitConfig(kernel=kernel)).fit(series)):
        row = fit.to_row()
        assert row["status"] == "ok" and row["kernel"] == kernel
        assert abs(ref.row_nll(row, s.t, s.y) - row["nll"]) <= 1e-6 * max(abs(row["nll"]), s.t.size)


def test_a_sum_beats_its_first_component_alone(seasonal_series, sum_fits, fitter_for):
    # rbf+periodic contains rbf (variance ratio -> 0): its optimum can't be worse.
    alone = fitter_for(FitConfig(kernel="rbf")).fit([s for s, _ in seasonal_series])
    for single, summed in zip(alone, sum_fits[1]):
        assert summed.nll <= single.nll + 1e-3


def test_sum_is_traced_once_and_predicts_with_its_components(seasonal_series, sum_fits):
    fitter, fits = sum_fits
    fitter.fit([s for s, _ in seasonal_series[:3]])
    assert fitter.tracing_count == 1
    series, fit = seasonal_series[0][0], fits[0]
    t_new = np.linspace(0.0, 120.0, 50)
    mean, std = predict(series, fit, t_new)
    # Numpy posterior from the components (Rasmussen & Williams 2.23-2.24).
    cov = ref.components_matrix(fit.components, series.t, series.t)
    cov += fit.noise_variance * np.eye(series.t.size)
    cross = ref.components_matrix(fit.components, t_new, series.t)
    expected = fit.mean + cross @ np.linalg.solve(cov, series.y - fit.mean)
    var = (sum(c["amplitude"] ** 2 for c in fit.components)
           - np.einsum("mn,nm->m", cross, np.linalg.solve(cov, cross.T)))
    np.testing.assert_allclose(mean, expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(std, np.sqrt(np.maximum(var, 0.0)), rtol=1e-5, atol=1e-7)


def _harmonic_cycle(rng, n=150, span=100.0, period=20.0):
    """(t, y): a cycle whose 2nd, 3rd and 4th harmonics outweigh its
    fundamental, plus a slope and noise sd 0.2."""
    t = np.sort(rng.uniform(0.0, span, n))
    phi = 2 * np.pi * t / period + rng.uniform(0, 2 * np.pi)
    y = (0.3 * np.sin(phi) + np.sin(2 * phi) + 0.8 * np.sin(3 * phi + 1)
         + 0.6 * np.sin(4 * phi + 2) + 0.01 * t + 0.2 * rng.standard_normal(n))
    return t, y


@pytest.mark.parametrize("name", ["rbf+periodic", "periodic"])
def test_a_cycle_whose_periodogram_peaks_at_a_harmonic_is_fitted_at_its_period(fitter_for, name):
    # The grid's periods are the periodogram's top 3 peaks, here half, a
    # third and a quarter of the period: Newton settled at half of it, 50-100
    # nats worse, until the period probes (x 2, x 3 from the optimum) ran.
    rng = np.random.default_rng(0)
    series = [Series(f"h{i}", *_harmonic_cycle(rng)) for i in range(4)]
    for s in series:
        t = (s.t - s.t[0]) / np.ptp(s.t)
        peaks = starts.periodogram_peaks(t, s.y - np.polyval(np.polyfit(t, s.y, 1), t), 3, 2.0)
        assert abs(peaks[0] * np.ptp(s.t) / 10.0 - 1) < 0.05  # the top peak: half the period
        assert not np.any(np.abs(peaks * np.ptp(s.t) / 20.0 - 1) < 0.1)  # the period: not in the top 3
    for fit in fitter_for(FitConfig(kernel=name)).fit(series):
        period = [c["period"] for c in fit.components if c["period"] is not None][0]
        assert abs(period / 20.0 - 1) < 0.02, (fit.series_id, period)


@pytest.mark.parametrize("name", ["rbf+periodic", "periodic"])
def test_periods_stay_within_half_the_span_and_a_fit_held_there_says_at_bound(fitter_for, name):
    # 1.8 cycles of a sine: the likelihood wants the true period, 0.56 of
    # the span, beyond the bound (a cycle must be seen twice).
    rng = np.random.default_rng(5)
    series = []
    for cycles in (1.8, 2.5, 6.0):
        t = np.sort(rng.uniform(0.0, 30.0, 80))
        series.append(Series(f"c{cycles}", t, np.sin(2 * np.pi * cycles * t / 30.0)
                             + 0.05 * rng.standard_normal(80)))
    fits = fitter_for(FitConfig(kernel=name)).fit(series)
    for s, fit in zip(series, fits):
        period = [c["period"] for c in fit.components if c["period"] is not None][0]
        assert period <= 0.5 * np.ptp(s.t) * (1 + 1e-9), fit.series_id
    held = fits[0]
    if name == "periodic":  # the sum's rbf may take the cycle and its periodic part another
        assert held.period == pytest.approx(0.5 * np.ptp(series[0].t), rel=1e-6)
    if held.components[-1]["period"] >= 0.5 * np.ptp(series[0].t) * (1 - 1e-6):
        assert held.at_bound
    # Within the bounds the true period is found, not flagged.
    for s, fit, cycles in zip(series[1:], fits[1:], (2.5, 6.0)):
        assert fit.components[-1]["period"] == pytest.approx(30.0 / cycles, rel=0.03)


def test_a_variance_ratio_a_hair_inside_its_bound_says_at_bound(fitter_for):
    # A seasonal series with one spike 1e4 above it: the periodic part
    # takes the spike, its variance ratio to the rbf's wants past 1e6 and
    # ends 1e-14 inside that bound (round-off of Newton's steps), which
    # said at_bound False (docs/design.md, "Sums of kernels", *At a bound
    # by round-off*).
    rng = np.random.default_rng(11)
    n = int(rng.integers(30, 80))
    t, y, _ = ref.seasonal(rng, n)
    y[rng.integers(n)] += rng.choice([1e4, 1e6, -1e5])
    fit = fitter_for(FitConfig(kernel="rbf+periodic")).fit([Series("spike", t, y)])[0]
    rbf, periodic = fit.components
    ratio = (periodic["amplitude"] / rbf["amplitude"]) ** 2
    assert ratio == pytest.approx(kernels.VARIANCE_RATIO_BOUNDS[1], rel=1e-9)
    assert fit.at_bound


def test_auto_picks_by_bic_and_reports_the_margin(seasonal_series):
    rng = np.random.default_rng(3)
    smooth = [Series(f"r{i}", *ref.sample(rng, "rbf", 120, length_scale=1.5,
                                           noise_variance=0.05)) for i in range(4)]
    config = FitConfig(kernel="auto", candidates=("rbf", "rbf+periodic"))
    chooser = build_fitter(config)
    assert isinstance(chooser, KernelChoice)
    series = [s for s, _ in seasonal_series] + smooth
    fits = chooser.fit(series)
    assert chooser.tracing_count == 2  # one compiled fit per candidate
    # Each candidate alone, configured as auto configures it (the sum without
    # the jumps: gpcore.config.fitted_configs) and the sum started as auto
    # starts it, from rbf's fit.
    alone, summed = fitted_configs(config)
    rbf = GPFitter(alone).fit(series)
    singles = {"rbf": rbf, "rbf+periodic": GPFitter(summed).fit(
        series, [periodic_starts(s, r, "rbf+periodic") for s, r in zip(series, rbf)])}
    for i, fit in enumerate(fits):
        bics = sorted(singles[name][i].bic for name in config.candidates)
        assert fit.bic == pytest.approx(bics[0], rel=1e-6)
        assert fit.bic_margin == pytest.approx(bics[1] - bics[0], rel=1e-4, abs=1e-4)
    assert [f.kernel for f in fits[:6]] == ["rbf+periodic"] * 6
    assert [f.kernel for f in fits[6:]] == ["rbf"] * 4


def test_auto_reports_a_series_no_candidate_can_fit():
    fit = build_fitter(FitConfig(kernel="auto")).fit([Series("x", np.arange(2.0), np.ones(2))])[0]
    assert (fit.status, fit.kernel, fit.bic_margin) == ("skipped", "auto", None)


@pytest.mark.parametrize("config, message", [
    (dict(kernel="rbf+cosine"), "kernel must be one of rbf.*joined by"),
    (dict(kernel="rbf+rbf+rbf+rbf"), "sum of up to 3"),
    (dict(kernel="auto", candidates=("rbf",)), "at least 2"),
    (dict(kernel="auto", candidates=("rbf", "auto")), "at least 2"),
    # A candidate named twice would be fitted twice, and each series it wins
    # would report a bic_margin of 0 against itself.
    (dict(kernel="auto", candidates=("rbf", "matern52", "rbf")), "'rbf' twice"),
    (dict(kernel="auto", candidates=("rbf", "rbf*periodic")), "candidate kernel 'rbf\\*periodic'"),
    (dict(kernel="auto", candidates=("rbf+periodic", "periodic+rbf")),
     "'rbf\\+periodic' twice, as 'periodic\\+rbf'"),
    # A string is the command's --candidates: one name is one name, not its letters.
    (dict(kernel="auto", candidates="matern52"), "at least 2.*got \\('matern52',\\)"),
])
def test_bad_kernel_names_say_what_is_accepted(config, message):
    with pytest.raises(ValueError, match=message):
        FitConfig(**config)


def test_candidates_without_kernel_auto_are_refused_naming_both():
    """candidates= with another kernel was silently ignored: the fitter
    fitted the kernel alone, and its user believed the candidates were
    compared. Refused, naming both; the default candidates (what every
    config carries unless told otherwise) pass, and auto's own candidates'
    configs (fitted_configs) build as before."""
    from gpcore.config import CANDIDATES
    from gpcore.kernels import RBF
    for kernel, candidates in (("rbf", ("rbf", "rbf+periodic")), (RBF(), "matern52,matern12"),
                               ("matern52+periodic", CANDIDATES[::-1])):
        name = kernel if isinstance(kernel, str) else kernel.name
        with pytest.raises(ValueError) as refused:
            FitConfig(kernel=kernel, candidates=candidates)
        given = tuple(candidates.split(",")) if isinstance(candidates, str) else candidates
        assert str(refused.value) == (
            f"candidates={given!r} are compared only under kernel='auto'; got kernel={name!r}, "
            "which is fitted alone. Give kernel='auto', or leave candidates out"), refused.value
    assert GPFitter(FitConfig(kernel="rbf", candidates=CANDIDATES)).config.kernel_name == "rbf"
    auto = FitConfig(kernel="auto", candidates=("rbf", "rbf+periodic"))
    assert [c.kernel_name for c in fitted_configs(auto)] == ["rbf", "rbf+periodic"]


def test_candidates_may_be_given_as_the_commands_comma_separated_string():
    assert (FitConfig(kernel="auto", candidates="rbf,rbf+periodic").candidates
            == FitConfig(kernel="auto", candidates=("rbf", "rbf+periodic")).candidates)


def test_candidates_may_be_kernels_as_the_kernel_may():
    """FitConfig(kernel=RBF() + Periodic()) is "rbf+periodic"; so is the
    same kernel among the candidates, and it is named so in the rows."""
    from gpcore.kernels import RBF, Periodic
    config = FitConfig(kernel="auto", candidates=(RBF(), RBF() + Periodic()))
    assert config.candidates == ("rbf", "rbf+periodic")

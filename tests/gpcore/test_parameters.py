"""gpcore.parameters: the optimiser's standardised coordinates to the
caller's units (component_rows) and a previous fit's parameters back to a
starting point (search_start)."""
import numpy as np
import pytest

import gp_reference as ref
from gpcore import FitConfig, Series
from gpcore.kernels import kernel as kernel_named
from gpcore.parameters import component_rows, search_start

SUMS_AND_SINGLES = ["rbf", "periodic", "linear", "linear+rbf", "rbf+periodic",
                    "linear+rbf+periodic", "matern52+rbf+periodic"]


@pytest.mark.parametrize("name", SUMS_AND_SINGLES)
def test_search_start_inverts_component_rows(name):
    # Units: y's sd and t's span scale the rows; a slope's amplitude is per
    # unit of t (linear). Both directions are a few products: 1e-12 relative.
    kernel = kernel_named(name)
    shape = np.random.default_rng(1).uniform(0.2, 2.0, len(kernel.parameters))
    sd, span, scale2, ratio = 3.0, 40.0, 0.7, 0.05
    rows = component_rows(kernel, shape, scale2, sd, span)
    assert [r["kernel"] for r in rows] == name.split("+")
    params = {"kernel": name, "mean": 1.0, "components": rows,
              "noise_variance": ratio * scale2 * sd ** 2}
    np.testing.assert_allclose(np.exp(search_start(kernel, params, span)), np.r_[shape, ratio],
                               rtol=1e-12)


def test_search_start_round_trips_a_fits_parameters(fitter_for):
    # A real fit's row (150 points of a seasonal draw), back to the
    # optimiser's coordinates: the rbf's length scale and the period per
    # span, the periodic part's variance and the noise per rbf variance.
    t, y, _ = ref.seasonal(np.random.default_rng(11), 158)
    series = Series("s0", t[:150], y[:150])
    fitter = fitter_for(FitConfig(kernel="rbf+periodic"))
    fit = fitter.fit([series])[0]
    span = np.ptp(series.t)
    x = search_start(fitter.kernel, fit.params, span)
    rows = [fit.components[0]["length_scale"] / span, fit.components[1]["amplitude"] ** 2
            / fit.components[0]["amplitude"] ** 2, fit.components[1]["length_scale"],
            fit.components[1]["period"] / span, fit.noise_variance / fit.components[0]["amplitude"] ** 2]
    np.testing.assert_allclose(np.exp(x), rows, rtol=1e-12)
    assert search_start(kernel_named("rbf"), fit.params, span) is None  # another kernel
    assert search_start(fitter.kernel, dict(fit.params, components=None), span) is None

"""--holdout fits each series without its last K finite points, so a
`linear` part's centre c is the midpoint of the points before them
(docs/design.md, "The centre c of `linear`"); the forecast and observed
rows, which condition on all the points, must use the fitted model, c
included. Checked against a plain numpy posterior (Rasmussen & Williams
eq. 2.23-2.24, tests/gp_reference.py's kernels)."""
from __future__ import annotations

import numpy as np
from scipy.stats import t as student_t

from gp_reference import calibration, components_matrix
from pipeline_data import gpfit, write_long

HOLDOUT = 12


def posterior(t, y, row, t_new, centre):
    """(mean, latent sd) at t_new [m] given all of t, y [n], numpy."""
    comps = row["components"]
    a = components_matrix(comps, t, t, centre) + row["noise_variance"] * np.eye(t.size)
    cross = components_matrix(comps, t_new, t, centre)
    prior = np.diag(components_matrix(comps, t_new, t_new, centre))
    mean = row["mean"] + cross @ np.linalg.solve(a, y - row["mean"])
    var = prior - np.einsum("mn,nm->m", cross, np.linalg.solve(a, cross.T))
    return mean, np.sqrt(np.maximum(var, 0.0))


def calibrated_lower_95(t, y, row, t_new, centre, sd_obs):
    """The calibrated 95 % lower bound at t_new [m] past t [n] (docs/design.md,
    "Forecast intervals"), numpy: the GLS mean's variance added, Student-t
    with n - 1 dof and scale Q / (n - 1) for the fit's Q / n, times the
    clipped RMS of the standardised errors m
    points ahead of 16 rolling origins, each with its own GLS mean."""
    scale, extra = calibration(t, y, row, t_new, centre)
    mean, _ = posterior(t, y, row, t_new, centre)
    return mean - student_t.ppf(0.975, t.size - 1) * scale * np.sqrt(sd_obs ** 2 + extra)


def test_forecast_and_observed_rows_keep_the_fits_linear_centre(tmp_path):
    """A trend fitted on its first 48 of 60 days has c = 23.5, not 29.5:
    predicting with the midpoint of all 60 pinned the line to the fitted
    mean 6 days later, about 6 x the slope (1.8) too low everywhere."""
    rng = np.random.default_rng(5)
    t = np.arange(60.0)
    y = 2.0 + 0.3 * t + 0.3 * rng.standard_normal(t.size)
    folder = write_long(str(tmp_path / "in"), {"trend": (t, y)}, null_id_rows=0)
    run = gpfit(folder, str(tmp_path / "out"), "--kernel", "linear", "--holdout", str(HOLDOUT),
                "--predict_steps", "4", "--predict_observed")
    assert run.code == 0, run.stderr
    row, = run.rows()
    assert row["status"] == "ok" and row["n_points"] == t.size - HOLDOUT
    centre = 0.5 * (t[0] + t[-HOLDOUT - 1])  # of the points the fit saw
    for kind, given in (("forecast", (t, y)), ("observed", (t, y)),
                        ("holdout", (t[:-HOLDOUT], y[:-HOLDOUT]))):
        rows = [p for p in run.predictions() if p["kind"] == kind]
        t_new = np.array([p["t"] for p in rows])
        mean, sd = posterior(*given, row, t_new, centre)
        # float64 round-off of the same algebra on 60 well-conditioned points.
        np.testing.assert_allclose([p["mean"] for p in rows], mean, rtol=1e-9, atol=1e-9,
                                   err_msg=kind)
        np.testing.assert_allclose([p["stddev"] for p in rows], sd, rtol=1e-7, atol=1e-9,
                                   err_msg=kind)
    # The forecast rows' intervals are the fitted model's too (its GLS mean's
    # variance and rolling errors); round-off as above, through solves at
    # each rolling origin.
    ahead = [p for p in run.predictions() if p["kind"] == "forecast"]
    t_new = np.array([p["t"] for p in ahead])
    lower = calibrated_lower_95(t, y, row, t_new, centre,
                                np.array([p["stddev_observed"] for p in ahead]))
    np.testing.assert_allclose([p["lower_95"] for p in ahead], lower, rtol=1e-7, atol=1e-8)

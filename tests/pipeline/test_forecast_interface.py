"""The forecast interface on the local runner over real Parquet: steps at
each series' own spacing, intervals at chosen levels, the log transform and
the holdout backtest, each checked against a plain numpy posterior
(tests/gp_reference.py's kernels, Rasmussen & Williams eq. 2.23-2.24) and,
for forecast and held-out rows, a plain numpy calibrated predictive
(docs/design.md, "Forecast intervals")."""
from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pytest
from scipy.linalg import cho_solve, solve_triangular
from scipy.stats import norm, t as student_t

from gp_reference import calibration, components_matrix
from gpcore import Series
from gpcore.series import clean
from pipeline import grid
from pipeline.fitted_scale import said_in_y
from pipeline_data import forecast_steps, gpfit, write_long

STEPS, HOLDOUT, LEVELS = 6, 5, (80.0, 95.0)


def regular_series(seed: int = 3) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Hourly, daily with gaps, monthly (in days) and randomly timed series,
    on very different scales of y, plus one too short to fit."""
    rng = np.random.default_rng(seed)
    hours = np.arange(72) / 24.0
    days = np.sort(rng.choice(90, size=75, replace=False)).astype(np.float64)
    months = np.cumsum(np.tile([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], 4)).astype(
        np.float64)
    random_t = np.cumsum(rng.exponential(1.0, 60))
    return {
        "hourly": (hours, 20 + 3 * np.sin(2 * np.pi * hours) + 0.3 * rng.standard_normal(72)),
        "daily": (days, 1e4 * (1 + 0.2 * np.sin(days / 9)) + 50 * rng.standard_normal(75)),
        "monthly": (months, np.cos(months / 200) + 0.05 * rng.standard_normal(48)),
        "random": (random_t, np.sin(random_t / 5) + 0.1 * rng.standard_normal(60)),
        "short": (np.array([1.0, 2.0]), np.array([1.0, 2.0])),
    }


def posterior(t, y, row, t_new):
    """Mean and sd of a new observation at t_new, numpy (float64)."""
    comps = row["components"]
    a = components_matrix(comps, t, t) + row["noise_variance"] * np.eye(t.size)
    # Triangular solves against the factor: np.linalg.solve would factor the
    # triangle again by LU, 2/3 n^3 (1.4 s of one core each at n = 4,500).
    chol = np.linalg.cholesky(a)
    k_star = components_matrix(comps, t_new, t)
    alpha = cho_solve((chol, True), y - row["mean"])
    v = solve_triangular(chol, k_star.T, lower=True)
    prior = sum(c["amplitude"] ** 2 for c in comps)
    var = np.maximum(prior - np.sum(v * v, axis=0), 0.0) + row["noise_variance"]
    return row["mean"] + k_star @ alpha, np.sqrt(var)


def calibrated(t, y, row, t_new, level, at, window=504):
    """(lower, upper) of the calibrated central `level` % interval of new
    observations at forecast times t_new [m] past t [n], numpy written from
    docs/design.md: the sd of a new observation plus the GLS mean's
    variance, times sqrt(n / (n - 1)) (the Student-t's Q / (n - 1) for the
    fit's Q / n) and the clipped RMS of the standardised errors up to m
    points ahead of 16 rolling origins over the second half (each origin
    with its own GLS mean, solved afresh), Student-t with n - 1 dof; the
    last two from the last `window` points of a longer series. at: `posterior`'s
    (mean, sd) at t_new, which every caller has computed already."""
    mean, sd_obs = at
    dof = t.size - 1
    t, y = t[-window:], y[-window:]
    scale, extra = calibration(t, y, row, t_new, points=dof + 1)
    half = student_t.ppf(0.5 + level / 200, dof) * scale * np.sqrt(sd_obs ** 2 + extra)
    return mean - half, mean + half


def finite(t, y):
    keep = np.isfinite(t) & np.isfinite(y)
    order = np.argsort(t[keep], kind="stable")
    return t[keep][order], y[keep][order]


@pytest.fixture(scope="module")
def data():
    return regular_series()


@pytest.fixture(scope="module")
def run(tmp_path_factory, data):
    base = tmp_path_factory.mktemp("steps")
    folder = write_long(str(base / "in"), data)
    return gpfit(folder, str(base / "out"), "--kernel", "rbf", "--batch_size", "4",
                 "--predict_steps", str(STEPS), "--predict_levels", "95,80",
                 "--holdout", str(HOLDOUT), "--predict_observed")


def by_kind(run, sid, kind):
    return [p for p in run.predictions() if p["series_id"] == sid and p["kind"] == kind]


def test_forecasts_step_at_each_series_own_spacing(run, data):
    assert run.code == 0, run.stderr
    rows = {r["series_id"]: r for r in run.rows()}
    assert rows["short"]["status"] == "skipped"
    expected_steps = {"hourly": 1 / 24, "daily": 1.0, "monthly": 30.5}
    for sid, step in expected_steps.items():
        t, y = finite(*data[sid])
        assert rows[sid]["status"] == "ok", rows[sid]
        got = [p["t"] for p in by_kind(run, sid, "forecast")]
        median = np.median(np.diff(np.unique(t)))
        np.testing.assert_allclose(median, step, rtol=0.02)  # the data are what they say
        np.testing.assert_allclose(got, t.max() + median * np.arange(1, STEPS + 1),
                                   rtol=0, atol=1e-9, err_msg=sid)
    # Random times have no step: no forecast, counted with the reason.
    assert by_kind(run, "random", "forecast") == []
    assert len(by_kind(run, "random", "observed")) == data["random"][0].size
    assert run.manifest["predictions"]["no_step"] == {grid.IRREGULAR: 1}
    assert run.manifest["predictions"]["steps"] == STEPS
    # Said after the job too: a launcher may not show the job's log.
    warned = [line for line in run.stderr.splitlines() if "no forecast rows" in line]
    assert len(warned) == 1 and "gpfit: warning: 1 ok series" in warned[0], run.stderr
    assert f"1 {grid.IRREGULAR}" in warned[0] and "--predict_horizon H" in warned[0]
    assert run.manifest["predictions"]["levels"] == list(LEVELS)


def test_intervals_at_each_level_match_a_numpy_posterior(run, data):
    """Forecast rows: the calibrated predictive; observed rows: the plain
    posterior's normal intervals. stddev_observed is the plain posterior's
    on both."""
    from gpcore import Series
    from gpcore.calibration import forecast

    rows = {r["series_id"]: r for r in run.rows()}
    widened = 0
    for sid in ("hourly", "daily", "monthly", "random"):
        t, y = finite(*data[sid])
        ahead, seen = by_kind(run, sid, "forecast"), by_kind(run, sid, "observed")
        mine = ahead + seen
        t_new = np.array([p["t"] for p in mine])
        mean, sd_obs = posterior(t, y, rows[sid], t_new)
        scale = np.std(y)
        # TF and numpy run the same formula; float64 round-off on <= 75 points.
        np.testing.assert_allclose([p["mean"] for p in mine], mean, rtol=1e-7,
                                   atol=1e-9 * scale, err_msg=sid)
        np.testing.assert_allclose([p["stddev_observed"] for p in mine], sd_obs, rtol=1e-6,
                                   err_msg=sid)
        k = len(ahead)
        for level in LEVELS:
            z = norm.ppf(0.5 + level / 200)
            lower, upper = (mean[k:] - z * sd_obs[k:], mean[k:] + z * sd_obs[k:])
            if k:
                lo, hi = calibrated(t, y, rows[sid], t_new[:k], level, (mean[:k], sd_obs[:k]))
                lower, upper = np.concatenate([lo, lower]), np.concatenate([hi, upper])
                # The same numbers through gpcore.calibration, called directly.
                f = forecast(Series(sid, *data[sid]), rows[sid], t_new[:k])
                np.testing.assert_allclose(f.interval(level / 100)[0], lo, rtol=1e-6,
                                           atol=1e-8 * scale, err_msg=sid)
                widened += int(np.all(hi - lo > 2 * z * sd_obs[:k] * (1 + 1e-6)))
            for side, want in (("lower", lower), ("upper", upper)):
                # Round-off as above, through solves at each rolling origin.
                np.testing.assert_allclose([p[f"{side}_{level:g}"] for p in mine], want,
                                           rtol=1e-6, atol=1e-8 * scale,
                                           err_msg=f"{sid} {side} {level}")
    assert widened == 6  # 3 series with forecasts x 2 levels: Student-t alone widens them


def test_observed_rows_are_the_finite_points_with_their_residuals():
    """With --predict_observed, one row per finite point (a missing value
    or time has none), its residual (y - mean) / stddev_observed, against
    the numpy posterior of the row's parameters (rtol as above)."""
    from gpcore import FitResult, Series
    from pipeline.forecast import Plan, posterior_table
    from pipeline.io import rows as rows_io

    t = np.arange(12.0)
    y = np.sin(t / 2.0)
    components = [{"kernel": "rbf", "amplitude": 0.8, "length_scale": 1.5, "period": None}]
    row = rows_io.of_fit(FitResult("a", "ok", "rbf", 12, mean=0.1, amplitude=0.8,
                                   length_scale=1.5, noise_variance=0.01,
                                   components=components), None)
    given = Series("a", np.append(t, [np.nan, 12.0]), np.append(y, [1.0, np.nan]))
    found = posterior_table(given, row, Plan(observed=True)).table.to_pylist()
    assert [p["kind"] for p in found] == ["observed"] * t.size
    assert [p["t"] for p in found] == t.tolist()
    mean, sd_obs = posterior(t, y, row, t)
    np.testing.assert_allclose([p["mean"] for p in found], mean, rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose([p["residual"] for p in found], (y - mean) / sd_obs, rtol=1e-6)


def test_a_horizon_grids_spacing_is_the_horizon_over_its_points():
    """--predict_horizon 10 --predict_points 100 steps 0.1, fine for a
    period of 1; 5 points step 2, coarser than a quarter period."""
    from gpcore import FitResult, Series
    from pipeline.forecast import Plan, posterior_table
    from pipeline.io import rows as rows_io

    t = np.arange(0.0, 6.0, 0.1)
    components = [{"kernel": "periodic", "amplitude": 1.0, "length_scale": 1.0,
                   "period": 1.0}]
    row = rows_io.of_fit(FitResult("a", "ok", "periodic", t.size, mean=0.0, amplitude=1.0,
                                   length_scale=1.0, period=1.0, noise_variance=0.01,
                                   components=components), None)
    series = Series("a", t, np.sin(2 * np.pi * t))
    fine = posterior_table(series, row, Plan(horizon=10.0, points=100))
    coarse = posterior_table(series, row, Plan(horizon=10.0, points=5))
    assert (fine.table.num_rows, fine.coarse) == (100, False)
    assert (coarse.table.num_rows, coarse.coarse) == (5, True)


def test_the_holdout_fits_without_the_last_points_and_scores_like_numpy(run, data):
    rows = {r["series_id"]: r for r in run.rows()}
    mases, points, covered = [], 0, 0
    for sid in ("hourly", "daily", "monthly", "random"):
        t, y = finite(*data[sid])
        row = rows[sid]
        assert row["n_points"] == t.size - HOLDOUT and row["holdout_points"] == HOLDOUT
        t_fit, y_fit, t_held, y_held = t[:-HOLDOUT], y[:-HOLDOUT], t[-HOLDOUT:], y[-HOLDOUT:]
        held = by_kind(run, sid, "holdout")
        np.testing.assert_array_equal([p["t"] for p in held], t_held)
        np.testing.assert_array_equal([p["y"] for p in held], y_held)
        mean, sd_obs = posterior(t_fit, y_fit, row, t_held)
        np.testing.assert_allclose([p["mean"] for p in held], mean, rtol=1e-7,
                                   atol=1e-9 * np.std(y))
        lo, hi = calibrated(t_fit, y_fit, row, t_held, 95.0, (mean, sd_obs))  # as forecast rows'
        np.testing.assert_allclose([p["lower_95"] for p in held], lo, rtol=1e-6,
                                   atol=1e-8 * np.std(y))
        np.testing.assert_allclose([p["upper_95"] for p in held], hi, rtol=1e-6,
                                   atol=1e-8 * np.std(y))
        scale = np.mean(np.abs(np.diff(y_fit)))  # one-step naive MAE in-sample
        mase = np.mean(np.abs(y_held - mean)) / scale
        inside = (y_held >= lo) & (y_held <= hi)
        np.testing.assert_allclose(row["holdout_scale"], scale, rtol=1e-12)
        np.testing.assert_allclose(row["holdout_mase"], mase, rtol=1e-6, err_msg=sid)
        assert row["holdout_coverage_95"] == pytest.approx(np.mean(inside), abs=1e-12)
        mases.append(mase)
        points += HOLDOUT
        covered += inside.sum()
    # Both points of "short" held out, none left to fit: skipped, saying why.
    short = rows["short"]
    assert short["status"] == "skipped" and short["holdout_mase"] is None
    assert short["holdout_points"] == 2
    assert short["error"].endswith("(after --holdout 5 held out its last 2 finite point(s))")
    totals = run.manifest["holdout"]
    assert totals["series"] == 4 and totals["points"] == points
    np.testing.assert_allclose(totals["mase_mean"], np.mean(mases), rtol=1e-9)
    np.testing.assert_allclose(totals["mase_median"], np.median(mases), rtol=0.02)  # 2 % bins
    np.testing.assert_allclose(totals["coverage_95"], covered / points, rtol=1e-12)
    assert f"holdout of 4 series: MASE mean {np.mean(mases):.3g}" in run.stdout


def test_the_manifests_mase_median_of_an_even_count_is_the_middle_twos_mean(
        tmp_path, data):
    """Two scored series: their median is the mean of the two MASEs, not
    the lower one."""
    two = {sid: data[sid] for sid in ("hourly", "daily")}
    found = gpfit(write_long(str(tmp_path / "in"), two), str(tmp_path / "out"),
                  "--kernel", "rbf", "--batch_size", "4", "--holdout", str(HOLDOUT))
    assert found.code == 0, found.stderr
    mases = []
    for row in found.rows():
        t, y = finite(*two[row["series_id"]])
        mean, _ = posterior(t[:-HOLDOUT], y[:-HOLDOUT], row, t[-HOLDOUT:])
        mases.append(np.mean(np.abs(y[-HOLDOUT:] - mean))
                     / np.mean(np.abs(np.diff(y[:-HOLDOUT]))))
    assert max(mases) > 1.2 * min(mases)  # the lower one is not within 2 % of the median
    np.testing.assert_allclose(found.manifest["holdout"]["mase_median"], np.median(mases),
                               rtol=0.02)  # 2 % bins


def positive_series(seed: int = 8) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Positive hourly series with a daily cycle on two scales, one with a
    zero and one with a negative value."""
    rng = np.random.default_rng(seed)
    hours = np.arange(96) / 24.0
    cycle = 0.4 * np.sin(2 * np.pi * hours)
    with_zero = np.exp(1 + cycle + 0.05 * rng.standard_normal(96))
    with_zero[7] = 0.0
    return {
        "sales": (hours, np.exp(3 + cycle + 0.05 * rng.standard_normal(96))),
        "visits": (hours, np.exp(8 + cycle + 0.05 * rng.standard_normal(96))),
        "with_zero": (hours, with_zero),
        "negative": (hours, cycle),
    }


HORIZON, POINTS = 2.0, 4  # a spacing of 0.5 days: coarser than a quarter of a 1-day period


@pytest.fixture(scope="module")
def positive(tmp_path_factory):
    base = tmp_path_factory.mktemp("log")
    return positive_series(), write_long(str(base / "in"), positive_series())


def log_run(tmp_path_factory, positive, transform, *extra):
    return gpfit(positive[1], str(tmp_path_factory.mktemp("out") / transform), "--kernel",
                 "periodic", "--batch_size", "4", "--transform", transform,
                 "--predict_horizon", str(HORIZON), "--predict_points", str(POINTS),
                 "--predict_observed", *extra)


@pytest.fixture(scope="module")
def logged(tmp_path_factory, positive):
    return log_run(tmp_path_factory, positive, "log")


def test_log_transform_skips_values_it_cannot_take(logged):
    assert logged.code == 0, logged.stderr
    rows = {r["series_id"]: r for r in logged.rows()}
    assert rows["sales"]["status"] == rows["visits"]["status"] == "ok"
    for sid, said in (("with_zero", "1 value(s) <= 0"), ("negative", "value(s) <= 0")):
        assert rows[sid]["status"] == "skipped", rows[sid]
        assert said in rows[sid]["error"] and "--transform log" in rows[sid]["error"]


def test_a_value_at_a_missing_time_does_not_stop_the_transform(tmp_path):
    """A point whose time is missing is not an observation (README, "Missing
    values"): its value is dropped with it. Under --transform log a 0 or a
    negative value there skipped the whole series ("1 value(s) <= 0") while
    n_points counted 96 good points; now the series is fitted, as the same
    series without those rows is (to 1e-9: one fit's arithmetic twice)."""
    t, y = positive_series()["sales"]
    data = {"sales": (t, y), "sales_untimed_zero": (np.r_[t, np.nan, np.nan], np.r_[y, 0.0, -3.0])}
    run = gpfit(write_long(str(tmp_path / "in"), data), str(tmp_path / "out"), "--kernel",
                "periodic", "--transform", "log", "--batch_size", "1")
    assert run.code == 0, run.stderr
    rows = {r["series_id"]: r for r in run.rows()}
    plain, untimed = rows["sales"], rows["sales_untimed_zero"]
    assert untimed["status"] == "ok", untimed["error"]
    assert untimed["n_points"] == plain["n_points"] == t.size
    for name in ("mean", "noise_variance", "nll", "amplitude", "length_scale", "period"):
        assert untimed[name] == pytest.approx(plain[name], rel=1e-9), name


def test_a_skip_reason_under_a_transform_quotes_y_not_the_fitted_scale(tmp_path):
    """gpcore judges the transformed values: y = 10 throughout was skipped
    with "all 20 values are equal (2.3979)" under --transform log1p, a
    value the user never had (log(10) = 2.30259 under log). The reason
    quotes y, also for the fitted part of a backtest; a spread out of range
    names the scale its numbers are on."""
    hours = np.arange(22.0)
    data = {"ten": (np.r_[hours, np.nan], np.r_[np.full(22, 10.0), 0.0]),
            "tiny": (hours, 1e-300 * (1.0 + hours))}
    run = gpfit(write_long(str(tmp_path / "in"), data), str(tmp_path / "out"), "--kernel",
                "rbf", "--transform", "log1p", "--holdout", "2")
    assert run.code == 0, run.stderr
    rows = {r["series_id"]: r for r in run.rows()}
    assert rows["ten"]["error"] == ("all 20 values are equal (10); nothing to fit (after "
                                    "--holdout 2 held out its last 2 finite point(s))")
    assert rows["tiny"]["error"].startswith("the values' standard deviation 5.77e-300")
    assert ("(values of log(1 + y), which --transform log1p fits) (after --holdout 2"
            in rows["tiny"]["error"])
    # --transform log: gpcore's own reason for log(10) throughout, said in y.
    logged = Series("ten", hours, np.log(np.full(22, 10.0)))
    reason = clean(logged, 3, 4096)[2]
    assert reason == "all 22 values are equal (2.30259); nothing to fit"
    said = said_in_y("log", logged, {"status": "skipped", "error": reason})
    assert said["error"] == "all 22 values are equal (10); nothing to fit"


def test_log_forecasts_are_the_log_scale_posterior_mapped_back(logged, positive):
    rows = {r["series_id"]: r for r in logged.rows()}
    for sid in ("sales", "visits"):
        t, y = finite(*positive[0][sid])
        ahead = by_kind(logged, sid, "forecast")
        mine = ahead + by_kind(logged, sid, "observed")
        t_new = np.array([p["t"] for p in mine])
        mean, sd_obs = posterior(t, np.log(y), rows[sid], t_new)
        # The median is exp(mean) and the bounds exp() of the log-scale bounds:
        # calibrated at forecast times, mean +- z sd at observed ones; the sds
        # stay on the log scale. Round-off as above, through exp.
        np.testing.assert_allclose([p["mean"] for p in mine], np.exp(mean), rtol=1e-7)
        np.testing.assert_allclose([p["stddev_observed"] for p in mine], sd_obs, rtol=1e-6)
        k, z = len(ahead), norm.ppf(0.975)
        assert k == POINTS
        lo, hi = calibrated(t, np.log(y), rows[sid], t_new[:k], 95.0, (mean[:k], sd_obs[:k]))
        np.testing.assert_allclose([p["lower_95"] for p in mine],
                                   np.exp(np.concatenate([lo, mean[k:] - z * sd_obs[k:]])),
                                   rtol=1e-6)
        np.testing.assert_allclose([p["upper_95"] for p in mine],
                                   np.exp(np.concatenate([hi, mean[k:] + z * sd_obs[k:]])),
                                   rtol=1e-6)
        observed = by_kind(logged, sid, "observed")
        np.testing.assert_allclose([p["y"] for p in observed], y, rtol=1e-14)
        assert all(p["lower_95"] > 0 for p in mine)  # never negative


def test_a_grid_coarser_than_a_quarter_period_is_counted_and_warned(logged):
    rows = [r for r in logged.rows() if r["status"] == "ok"]
    coarse = [r for r in rows if HORIZON / POINTS > 0.25 * r["period"]]
    assert coarse  # the fitted daily cycle: 0.5-day spacing hides it
    assert logged.manifest["predictions"]["coarse_grid"] == len(coarse)
    warned = [line for line in logged.stderr.splitlines() if "coarser than a quarter" in line]
    assert len(warned) == 1 and f"{len(coarse)} series" in warned[0], logged.stderr


def test_the_transform_is_in_the_fingerprint(tmp_path_factory, positive, logged):
    again = log_run(tmp_path_factory, positive, "log", "--previous_output", logged.output)
    other = log_run(tmp_path_factory, positive, "log1p", "--previous_output", logged.output)
    assert again.code == other.code == 0, (again.stderr, other.stderr)
    # Same data, same transform: the fitted series are reused (those the
    # transform refuses are refused again, before any comparison).
    assert again.manifest["reuse"]["reused"] == 2
    assert {r["series_id"] for r in again.rows() if r["reused"]} == {"sales", "visits"}
    assert other.manifest["reuse"]["reused"] == 0  # log1p: every series refitted
    assert {r["series_id"]: r["status"] for r in other.rows()}["with_zero"] == "ok"



def test_forecasts_past_float64_on_ys_scale_are_left_out_and_said(tmp_path, caplog):
    """Under --transform log values near float64's largest are points like
    any others on the log scale (log 1e300 = 691), so such a series is
    fitted; its forecast, mapped back, passes float64's largest (1.8e308)
    and was written as inf (mean and bounds), silently: here a series
    growing by e^17.5 a step, 1e296 at its end. Such a series now gets no
    predictions, with a warning that names it and what to do, and is
    counted as not_predicted; every row written is finite."""
    rng = np.random.default_rng(3)
    t = np.arange(40.0)
    data = {"plain": (t, 50 + 10 * rng.random(40)), "growing": (t, np.exp(17.5 * t))}
    run = gpfit(write_long(str(tmp_path / "in"), data), str(tmp_path / "out"), "--kernel",
                "rbf", "--transform", "log", "--predict_steps", "5", "--predict_observed")
    assert run.code == 0, run.stderr
    assert sorted(r["series_id"] for r in run.rows()) == ["growing", "plain"]
    assert all(r["status"] == "ok" for r in run.rows())
    predictions = run.predictions()
    assert {p["series_id"] for p in predictions} == {"plain"}
    for p in predictions:
        assert all(np.isfinite(p[name]) for name in ("t", "mean", "stddev", "stddev_observed",
                                                      "lower_95", "upper_95")), p
    assert run.manifest["predictions"]["not_predicted"] == 1
    assert "1 ok series got no predictions" in run.stderr and "float64" in run.stderr
    said = [r.getMessage() for r in caplog.records if "series growing" in r.getMessage()]
    assert len(said) == 1 and "is inf on y's scale" in said[0], caplog.text
    assert "--transform log" in said[0] and "rescale y" in said[0]


def test_a_series_without_predictions_is_named_on_one_bounded_line(tmp_path, caplog):
    """The warning naming a series without predictions carried its id raw: an
    id with a newline or a carriage return made two log lines (the second
    one free text a collector takes for a record of its own), a tab, an
    ANSI escape, NUL or a right-to-left mark went to the terminal as they
    are, and a 1 MB id made a 1 MB line. The id is shown as a plot's title
    shows it: escaped, cut to ID_CHARS with its ends kept; the params rows
    keep it whole."""
    from pipeline.io.errors import ID_CHARS

    t = np.arange(40.0)
    hostile = ["grow\nFAKE INFO forged\rback\tx\x1b[31mred\x00nul\u202ertl",
               "L" * 1_000_000 + "-end"]
    data = {"plain": (t, 50 + t), **{sid: (t, np.exp(17.5 * t)) for sid in hostile}}
    run = gpfit(write_long(str(tmp_path / "in"), data), str(tmp_path / "out"), "--kernel",
                "rbf", "--transform", "log", "--predict_steps", "5")
    assert run.code == 0, run.stderr
    assert sorted(r["series_id"] for r in run.rows()) == sorted(["plain", *hostile])
    said = [r.getMessage() for r in caplog.records if "no predictions for series" in r.getMessage()]
    assert len(said) == 2, said
    for line in said:
        assert line.isprintable() and len(line) < 600, line[:300]
    assert any("grow\\nFAKE INFO forged\\rback\\tx\\x1b[31mred\\x00nul\\u202ertl" in line
               for line in said), said
    cut = [line for line in said if "LLL" in line]
    assert len(cut) == 1 and "…" in cut[0] and cut[0].count("L") < ID_CHARS, cut
    assert "-end:" in cut[0]


def test_held_out_missing_value_codes_give_a_null_mase_not_a_failed_run(tmp_path):
    """The backtest fits the first points and scores the last K, which the
    fit's checks never see: two of them a missing-value code (float64's
    largest, 1.8e308) made the mean absolute error overflow to inf, and the
    manifest's 2 % bins (log of inf) failed the whole job, exit 3, "cannot
    convert float infinity to integer", naming no series. A MASE that is
    not a finite number is null now, as one of a scale of 0 is; the
    series' row, its coverage and the manifest's totals of the others
    stand, and the manifest is strict JSON."""
    rng = np.random.default_rng(3)
    t = np.arange(40.0)
    coded = 50 + 10 * rng.random(40)
    coded[-2:] = np.finfo(np.float64).max
    data = {"plain": (t, 50 + 10 * rng.random(40)), "coded": (t, coded)}
    run = gpfit(write_long(str(tmp_path / "in"), data), str(tmp_path / "out"), "--kernel",
                "rbf", "--holdout", "3")
    assert run.code == 0, run.stderr
    rows = {r["series_id"]: r for r in run.rows()}
    assert sorted(rows) == ["coded", "plain"] and len(run.rows()) == 2
    assert all(r["status"] == "ok" and r["holdout_points"] == 3 for r in rows.values())
    assert rows["coded"]["holdout_mase"] is None
    assert 0 <= rows["coded"]["holdout_coverage_95"] <= 1
    assert np.isfinite(rows["plain"]["holdout_mase"])
    with open(os.path.join(run.output, "_SUCCESS.json")) as f:
        manifest = json.load(f, parse_constant=lambda name: pytest.fail(f"JSON holds {name}"))
    assert manifest["holdout"]["series"] == 2 and manifest["holdout"]["points"] == 6
    assert manifest["holdout"]["mase_mean"] == pytest.approx(rows["plain"]["holdout_mase"])


def test_the_manifests_mase_mean_of_huge_mases_is_their_mean_not_infinity(tmp_path):
    """A missing-value code (1.8e308) as a series' last point, held out,
    gives a finite MASE near 2e307; twelve such series summed past float64's
    largest and the manifest said "mase_mean": Infinity, which is not JSON
    (RFC 8259: strict parsers refuse the whole file). The mean of finite
    MASEs is finite: numpy's mean of the rows' MASEs (the sum in float64
    would overflow; numpy's pairwise sum of the values over 12 does not),
    to 1e-12."""
    rng = np.random.default_rng(5)
    t = np.arange(40.0)
    data = {}
    for i in range(12):
        y = 50 + 10 * rng.random(40)
        y[-1] = np.finfo(np.float64).max
        data[f"s{i}"] = (t, y)
    run = gpfit(write_long(str(tmp_path / "in"), data), str(tmp_path / "out"), "--kernel",
                "rbf", "--holdout", "3")
    assert run.code == 0, run.stderr
    mases = np.array([r["holdout_mase"] for r in run.rows()])
    assert mases.size == 12 and np.all(np.isfinite(mases)) and mases.sum() == np.inf
    with open(os.path.join(run.output, "_SUCCESS.json")) as f:
        manifest = json.load(f, parse_constant=lambda name: pytest.fail(f"JSON holds {name}"))
    assert manifest["holdout"]["mase_mean"] == pytest.approx(np.mean(mases / 12) * 12,
                                                             rel=1e-12)


@pytest.mark.parametrize("argv,said", [
    (["--predict_steps", "3", "--predict_horizon", "5", "--predict_points", "2"],
     "give either --predict_steps K"),
    (["--predict_levels", "80,100"], "--predict_levels must be percents between 0 and 100"),
    (["--predict_levels", "eighty"], "--predict_levels must be percents"),
    # Both would be the columns lower_95, upper_95: a file no reader unifies.
    (["--predict_levels", "95,95.0000001"], "--predict_levels 95 and 95.0000001 name the "
     "same columns lower_95, upper_95"),
    (["--holdout", "-1"], "--holdout must be between 0"),
    (["--transform", "sqrt"], "invalid choice: 'sqrt'"),
])
def test_forecast_options_are_checked(tmp_path, argv, said):
    run = gpfit(str(tmp_path / "in"), str(tmp_path / "out"), *argv)
    assert run.code == 2 and said in run.stderr, run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


def test_the_report_shows_the_levels_the_holdout_and_ranks_by_mase(run, tmp_path, data):
    from pipeline.report.build import title
    from pipeline.report.cli import run as report
    from pipeline.report.nightly import read_predictions

    forecast = read_predictions(run.output, ["hourly"], False, "forecast")["hourly"]
    assert [label for label, _, _ in forecast.bands] == ["95 % interval", "80 % interval"]
    # The drawn 95 % band is the calibrated one: wider than mean +- 1.96 sd.
    _, lower, upper = forecast.bands[0]
    assert np.all(upper - lower > 2 * norm.ppf(0.975) * forecast.std_y)
    held = read_predictions(run.output, ["daily"], False, "holdout")["daily"]
    np.testing.assert_array_equal(held.y, finite(*data["daily"])[1][-HOLDOUT:])
    out = tmp_path / "report.html"
    code = report(["--input", str(os.path.dirname(run.output)) + "/in", "--params", run.output,
                   "--out", str(out), "--worst", "1", "--random", "1"])
    assert code == 0
    page = out.read_text()
    rows = {r["series_id"]: r for r in run.rows() if r["holdout_mase"] is not None}
    worst = max(rows, key=lambda sid: rows[sid]["holdout_mase"])
    assert "worst #1 by holdout_mase" in page
    assert page.index("worst #1 by holdout_mase") > page.index(f">{worst}<")  # its card
    assert (f"holdout {HOLDOUT} points: MASE {rows[worst]['holdout_mase']:.4g}"
            in title(rows[worst]))  # the plot's title


def test_steps_of_dates_are_in_days_and_written_as_timestamps(tmp_path, data):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline_data import EPOCH_DAY0, write_nested_dates

    subset = {sid: (EPOCH_DAY0 + data[sid][0], data[sid][1]) for sid in ("daily", "monthly")}
    path = write_nested_dates(str(tmp_path / "in" / "series.parquet"), subset)
    run = gpfit(path, str(tmp_path / "out"), "--kernel", "rbf", "--predict_steps", "3")
    assert run.code == 0, run.stderr
    table = pq.read_table(str(tmp_path / "out" / run.shards("predictions")[0]))
    assert table.schema.field("t").type == pa.timestamp("us", tz="UTC")
    for sid, (t, _) in subset.items():
        got = table.filter(pa.compute.equal(table.column("series_id"), sid)).column("t")
        days = got.cast(pa.int64()).to_numpy() / 86_400_000_000
        step = np.median(np.diff(t))
        np.testing.assert_allclose(days, t.max() + step * np.arange(1, 4), rtol=0, atol=1e-6)


def test_steps_of_sub_daily_timestamps_land_on_the_data_clock(tmp_path):
    """Hourly, quarter-hourly and per-second timestamps (us and ns, with a
    time zone, across Berlin's DST change), with gaps: their forecast times
    are the last time plus whole steps, exactly, as pandas reads them back,
    so they join tomorrow's observations by time. As days since 1970 the
    times carry ~0.3 us of float64 round-off, and a step measured on them
    was written 18 us off the hour after a week of hours."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    steps, rng = 200, np.random.default_rng(11)
    os.makedirs(tmp_path / "in")
    for sid, freq, unit in (("hourly", "h", "us"), ("quarter", "15min", "ns"),
                            ("seconds", "s", "us")):  # a file each: one unit a file
        times = pd.date_range("2024-03-30 20:00:00.5", periods=80, freq=freq,
                              tz="Europe/Berlin")[np.sort(rng.choice(80, 64, replace=False))]
        y = np.sin(np.arange(64) / 6.0) + 0.1 * rng.standard_normal(64)
        pq.write_table(pa.table({"series_id": [sid] * 64, "y": y,
                                 "t": pa.array(times.as_unit(unit))}),
                       str(tmp_path / "in" / f"{sid}.parquet"))
    given, forecast = forecast_steps(tmp_path, steps)
    for sid, freq in (("hourly", "1h"), ("quarter", "15min"), ("seconds", "1s")):
        got = forecast[forecast.series_id == sid].t
        last = given[given.series_id == sid].t.max()
        want = last + pd.to_timedelta(freq) * np.arange(1, steps + 1)
        assert list(got) == list(want), sid


def test_a_series_without_a_step_or_observed_rows_is_not_counted_as_predicted(tmp_path, data):
    """--predict_steps alone: the randomly timed series has no row to write, so
    the manifest counts 1 series predicted (daily) and the reason of the other."""
    folder = write_long(str(tmp_path / "in"), {sid: data[sid] for sid in ("daily", "random")})
    run = gpfit(folder, str(tmp_path / "out"), "--kernel", "rbf", "--predict_steps", "3")
    assert run.code == 0, run.stderr
    assert {p["series_id"] for p in run.predictions()} == {"daily"}
    assert run.manifest["predictions"]["series"] == 1
    assert run.manifest["predictions"]["no_step"] == {grid.IRREGULAR: 1}


def test_forecast_times_that_cannot_be_written_give_no_forecast_rows(tmp_path, data):
    """A horizon in seconds given as days runs dates past 9999-12-31 (past
    int64 microseconds, garbage), one below float64's resolution at 1.7e18
    (ns) lands on t_last, and so does one below the microsecond dates are
    written in (1e-11 days: 0.43 and 0.86 us, written t_last + 0 and + 1
    us): none of these series gets forecast rows, the manifest counts why
    (predictions.no_step), the other rows stay."""
    import pyarrow as pa

    from pipeline_data import EPOCH_DAY0, write_nested_dates

    daily = {"daily": (EPOCH_DAY0 + data["daily"][0], data["daily"][1])}
    path = write_nested_dates(str(tmp_path / "dates" / "series.parquet"), daily)
    nanos = {"nanos": (1.7e18 + 3.6e12 * np.arange(40.0), np.sin(np.arange(40.0) / 6))}
    folder = write_long(str(tmp_path / "nanos"), nanos)
    for source, horizon, sid, why in ((path, "3.2e9", "daily", grid.PAST_9999),
                                      (folder, "2", "nanos", grid.UNRESOLVED),
                                      (path, "1e-11", "daily", grid.UNRESOLVED)):
        out = tmp_path / f"out-{sid}-{horizon}"
        run = gpfit(source, str(out), "--kernel", "rbf", "--predict_horizon", horizon,
                    "--predict_points", "2", "--predict_observed")
        assert run.code == 0, run.stderr
        kinds = [p["kind"] for p in run.predictions()]
        assert "forecast" not in kinds and kinds.count("observed") > 30
        assert pa.array([p["t"] for p in run.predictions()]).null_count == 0  # readable
        assert run.manifest["predictions"]["no_step"] == {why: 1}
        assert f"gpfit: warning: 1 ok series got no forecast rows (1 {why}" in run.stderr


def test_an_older_release_output_still_serves_reuse_and_the_report(tmp_path_factory, positive,
                                                                   logged):
    """A previous output whose shards lack the holdout and interval columns
    (gpfit 0.5.0's) is reused from, and the report reads it."""
    import shutil

    import pyarrow.parquet as pq

    from pipeline.io.schema import HOLDOUT_COLUMNS
    from pipeline.report.cli import run as report
    from pipeline.report.nightly import read_predictions

    old = str(tmp_path_factory.mktemp("old") / "out")
    shutil.copytree(logged.output, old)
    for table, dropped in (("params", HOLDOUT_COLUMNS),
                           ("predictions", ("lower_95", "upper_95"))):
        for name in os.listdir(os.path.join(old, table)):
            path = os.path.join(old, table, name)
            pq.write_table(pq.read_table(path).drop_columns(list(dropped)), path)
    again = log_run(tmp_path_factory, positive, "log", "--previous_output", old)
    assert again.code == 0, again.stderr
    reused = [r for r in again.rows() if r["reused"]]
    assert {r["series_id"] for r in reused} == {"sales", "visits"}
    assert all(r["holdout_points"] is None and r["holdout_mase"] is None for r in reused)
    curve = read_predictions(old, ["sales"], False)["sales"]
    assert curve.bands == () and curve.mean.size == POINTS  # drawn as +-2 sd
    out = tmp_path_factory.mktemp("report") / "old.html"
    assert report(["--input", positive[1], "--params", old, "--out", str(out)]) == 0


def test_a_long_markov_series_gets_calibrated_intervals_from_its_last_points(tmp_path):
    """Over 4,096 points matern32 takes the O(n) fit and posterior; the
    calibration uses the last 504 points (docs/design.md, "Forecast
    intervals")."""
    rng = np.random.default_rng(5)
    t = np.arange(4500.0)
    y = np.sin(t / 30.0) + 0.02 * np.cumsum(rng.normal(size=t.size)) + 0.2 * rng.normal(size=t.size)
    folder = write_long(str(tmp_path / "in"), {"long": (t, y)})
    run = gpfit(folder, str(tmp_path / "out"), "--kernel", "matern32", "--predict_steps", "4")
    assert run.code == 0, run.stderr
    row = run.rows()[0]
    assert row["status"] == "ok"
    ahead = by_kind(run, "long", "forecast")
    t_new = np.array([p["t"] for p in ahead])
    np.testing.assert_array_equal(t_new, t[-1] + np.arange(1, 5))
    mean, sd_obs = posterior(t, y, row, t_new)  # dense numpy over all 4,500 points
    # The O(n) posterior equals the dense one to ~1e-13; the dof (4,499) take
    # Cornish-Fisher's quantile, within 1e-10 of scipy's there.
    np.testing.assert_allclose([p["mean"] for p in ahead], mean, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose([p["stddev_observed"] for p in ahead], sd_obs, rtol=1e-6)
    lo, hi = calibrated(t, y, row, t_new, 95.0, (mean, sd_obs))
    np.testing.assert_allclose([p["lower_95"] for p in ahead], lo, rtol=1e-8)
    np.testing.assert_allclose([p["upper_95"] for p in ahead], hi, rtol=1e-8)
    # The window shows: the last 512 points (the window before) give other bounds.
    lo_512, _ = calibrated(t, y, row, t_new, 95.0, (mean, sd_obs), window=512)
    assert np.max(np.abs(lo_512 - lo) / np.abs(lo)) > 1e-6


def test_a_bundles_forecasts_are_held_joined_not_one_table_per_series():
    """A worker's Forecast held each series' table until ROWS_PER_TABLE rows:
    6,554 pa.Tables of 10 rows, 56 MB for 5 MB of values. It holds them
    joined, TABLES_JOINED (256) series' at a time: the bundle's table has
    a chunk per 256 series and one for each of the rest, not one per
    series, and the same rows."""
    from gpcore import FitResult, Series
    from pipeline.forecast import Forecast, Plan, posterior_table
    from pipeline.io import rows as rows_io

    rng = np.random.default_rng(4)
    components = [{"kernel": "rbf", "amplitude": 0.8, "length_scale": 1.5, "period": None}]
    plan, count = Plan(horizon=2.0, points=10), 600
    forecast, each = Forecast(plan), []
    forecast.start_bundle()
    for i in range(count):
        t = np.sort(rng.uniform(0.0, 10.0, int(rng.integers(8, 20))))
        series = Series(f"s{i}", t, np.sin(t))
        row = rows_io.of_fit(FitResult(f"s{i}", "ok", "rbf", t.size, mean=0.0, amplitude=0.8,
                                       length_scale=1.5, noise_variance=0.01,
                                       components=components), None)
        each.append(posterior_table(series, row, plan).table)
        assert not [out for out in forecast.process((series, row)) if not hasattr(out, "tag")]
    (bundle,) = [out.value for out in forecast.finish_bundle()]
    assert bundle.num_rows == 10 * count < Forecast.ROWS_PER_TABLE
    assert bundle.column(0).num_chunks == 2 + 88  # 600 = 2 x 256 + 88; was 600
    assert bundle.equals(pa.concat_tables(each))


def test_the_readmes_recipe_from_a_row_and_its_input_gives_the_commands_forecast(
        tmp_path, monkeypatch):
    """README's example of predict with a row of params/ and the series'
    points as the user holds them (timestamps, y > 0), run as written on a
    --transform log run of them: it gives the command's forecast. Without
    it the two silent mistakes were there to make: times in seconds
    (pandas' int64 nanoseconds / 1e9) gave the prior far from the data, and
    y given as read (not log y) a median 2.5 % off, both without a word."""
    import pandas as pd

    from gpcore.predict import predict
    from readme_blocks import readme_python

    rng = np.random.default_rng(4)
    days = np.arange(91.0)  # 2024-01-01 to 03-31, daily: 7 steps give April's first week
    points = pd.DataFrame({"series_id": "s1", "t": pd.Timestamp("2024-01-01") +
                           pd.to_timedelta(days, unit="D"),
                           "y": 10 * np.exp(0.2 * np.sin(days / 6) + 0.05 * rng.standard_normal(91))})
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in").mkdir()
    points.to_parquet("in/points.parquet")
    run = gpfit("in", "out", "--kernel", "rbf", "--transform", "log", "--predict_steps", "7")
    assert run.code == 0, run.stderr
    space = {}
    exec(readme_python("import numpy as np\nimport pandas as pd\nfrom gpcore import Series"),
         space)  # pylint: disable=exec-used
    command = pd.read_parquet("out/predictions/")
    # The same posterior from the same float64 parameters and points; t
    # converted to days two ways differs by round-off (1e-16 of 2e4 days).
    np.testing.assert_allclose(space["median"], command["mean"], rtol=1e-9)
    from gpcore.calibration import forecast  # its bounds map back as the mean does
    lo, hi = forecast(space["series"], space["row"], space["days"](command.t).to_numpy()).interval()
    np.testing.assert_allclose(np.exp([lo, hi]), command[["lower_95", "upper_95"]].T, rtol=1e-9)
    # What the docs now rule out: t in seconds, and y as read.
    t_points, t_new = space["days"](points.t).to_numpy(), space["days"](command.t).to_numpy()
    in_seconds = space["Series"]("s1", t_points * 86_400, np.log(points.y))
    assert np.ptp(predict(in_seconds, space["row"], t_new * 86_400)[0]) < 1e-9  # the prior's mean
    as_read = space["Series"]("s1", t_points, points.y)
    assert np.all(np.abs(predict(as_read, space["row"], t_new)[0] / command["mean"] - 1) > 0.04)

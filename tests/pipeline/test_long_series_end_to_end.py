"""Long series end to end on the local runner: a 20,000-point series fits
with matern32 (the O(n) path, docs/design.md "Long series: Markov
kernels") beside a short one, and with rbf the long one is `skipped` with
a reason naming the kernels that can fit it; every series appears once.
A nightly run warm-starts changed long series."""
from __future__ import annotations

import numpy as np
import pytest

from gpcore import starts
from gpcore.kernels import kernel

from pipeline_data import gpfit, write_long

LONG = 20_000


@pytest.fixture(scope="module")
def long_input(tmp_path_factory):
    rng = np.random.default_rng(0)
    series = {}
    for sid, n in (("long", LONG), ("short", 300)):
        t = np.cumsum(rng.exponential(1.0, n))
        y = np.sin(t / 40.0) + 0.3 * rng.normal(size=n)
        y[rng.random(n) < 0.01] = np.nan  # missing values
        series[sid] = (t, y)
    return write_long(str(tmp_path_factory.mktemp("long")), series, null_id_rows=0)


def test_markov_kernel_fits_a_long_series(tmp_path, long_input):
    run = gpfit(long_input, str(tmp_path / "out"), "--kernel", "matern32")
    assert run.code == 0, run.stderr
    rows = {r["series_id"]: r for r in run.rows()}
    assert sorted(rows) == ["long", "short"]
    assert rows["long"]["status"] == "ok" and rows["long"]["n_points"] > 0.98 * LONG
    assert np.isfinite(rows["long"]["nll"]) and rows["long"]["length_scale"] > 0
    assert rows["short"]["status"] == "ok"


def test_kernel_without_state_space_form_skips_it_naming_those_that_fit(tmp_path, long_input):
    run = gpfit(long_input, str(tmp_path / "out"), "--kernel", "rbf")
    assert run.code == 0, run.stderr
    rows = {r["series_id"]: r for r in run.rows()}
    assert sorted(rows) == ["long", "short"]
    assert rows["long"]["status"] == "skipped"
    assert "max_points=4096" in rows["long"]["error"]
    assert "matern12, matern32, matern52" in rows["long"]["error"]
    assert rows["short"]["status"] == "ok"


def test_a_long_series_no_kernel_can_fit_says_why_not_to_raise_max_points(tmp_path):
    """10,000 points at one time (a time column defaulted to one date), or
    of values near 1e300 (a missing-value code), cannot be fitted by any
    kernel at any max_points; with rbf they were skipped as more than
    max_points=4096, told to raise it or use a Matern kernel, which then
    skipped them for their times or values. Their reason is now that."""
    rng = np.random.default_rng(2)
    series = {"one_time": (np.full(10_000, 5.0), rng.normal(size=10_000)),
              "codes": (np.arange(10_000.0), 1e300 * rng.normal(size=10_000)),
              "short": (np.arange(50.0), rng.normal(size=50))}
    run = gpfit(write_long(str(tmp_path / "in"), series, null_id_rows=0),
                str(tmp_path / "out"), "--kernel", "rbf")
    assert run.code == 0, run.stderr
    rows = {r["series_id"]: r for r in run.rows()}
    assert sorted(rows) == ["codes", "one_time", "short"]
    assert rows["short"]["status"] == "ok"
    for sid, words in (("one_time", "all observation times are equal"),
                       ("codes", "give NaN where a value is a code for a missing one")):
        assert rows[sid]["status"] == "skipped" and rows[sid]["n_points"] == 10_000
        assert words in rows[sid]["error"], rows[sid]
        assert "max_points" not in rows[sid]["error"] and "O(n)" not in rows[sid]["error"]


@pytest.fixture(scope="module")
def long_nights(tmp_path_factory):
    """(night 1, night 2, night 2 fitted cold) of two 6,000-point series:
    night 2 appends 1 % of points to one and changes 5 % of the other's
    values."""
    rng = np.random.default_rng(1)
    base = tmp_path_factory.mktemp("long-nights")
    first, second = {}, {}
    for sid, n in (("appended", 6000), ("changed", 6000)):
        t = np.cumsum(rng.exponential(1.0, n + n // 100))
        y = np.sin(t / 40.0) + 0.5 * np.sin(t / 7.0) + 0.3 * rng.normal(size=t.size)
        first[sid] = (t[:n], y[:n])
        second[sid] = (t, y) if sid == "appended" else (t[:n], y[:n].copy())
    changed = rng.choice(6000, 300, replace=False)
    second["changed"][1][changed] += 0.3 * rng.normal(size=changed.size)
    options = ("--kernel", "matern32")
    night1 = gpfit(write_long(str(base / "in1"), first, null_id_rows=0),
                   str(base / "night1"), *options)
    tonight = write_long(str(base / "in2"), second, null_id_rows=0)
    night2 = gpfit(tonight, str(base / "night2"), *options, "--previous_output", night1.output)
    cold = gpfit(tonight, str(base / "cold2"), *options)
    return night1, night2, cold


def test_a_nightly_run_warm_starts_changed_long_series(long_nights):
    """Each changed series starts from last night's parameters: the window's
    Newton is skipped (fewer steps: `iterations` counts the whole series'
    alone), and the fit is within 0.01 nats of a cold fit of tonight's data."""
    night1, night2, cold = long_nights
    for run_ in long_nights:
        assert run_.code == 0, run_.stderr
    warm, cold_rows = ({r["series_id"]: r for r in run_.rows()} for run_ in (night2, cold))
    assert sorted(warm) == ["appended", "changed"]
    assert night2.manifest["reuse"]["warm_starts_offered"] == 2
    assert night2.manifest["reuse"]["warm_started"] == 2
    for sid, row in warm.items():
        assert row["status"] == "ok" and row["warm_started"] and not row["reused"], sid
        assert not cold_rows[sid]["warm_started"]
        assert abs(row["nll"] - cold_rows[sid]["nll"]) <= 0.01, sid
        assert row["iterations"] < cold_rows[sid]["iterations"], sid


def test_the_manifest_counts_the_long_series_newton_evaluations(long_nights):
    """Both series are long, so every evaluation is the O(n) fitter's: each
    series scores the grid on its window and takes at least the window's
    start and one whole-series evaluation; a warm start at least one window
    and two whole-series ones."""
    grid = int(np.prod(starts.grid_shape(kernel("matern32"))))
    for run_ in long_nights:
        work = run_.manifest["work_per_kernel"]["matern32"]
        assert work["series"] == 2
        assert work["grid_evaluations"] == 2 * grid
        assert work["newton_evaluations"] >= 2 * 3
        assert work["newton_evaluations_per_series"] == round(work["newton_evaluations"] / 2, 2)

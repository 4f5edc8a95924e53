"""Long series end to end on the local runner: a 20,000-point series fits
with matern32 (the O(n) path, docs/design.md "Long series: Markov
kernels") beside a short one, and with rbf the long one is `skipped` with
a reason naming the kernels that can fit it; every series appears once."""
from __future__ import annotations

import numpy as np
import pytest

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

"""Smoke tests of the held-out sets (benchmarks/heldout_seasonal.py,
heldout_real.py) and their oracle (heldout_oracle.py): the sets are what
their docstrings say, the one numpy nll agrees with each side's own, and
the scoring commands run on a few series. Not the quality targets."""
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, os.path.join(ROOT, "tests"))

import gp_reference  # noqa: E402
import heldout_oracle  # noqa: E402
import heldout_real  # noqa: E402
import heldout_seasonal  # noqa: E402
from heldout_checks import assert_real_check_scores, run, table_rows  # noqa: E402

# float64 Cholesky round-off on <= 300 points is ~1e-12 relative; sklearn
# adds alpha = 1e-10 (standardised units) to its diagonal, which moves its
# own nll by ~1e-8 relative on well-conditioned fits.
RTOL_NLL = 1e-6


def test_seasonal_set_is_deterministic_and_as_described():
    cases = heldout_seasonal.cases()
    again = heldout_seasonal.cases()
    assert len(cases) == heldout_seasonal.COUNT
    assert all(np.array_equal(a.series.y, b.series.y, equal_nan=True) for a, b in zip(cases, again))
    seasonal = [c for c in cases if c.seasonal]
    assert len(seasonal) == heldout_seasonal.COUNT // 2
    cycles = np.array([c.cycles for c in seasonal])
    assert cycles.min() >= 1.5 - 1e-9 and cycles.max() <= 10 + 1e-9
    assert 0 < np.mean(cycles < 2) < 0.3  # some the two-cycle bound cannot reach, not most
    shapes = {c.series.series_id.split("/")[3].split("+")[0] for c in seasonal}
    assert shapes == set(heldout_seasonal.SHAPES)
    for c in cases:
        t, y = c.series.t, c.series.y
        assert np.all(np.diff(t) >= 0) and np.isfinite(y).sum() >= 50
    # Tuning's set is another one: no id or series in common.
    import seasonal as tuning

    ours = {c.series.series_id for c in cases}
    assert not ours & {c.series.series_id for c in tuning.cases()}


def test_real_set_comes_from_other_packages():
    series = heldout_real.real_series()
    assert len(series) >= 300
    packages = {s.series_id.split("/")[0] for s in series}
    assert packages == {"statsmodels", "pmdarima", "vega", "matplotlib"}
    assert all(s.t.size <= heldout_real.WINDOW and np.all(np.diff(s.t) > 0) for s in series)
    frequencies = {r.frequency for r in heldout_real.raw_series()}
    assert {"yearly", "quarterly", "monthly", "daily", "hourly"} <= frequencies


def test_period_bounds_hold_two_cycles():
    t = np.arange(0.0, 100.0, 0.5)
    assert heldout_oracle.period_bounds(t) == (0.5, 49.75)


@pytest.mark.parametrize("kernel", ["rbf", "rbf+periodic"])
def test_one_numpy_nll_matches_both_sides(kernel):
    """The oracle's raw-unit parameters reproduce sklearn's own nll, the
    fitter's parameters its own nll, and row_nll equals the tests' numpy
    reference (tests/gp_reference.py)."""
    from gpcore import FitConfig

    series = [c.series for c in heldout_seasonal.cases(3)]
    fits = heldout_oracle.oracle_fits(series, kernel, cache=None)["fits"]
    results, _ = heldout_oracle.fit_gpcore(FitConfig(kernel=kernel), series)
    for s, f, r in zip(series, fits, results):
        ours = heldout_oracle.row_nll(f["row"], s.t, s.y)
        assert ours == pytest.approx(f["own_nll"], rel=RTOL_NLL)
        assert ours == pytest.approx(gp_reference.row_nll(f["row"], s.t, s.y), rel=1e-10)
        if kernel == "rbf+periodic":
            low, high = heldout_oracle.period_bounds(np.sort(s.t[np.isfinite(s.y)]))
            period = [c["period"] for c in f["row"]["components"] if c["period"]][0]
            assert low * (1 - 1e-9) <= period <= high * (1 + 1e-9)
        assert r.status == "ok"
        assert heldout_oracle.row_nll(r.params, s.t, s.y) == pytest.approx(r.nll, rel=RTOL_NLL)
    g = heldout_oracle.gaps(series, results, fits)
    assert g.own_nll == 0 and np.all(np.isfinite(g.gaps))


def test_seasonal_check_runs_and_scores():
    # 2 series, the set's first (seasonal) and last (not): the fewest that
    # run both halves of the table; the oracle refits them (--fresh: a clean
    # clone has no cache), 2 rbf+periodic fits fewer than 4 series took.
    out = run("heldout_seasonal.py", "--check", "--count", "2", "--fresh")
    rows = table_rows(out)
    assert rows["series (seasonal + non-seasonal)"][0] == "2 (1 + 1)"
    share = float(rows["within 0.01 nats of the oracle or better"][0].rstrip(" %"))
    assert 0 <= share <= 100


def test_real_check_runs_and_scores():
    assert_real_check_scores("heldout_real.py")


def test_real_check_takes_the_balanced_search():
    assert_real_check_scores("heldout_real.py", 4, "--search", "balanced")

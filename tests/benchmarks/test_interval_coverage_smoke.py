"""Smoke tests of the interval coverage study (benchmarks/interval_coverage.py):
its numpy posterior against gpcore.predict, its draws, a tiny run and the
command's rows against the in-process intervals. Not the coverage figures
(benchmarks/RESULTS.md): a few series cannot show them."""
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import interval_coverage as study  # noqa: E402


@pytest.mark.parametrize("kernel", study.KERNELS)
def test_the_numpy_posterior_is_gpcores(kernel):
    """The `true` and `plain` intervals' posterior (numpy) equals predict's
    for the same parameters: float64 Cholesky solves two ways on 20-60
    well-conditioned points (noise >= 1 % of the signal), 1e-7 relative."""
    from gpcore import Series
    from gpcore.predict import predict

    d = study.draw(5, kernel, 40, 0)
    t, y, t_new = d.t[:40], d.y[:40], d.t[40:]
    mean, sd = study.posterior(d.params, t, y, t_new, 0.5 * (t[0] + t[-1]))
    want_mean, want_sd = predict(Series("s", t, y), d.params, t_new, include_noise=True)
    np.testing.assert_allclose(mean, want_mean, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(sd, want_sd, rtol=1e-7)


def test_draws_are_seeded_per_series_and_laid_out_as_documented():
    a, b = study.draw(0, "rbf", 20, 3), study.draw(0, "rbf", 20, 3)
    np.testing.assert_array_equal(a.y, b.y)
    assert not np.array_equal(a.y, study.draw(1, "rbf", 20, 3).y)
    h = study.HORIZON
    assert a.t.size == 20 + 2 * h and np.all(np.diff(a.t) > 0)
    # The `after` block is the command's --predict_horizon grid past the n + H points.
    np.testing.assert_allclose(a.t[20 + h:], a.t[20 + h - 1] + study.SPAN / 20 * np.arange(1, h + 1))
    assert 0.01 <= a.params["noise_variance"] / a.params["components"][0]["amplitude"] ** 2 <= 1


def test_a_tiny_run_writes_every_table(tmp_path, capsys):
    out = tmp_path / "coverage.md"
    assert study.main(["--count", "3", "--sizes", "20", "--kernels", "rbf", "--seed", "0",
                       "--out", str(out)]) == 0
    text = out.read_text()
    for block in ("next", "after", "observed", "observed fresh"):
        for level in ("80%", "95%"):
            assert f"| {block}, {level} | N |" in text
    assert "| rbf n=20 | 3 |" in text and "Series not fitted ok: none" in text


def test_the_commands_rows_are_the_in_process_intervals(tmp_path):
    """cli_check asserts the equality itself (rtol 1e-6) and returns the
    flags of the holdout, forecast and observed rows."""
    flags = study.cli_check("rbf", 20, 2, 0, str(tmp_path))
    assert {(block, lv) for block, _, lv in flags} == {
        (b, lv) for b in ("next", "after", "observed") for lv in study.LEVELS}
    assert all(len(v) == 2 for v in flags.values())

"""Smoke tests of the forecast benchmark (benchmarks/forecast.py): the set
and its halves, the scores recomputed in plain numpy, and the command on a
few series. Not the forecast targets; no timing assertions."""
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import forecast  # noqa: E402


def test_set_covers_the_frequencies_and_splits_in_halves():
    every = forecast.cases()
    tune, holdout = forecast.cases("tune"), forecast.cases("holdout")
    ids = {c.series_id for c in every}
    assert {c.series_id for c in tune} | {c.series_id for c in holdout} == ids
    assert not {c.series_id for c in tune} & {c.series_id for c in holdout}
    assert 0.35 < len(tune) / len(every) < 0.65
    # The pieces of one series stay on one side.
    sides = {}
    for c in every:
        sides.setdefault(c.series_id.split("#")[0], set()).add(forecast.split_of(c.series_id))
    assert all(len(s) == 1 for s in sides.values())
    assert {"yearly", "quarterly", "monthly", "weekly", "hourly"} <= {c.frequency for c in every}
    assert len({c.series_id.split("/")[0] for c in every}) >= 3
    for c in every:
        assert (c.season, c.horizon) == forecast.FREQUENCY[c.frequency]
        assert c.t[-1] < c.t_test[0] and np.all(np.isfinite(c.y)) and np.all(np.isfinite(c.y_test))


def test_seasonal_naive_scores_equal_a_numpy_recomputation():
    """statsforecast's SeasonalNaive through run_peer, against its forecast
    (the last season repeated) scored here by hand."""
    chosen = [c for c in forecast.cases(count=40) if c.season > 1][:3]
    run = forecast.run_peer("SeasonalNaive", chosen)
    for case, got in zip(chosen, run.scores):
        m, h = case.season, case.horizon
        f = np.resize(case.y[-m:], h)  # y[n - m + (i mod m)]
        scale = np.mean(np.abs(case.y[m:] - case.y[:-m]))
        assert got["mase"] == pytest.approx(np.mean(np.abs(case.y_test - f)) / scale, rel=1e-12)
        smape = np.mean(2 * np.abs(case.y_test - f) / (np.abs(case.y_test) + np.abs(f))) * 100
        assert got["smape"] == pytest.approx(smape, rel=1e-12)
        assert 0 <= got["coverage"] <= 1 and got["msis"] > 0


def test_interval_scores_by_hand():
    case = forecast.Case("x", np.arange(6.0), np.array([0, 1, 0, 1, 0, 1.0]), np.arange(6.0, 8.0),
                         np.array([0.0, 3.0]), "other", 1)
    s = forecast.scores(case, [0.5, 0.5], [-1.0, -1.0], [1.0, 1.0])
    # scale: mean |diff| = 1; errors 0.5 and 2.5; the second point is 2 above hi.
    assert s["mase"] == pytest.approx(1.5)
    assert s["coverage"] == 0.5
    assert s["msis"] == pytest.approx(2 + 0.5 * (2 / 0.05) * 2)


def test_command_runs_and_prints_a_table(tmp_path):
    out = tmp_path / "forecast.md"
    command = [sys.executable, os.path.join(ROOT, "benchmarks", "forecast.py"), "--count", "4",
               "--kernels", "rbf", "--out", str(out)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    text = out.read_text()
    assert text.strip() in done.stdout
    rows = [[c.strip() for c in line.strip("|").split("|")]
            for line in text.splitlines() if line.startswith("| ")]
    main = {r[0]: r for r in rows if len(r) == 10 and r[0] != "method"}
    assert set(main) == {"statsforecast SeasonalNaive", "statsforecast AutoETS",
                         "statsforecast AutoARIMA", "gpfit rbf"}
    for r in main.values():
        assert float(r[1]) > 0 and 0 <= float(r[5]) <= 1 and r[7] == "0"


@pytest.mark.parametrize("given, said", [
    (["--kernels", "rbf,rbff"], "--kernels 'rbff': kernel must be"),
    (["--peers", "AutoETS,AutoETSS"], "--peers AutoETSS: give some of SeasonalNaive,AutoETS"),
])
def test_an_unknown_kernel_or_peer_is_refused_before_any_work(given, said):
    """A misspelt kernel stopped with a ValueError traceback after the
    peers had run (AutoARIMA: minutes), a misspelt peer after the set was
    loaded: both are usage errors at once."""
    done = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "forecast.py"),
                           "--count", "2", *given], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert said in done.stderr and "Traceback" not in done.stderr, done.stderr

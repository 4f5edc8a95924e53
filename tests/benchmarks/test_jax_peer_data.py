"""The JAX peer's numpy side (benchmarks/jax_peer.py), which needs no JAX
and so runs wherever the suite does: its standardising, buckets, padding
and the numpy likelihood its quality is judged by. The fits themselves:
test_jax_peer_smoke.py, where the jaxbench extra is installed."""
import math
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import gp_reference as ref  # noqa: E402
import jax_peer  # noqa: E402


def test_series_are_standardised_bucketed_and_padded_with_a_mask():
    rng = np.random.default_rng(3)
    t = np.array([5.0, 1.0, 3.0, 2.0, 9.0])
    y = np.array([1.0, np.nan, 4.0, 2.0, 8.0])
    p = jax_peer.standardise(t, y)
    # The missing value dropped, times sorted, to [0, 1]; values to mean 0, sd 1.
    assert np.array_equal(p["t"], [2.0, 3.0, 5.0, 9.0]) and p["span"] == 7.0
    assert np.allclose(p["ts"], [0.0, 1 / 7, 3 / 7, 1.0])
    assert abs(np.mean(p["ys"])) < 1e-15 and np.std(p["ys"]) == pytest.approx(1.0)

    lengths = [20, 17, 40, 33, 16] + [30] * 20
    prepared = [jax_peer.standardise(np.sort(rng.uniform(0, 1, n)), rng.normal(size=n))
                for n in lengths]
    work = jax_peer.chunks(prepared)
    # Each chunk: one bucket (the next multiple of BUCKET_STEP), at most
    # CHUNK series, shortest buckets first, every series exactly once.
    assert [length for length, _ in work] == sorted(length for length, _ in work)
    assert sorted(k for _, members in work for k in members) == list(range(len(lengths)))
    for length, members in work:
        assert len(members) <= jax_peer.CHUNK
        assert all(jax_peer.bucket_length(lengths[k]) == length for k in members)
    length, members = work[0]
    t, y, mask = jax_peer.padded(prepared, length, members)
    assert t.shape == y.shape == mask.shape == (jax_peer.CHUNK, length)
    for r, k in enumerate(members + [members[0]] * (jax_peer.CHUNK - len(members))):
        n = lengths[k]
        assert np.array_equal(y[r, :n], prepared[k]["ys"]) and mask[r, :n].all()
        assert not mask[r, n:].any() and not y[r, n:].any()


def test_its_numpy_likelihood_is_the_references_in_raw_units():
    rng = np.random.default_rng(8)
    t, y = ref.sample(rng, "rbf", 60, amplitude=2.0, length_scale=1.5, noise_variance=0.05,
                      mean=4.0)
    p = jax_peer.standardise(t, y)
    theta, mu, scale2 = [math.log(0.1), math.log(0.02)], 0.3, 0.9
    params = jax_peer.raw_parameters(p, theta, mu, scale2)
    # Standardised parameters back in y's and t's units.
    assert params["length_scale"] == pytest.approx(0.1 * p["span"])
    assert params["mean"] == pytest.approx(p["ym"] + 0.3 * p["sd"])
    assert params["noise_variance"] == pytest.approx(p["sd"] ** 2 * 0.9 * 0.02)
    # Both are float64 Cholesky likelihoods of the same covariance.
    assert jax_peer.numpy_nll(p["t"], p["y"], **params) == pytest.approx(
        ref.nll("rbf", t, y, **params), rel=ref.RTOL_LIKELIHOOD)

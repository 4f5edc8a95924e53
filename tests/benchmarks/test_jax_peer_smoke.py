"""Smoke test of the JAX peer (benchmarks/jax_peer.py): it fits a few series
in its two processes and its likelihood is numpy's. No timing assertions.

jax and optax are a bench-only extra (`jaxbench`): without them the test is
skipped, saying so."""
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

for _module in ("jax", "optax"):
    pytest.importorskip(_module, reason=f"{_module} is not installed: the JAX peer is the "
                                        "bench-only extra jaxbench (pip install -e '.[jaxbench]')")

import gp_reference as ref  # noqa: E402
import jax_peer  # noqa: E402
import peers  # noqa: E402

# Both sides are float64 Cholesky likelihoods of the same parameters; 1e-8
# relative leaves room for the different operation order (and the raw vs
# standardised units) of JAX and numpy.
RTOL_NLL = 1e-8
# The peer's optimum against scikit-learn's (one start each): within the
# benchmark's quality gap (benchmarks/report.py QUALITY_GAP), nats.
GAP = 0.01


def _series(rng, n):
    """An RBF draw on n irregular times in [0, 50] (length scale 4, sd 1.5,
    noise sd 0.2, mean 3)."""
    t = np.sort(rng.uniform(0.0, 50.0, n))
    cov = 2.25 * np.exp(-0.5 * ((t[:, None] - t[None, :]) / 4.0) ** 2) + 0.04 * np.eye(n)
    return t, 3.0 + np.linalg.cholesky(cov) @ rng.standard_normal(n)


def test_jax_peer_fits_and_its_nll_is_numpys(tmp_path):
    rng = np.random.default_rng(11)
    # Lengths in one bucket (one compile) and two (each process has one end).
    series = [_series(rng, n) for n in (40, 45, 47, 60)]
    series[1][1][[3, 10]] = np.nan  # missing values are dropped, as gpfit does
    out = jax_peer.fit(series, processes=2, scratch=str(tmp_path))

    fits = out["fits"]
    assert len(fits) == len(series)
    assert out["info"]["shapes"] == [48, 64]
    assert out["timing"]["fit_s"] > 0 and len(out["timing"]["workers"]) == 2
    for (t, y), fit in zip(series, fits):
        keep = np.isfinite(y)
        # The JAX objective, converted to raw units, is the numpy nll at the
        # fitted parameters (tests/gp_reference.py, not the peer's own numpy).
        nll = ref.nll("rbf", t[keep], y[keep], fit["mean"], fit["amplitude"],
                      fit["length_scale"], fit["noise_variance"])
        assert fit["nll"] == pytest.approx(nll, rel=RTOL_NLL)
        assert fit["nll_jax"] == pytest.approx(nll, rel=RTOL_NLL)
        assert 0 < fit["iterations"] < jax_peer.MAX_ITERATIONS
        # An optimum, not just a likelihood: no worse than scikit-learn's.
        assert fit["nll"] <= peers.sklearn_nll(t, y, restarts=1, seed=0) + GAP


def test_jax_peer_with_two_starts_keeps_the_lower_run(tmp_path):
    """--start-lengths: each start runs in turn and the lower optimum is
    kept, with the iterations of both; a start alone gives that run."""
    rng = np.random.default_rng(5)
    series = [_series(rng, n) for n in (33, 38, 41)]
    runs = {lengths: jax_peer.fit(series, processes=1, scratch=str(tmp_path),
                                  start_lengths=lengths)
            for lengths in ((0.1,), (0.02,), (0.1, 0.02))}
    assert runs[(0.1, 0.02)]["info"]["start_lengths"] == [0.1, 0.02]
    for k in range(len(series)):
        one, short, both = (runs[lengths]["fits"][k] for lengths in ((0.1,), (0.02,), (0.1, 0.02)))
        # The same compiled run from each start: the same optimum to round-off.
        assert both["nll"] == pytest.approx(min(one["nll"], short["nll"]), rel=1e-10)
        assert both["iterations"] == one["iterations"] + short["iterations"]


def test_speed_races_the_jax_peer_cold_and_warm(tmp_path):
    """benchmarks/speed.py with the JAX peer: its rows, cold and warm, judged
    against scikit-learn, and the round table with the load."""
    import subprocess

    command = [sys.executable, os.path.join(ROOT, "benchmarks", "speed.py"),
               "--count", "3", "--workloads", "a", "--skip-pipeline", "--skip-realdata",
               "--restarts", "1", "--rounds", "1", "--results-dir", str(tmp_path),
               "--jax-start-lengths", "0.1,0.02"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    table = (tmp_path / "latest.md").read_text()
    rows = {line.split("|")[2].strip(): line for line in table.splitlines()
            if line.startswith("| a | ")}
    assert {"gpcore", "sklearn", "jax-cold", "jax-warm"} <= set(rows)
    for name in ("jax-cold", "jax-warm"):
        assert "whole process" in rows[name] and " % " in rows[name]
        assert f"quality of {name} on a (R=1)" in table
    assert "| workload | round | load |" in table
    assert "numpy's nll vs JAX's at its parameters" in table
    assert "starts at 0.1, 0.02 spans" in table

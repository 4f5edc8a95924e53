"""Benchmark workloads, generated with a fixed seed.

(a) 4,000 series of 64-256 irregularly spaced points from an RBF GP with
    random parameters (drawn in sequence: the first 1,000 are the same as
    when (a) had 1,000); (b) 100 series of 1,024 points; (c) the first 1,000
    of (a) with 10% of values missing (NaN).
"""
from __future__ import annotations

import numpy as np

from gpcore import Series

SEED = 6
TOTALS = {"a": 4000, "b": 100, "c": 1000}


def _draw(rng, n):
    t = np.sort(rng.uniform(0.0, 100.0, n))
    amplitude = rng.uniform(0.5, 3.0)
    length_scale = 10 ** rng.uniform(0.0, 1.0)  # 1 to 10 time units
    noise = 10 ** rng.uniform(-2.0, -0.5) * amplitude ** 2
    d = t[:, None] - t[None, :]
    cov = amplitude ** 2 * np.exp(-0.5 * (d / length_scale) ** 2) + (noise + 1e-9) * np.eye(n)
    return t, rng.normal(0.0, 5.0) + np.linalg.cholesky(cov) @ rng.standard_normal(n)


def workload(name: str, count: int | None = None) -> list[Series]:
    """The named workload ("a", "b" or "c"), optionally only its first `count`."""
    rng = np.random.default_rng({"a": SEED, "b": SEED + 1, "c": SEED}[name])
    total = TOTALS[name]
    series = []
    for i in range(total if count is None else min(count, total)):
        n = 1024 if name == "b" else int(rng.integers(64, 257))
        t, y = _draw(rng, n)
        series.append(Series(f"{name}{i:05d}", t, y))
    if name == "c":
        missing = np.random.default_rng(SEED + 2)
        for s in series:
            s.y = s.y.copy()
            s.y[missing.random(s.y.size) < 0.1] = np.nan
    return series

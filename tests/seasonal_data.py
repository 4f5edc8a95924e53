"""Seasonal test series: a slow trend plus a yearly cycle, the case kernel
sums are for; shared by the pipeline and report tests (tests/ is on
sys.path through tests/conftest.py's folder)."""
from __future__ import annotations

import numpy as np

YEAR = 365.25  # days
DAY0 = 18_628  # series start on 2021-01-01 (days since 1970-01-01)


def seasonal_series(seed: int = 11, n_series: int = 5) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{id: (t [n] days since 1970-01-01, y [n])}: three years of irregular,
    roughly fortnightly points, a slow trend plus a yearly cycle plus noise;
    one with missing values, one flat (noise only), one too short to fit."""
    rng = np.random.default_rng(seed)
    series = {}
    for i in range(n_series):
        n = int(rng.integers(60, 81))
        days = np.sort(rng.uniform(0.0, 3 * YEAR, n))
        trend = rng.uniform(-1, 1) * days / YEAR + 0.5 * np.sin(days / rng.uniform(300, 600))
        cycle = rng.uniform(1.5, 3.0) * np.sin(2 * np.pi * days / YEAR + rng.uniform(0, 6))
        y = 10.0 + trend + cycle + 0.2 * rng.standard_normal(n)
        if i == 1:
            y[[3, 20]] = np.nan
        series[f"season-{i}"] = (DAY0 + days, y)
    t = DAY0 + np.sort(rng.uniform(0.0, 3 * YEAR, 60))
    series["flat"] = (t, 5.0 + 0.3 * rng.standard_normal(t.size))
    series["short"] = (DAY0 + np.array([1.0, 2.0]), np.array([1.0, 2.0]))
    return series

"""A small real gpfit run, built once: input Parquet, fitted params, manifest."""
import types

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.io.rows import of_fit

from report_helpers import ODD_ID, params_row, write_params
from seasonal_data import seasonal_series


@pytest.fixture(scope="session")
def fitted_run(tmp_path_factory, fitter_for):
    """12 series in long format (float t), fitted with gpcore's rbf fitter,
    plus a skipped one (2 points) and a hand-made failed row."""
    from gpcore import FitConfig, Series

    root = tmp_path_factory.mktemp("run")
    rng = np.random.default_rng(7)
    series = []
    for i in range(12):
        n = int(rng.integers(25, 60))
        t = np.sort(rng.uniform(0.0, 40.0, n))
        y = (10.0 * i + rng.uniform(0.5, 3.0) * np.sin(2 * np.pi * t / rng.uniform(6, 15))
             + rng.uniform(0.05, 0.5) * rng.standard_normal(n))
        y[rng.random(n) < 0.05] = np.nan
        series.append(Series(ODD_ID if i == 5 else f"s{i:02d}", t, y))
    series.append(Series("short", np.array([0.0, 1.0]), np.array([1.0, 2.0])))
    keys = np.concatenate([[s.series_id] * s.t.size for s in series])
    (root / "data").mkdir()
    pq.write_table(pa.table({"series_id": keys, "t": np.concatenate([s.t for s in series]),
                             "y": np.concatenate([s.y for s in series])}),
                   root / "data" / "part-00000.parquet", row_group_size=100)
    rows = [of_fit(r, None) for r in fitter_for(FitConfig(kernel="rbf")).fit(series)]
    rows.append(params_row("ghost", status="failed", n_points=40,
                           error="fit failed after jitter up to 1e-06: not positive definite"))
    write_params(root / "params", rows, shards=2)
    return types.SimpleNamespace(root=root, data=str(root / "data"),
                                 params=str(root / "params"), series=series, rows=rows)


@pytest.fixture(scope="session")
def auto_run(tmp_path_factory):
    """Seasonal series (a trend plus a yearly cycle, and a flat one) fitted
    by gpcore under kernel auto with candidates rbf and rbf+periodic; the
    manifest records those options, as gpfit's does."""
    from gpcore import FitConfig, Series, build_fitter

    root = tmp_path_factory.mktemp("auto")
    series = [Series(sid, t, y) for sid, (t, y) in seasonal_series().items()]
    keys = np.concatenate([[s.series_id] * s.t.size for s in series])
    (root / "data").mkdir()
    pq.write_table(pa.table({"series_id": keys, "t": np.concatenate([s.t for s in series]),
                             "y": np.concatenate([s.y for s in series])}),
                   root / "data" / "part-00000.parquet")
    config = FitConfig(kernel="auto", candidates=("rbf", "rbf+periodic"))
    rows = [of_fit(r, None) for r in build_fitter(config).fit(series)]
    write_params(root / "params", rows, manifest={
        "kernel": "auto", "options": {"kernel": "auto", "candidates": "rbf,rbf+periodic"}})
    return types.SimpleNamespace(data=str(root / "data"), params=str(root / "params"),
                                 rows=rows)

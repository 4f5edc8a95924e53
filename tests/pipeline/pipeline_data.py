"""Test data for the pipeline: small real Parquet data sets, and running
gpfit in-process."""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from gpfit_runs import gpfit_here

EPOCH_DAY0 = 19_000  # series start near 2022-01-08 (days since 1970-01-01)


def make_series(seed: int = 7, n_series: int = 22) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{id: (t [n] whole days since 1970-01-01, y [n])}: smooth series of 30-60
    points, one with missing values, plus one too short to fit."""
    rng = np.random.default_rng(seed)
    series = {}
    for i in range(n_series):
        n = int(rng.integers(30, 61))
        days = np.sort(rng.choice(90, size=n, replace=False)).astype(np.float64)
        y = (rng.uniform(0.5, 2.0) * np.sin(2 * np.pi * days / rng.uniform(20, 60))
             + rng.uniform(-3, 3) + 0.1 * rng.standard_normal(n))
        if i == 3:
            y[[2, 10, 11]] = np.nan
        series[f"s{i:02d}"] = (EPOCH_DAY0 + days, y)
    series["short"] = (EPOCH_DAY0 + np.array([1.0, 2.0]), np.array([1.0, 2.0]))
    return series


def write_long(folder: str, series: dict, time_type: pa.DataType = pa.float64(),
               null_id_rows: int = 3, seed: int = 3) -> str:
    """Long layout in two files, rows shuffled so every series spans both
    files and several row groups. Returns the folder."""
    ids = np.concatenate([[sid] * len(t) for sid, (t, _) in series.items()]).tolist()
    t = np.concatenate([t for t, _ in series.values()])
    y = np.concatenate([y for _, y in series.values()])
    ids += [None] * null_id_rows
    t = np.concatenate([t, np.full(null_id_rows, EPOCH_DAY0 + 5.0)])
    y = np.concatenate([y, np.ones(null_id_rows)])
    order = np.random.default_rng(seed).permutation(len(ids))
    if pa.types.is_timestamp(time_type):
        times = pa.array((t[order] * 86_400_000).astype(np.int64), pa.int64()).cast(time_type)
    else:
        times = pa.array(t[order], time_type)
    table = pa.table({"series_id": pa.array([ids[i] for i in order], pa.string()),
                      "t": times, "y": pa.array(y[order], pa.float64())})
    os.makedirs(folder, exist_ok=True)
    half = table.num_rows // 2
    pq.write_table(table.slice(0, half), os.path.join(folder, "part-0.parquet"), row_group_size=200)
    pq.write_table(table.slice(half), os.path.join(folder, "part-1.parquet"), row_group_size=200)
    return folder


def write_nested_dates(path: str, series: dict) -> str:
    """Nested layout, one row per series, t as list<date32>, plus a null-id row."""
    ids = list(series) + [None]
    times = [t.astype(np.int32).tolist() for t, _ in series.values()] + [[EPOCH_DAY0]]
    values = [y.tolist() for _, y in series.values()] + [[1.0]]
    table = pa.table({
        "series_id": pa.array(ids, pa.string()),
        "t": pa.array(times, pa.list_(pa.int32())).cast(pa.list_(pa.date32())),
        "y": pa.array(values, pa.list_(pa.float64())),
    })
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(table, path, row_group_size=8)
    return path


# Runs gpfit in this process (see tests/gpfit_runs.py).
gpfit = gpfit_here


def forecast_steps(tmp_path, steps: int):
    """(the input, the predictions) as pandas frames of gpfit run on
    tmp_path/in into tmp_path/out with --kernel rbf --predict_steps steps;
    the run must succeed."""
    import pandas as pd  # as the user reads them back
    run = gpfit(str(tmp_path / "in"), str(tmp_path / "out"), "--kernel", "rbf",
                "--predict_steps", str(steps))
    assert run.code == 0, run.stderr
    return pd.read_parquet(tmp_path / "in"), pd.read_parquet(tmp_path / "out" / "predictions")


# Options shared by the end-to-end runs: small batches, so that one fitter
# serves many batches.
RUN_OPTIONS = ("--kernel", "rbf", "--batch_size", "4")

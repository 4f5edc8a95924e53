"""A seeded chain of nights for the nightly mode's differential test
(test_nightly_chain.py): series that drift night after night, the input
files they are written as, and the options the nights run with.

A night's data is {id: (t [n] whole days since 1970-01-01, y [n])}, NaN
for a missing value; its files and options are drawn from the same
numpy Generator, so a seed gives the whole chain.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

DAY0 = 19_000  # 2022-01-08, days since 1970-01-01
MICROSECONDS_PER_DAY = 86_400_000_000
TIME_TYPES = ("number", "integer", "date", "timestamp", "timestamp_utc")
COLUMN_NAMES = (("series_id", "t", "y"), ("store", "day", "sales"))


def first_set(rng: np.random.Generator, n: int) -> dict:
    """n series of 8-200 points (smooth, some weekly or monthly cycles) and
    the degenerate ones: constant, 2 points, NaN only, duplicate times."""
    series = {f"s{i:03d}": new_series(rng) for i in range(n)}
    series["constant"] = (DAY0 + np.arange(12.0), np.full(12, 4.0))
    series["two"] = (DAY0 + np.array([0.0, 1.0]), np.array([1.0, 2.0]))
    series["nan_only"] = (DAY0 + np.arange(6.0), np.full(6, np.nan))
    t, y = new_series(rng)
    series["dup_times"] = (np.append(t, t[:3]), np.append(y, y[:3] + 0.2))
    return series


def new_series(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(t, y): 8-200 distinct whole days from DAY0, smooth or with a weekly
    or monthly cycle, positive (so that --transform log1p fits most)."""
    n = int(rng.integers(8, 201))
    days = np.sort(rng.choice(2 * n + 20, size=n, replace=False)).astype(np.float64)
    y = 10.0 + rng.uniform(0.5, 2.0) * np.sin(days / rng.uniform(5.0, 40.0))
    if rng.random() < 0.3:
        y += rng.uniform(1.0, 3.0) * np.sin(2 * np.pi * days / rng.choice([7.0, 30.0]))
    y += 0.1 * rng.standard_normal(n)
    if rng.random() < 0.2:
        y[rng.integers(n)] = np.nan
    return DAY0 + days, y


def mutate(series: dict, rng: np.random.Generator, fresh: list) -> tuple[dict, list[str]]:
    """The next night's series and what changed: points appended, an old
    value edited, a series deleted, added or renamed. `fresh` holds the
    ids handed out so far (a renamed or added id is never an old one)."""
    series = {k: (t.copy(), y.copy()) for k, (t, y) in series.items()}
    done = []
    ids = sorted(series)
    for sid in rng.choice(ids, size=min(len(ids), 4), replace=False):
        t, y = series[sid]
        what = rng.choice(["append", "edit"])
        if what == "append":
            k = int(rng.integers(1, 4))
            last = np.nanmax(t) if t.size else DAY0
            new_t = last + np.arange(1.0, k + 1)
            series[sid] = (np.append(t, new_t), np.append(y, 10.0 + rng.standard_normal(k)))
        elif y.size:
            y[int(rng.integers(y.size))] += 0.5
        done.append(f"{what} {sid}")
    sid = str(rng.choice(sorted(series)))
    del series[sid]
    done.append(f"delete {sid}")
    sid = _fresh(fresh)
    series[sid] = new_series(rng)
    done.append(f"add {sid}")
    old = str(rng.choice(sorted(series)))
    sid = _fresh(fresh)
    series[sid] = series.pop(old)
    done.append(f"rename {old} -> {sid}")
    return series, done


def _fresh(fresh: list) -> str:
    fresh.append(f"n{len(fresh):03d}")
    return fresh[-1]


def write_night(folder: str, series: dict, rng: np.random.Generator, time_type: str,
                columns: tuple[str, str, str], nested: bool = False) -> list[str]:
    """Writes the series as 1-4 files, rows shuffled (a series spans
    files), sometimes with an empty file (its schema, no rows); the time
    column as `time_type` (TIME_TYPES). Long layout, or nested: each
    series cut into 1-3 rows of lists (rows of one id are joined). Returns
    the files."""
    table = (_nested if nested else _long)(series, rng, time_type, columns)
    k = int(rng.integers(1, 5))
    cuts = np.sort(rng.choice(np.arange(1, table.num_rows), size=k - 1, replace=False))
    bounds = [0, *cuts.tolist(), table.num_rows]
    parts = [table.slice(a, b - a) for a, b in zip(bounds[:-1], bounds[1:])]
    if rng.random() < 0.3:
        parts.insert(int(rng.integers(len(parts) + 1)), table.slice(0, 0))
    os.makedirs(folder)
    paths = []
    for i, part in enumerate(parts):
        paths.append(os.path.join(folder, f"part-{rng.integers(10**6):06d}-{i}.parquet"))
        pq.write_table(part, paths[-1], row_group_size=int(rng.integers(50, 500)))
    return paths


def _long(series: dict, rng: np.random.Generator, time_type: str, columns) -> pa.Table:
    ids = [sid for sid, (t, _) in series.items() for _ in range(t.size)]
    t = np.concatenate([t for t, _ in series.values()])
    y = np.concatenate([y for _, y in series.values()])
    order = rng.permutation(t.size)
    return pa.table({columns[0]: pa.array([ids[i] for i in order], pa.string()),
                     columns[1]: times(t[order], time_type),
                     columns[2]: pa.array(y[order], pa.float64())})


def _nested(series: dict, rng: np.random.Generator, time_type: str, columns) -> pa.Table:
    pieces = []
    for sid, (t, y) in series.items():
        order = rng.permutation(t.size)
        cuts = np.sort(rng.choice(np.arange(1, max(t.size, 2)), size=min(
            int(rng.integers(0, 3)), max(t.size - 1, 0)), replace=False))
        pieces += [(sid, t[part], y[part]) for part in np.split(order, cuts)]
    pieces = [pieces[i] for i in rng.permutation(len(pieces))]
    offsets = np.cumsum([0] + [p[1].size for p in pieces])
    flat = times(np.concatenate([p[1] for p in pieces]), time_type)
    return pa.table({
        columns[0]: pa.array([p[0] for p in pieces], pa.string()),
        columns[1]: pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), flat),
        columns[2]: pa.ListArray.from_arrays(pa.array(offsets, pa.int32()),
                                             pa.array(np.concatenate([p[2] for p in pieces]))),
    })


def times(days: np.ndarray, time_type: str) -> pa.Array:
    """Whole days since 1970-01-01 as a column of `time_type`."""
    if time_type == "number":
        return pa.array(days, pa.float64())
    if time_type == "integer":
        return pa.array(days.astype(np.int64), pa.int64())
    if time_type == "date":
        return pa.array(days.astype(np.int32), pa.int32()).cast(pa.date32())
    micros = pa.array(days.astype(np.int64) * MICROSECONDS_PER_DAY, pa.int64())
    return micros.cast(pa.timestamp("us", tz="UTC" if time_type == "timestamp_utc" else None))


@dataclasses.dataclass(frozen=True)
class Options:
    """The options of one night (the command's flags)."""

    kernel: str = "rbf"
    candidates: Optional[str] = None
    transform: str = "none"
    holdout: int = 0
    horizon: float = 0.0
    points: int = 0
    steps: int = 0
    levels: str = "95"
    observed: bool = False
    min_points: int = 3
    max_points: Optional[int] = None
    search: str = "thorough"
    restarts: Optional[int] = None
    columns: tuple[str, str, str] = COLUMN_NAMES[0]

    def argv(self) -> list[str]:
        args = ["--kernel", self.kernel, "--transform", self.transform,
                "--holdout", str(self.holdout), "--predict_levels", self.levels,
                "--min_points", str(self.min_points), "--search", self.search,
                "--id_column", self.columns[0], "--time_column", self.columns[1],
                "--value_column", self.columns[2]]
        if self.candidates:
            args += ["--candidates", self.candidates]
        if self.points:
            args += ["--predict_horizon", str(self.horizon), "--predict_points", str(self.points)]
        if self.steps:
            args += ["--predict_steps", str(self.steps)]
        if self.observed:
            args += ["--predict_observed"]
        if self.max_points is not None:
            args += ["--max_points", str(self.max_points)]
        if self.restarts is not None:
            args += ["--restarts", str(self.restarts)]
        return args

    @property
    def predicts(self) -> bool:
        return bool(self.points or self.steps or self.observed or self.holdout)


KERNELS = ("rbf", "matern52", "rbf+periodic", "auto")
# One change each: (field, values it may take).
DRIFTS = {
    "transform": ("none", "log1p"),
    "holdout": (0, 3),
    "forecast": ("none", "horizon", "steps"),
    "levels": ("95", "80,95"),
    "observed": (False, True),
    "min_points": (3, 10),
    "max_points": (None, 150),
    "search": ("thorough", "quick"),
    "restarts": (None, 1),
    "columns": COLUMN_NAMES,
}


def drift(options: Options, rng: np.random.Generator, kernels: tuple = KERNELS
          ) -> tuple[Options, list[str]]:
    """The next night's options: the next of `kernels` every other night
    or so, and one to three other changes."""
    changes = {}
    if rng.random() < 0.5:
        at = kernels.index(options.kernel) if options.kernel in kernels else -1
        changes["kernel"] = kernels[(at + 1) % len(kernels)]
        changes["candidates"] = "rbf,rbf+periodic" if changes["kernel"] == "auto" else None
    for name in rng.choice(sorted(DRIFTS), size=int(rng.integers(1, 4)), replace=False):
        now = _forecast(options) if name == "forecast" else getattr(options, name)
        values = [v for v in DRIFTS[name] if v != now]
        value = values[int(rng.integers(len(values)))]
        if name == "forecast":
            changes.update(horizon=10.0 if value == "horizon" else 0.0,
                           points=4 if value == "horizon" else 0,
                           steps=3 if value == "steps" else 0)
        else:
            changes[name] = value
    new = dataclasses.replace(options, **changes)
    return new, [f"{k}={getattr(new, k)!r}" for k in changes if getattr(new, k) != getattr(
        options, k)]


def _forecast(options: Options) -> str:
    return "horizon" if options.points else "steps" if options.steps else "none"

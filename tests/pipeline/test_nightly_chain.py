"""A randomized, seeded chain of nights against cold runs: each night the
data drift (points appended, values edited, series added, deleted,
renamed, files re-cut, the time column's type changed) and now and then
the options (kernel, transform, holdout, forecasts, levels, min and max
points, search, restarts, column names); gpfit runs against the previous
night's output, and a cold run of the same input and options is the
reference (nightly_checks.py says what each night must hold).

GPFIT_CHAIN_SEEDS=1,2,3 GPFIT_CHAIN_NIGHTS=8 GPFIT_CHAIN_SERIES=30 run longer chains.
"""
from __future__ import annotations

import dataclasses
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gpfit_runs import gpfit_here, read_rows
from nightly_chain import (TIME_TYPES, Options, drift, first_set, mutate, new_series,
                           write_night)
from nightly_checks import Night, check_manifest, check_predictions, check_rows

SEEDS = [int(s) for s in os.environ.get("GPFIT_CHAIN_SEEDS", "2").split(",")]
NIGHTS = int(os.environ.get("GPFIT_CHAIN_NIGHTS", "3"))
SERIES = int(os.environ.get("GPFIT_CHAIN_SERIES", "8"))
RUN = ("--batch_size", "8")


def read_night(series: dict, options: Options, run) -> Night:
    assert run.code == 0, run.stderr
    rows = {}
    for row in read_rows(run.output):
        assert row["series_id"] not in rows, f"{row['series_id']} twice in {run.output}"
        rows[row["series_id"]] = row
    predictions = {}
    for row in read_rows(run.output, "predictions"):
        predictions.setdefault(row["series_id"], []).append(row)
    return Night(series, options, rows, predictions, run.manifest)


def run_chain(seed: int, nights: int, n_series: int, base: str) -> list[str]:
    """Runs the chain; -> every problem found, each naming its night."""
    rng = np.random.default_rng(seed)
    series, options, fresh = first_set(rng, n_series), Options(), []
    previous, problems = None, []
    for k in range(nights):
        said = []
        if k:
            series, said = mutate(series, rng, fresh)
            options, changed = drift(options, rng)
            said += changed
        time_type = TIME_TYPES[int(rng.integers(len(TIME_TYPES)))]
        data = os.path.join(base, f"night{k}", "input")
        nested = bool(rng.random() < 0.3)
        write_night(data, series, rng, time_type, options.columns, nested)
        argv = [*RUN, *options.argv()]
        output = os.path.join(base, f"night{k}", "output")
        if previous is None:  # the first night is cold
            night = cold = read_night(series, options, gpfit_here(data, output, *argv))
        else:
            night = read_night(series, options, gpfit_here(
                data, output, *argv, "--previous_output",
                os.path.join(base, f"night{k - 1}", "output")))
            cold = read_night(series, options, gpfit_here(
                data, os.path.join(base, f"night{k}", "cold"), *argv))
        found = (check_rows(night, previous, cold) + check_manifest(night)
                 + check_predictions(night, cold))
        layout = "nested" if nested else "long"
        problems += [f"night {k} ({layout}, {time_type}; {'; '.join(said)}): {p}" for p in found]
        previous = night
    return problems


@pytest.mark.parametrize("seed", SEEDS)
def test_a_chain_of_nights_agrees_with_cold_runs(tmp_path, seed):
    problems = run_chain(seed, NIGHTS, SERIES, str(tmp_path))
    assert not problems, "\n".join(problems)


def write_two_id_columns(folder: str, series: dict, swapped: dict) -> str:
    """One long file with two id columns: `store` (the series' ids) and
    `sku`, where the rows of store s are sku swapped.get(s, s)."""
    ids = [sid for sid, (t, _) in series.items() for _ in range(t.size)]
    table = pa.table({"store": ids, "sku": [swapped.get(s, s) for s in ids],
                      "t": np.concatenate([t for t, _ in series.values()]),
                      "y": np.concatenate([y for _, y in series.values()])})
    os.makedirs(folder)
    pq.write_table(table, os.path.join(folder, "part-0.parquet"))
    return folder


def test_a_previous_output_of_another_id_column_reuses_only_the_same_points(tmp_path):
    # Last night's ids were the store column's, tonight's the sku column's:
    # sku "a" holds store "b"'s points and the other way round, "c" is
    # both, "x" is new and store "d" is gone. Only "c" holds the same
    # points under the same id: it alone is reused; "a" and "b" are fitted
    # (a warm start from the other's parameters only adds a start).
    rng = np.random.default_rng(3)
    series = {sid: new_series(rng) for sid in "abcd"}
    data = write_two_id_columns(str(tmp_path / "in"), series, {"a": "b", "b": "a", "d": "x"})
    run = ("--kernel", "rbf", "--restarts", "1")
    night1 = gpfit_here(data, str(tmp_path / "night1"), *run, "--id_column", "store")
    night2 = gpfit_here(data, str(tmp_path / "night2"), *run, "--id_column", "sku",
                        "--previous_output", night1.output)
    cold = gpfit_here(data, str(tmp_path / "cold"), *run, "--id_column", "sku")
    tonight = {"a": series["b"], "b": series["a"], "c": series["c"], "x": series["d"]}
    options = Options(restarts=1, columns=("sku", "t", "y"))
    before = read_night(series, dataclasses.replace(
        options, columns=("store", "t", "y")), night1)
    after = read_night(tonight, options, night2)
    problems = check_rows(after, before, read_night(tonight, options, cold))
    assert not problems, "\n".join(problems)
    assert {sid for sid, row in after.rows.items() if row["reused"]} == {"c"}


def test_a_cut_short_previous_output_given_as_optional_means_a_cold_night(tmp_path):
    # One of last night's two params shards is gone (a copy cut short):
    # with --previous_output_optional nothing of it is used, not even the
    # shard that is left, and the night is the cold run, saying why.
    rng = np.random.default_rng(4)
    series = {sid: new_series(rng) for sid in "abc"}
    data = str(tmp_path / "in")
    write_night(data, series, rng, "date", ("series_id", "t", "y"))
    run = ("--kernel", "rbf", "--restarts", "1")
    night1 = gpfit_here(data, str(tmp_path / "night1"), *run, "--num_shards", "2")
    assert night1.code == 0, night1.stderr
    os.remove(os.path.join(night1.output, "params", "part-00001-of-00002.parquet"))
    night2 = gpfit_here(data, str(tmp_path / "night2"), *run, "--previous_output",
                        night1.output, "--previous_output_optional")
    cold = gpfit_here(data, str(tmp_path / "cold"), *run)
    options = Options(restarts=1)
    after = read_night(series, options, night2)
    assert not check_rows(after, None, read_night(series, options, cold))
    assert not any(row["reused"] or row["warm_started"] for row in after.rows.values())
    assert after.manifest["previous_output"] is None
    assert "lacks 1 shard(s)" in after.manifest["previous_note"]
    assert after.manifest["reuse"]["warm_starts_offered"] == 0

"""Nightly chains on the local runner over real Parquet: a cold run, then the
next night against it (--previous_output) with changed, new, removed and
unchanged series, predictions checked against a numpy posterior; a previous
run with another kernel or other options; previous outputs that are
missing or corrupt.
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import shutil
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gpcore import FitConfig, Series
from pipeline_data import (EPOCH_DAY0, RUN_OPTIONS, gpfit, make_series, write_long,
                           write_nested_dates)

HORIZON, POINTS = 10.0, 5
PREDICT = ("--predict_horizon", str(HORIZON), "--predict_points", str(POINTS))
# A changed series' fit may not be worse than a cold fit of the same data by
# more than this (nats): the target, and what the fitter guarantees
# by running its usual starts beside the warm one.
NLL_SLACK = 0.01


@pytest.fixture(scope="module")
def first_night():
    return make_series(seed=11, n_series=10)  # s00..s09 and "short" (skipped)


@pytest.fixture(scope="module")
def second_night(first_night):
    """s01 gone; s02 gets 8 new points; one value of s05 changes; n00 is new;
    s04 gains a missing value only (its finite points are unchanged); the
    rest, "short" included, unchanged (the files are shuffled differently)."""
    series = {k: (t.copy(), y.copy()) for k, (t, y) in first_night.items() if k != "s01"}
    t, y = series["s02"]
    new_t = t.max() + np.arange(1.0, 9.0)
    series["s02"] = (np.append(t, new_t), np.append(y, y[-1] + 0.05 * np.arange(1.0, 9.0)))
    series["s05"][1][4] += 0.5
    t, y = series["s04"]
    series["s04"] = (np.append(t, t.max() + 3.0), np.append(y, np.nan))
    rng = np.random.default_rng(5)
    days = np.sort(rng.choice(90, size=40, replace=False)).astype(np.float64)
    series["n00"] = (EPOCH_DAY0 + days, np.cos(days / 9.0) + 0.1 * rng.standard_normal(40))
    return series


CHANGED, NEW, GONE = ("s02", "s05"), ("n00",), ("s01",)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, first_night, second_night):
    base = tmp_path_factory.mktemp("nights")
    return (write_long(str(base / "night1"), first_night),
            write_long(str(base / "night2"), second_night, seed=99))


@pytest.fixture(scope="module")
def cold(tmp_path_factory, inputs):
    return gpfit(inputs[0], str(tmp_path_factory.mktemp("out") / "night1"), *RUN_OPTIONS)


@pytest.fixture(scope="module")
def nightly(tmp_path_factory, inputs, cold):
    return gpfit(inputs[1], str(tmp_path_factory.mktemp("out") / "night2"), *RUN_OPTIONS,
                 "--previous_output", cold.output, *PREDICT, "--predict_observed")


def by_id(rows: list[dict]) -> dict[str, dict]:
    return {row["series_id"]: row for row in rows}


def test_first_night_is_cold_and_fingerprints_every_row(cold):
    assert cold.code == 0, cold.stderr
    rows = cold.rows()
    assert all(r["fingerprint"] and len(r["fingerprint"]) == 64 for r in rows)
    assert not any(r["reused"] or r["warm_started"] for r in rows)
    assert cold.manifest["previous_output"] is None
    assert cold.manifest["reuse"]["reused"] == 0 and cold.manifest["predictions"] is None
    assert cold.manifest["prediction_files"] == []


def test_every_series_of_tonight_once_and_gone_ones_not_at_all(nightly, second_night):
    assert nightly.code == 0, nightly.stderr
    ids = [r["series_id"] for r in nightly.rows()]
    assert ids == sorted(second_night)
    assert not set(GONE) & set(ids)


def test_unchanged_series_are_copied_exactly(nightly, cold):
    before, after = by_id(cold.rows()), by_id(nightly.rows())
    unchanged = sorted(set(after) - set(CHANGED) - set(NEW))
    assert "s04" in unchanged and "short" in unchanged  # a new NaN; a skipped series
    for sid in unchanged:
        assert after[sid]["reused"] is True and after[sid]["warm_started"] is False, sid
        assert {k: v for k, v in after[sid].items() if k != "reused"} == {
            k: v for k, v in before[sid].items() if k != "reused"}, sid
    assert nightly.manifest["reuse"]["reused"] == len(unchanged)


def test_a_third_night_reuses_the_second_nights_fits_and_reused_rows(tmp_path, nightly,
                                                                    second_night):
    # Night 3: night 2's data re-split into other files, s07 changed. Rows
    # night 2 fitted (warm-started or new) and rows it reused are reused
    # again, unchanged but for warm_started; s07 is warm-started from them.
    third = {k: (t.copy(), y.copy()) for k, (t, y) in second_night.items()}
    third["s07"][1][0] += 1.0
    night3 = gpfit(write_long(str(tmp_path / "night3"), third, seed=42),
                   str(tmp_path / "out3"), *RUN_OPTIONS, "--previous_output", nightly.output)
    assert night3.code == 0, night3.stderr
    before, after = by_id(nightly.rows()), by_id(night3.rows())
    assert sorted(after) == sorted(third)
    for sid in sorted(set(after) - {"s07"}):
        assert after[sid]["reused"] is True, sid
        assert dict(after[sid], reused=None, warm_started=None) == dict(
            before[sid], reused=None, warm_started=None), sid
    assert not after["s07"]["reused"] and after["s07"]["warm_started"]
    assert night3.manifest["reuse"] == {"reused": len(third) - 1, "warm_started": 1,
                                        "fitted": 1, "warm_starts_offered": 1,
                                        "previous_unreadable_shards": 0}


def test_changed_and_new_series_are_fitted_and_not_worse_than_cold(nightly, cold,
                                                                  second_night, fitter_for):
    before, after = by_id(cold.rows()), by_id(nightly.rows())
    fitted = CHANGED + NEW
    for sid in fitted:
        assert after[sid]["status"] == "ok" and after[sid]["reused"] is False, sid
    for sid in CHANGED:
        assert after[sid]["fingerprint"] != before[sid]["fingerprint"], sid
    assert nightly.manifest["reuse"]["fitted"] == len(fitted)
    # The changed series started from their previous parameters too (the new
    # one has none); the fitter says so.
    assert nightly.manifest["reuse"]["warm_starts_offered"] == len(CHANGED)
    assert {sid for sid, row in after.items() if row["warm_started"]} == set(CHANGED)
    assert nightly.manifest["reuse"]["warm_started"] == len(CHANGED)
    last = nightly.stdout.strip().splitlines()[-1]  # the line a scheduler's log shows
    assert (f"; {len(after) - len(fitted)} reused, {len(CHANGED)} warm-started, "
            f"{len(fitted)} fitted ->") in last, last
    # An independent cold fit of tonight's data, series by series.
    config = FitConfig(kernel="rbf")
    cold_fits = fitter_for(config).fit([Series(sid, *second_night[sid]) for sid in fitted])
    for result in cold_fits:
        assert after[result.series_id]["nll"] <= result.nll + NLL_SLACK, result.series_id


def test_the_manifest_names_the_previous_run_and_the_predictions(nightly, cold):
    found = nightly.manifest
    assert found["previous_output"] == cold.output and found["previous_note"] is None
    assert found["prediction_files"] == nightly.shards("predictions")
    assert found["predictions"] == {"horizon": HORIZON, "points": POINTS, "steps": 0,
                                    "observed": True, "levels": [95.0], "transform": "none",
                                    "holdout": 0, "series": 10, "not_predicted": 0,
                                    "no_step": {}, "coarse_grid": 0}
    assert found["holdout"] is None
    assert found["reuse"]["previous_unreadable_shards"] == 0


def numpy_rbf_posterior(t, y, row, t_new):
    """Mean and latent sd at t_new: the textbook GP posterior (Rasmussen &
    Williams, eq. 2.23-2.24), rbf kernel, constant mean."""
    def k(a, b):
        return row["amplitude"] ** 2 * np.exp(
            -0.5 * ((a[:, None] - b[None, :]) / row["length_scale"]) ** 2)

    a = k(t, t) + row["noise_variance"] * np.eye(t.size)
    chol = np.linalg.cholesky(a)
    k_star = k(t_new, t)
    alpha = np.linalg.solve(chol.T, np.linalg.solve(chol, y - row["mean"]))
    v = np.linalg.solve(chol, k_star.T)
    var = row["amplitude"] ** 2 - np.sum(v * v, axis=0)
    return row["mean"] + k_star @ alpha, np.sqrt(np.maximum(var, 0.0))


def test_predictions_match_a_numpy_posterior(nightly, second_night):
    rows = by_id(nightly.rows())
    predictions = nightly.predictions()
    ok = sorted(sid for sid, row in rows.items() if row["status"] == "ok")
    assert sorted({p["series_id"] for p in predictions}) == ok  # reused ones included
    for sid in ok:
        row, (t, y) = rows[sid], second_night[sid]
        keep = np.isfinite(t) & np.isfinite(y)
        t, y = t[keep], y[keep]
        mine = [p for p in predictions if p["series_id"] == sid]
        forecast = [p for p in mine if p["kind"] == "forecast"]
        observed = [p for p in mine if p["kind"] == "observed"]
        expected_t = t.max() + HORIZON * np.arange(1, POINTS + 1) / POINTS
        np.testing.assert_allclose([p["t"] for p in forecast], expected_t, rtol=0, atol=1e-9)
        np.testing.assert_array_equal([p["t"] for p in observed], t)
        np.testing.assert_array_equal([p["y"] for p in observed], y)
        assert all(p["y"] is None and p["residual"] is None for p in forecast)
        got_t = np.array([p["t"] for p in mine])
        mean, sd = numpy_rbf_posterior(t, y, row, got_t)
        sd_obs = np.sqrt(sd ** 2 + row["noise_variance"])
        # Same formula in TF and numpy; float64 round-off on n <= 70 points.
        scale = np.std(y)
        np.testing.assert_allclose([p["mean"] for p in mine], mean, rtol=1e-7,
                                   atol=1e-9 * scale, err_msg=sid)
        np.testing.assert_allclose([p["stddev"] for p in mine], sd, rtol=1e-6,
                                   atol=1e-7 * scale, err_msg=sid)
        np.testing.assert_allclose([p["stddev_observed"] for p in mine], sd_obs, rtol=1e-7,
                                   err_msg=sid)
        np.testing.assert_allclose([p["residual"] for p in observed],
                                   (y - mean[POINTS:]) / sd_obs[POINTS:], rtol=1e-6, atol=1e-8)


def test_predictions_of_dates_are_timestamps(tmp_path, first_night):
    subset = {k: first_night[k] for k in ("s00", "s03", "short")}
    path = write_nested_dates(str(tmp_path / "in" / "series.parquet"), subset)
    run = gpfit(path, str(tmp_path / "out"), *RUN_OPTIONS, *PREDICT)
    assert run.code == 0, run.stderr
    table = pq.read_table(os.path.join(run.output, run.shards("predictions")[0]))
    assert table.schema.field("t").type == pa.timestamp("us", tz="UTC")
    assert set(table.column("kind").to_pylist()) == {"forecast"}
    for sid in ("s00", "s03"):
        t, y = first_night[sid]
        last = t[np.isfinite(y)].max()
        got = table.filter(pa.compute.equal(table.column("series_id"), sid)).column("t")
        days = got.cast(pa.int64()).to_numpy() / 86_400_000_000
        np.testing.assert_allclose(days, last + HORIZON * np.arange(1, POINTS + 1) / POINTS,
                                   rtol=0, atol=1e-9)


@pytest.mark.parametrize("change", [("--kernel", "matern52"), ("--restarts", "2")],
                         ids=["other-kernel", "other-options"])
def test_another_kernel_or_other_options_reuse_nothing(tmp_path, inputs, cold, change):
    run = gpfit(inputs[1], str(tmp_path / "out"), *RUN_OPTIONS, *change,
                "--previous_output", cold.output)
    assert run.code == 0, run.stderr
    rows = run.rows()
    assert not any(r["reused"] for r in rows)
    both = [r for r in rows if r["status"] == "ok" and r["series_id"] not in NEW]
    # Warm starts only where the parameters mean the same: the same kernel.
    offered = run.manifest["reuse"]["warm_starts_offered"]
    assert offered == (0 if change[0] == "--kernel" else len(both))
    assert run.manifest["reuse"]["warm_started"] == offered
    if change[0] == "--kernel":
        assert {r["kernel"] for r in rows} == {"matern52"}
        assert not any(r["warm_started"] for r in rows)
    else:
        assert {r["series_id"] for r in rows if r["warm_started"]} == {
            r["series_id"] for r in both}


def test_reordered_candidates_fit_the_same_and_reuse_every_row(tmp_path, first_night):
    """--candidates a,b and b,a are the same choice (exact BIC ties go to the
    name that sorts first, gpcore.choice.choose_fit); the order was in the
    fingerprint, so reordering them refitted every series the next night."""
    auto = ("--kernel", "auto", "--batch_size", "4")
    data = write_long(str(tmp_path / "in"), {k: first_night[k] for k in ("s00", "s03", "short")})
    ab = gpfit(data, str(tmp_path / "ab"), *auto, "--candidates", "rbf,matern12")
    ba = gpfit(data, str(tmp_path / "ba"), *auto, "--candidates", "matern12,rbf")
    assert ab.code == ba.code == 0, ab.stderr + ba.stderr
    first, second = by_id(ab.rows()), by_id(ba.rows())
    assert first == second
    chosen = [r for r in first.values() if r["status"] == "ok"]
    assert len(chosen) == 2 and first["short"]["status"] == "skipped"
    # No exact tie among these ordinary fits: the old rule (the first listed)
    # chose the same, so they do not move.
    assert all(r["bic_margin"] != 0.0 for r in chosen)
    night = gpfit(data, str(tmp_path / "night"), *auto, "--candidates", "matern12,rbf",
                  "--previous_output", ab.output)
    assert night.code == 0, night.stderr
    assert night.manifest["reuse"]["reused"] == len(first)
    assert {k: dict(v, reused=False) for k, v in by_id(night.rows()).items()} == first


def corrupt(cold_output: str, folder, how: str) -> str:
    shutil.copytree(cold_output, folder)
    if how == "manifest":
        (folder / "_SUCCESS.json").write_text("{ not json")
    elif how == "shard":
        shard = sorted(folder.glob("params/part-*.parquet"))[0]
        shard.write_bytes(shard.read_bytes()[:100])
    elif how == "failed run":
        (folder / "_SUCCESS.json").rename(folder / "_FAILED.json")
    return str(folder)


@pytest.mark.parametrize("how,said", [
    ("manifest", "has no readable _SUCCESS.json"),
    ("shard", "is not a Parquet file"),
    ("failed run", "holds _FAILED.json: that run failed"),
    ("missing", "has no readable _SUCCESS.json"),
])
def test_an_unusable_previous_output_is_refused_before_any_work(tmp_path, inputs, cold, how,
                                                                said):
    previous = (str(tmp_path / "nothing-here") if how == "missing"
                else corrupt(cold.output, tmp_path / "previous", how))
    run = gpfit(inputs[1], str(tmp_path / "out"), *RUN_OPTIONS, "--previous_output", previous)
    assert run.code == 2
    assert run.stderr.startswith("gpfit: error: --previous_output")
    assert said in run.stderr and "--previous_output_optional" in run.stderr
    assert previous in run.stderr
    assert not os.path.exists(run.output)


def test_a_previous_output_of_a_scheme_beam_cannot_open_is_refused(tmp_path, inputs, cold):
    previous = "file://" + cold.output  # Beam has no file system for file://
    run = gpfit(inputs[1], str(tmp_path / "out"), *RUN_OPTIONS, "--previous_output", previous)
    assert run.code == 2, run.stderr
    assert run.stderr.startswith(f"gpfit: error: --previous_output {previous} has no readable "
                                 "_SUCCESS.json (Unable to get filesystem"), run.stderr


def test_an_optional_unusable_previous_output_means_a_cold_run(tmp_path, inputs, cold,
                                                                second_night, caplog):
    previous = corrupt(cold.output, tmp_path / "previous", "manifest")
    with caplog.at_level("WARNING", logger="gpfit"):
        run = gpfit(inputs[1], str(tmp_path / "out"), *RUN_OPTIONS,
                    "--previous_output", previous, "--previous_output_optional")
    assert run.code == 0, run.stderr
    (said,) = [r.getMessage() for r in caplog.records if "fitted cold" in r.getMessage()]
    assert said.startswith(f"gpfit: every series fitted cold: --previous_output {previous} "
                           "has no readable _SUCCESS.json")
    assert run.manifest["previous_output"] is None
    assert "every series fitted cold" in run.manifest["previous_note"]
    assert len(run.rows()) == len(second_night)
    assert not any(r["reused"] for r in run.rows())
    assert run.manifest["reuse"]["warm_starts_offered"] == 0


@pytest.mark.parametrize("argv,said", [
    (["--previous_output_optional"], "--previous_output_optional needs --previous_output"),
    (["--predict_horizon", "5"], "forecasts need both --predict_horizon"),
    (["--predict_points", "5"], "forecasts need both --predict_horizon"),
    (["--predict_horizon", "-1", "--predict_points", "2"], "--predict_horizon must be >= 0"),
])
def test_nightly_options_are_checked(tmp_path, inputs, argv, said):
    run = gpfit(inputs[0], str(tmp_path / "out"), *argv)
    assert run.code == 2 and said in run.stderr


def test_the_previous_output_cannot_lie_inside_the_output(tmp_path, inputs, cold):
    # Refused before, as the output folder holding "'night1/_SUCCESS.json',
    # which gpfit did not write": no word of --previous_output.
    shutil.copytree(cold.output, tmp_path / "out" / "night1")
    run = gpfit(inputs[1], str(tmp_path / "out"), "--previous_output",
                str(tmp_path / "out" / "night1"), "--previous_output_optional")
    assert run.code == 2, run.stderr
    assert f"lies inside the --output folder {tmp_path / 'out'}, which this run replaces" in (
        run.stderr)
    assert (tmp_path / "out" / "night1" / "_SUCCESS.json").exists()


def test_the_previous_output_cannot_be_the_output(tmp_path, inputs, cold):
    run = gpfit(inputs[1], cold.output + "/", "--previous_output", cold.output,
                "--previous_output_optional")
    assert run.code == 2 and "is the --output folder" in run.stderr
    assert json.loads(open(os.path.join(cold.output, "_SUCCESS.json")).read())["counts"]


def _lock(folder, run_id: str, started_at: float, heartbeat_at: float) -> None:
    """A lock as another host's run writes it (pipeline/io/lock.py)."""
    lock = {"run_id": run_id, "host": "another-host", "pid": 4321, "local": False,
            "started_at": started_at, "heartbeat_at": heartbeat_at, "stale_after_s": 600.0}
    (folder / "_RUNNING.json").write_text(json.dumps(lock))


@pytest.mark.parametrize("how,said", [
    ("running", "is being written by a gpfit run (run r1 on host another-host"),
    ("stopped", "has no _SUCCESS.json and holds the lock _RUNNING.json of a gpfit run that "
                "stopped before finishing (run r1 on host another-host"),
    ("replacing", "is being replaced by a gpfit run that started after it was written "
                  "(run r1 on host another-host"),
])
def test_a_locked_previous_output_names_its_lock(tmp_path, inputs, cold, how, said):
    # A run into the previous folder deletes its manifest first, then its
    # shards: the error named only the missing _SUCCESS.json, and a run
    # just started there (manifest not yet deleted) was read from.
    previous = tmp_path / "previous"
    shutil.copytree(cold.output, previous)
    beat = time.time() - (3600 if how == "stopped" else 0)
    if how == "replacing":  # locked after the manifest was written
        finished = datetime.datetime.fromisoformat(cold.manifest["finished_at"]).timestamp()
        beat = max(beat, finished + 2)
    else:
        (previous / "_SUCCESS.json").unlink()
    _lock(previous, "r1", beat, beat)
    run = gpfit(inputs[1], str(tmp_path / "out"), *RUN_OPTIONS,
                "--previous_output", str(previous))
    assert run.code == 2, run.stderr
    assert said in run.stderr and "_RUNNING.json" in run.stderr, run.stderr
    assert "--previous_output_optional" in run.stderr and not os.path.exists(run.output)


def test_the_lock_of_the_run_that_wrote_the_previous_output_does_not_refuse_it(
        tmp_path, inputs, cold):
    # Between writing _SUCCESS.json and removing its lock, the run that wrote
    # the folder still holds it: the folder is complete.
    previous = tmp_path / "previous"
    shutil.copytree(cold.output, previous)
    started = datetime.datetime.fromisoformat(cold.manifest["started_at"]).timestamp()
    _lock(previous, "r0", started + 0.5, time.time())
    run = gpfit(inputs[1], str(tmp_path / "out"), *RUN_OPTIONS,
                "--previous_output", str(previous))
    assert run.code == 0, run.stderr
    assert run.manifest["reuse"]["reused"] > 0


def test_previous_rows_without_a_required_value_are_fitted_not_reused(tmp_path, inputs, cold,
                                                                      second_night):
    # Last night's shards rewritten by another tool without n_points and
    # converged (or with nulls there): reused, those rows failed the write
    # of the whole job (exit 3, non-nullable column).
    previous = tmp_path / "previous"
    shutil.copytree(cold.output, previous)
    for shard in previous.glob("params/part-*.parquet"):
        table = pq.read_table(shard).drop_columns(["n_points", "converged"])
        pq.write_table(table, shard)
    run = gpfit(inputs[1], str(tmp_path / "out"), *RUN_OPTIONS, "--previous_output",
                str(previous))
    assert run.code == 0, run.stderr
    rows = run.rows()
    assert sorted(r["series_id"] for r in rows) == sorted(second_night)
    assert not any(r["reused"] for r in rows)
    assert run.manifest["reuse"]["warm_starts_offered"] == sum(
        r["status"] == "ok" for r in cold.rows() if r["series_id"] in second_night)


@pytest.mark.parametrize("how,said", [
    ("missing", "lacks 1 shard(s) its _SUCCESS.json lists (part-00000-of-00002.parquet)"),
    ("extra", "holds 1 shard(s) its _SUCCESS.json does not list "
              "(part-00000-of-00002 (1).parquet)"),
])
def test_previous_shards_must_be_those_its_manifest_lists(tmp_path, inputs, how, said):
    # A copy cut short was used as it was: its missing shard's series were
    # fitted with no word; a stray copy of a shard gave its series twice.
    night1 = gpfit(inputs[0], str(tmp_path / "night1"), *RUN_OPTIONS, "--num_shards", "2")
    assert night1.code == 0, night1.stderr
    first = tmp_path / "night1" / "params" / "part-00000-of-00002.parquet"
    if how == "missing":
        first.unlink()
    else:
        shutil.copy(first, first.with_name("part-00000-of-00002 (1).parquet"))
    run = gpfit(inputs[1], str(tmp_path / "out"), *RUN_OPTIONS,
                "--previous_output", night1.output)
    assert run.code == 2 and said in run.stderr, run.stderr
    assert "--previous_output_optional" in run.stderr


def test_a_previous_output_copied_to_a_folder_named_like_a_glob_is_read(tmp_path, inputs,
                                                                        cold):
    # `night [1]` as a pattern matches `night 1`: none of its shards were
    # found ("holds no parameter shards").
    previous = tmp_path / "night [1]"
    shutil.copytree(cold.output, previous)
    run = gpfit(inputs[0], str(tmp_path / "out"), *RUN_OPTIONS,
                "--previous_output", str(previous))
    assert run.code == 0, run.stderr
    assert all(r["reused"] for r in run.rows()) and len(run.rows()) == len(cold.rows())


@pytest.mark.parametrize("given,said", [
    ("params", "; it lies in the gpfit output folder {cold}; give that folder"),
    ("params/part-00000-of-00001.parquet",
     "; it lies in the gpfit output folder {cold}; give that folder"),
    ("_SUCCESS.json", "; it lies in the gpfit output folder {cold}; give that folder"),
    (None, "; it takes one folder, not a glob; give last night's folder"),
])
def test_a_path_in_or_around_the_previous_output_says_which_folder_to_give(tmp_path, inputs,
                                                                           cold, given, said):
    # The params table folder, a shard, the manifest or a glob of nights was
    # refused as having "no readable _SUCCESS.json" (or "Not a directory").
    previous = (os.path.join(cold.output, given) if given
                else os.path.join(os.path.dirname(cold.output), "*"))  # None: a glob of nights
    run = gpfit(inputs[1], str(tmp_path / "out"), *RUN_OPTIONS, "--previous_output", previous)
    assert run.code == 2 and said.format(cold=cold.output) in run.stderr, run.stderr


def as_written_by(cold_output: str, folder, version) -> str:
    """A copy of a finished run's folder as gpfit `version` wrote it: its
    manifest's gpfit_version that one (left out for None, as before 0.16.1),
    and its rows' fingerprints under that version's key (the version is
    hashed first: fingerprint.options_key), so none equals tonight's."""
    shutil.copytree(cold_output, folder)
    found = json.loads((folder / "_SUCCESS.json").read_text())
    found.pop("gpfit_version")
    if version is not None:
        found["gpfit_version"] = version
    (folder / "_SUCCESS.json").write_text(json.dumps(found))
    for shard in folder.glob("params/part-*.parquet"):
        table = pq.read_table(shard)
        older = [hashlib.sha256(f"{version}:{fp}".encode()).hexdigest()
                 for fp in table.column("fingerprint").to_pylist()]
        index = table.schema.get_field_index("fingerprint")
        pq.write_table(table.set_column(index, table.schema.field(index), pa.array(older)),
                       shard)
    return str(folder)


@pytest.mark.parametrize("version,said", [
    ("0.16.1", "was written by gpfit 0.16.1, and this is gpfit {now}"),
    (None, "was written by a gpfit release older than 0.16.1, and this is gpfit {now}"),
])
def test_a_previous_output_of_another_version_says_why_every_series_is_fitted(
        tmp_path, inputs, cold, version, said, caplog):
    # The night after an upgrade reused nothing, and the log said only
    # "0 reused, 9 warm-started, 10 fitted": a 5 % night cost a full run
    # without a word of why. The launcher now says it, once.
    from pipeline.io.fingerprint import VERSION

    previous = as_written_by(cold.output, tmp_path / "previous", version)
    with caplog.at_level("INFO", logger="gpfit"):
        run = gpfit(inputs[0], str(tmp_path / "out"), *RUN_OPTIONS, "--previous_output",
                    previous)
    assert run.code == 0, run.stderr
    lines = [r.getMessage() for r in caplog.records if "fitted again" in r.getMessage()]
    assert lines == [f"gpfit: --previous_output {previous} {said.format(now=VERSION)}: a "
                     "series' fingerprint holds the gpfit version, so tonight every series is "
                     "fitted again once (warm-started from its previous parameters where they "
                     "are ok and of this kernel); the next night reuses them"], lines
    # Which series are reused is as before: none, every ok one warm-started.
    ok = sum(r["status"] == "ok" for r in cold.rows())
    assert run.manifest["reuse"]["reused"] == 0
    assert run.manifest["reuse"]["warm_starts_offered"] == ok
    assert run.manifest["reuse"]["fitted"] == len(cold.rows())


def test_a_previous_output_of_this_version_says_nothing_of_versions(tmp_path, inputs, cold,
                                                                    caplog):
    with caplog.at_level("INFO", logger="gpfit"):
        run = gpfit(inputs[0], str(tmp_path / "out"), *RUN_OPTIONS, "--previous_output",
                    cold.output)
    assert run.code == 0, run.stderr
    assert any("file(s)" in r.getMessage() for r in caplog.records)  # info lines were caught
    assert not [r for r in caplog.records if "fitted again" in r.getMessage()]
    assert run.manifest["reuse"]["reused"] == len(cold.rows())


@pytest.mark.parametrize("tonight,changed,warm", [
    (("--transform", "log1p"), "--transform none -> log1p", True),
    (("--search", "quick"), "--search thorough -> quick", True),
    (("--kernel", "matern52", "--restarts", "1"),
     "--kernel rbf -> matern52, --restarts default -> 1", False),
])
def test_a_previous_output_of_other_fit_options_says_which_changed(tmp_path, inputs, cold,
                                                                   tonight, changed, warm,
                                                                   caplog):
    # A night whose fit options changed reused nothing, and the log said only
    # "0 reused, 3 warm-started, 7 fitted": the options are hashed into every
    # fingerprint (fingerprint.options_key). The launcher now says which
    # changed, as it says a version's change, in their flags' spelling.
    with caplog.at_level("INFO", logger="gpfit"):
        run = gpfit(inputs[0], str(tmp_path / "out"), *RUN_OPTIONS, *tonight,
                    "--previous_output", cold.output)
    assert run.code == 0, run.stderr
    lines = [r.getMessage() for r in caplog.records if "fitted again" in r.getMessage()]
    assert lines == [f"gpfit: --previous_output {cold.output} was fitted with other fit "
                     f"options ({changed}): a series' fingerprint holds the fit options, so "
                     "tonight every series is fitted again once (warm-started from its "
                     "previous parameters where they are ok and of this kernel); the next "
                     "night with these options reuses them"], lines
    # Every series is fitted; each ok one of this kernel warm-started
    # (log1p skips the series with a value at or below -1 before).
    ok = {r["series_id"] for r in cold.rows() if r["status"] == "ok"}
    fitted = {r["series_id"] for r in run.rows() if r["status"] != "skipped"}
    assert run.manifest["reuse"]["reused"] == 0
    assert run.manifest["reuse"]["warm_starts_offered"] == (len(ok & fitted) if warm else 0)


def test_options_that_change_no_fit_say_nothing_of_options(tmp_path, inputs, cold, caplog):
    # Only the options in the fingerprint count: how the work is cut, the
    # predictions asked for and the log's level change no row's fit.
    with caplog.at_level("INFO", logger="gpfit"):
        run = gpfit(inputs[0], str(tmp_path / "out"), "--kernel", "rbf", "--batch_size", "2",
                    "--max_rows", "5000", "--num_shards", "2", "--predict_steps", "2",
                    "--search", "thorough", "--previous_output", cold.output)
    assert run.code == 0, run.stderr
    assert any("file(s)" in r.getMessage() for r in caplog.records)  # info lines were caught
    assert not [r for r in caplog.records if "fitted again" in r.getMessage()]
    assert run.manifest["reuse"]["reused"] == len(cold.rows())


@pytest.mark.parametrize("then,tonight,changed", [
    # --max_rows is in no fingerprint; put alone into the previous options
    # it fell below matern52's default --max_points and made no config,
    # and was named as a fit option changed.
    (("--kernel", "matern52", "--max_rows", "2000000"), ("--kernel", "rbf", "--max_rows", "5000"),
     [("kernel", "matern52", "rbf")]),
    (("--max_points", "50000", "--max_rows", "100000"), ("--max_points", "8000", "--max_rows",
                                                         "10000"),
     [("max_points", 50000, 8000)]),
    # --candidates beside rbf makes no config either way, and counts.
    (("--kernel", "rbf"), ("--kernel", "auto", "--candidates", "rbf,matern52"),
     [("kernel", "rbf", "auto"), ("candidates", None, "rbf,matern52")]),
])
def test_only_options_in_the_fingerprint_are_named_as_changed(then, tonight, changed):
    from apache_beam.options.pipeline_options import PipelineOptions

    from pipeline.builder import changed_fit_options
    from pipeline.options import GPFitOptions, recorded

    def given(flags):
        return PipelineOptions(["--input", "in", "--output", "out", *flags])

    manifest = json.loads(json.dumps(recorded(given(then))))  # as the manifest holds them
    assert changed_fit_options(manifest, given(tonight).view_as(GPFitOptions)) == changed

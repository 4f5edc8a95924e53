"""WriteManifest: the manifest is written by the job itself, last, whoever launched it.

Here the pipeline is built with pipeline.builder and run on the local
FnApiRunner directly, without the gpfit command: nothing outside the job
writes _SUCCESS.json or _FAILED.json.
"""
from __future__ import annotations

import datetime
import json
import os
import re
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline import builder, manifest_step, metrics
from pipeline.io import inputs, lock, manifest, outputs
from pipeline.options import parse_options
from gpfit_runs import files_in, shard_names
from pipeline_data import make_series, write_long


def build_and_run(input_: str, output: str, *extra: str, started_at: float) -> None:
    options = parse_options(["--input", input_, "--output", output, "--batch_size", "2",
                             *extra])
    built = builder.build_from_options(options, started_at=started_at)
    assert outputs.check_output(output, built.spec.files) == []  # a new folder: nothing to clear
    # Locked as by a launcher that does not wait (a Flex Template): only the
    # job can release the folder.
    lock.acquire(output, built.run_id, False, local=False)
    built.pipeline.run().wait_until_finish()


def read_json(path) -> dict:
    with open(path) as f:
        return json.load(f)


def readme_manifest_keys() -> set[str]:
    """The names README's "_SUCCESS.json records the run" paragraph gives, in
    backticks (a key named in words only, or not at all, is not there)."""
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    start = readme.index("`_SUCCESS.json` records the run:")
    paragraph = readme[start:readme.index("\n\n", start)]
    return set(re.findall(r"`([a-z_0-9]+)`", paragraph))


@pytest.fixture(scope="module")
def small_series():
    return make_series(seed=5, n_series=3)  # 3 fittable series and "short"


def test_the_job_writes_success_json_with_the_counts(tmp_path, small_series):
    started_at = time.time() - 1.0
    output = str(tmp_path / "out")
    build_and_run(write_long(str(tmp_path / "in"), small_series, null_id_rows=2), output,
                  "--kernel", "matern32", started_at=started_at)
    shards = shard_names(output)
    assert shards and files_in(output) == sorted(shards + ["_SUCCESS.json"])
    found = read_json(os.path.join(output, "_SUCCESS.json"))
    assert found["status"] == "succeeded"
    assert found["counts"] == {"series_read": 4, "ok": 3, "skipped": 1, "failed": 0,
                               "null_ids": 2}
    assert found["kernel"] == "matern32" and found["time_units"] == "as given"
    assert found["input"]["files"] == 2 and found["input"]["layout"] == "long"
    assert found["output_files"] == shards
    assert found["options"]["kernel"] == "matern32" and found["options"]["batch_size"] == 2
    assert found["fitters_built"] == 1
    assert found["fit_ms_per_series"]["count"] == 4  # "short" reaches the fitter too
    assert set(found) <= readme_manifest_keys(), set(found) - readme_manifest_keys()
    assert found["tracing_count_max"] == 1  # one fitter, traced once for every batch
    assert found["started_at"] == datetime.datetime.fromtimestamp(
        started_at, datetime.timezone.utc).isoformat(timespec="seconds")
    assert 1.0 <= found["wall_time_s"] < 600
    # Written last: after every shard.
    mtime = lambda name: os.stat(os.path.join(output, name)).st_mtime_ns  # noqa: E731
    assert all(mtime("_SUCCESS.json") >= mtime(shard) for shard in shards)


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning",
                            "ignore:invalid value encountered:RuntimeWarning")
def test_the_job_writes_failed_json_when_too_many_series_fail(tmp_path, small_series):
    # Times spanning +-1e308 overflow float64 when standardised: gpcore
    # reports the series as failed (see test_too_many_failures_exit_1).
    t0, y0 = small_series["s00"]
    table = pa.table({
        "series_id": ["extreme"] * 6 + ["s00"] * len(t0),
        "t": np.concatenate([[-1e308, -5e307, 0.0, 5e307, 1e308, 2e307], t0]),
        "y": np.concatenate([[1.0, 2, 3, 1, 2, 5], y0]),
    })
    pq.write_table(table, tmp_path / "in.parquet")
    output = str(tmp_path / "out")
    build_and_run(str(tmp_path / "in.parquet"), output, "--max_failure_fraction", "0.25",
                  started_at=time.time())
    assert not os.path.exists(os.path.join(output, "_SUCCESS.json"))
    found = read_json(os.path.join(output, "_FAILED.json"))
    assert found["status"] == "failed"
    assert found["counts"] == {"series_read": 2, "ok": 1, "skipped": 0, "failed": 1,
                               "null_ids": 0}
    assert found["failed_fraction"] == 0.5 and found["max_failure_fraction"] == 0.25
    assert manifest.read(output) == ("_FAILED.json", found)


def test_calls_that_compiled_are_left_out_of_the_estimates_ratio():
    """A process's first call traces (or loads and first runs) the fit
    function: seconds no estimate holds. A 10-series run recorded 284x (3.7 s
    against 0.013 s) from that alone; its ratio is now over the other calls,
    and null when every call compiled."""
    combine = manifest_step.SummariseFits()
    first = metrics.FitStats(10, 370, 1, "a", 3.7, 0.013, (), compiled=True)
    alone = combine.add_input(combine.create_accumulator(), first)
    assert combine.extract_output(alone)["fit_call_seconds"] == {
        "count": 1, "median": 3.7, "max": 3.7, "max_over_estimate": None}
    later = combine.add_input(alone, metrics.FitStats(10, 3, 1, "a", 0.03, 0.013, ()))
    assert combine.extract_output(later)["fit_call_seconds"]["max_over_estimate"] == round(
        0.03 / 0.013, 3)


def test_fit_stats_combine_into_the_manifests_figures():
    combine = manifest_step.SummariseFits()
    rbf, both = (("rbf", 4, 20, 192),), (("rbf", 2, 9, 96), ("rbf+periodic", 2, 60, 500))
    parts = [[metrics.FitStats(4, 10, 1, "a", 0.04, 0.02, rbf),
              metrics.FitStats(2, 40, 1, "a", 0.08, 0.04, both)],
             [metrics.FitStats(3, 20, 2, "b", 12.5, 5.0, (("rbf+periodic", 3, 90, 750),))], []]
    accumulators = []
    for part in parts:
        acc = combine.create_accumulator()
        for stats in part:
            acc = combine.add_input(acc, stats)
        accumulators.append(acc)
    found = combine.extract_output(combine.merge_accumulators(accumulators))
    assert found == {"fitters_built": 2, "tracing_count_max": 2, "fit_ms_per_series": {
        "count": 9, "sum": 4 * 10 + 2 * 40 + 3 * 20, "min": 10, "max": 40,
        "mean": (4 * 10 + 2 * 40 + 3 * 20) / 9},
        # The median of the calls' wall seconds, to within 2% (a histogram);
        # the largest wall / estimate: 12.5 / 5.0.
        "fit_call_seconds": {"count": 3, "median": pytest.approx(0.08, rel=0.02), "max": 12.5,
                             "max_over_estimate": 2.5},
        "work_per_kernel": {
            "rbf": {"series": 6, "newton_evaluations": 29, "grid_evaluations": 288,
                    "newton_evaluations_per_series": round(29 / 6, 2)},
            "rbf+periodic": {"series": 5, "newton_evaluations": 150, "grid_evaluations": 1250,
                             "newton_evaluations_per_series": 30.0}}}
    nothing = combine.extract_output(combine.create_accumulator())
    assert nothing == {"fitters_built": 0, "fit_ms_per_series": None, "fit_call_seconds": None,
                       "tracing_count_max": None, "work_per_kernel": {}}


def test_status_counts_and_the_failure_policy():
    count = manifest_step.CountStatuses()
    acc = count.create_accumulator()
    for status in ["ok", "ok", "skipped", "failed"]:
        acc = count.add_input(acc, {"status": status})
    counts = count.extract_output(count.merge_accumulators([acc, count.create_accumulator()]))
    assert counts == {"ok": 2, "skipped": 1, "failed": 1}
    summarise = manifest_step.SummariseFits()
    fits = summarise.extract_output(summarise.create_accumulator())
    for limit, status in ((0.25, "succeeded"), (0.2, "failed")):
        record = manifest.RunRecord("out", "rbf", limit, "days", {}, {}, 0.0)
        found = manifest.compose(record, counts, 5, fits, ["params/part-00000-of-00001.parquet"],
                                 finished_at=12.5)
        assert found["status"] == status and found["failed_fraction"] == 0.25
        assert found["counts"] == {"series_read": 4, "ok": 2, "skipped": 1, "failed": 1,
                                   "null_ids": 5}
        assert (found["started_at"], found["wall_time_s"]) == ("1970-01-01T00:00:00+00:00", 12.5)
    # Nothing read: nothing failed, the run succeeded.
    empty = manifest.compose(manifest.RunRecord("out", "rbf", 0.0, "days", {}, {}, 0.0),
                             count.create_accumulator(), 0, fits, [], finished_at=1.0)
    assert empty["status"] == "succeeded" and empty["counts"]["series_read"] == 0


def test_one_combine_gives_each_summary_of_its_own_input_however_it_is_split():
    """Summaries: each part sees only its input's values, and merging the
    accumulators of any split of the elements gives what one pass gives."""
    summaries = manifest_step.Summaries({
        "status_counts": ("rows", manifest_step.CountStatuses()),
        "reasons": ("no_step", manifest_step.CountEach()),
        "also_reasons": ("no_step", manifest_step.CountEach())})
    elements = ([("rows", {"status": s}) for s in ("ok", "failed", "ok")]
                + [("no_step", r) for r in ("one point", "one point", "irregular")]
                + [("other", 7)])  # an input no part reads
    whole = summaries.create_accumulator()
    for element in elements:
        whole = summaries.add_input(whole, element)
    halves = [summaries.create_accumulator(), summaries.create_accumulator()]
    for k, element in enumerate(elements):
        halves[k % 2] = summaries.add_input(halves[k % 2], element)
    expected = {"status_counts": {"ok": 2, "skipped": 0, "failed": 1},
                "reasons": {"one point": 2, "irregular": 1},
                "also_reasons": {"one point": 2, "irregular": 1}}
    assert summaries.extract_output(whole) == expected
    assert summaries.extract_output(summaries.merge_accumulators(halves)) == expected
    assert summaries.extract_output(summaries.create_accumulator()) == {
        "status_counts": {"ok": 0, "skipped": 0, "failed": 0}, "reasons": {}, "also_reasons": {}}


def test_a_job_that_ends_without_a_manifest_exits_3(tmp_path, monkeypatch, capsys):
    """gpfit decides from the manifest the job wrote; no manifest, no success."""
    import apache_beam as beam

    from pipeline import cli
    from pipeline.io.inputs import Columns
    from pipeline.options import GPFitOptions
    from pipeline.runtime import local_runner

    def build_nothing(options, check_paths=True, started_at=None, make_folders=True):
        pipeline = beam.Pipeline(runner=local_runner(options), options=options)
        _ = pipeline | beam.Create([1])  # a job that writes no manifest
        return builder.Built(pipeline, options.view_as(GPFitOptions),
                             inputs.uninspected("in", Columns()))

    monkeypatch.setattr(builder, "build_from_options", build_nothing)
    assert cli.run(["--input", "in", "--output", str(tmp_path / "out")]) == 3
    assert capsys.readouterr().err.strip().endswith(
        f"wrote neither _SUCCESS.json nor _FAILED.json in {tmp_path / 'out'}")
    # The job wrote no manifest, so it released no lock: the command did.
    assert not (tmp_path / "out" / "_RUNNING.json").exists()


def test_unreadable_files_are_all_counted_and_the_first_by_path_named():
    """Past MAX_NAMED unreadable files the manifest names the first MAX_NAMED
    by path, however the files were split, and counts every one."""
    combine = manifest_step.SummariseInput()
    paths = [f"in/part-{i:04d}.parquet" for i in range(combine.MAX_NAMED + 5)]
    halves = [combine.create_accumulator(), combine.create_accumulator()]
    for k, path in enumerate(reversed(paths)):
        halves[k % 2] = combine.add_input(halves[k % 2], ("unreadable", (path, "not Parquet")))
    halves[0] = combine.add_input(halves[0], ("file", (1, 40)))
    found = combine.extract_output(combine.merge_accumulators(halves))
    assert (found["files"], found["rows"], found["unreadable"]["count"]) == (1, 40, len(paths))
    assert [f["path"] for f in found["unreadable"]["files"]] == paths[:combine.MAX_NAMED]


def test_the_median_of_one_fit_call_is_its_seconds():
    """The histogram's median is a bin's centre, within 2 %: a run of one
    fit call said count 1, median 17.84, max 17.914. The median lies
    between the shortest and the longest call, so with one call it is it."""
    combine = manifest_step.SummariseFits()
    one = combine.add_input(combine.create_accumulator(),
                            metrics.FitStats(5000, 4, 1, "a", 17.914, 4.1, (("rbf", 5000, 1, 1),)))
    assert combine.extract_output(one)["fit_call_seconds"] == {
        "count": 1, "median": 17.914, "max": 17.914, "max_over_estimate": round(17.914 / 4.1, 3)}
    two = combine.add_input(one, metrics.FitStats(10, 4, 1, "a", 17.92, 4.1, ()))
    calls = combine.extract_output(two)["fit_call_seconds"]
    assert 17.914 <= calls["median"] <= calls["max"] == 17.92


def test_a_retried_manifest_step_writes_the_same_manifest_and_frees_only_its_lock(tmp_path):
    """Dataflow retries a failed bundle, the manifest step's too, after its
    side effects outside Beam's sinks: the manifest written, the lock
    released. Done again for the same summary, the step writes the same
    manifest (its counts, its files; only the end time may move) and leaves a
    lock another run has taken meanwhile alone."""
    from pipeline.io import lock

    output = str(tmp_path / "out")
    os.makedirs(os.path.join(output, "params"))
    shard = os.path.join(output, "params", "part-00000-of-00001.parquet")
    pq.write_table(pa.table({"series_id": ["a"]}), shard)
    run_id = lock.new_run_id()
    lock.acquire(output, run_id, break_lock=False, local=True)
    record = manifest.run_record(inputs.uninspected(str(tmp_path / "in/"), inputs.Columns()),
                                 output, "rbf", 1.0, {}, time.time(), run_id)
    combine = manifest_step._summaries()
    acc = combine.add_input(combine.create_accumulator(), ("rows", {
        "status": "ok", "reused": False, "warm_started": False}))
    summary = combine.extract_output(acc)
    step = manifest_step._WriteManifestFn(record)

    first = list(step.process(summary, written=[shard], predictions_written=[]))
    written = manifest.read(output)
    assert lock.read(output) is None  # released by the run that held it
    other = lock.new_run_id()
    lock.acquire(output, other, break_lock=False, local=True)  # the next run, meanwhile
    again = list(step.process(summary, written=[shard], predictions_written=[]))

    assert first == again == [os.path.join(output, "_SUCCESS.json")]
    name, found = manifest.read(output)
    assert name == written[0] == "_SUCCESS.json"
    when = ("finished_at", "wall_time_s")
    assert {k: v for k, v in found.items() if k not in when} == {
        k: v for k, v in written[1].items() if k not in when}
    assert found["counts"]["ok"] == 1 and found["output_files"] == [
        "params/part-00000-of-00001.parquet"]
    assert lock.read(output)["run_id"] == other  # not the retried step's to free

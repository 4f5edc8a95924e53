"""gpfit end to end on the local runner, over real Parquet files.

One run per input layout / worker set-up, shared by several assertions
(module-scoped fixtures): the series are tiny, but every run pays for
starting Beam and tracing a fitter.
"""
from __future__ import annotations

import os
import shutil
import socket
import sys
import threading

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.runners.portability import prism_runner

from pipeline.io.fingerprint import VERSION
from pipeline.io.schema import OUTPUT_COLUMNS, OUTPUT_SCHEMA
from gpfit_runs import files_in
from pipeline_data import RUN_OPTIONS, gpfit, make_series, write_long, write_nested_dates

FLOAT_COLUMNS = ("mean", "amplitude", "length_scale", "noise_variance", "nll")


@pytest.fixture(scope="module")
def series():
    return make_series()


@pytest.fixture(scope="module", autouse=True)
def no_prism():
    """Local runs must never reach the Prism runner (it downloads a binary)."""
    def refuse(*args, **kwargs):
        raise AssertionError("gpfit started the Prism runner")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(prism_runner.PrismRunner, "__init__", refuse)
        yield


_LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0", "", None}
_network_attempts: list[str] = []
_watching: list[bool] = []


def _watch_sockets(event: str, args: tuple) -> None:
    """Audit hook: records socket use towards any host but this one."""
    if not _watching or not event.startswith("socket."):
        return
    if event == "socket.connect":
        sock, address = args
        if getattr(sock, "family", None) == socket.AF_UNIX:
            return
        host = address[0] if isinstance(address, tuple) else address
    elif event in ("socket.getaddrinfo", "socket.gethostbyname"):
        host = args[0]
    else:
        return
    if isinstance(host, bytes):
        host = host.decode()
    if host not in _LOCAL_HOSTS:
        _network_attempts.append(f"{event} {host}")


@pytest.fixture(scope="module")
def network_watch():
    """Records (in this process) any attempt to reach another host."""
    if not getattr(sys, "_gpfit_socket_watch", False):
        sys.addaudithook(_watch_sockets)  # hooks cannot be removed; idle when not watching
        sys._gpfit_socket_watch = True
    _watching.append(True)
    yield _network_attempts
    _watching.pop()


@pytest.fixture(scope="module")
def long_input(tmp_path_factory, series):
    return write_long(str(tmp_path_factory.mktemp("long")), series)


@pytest.fixture(scope="module")
def long_run(tmp_path_factory, long_input, network_watch):
    """Long layout, float t, one worker (the default), watched for network use."""
    return gpfit(long_input, str(tmp_path_factory.mktemp("out") / "long"), *RUN_OPTIONS)


@pytest.fixture(scope="module")
def nested_run(tmp_path_factory, series):
    """Nested layout, t as dates."""
    path = write_nested_dates(str(tmp_path_factory.mktemp("nested") / "series.parquet"), series)
    return gpfit(path, str(tmp_path_factory.mktemp("out") / "nested"), *RUN_OPTIONS)


@pytest.fixture(scope="module")
def timestamp_threads_run(tmp_path_factory, series):
    """Long layout, t as UTC timestamps in ms; two worker threads."""
    folder = write_long(str(tmp_path_factory.mktemp("ts")), series,
                        time_type=pa.timestamp("ms", tz="UTC"))
    return gpfit(folder, str(tmp_path_factory.mktemp("out") / "ts"), *RUN_OPTIONS,
                 "--direct_num_workers", "2", "--direct_running_mode", "multi_threading")


@pytest.fixture(scope="module")
def two_process_run(tmp_path_factory, long_input, long_run):
    """The long input again, on two worker processes, into a folder that
    holds a previous run's files plus a stale shard and temp folder."""
    output = str(tmp_path_factory.mktemp("out") / "two")
    shutil.copytree(long_run.output, output)
    shutil.copy(os.path.join(output, long_run.shards()[0]),
                os.path.join(output, "params", "part-00004-of-00007.parquet"))
    temporary = os.path.join(output, "beam-temp-params-0123456789abcdef0123456789abcdef")
    os.makedirs(temporary)
    with open(os.path.join(temporary, "01234567-89ab-4cde-8f01-23456789abcd.params.parquet"),
              "w") as f:
        f.write("partial")
    return gpfit(long_input, output, *RUN_OPTIONS,
                 "--direct_num_workers", "2", "--direct_running_mode", "multi_processing")


def assert_same_fits(rows_a: list[dict], rows_b: list[dict]) -> None:
    """Same series, statuses and point counts; parameters equal to within what
    different batch companions (padding, summation order) can change."""
    assert [r["series_id"] for r in rows_a] == [r["series_id"] for r in rows_b]
    for a, b in zip(rows_a, rows_b):
        assert (a["status"], a["n_points"], a["error"]) == (b["status"], b["n_points"], b["error"])
        for name in FLOAT_COLUMNS:
            if a[name] is None:
                assert b[name] is None
            else:
                np.testing.assert_allclose(b[name], a[name], rtol=1e-6, atol=1e-9,
                                           err_msg=f"{a['series_id']}.{name}")


def test_long_run_succeeds(long_run):
    assert long_run.code == 0, long_run.stderr
    assert "23 series: 22 ok, 1 skipped, 0 failed; 3 rows with a null id" in long_run.stdout


def test_local_run_uses_no_network(long_run, network_watch):
    assert network_watch == []


# The columns docs/design.md ("Contracts") promises, in order: readers of
# earlier releases' files depend on them.
CONTRACT = ("series_id", "status", "error", "kernel", "n_points", "mean", "amplitude",
            "length_scale", "period", "noise_variance", "components", "nll", "bic",
            "bic_margin", "converged", "stop_reason", "at_bound", "iterations", "warm_started",
            "reused", "fingerprint", "holdout_points", "holdout_mase", "holdout_coverage_95",
            "holdout_scale")


def test_output_has_the_explicit_schema(long_run):
    assert OUTPUT_COLUMNS == CONTRACT and OUTPUT_SCHEMA.names == list(CONTRACT)
    for shard in long_run.shards():
        schema = pq.read_schema(os.path.join(long_run.output, shard))
        assert schema.remove_metadata().equals(OUTPUT_SCHEMA.remove_metadata())


def test_output_is_compressed_and_fit_calls_are_timed(long_run):
    for shard in long_run.shards():
        metadata = pq.ParquetFile(os.path.join(long_run.output, shard)).metadata
        assert {metadata.row_group(0).column(i).compression
                for i in range(metadata.num_columns)} == {"ZSTD"}
    calls = long_run.manifest["fit_call_seconds"]
    assert set(calls) == {"count", "median", "max", "max_over_estimate"}
    assert calls["count"] >= 1 and 0 < calls["median"] <= calls["max"]
    # One worker process: its first call compiles the fit function, the
    # rest are set against their estimates (docs/design.md, "Cost per kernel").
    assert (calls["max_over_estimate"] is None) == (calls["count"] == 1)
    assert calls["max_over_estimate"] is None or calls["max_over_estimate"] > 0
    assert long_run.manifest["unreadable_files"] == {"count": 0, "files": []}


def test_work_per_kernel_counts_the_series_fitted(long_run):
    """A skipped series reaches no fit: counted in work_per_kernel's
    series, it diluted newton_evaluations_per_series (9.95 for a run of
    16.25 a fitted series, 194 of 500 series skipped)."""
    counts = long_run.manifest["counts"]
    assert counts["skipped"] >= 1
    (kernel, work), = long_run.manifest["work_per_kernel"].items()
    assert work["series"] == counts["ok"] + counts["failed"]
    assert work["newton_evaluations_per_series"] == round(
        work["newton_evaluations"] / work["series"], 2)


def test_num_shards_sets_the_output_files(tmp_path):
    run = gpfit(write_long(str(tmp_path / "in"), make_series(n_series=4)),
                str(tmp_path / "out"), *RUN_OPTIONS, "--num_shards", "3")
    assert run.code == 0, run.stderr
    assert run.shards() == [f"params/part-0000{i}-of-00003.parquet" for i in range(3)]
    assert len(run.rows()) == 5


def test_one_row_per_series(long_run, series):
    ids = [row["series_id"] for row in long_run.rows()]
    assert ids == sorted(series)


def test_rows_say_what_happened(long_run, series):
    rows = {row["series_id"]: row for row in long_run.rows()}
    short = rows["short"]
    assert short["status"] == "skipped" and "at least 3" in short["error"]
    assert short["length_scale"] is None
    # Missing values are dropped, not fitted.
    assert rows["s03"]["n_points"] == np.isfinite(series["s03"][1]).sum() == len(series["s03"][1]) - 3
    for sid, row in rows.items():
        if sid != "short":
            assert row["status"] == "ok" and row["error"] is None and row["kernel"] == "rbf"
            assert row["amplitude"] > 0 and row["length_scale"] > 0 and row["noise_variance"] > 0
            assert row["period"] is None
            # Length scales are in the units of t (days here), within the span.
            assert 0.1 < row["length_scale"] < 1000


def test_success_manifest_counts(long_run, series):
    manifest = long_run.manifest
    assert manifest["status"] == "succeeded"
    assert manifest["counts"] == {"series_read": 23, "ok": 22, "skipped": 1, "failed": 0,
                                  "null_ids": 3}
    assert manifest["kernel"] == "rbf"
    # The release whose fits these are: the one the rows' fingerprints name.
    assert manifest["gpfit_version"] == VERSION
    assert manifest["options"]["batch_size"] == 4
    rows = sum(len(t) for t, _ in series.values()) + 3  # 3 with a null id
    assert manifest["input"] == {"pattern": manifest["input"]["pattern"], "files": 2,
                                 "layout": "long", "rows": rows}
    assert manifest["output_files"] == long_run.shards()
    assert manifest["wall_time_s"] > 0
    assert files_in(long_run.output) == sorted(long_run.shards() + ["_SUCCESS.json"])


def test_success_manifest_is_written_last(long_run):
    def mtime(name):
        return os.stat(os.path.join(long_run.output, name)).st_mtime_ns
    assert all(mtime("_SUCCESS.json") >= mtime(shard) for shard in long_run.shards())


def test_one_fitter_serves_every_batch(long_run):
    manifest = long_run.manifest
    # 22 fittable series in batches of 4: several batches, one fitter.
    assert manifest["fitters_built"] == 1
    assert manifest["fit_ms_per_series"]["count"] == 23 - 1 + 1  # every series sent to the fitter
    assert manifest["tracing_count_max"] == 1  # its copies share one trace


def test_a_kept_trace_is_readied_beside_the_job_and_fits_alike(tmp_path, monkeypatch, long_input,
                                                              long_run):
    """With the fit's trace kept, the command readies it on a thread while
    the job reads (docs/design.md, "What a small night costs"); without,
    nothing is readied (the job's fitter traces); the fits are the same."""
    from gpcore import GPFitter, trace_cache

    traces = tmp_path / "traces"
    monkeypatch.setenv(trace_cache.ENV, str(traces))
    calls, warm_up = [], GPFitter.warm_up

    def kept() -> bool:
        return traces.is_dir() and any(not n.startswith(".") for n in os.listdir(traces))

    def recorded(self):  # (kept before, readied, kept after, traces); runs on the thread
        before = kept()
        readied = warm_up(self)
        calls.append((before, readied, kept(), self.tracing_count))
        return readied

    monkeypatch.setattr(GPFitter, "warm_up", recorded)
    for name in ("first", "second"):
        # A batch size of its own: a fitter no other run of this process built.
        run = gpfit(long_input, str(tmp_path / name), "--kernel", "rbf", "--batch_size", "3")
        assert run.code == 0, run.stderr
        assert "gpfit-warm-up" not in [t.name for t in threading.enumerate()]  # joined
        assert_same_fits(long_run.rows(), run.rows())
    # Readied where a trace was kept, never where none was: not on the first
    # run's empty cache (unless its job kept one meanwhile), on the second.
    # Nothing kept, nothing traced either: its fitter's count stays 0.
    assert len(calls) == 2
    assert all(before <= readied <= after and count == int(readied)
               for before, readied, after, count in calls)
    assert calls[1] == (True, True, True, 1)


def test_nested_dates_give_the_same_fits(long_run, nested_run):
    assert nested_run.code == 0, nested_run.stderr
    manifest = nested_run.manifest
    assert manifest["input"]["layout"] == "nested" and manifest["time_units"] == "days"
    assert manifest["counts"] == {"series_read": 23, "ok": 22, "skipped": 1, "failed": 0,
                                  "null_ids": 1}
    assert_same_fits(long_run.rows(), nested_run.rows())


def test_timestamps_on_two_threads_give_the_same_fits_with_one_fitter(long_run,
                                                                      timestamp_threads_run):
    run = timestamp_threads_run
    assert run.code == 0, run.stderr
    assert run.manifest["time_units"] == "days"
    assert run.manifest["fitters_built"] == 1  # two DoFn threads share the process's fitter
    assert_same_fits(long_run.rows(), run.rows())


def test_two_processes_give_the_same_fits(long_run, two_process_run):
    run = two_process_run
    assert run.code == 0, run.stderr
    assert run.manifest["counts"] == long_run.manifest["counts"]
    # One fitter per worker process that received work, never one per batch.
    assert 1 <= run.manifest["fitters_built"] <= 2
    assert_same_fits(long_run.rows(), run.rows())


def test_rerun_leaves_only_the_new_runs_files(two_process_run):
    run = two_process_run
    assert files_in(run.output) == sorted(run.manifest["output_files"] + ["_SUCCESS.json"])
    assert run.shards() == run.manifest["output_files"]
    assert len(run.rows()) == 23


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning",
                            "ignore:invalid value encountered:RuntimeWarning")
def test_too_many_failures_exit_1(tmp_path, series):
    # Times spanning +-1e308 overflow float64 when standardised: a real fit
    # failure, reported as a row.
    table = pa.table({
        "series_id": ["extreme"] * 6 + ["s00"] * len(series["s00"][0]),
        "t": np.concatenate([[-1e308, -5e307, 0.0, 5e307, 1e308, 2e307], series["s00"][0]]),
        "y": np.concatenate([[1.0, 2, 3, 1, 2, 5], series["s00"][1]]),
    })
    pq.write_table(table, tmp_path / "in.parquet")
    run = gpfit(str(tmp_path / "in.parquet"), str(tmp_path / "out"), *RUN_OPTIONS,
                "--max_failure_fraction", "0.25")
    assert run.code == 1
    assert "failed fraction 0.5 is above --max_failure_fraction 0.25" in run.stderr
    assert run.manifest is None  # no _SUCCESS.json
    assert os.path.exists(tmp_path / "out" / "_FAILED.json")
    rows = {row["series_id"]: row for row in run.rows()}
    assert rows["extreme"]["status"] == "failed" and rows["extreme"]["error"]
    assert rows["s00"]["status"] == "ok"

"""gpfit-report on a folder that a gpfit run is writing: a real gpfit run's
output, then the lock and the clearing of a second run into that folder,
before the report and while it reads. The report refuses in one line,
exit 2, naming the run; a stopped run's lock still gives the page."""
import json
import os
import sys
import time

import pytest

from gpfit_runs import gpfit_here, write_long_parquet
from pipeline.io import lock, outputs
from pipeline.report.cli import run


@pytest.fixture
def finished(tmp_path):
    """A finished gpfit run of 6 series (input, output folder)."""
    write_long_parquet(tmp_path / "in", n_series=6, n_points=30)
    first = gpfit_here(str(tmp_path / "in"), str(tmp_path / "out"), "--batch_size", "8")
    assert first.code == 0, first.stderr
    return str(tmp_path / "in"), str(tmp_path / "out")


def _a_run_starts(output: str) -> None:
    """What a second gpfit run into `output` does first: takes the lock (from
    this live process, a second after the manifest's finished_at), then
    clears the earlier run's files."""
    lock.acquire(output, "cafe00000001", False, True, now=lambda: time.time() + 2.0)
    files = [os.path.join(root, name) for root, _, names in os.walk(output) for name in names]
    outputs.clear_output(output, [f for f in files if not f.endswith(outputs.LOCK_NAME)])


@pytest.mark.parametrize("cleared", [False, True], ids=["locked", "cleared"])
def test_a_folder_a_run_is_writing_is_refused_naming_the_run(finished, tmp_path, capsys,
                                                             cleared):
    input_, output = finished
    if cleared:
        _a_run_starts(output)  # its job fits: no manifest, no shards yet
    else:  # locked, about to clear: the shards would go while read
        lock.acquire(output, "cafe00000001", False, True, now=lambda: time.time() + 2.0)
    out = tmp_path / "r.html"
    code = run(["--input", input_, "--params", output, "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith(f"gpfit-report: error: --params {output} is being written by a "
                          "gpfit run (run cafe00000001 on host"), err
    assert "_RUNNING.json" in err and "once it has finished" in err
    assert not out.exists()


def test_a_run_that_starts_while_the_report_reads_is_said_in_one_line(finished, tmp_path,
                                                                     capsys, monkeypatch):
    input_, output = finished
    from pipeline.report import build as build_module
    real_build = build_module.build

    def build_after_a_run_starts(scanned, log):
        _a_run_starts(output)  # between the scan's pass and the plots' reads
        return real_build(scanned, log)

    monkeypatch.setattr(build_module, "build", build_after_a_run_starts)
    out = tmp_path / "r.html"
    code = run(["--input", input_, "--params", output, "--out", str(out), "--random", "2"])
    err = capsys.readouterr().err.strip().splitlines()
    # Before: FileNotFoundError of a shard, a traceback, exit 1.
    assert code == 2, err
    assert err[-1].startswith(f"gpfit-report: error: --params {output} changed while the "
                              "report read it"), err
    assert "run cafe00000001" in err[-1] and "once it has finished" in err[-1]
    assert not any("Traceback" in line for line in err)
    assert not out.exists()


def test_a_stopped_runs_lock_still_gives_the_page(finished, tmp_path, capsys):
    input_, output = finished
    with open(os.path.join(output, outputs.LOCK_NAME), "w") as f:  # a Dataflow launcher's, gone
        json.dump({"run_id": "beef00000002", "host": "elsewhere", "pid": 1, "local": False,
                   "started_at": time.time() - 7200, "heartbeat_at": time.time() - 3600,
                   "stale_after_s": lock.STALE_AFTER_S}, f)
    out = tmp_path / "r.html"
    code = run(["--input", input_, "--params", output, "--out", str(out), "--random", "1"])
    assert code == 0, capsys.readouterr().err
    assert out.exists()


_MANIFEST_OPENS: list = []  # paths of manifests opened, while a test records them


def _record_manifest_opens(event, args):
    if event == "open" and _MANIFEST_OPENS and str(args[0]).endswith(outputs.MARKERS):
        _MANIFEST_OPENS.append(str(args[0]))


sys.addaudithook(_record_manifest_opens)


def test_the_manifest_is_read_once(finished, tmp_path, capsys):
    """The report read the run's manifest up to 3 times: for the writer's own
    lock (still held just after the manifest), for the input and columns
    not given, and with the shards."""
    _, output = finished
    # The run that wrote the manifest, a minute in, about to release its lock.
    lock.acquire(output, "cafe00000003", False, True, now=lambda: time.time() - 60.0)
    _MANIFEST_OPENS[:] = [None]
    try:
        code = run(["--params", output, "--out", str(tmp_path / "r.html"), "--random", "1",
                    "--worst", "0"])
        opened = _MANIFEST_OPENS[1:]
    finally:
        _MANIFEST_OPENS.clear()
    assert code == 0, capsys.readouterr().err
    assert opened == [os.path.join(output, outputs.SUCCESS_MARKER)]


def test_a_stopped_runs_folder_says_its_run_stopped(finished, tmp_path, capsys):
    """A run killed before it wrote its tables leaves its lock and nothing
    else: the report said "--input is needed: <folder> it holds no readable
    manifest" and, given --input, "pass the folder that gpfit --output
    wrote" (the folder it was given), naming neither the lock nor the run."""
    input_, _ = finished
    stopped = tmp_path / "stopped"
    stopped.mkdir()
    with open(stopped / outputs.LOCK_NAME, "w") as f:  # killed with its machine, an hour ago
        json.dump({"run_id": "beef00000004", "host": "elsewhere", "pid": 1, "local": False,
                   "started_at": time.time() - 7200, "heartbeat_at": time.time() - 3600,
                   "stale_after_s": lock.STALE_AFTER_S}, f)
    out = str(tmp_path / "r.html")
    assert run(["--params", str(stopped), "--out", out]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"gpfit-report: error: --input is needed: {stopped}: it holds no "
                          "readable manifest (_SUCCESS.json or _FAILED.json), only the lock "
                          "_RUNNING.json of a gpfit run that has not finished (run "
                          "beef00000004 on host elsewhere"), err
    assert err.endswith("resume it (fg) or wait for its job if it still runs, else run gpfit "
                        "again into that folder for a whole run's page, or give the run's "
                        "--input pattern"), err
    assert run(["--input", input_, "--params", str(stopped), "--out", out]) == 2
    err = capsys.readouterr().err.strip()
    assert f"in '{stopped}'; it holds the lock _RUNNING.json of a gpfit run that has not" in err
    assert err.endswith("else run gpfit again into that folder"), err
    assert not os.path.exists(out)

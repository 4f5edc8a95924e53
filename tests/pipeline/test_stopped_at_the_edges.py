"""A stop (SIGTERM, Ctrl-C) at the two edges of a run: after the job wrote
its manifest, and before the run cleared the folder. Real runs in this
process; the signal is sent to this process at that point of the run, as a
pod being stopped would send it. The exit code and the line must say what
the folder holds (README, "Exit codes": after any code but 0 no
_SUCCESS.json; after a stop before any work the folder as it was)."""
from __future__ import annotations

import json
import os
import signal

import pytest

from gpfit_runs import files_in, gpfit_here, write_long_parquet
from pipeline import cli


@pytest.fixture
def input_(tmp_path):
    write_long_parquet(tmp_path / "in", n_series=5, n_points=25)
    return str(tmp_path / "in")


def _stopped_at(monkeypatch, module, name: str, signum: int) -> None:
    """module.name's first call sends signum to this process, then does its
    work (one signal: a second one while unwinding ends the process)."""
    real, sent = getattr(module, name), []

    def signalled(*args, **kwargs):
        if not sent:
            sent.append(signum)
            os.kill(os.getpid(), signum)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, signalled)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_after_the_manifest_is_written_reports_the_finished_run(
        input_, tmp_path, monkeypatch, signum):
    output = str(tmp_path / "out")
    _stopped_at(monkeypatch, cli.manifest, "read", signum)  # the launcher reads it next
    run = gpfit_here(input_, output, "--batch_size", "8")
    # Before: exit 128 + N and "no _SUCCESS.json was written ... run again",
    # beside a complete output and its _SUCCESS.json.
    assert run.code == 0, run.stderr
    assert "no _SUCCESS.json was written" not in run.stderr
    name = signal.Signals(signum).name
    assert f"gpfit: warning: {name} came after the job had written _SUCCESS.json" in run.stderr
    assert run.stdout.startswith("gpfit: 5 series: 5 ok"), run.stdout
    assert sorted(row["series_id"] for row in run.rows()) == [f"s{i}" for i in range(5)]
    assert files_in(output) == ["_SUCCESS.json", "params/part-00000-of-00001.parquet"]


def test_a_stop_before_the_folder_is_cleared_leaves_the_earlier_run(input_, tmp_path,
                                                                    monkeypatch):
    output = str(tmp_path / "out")
    first = gpfit_here(input_, output, "--batch_size", "8")
    assert first.code == 0, first.stderr
    with open(os.path.join(output, "_SUCCESS.json")) as f:
        before = json.load(f)
    _stopped_at(monkeypatch, cli.portable, "check_workers_start", signal.SIGTERM)
    run = gpfit_here(input_, output, "--batch_size", "8")
    assert run.code == 143, run.stderr
    line = run.stderr.strip().splitlines()[-1]
    # Before: "before the run finished; no _SUCCESS.json was written", beside
    # the earlier run's untouched _SUCCESS.json.
    assert line == (f"gpfit: error: stopped by SIGTERM before any work; the output folder "
                    f"{output} was left as it was"), line
    assert files_in(output) == ["_SUCCESS.json", "params/part-00000-of-00001.parquet"]
    with open(os.path.join(output, "_SUCCESS.json")) as f:
        assert json.load(f) == before

"""gpfit started with stdout or stderr closed (`2>&-`, a daemon's), or
writing into a pipe whose reader has gone (`gpfit ... 2>&1 | head -1`): the
exit code is the run's (README, "Exit codes"), its output as a run with
both open writes it, and no lock is left."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gpfit_runs import files_in, read_rows, write_long_parquet

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _gpfit(tmp_path, *args: str, stdout, stderr, close: tuple[int, ...] = ()) -> int:
    """`python -m pipeline *args` with these stdout and stderr, the
    descriptors in `close` closed as it starts; -> its exit code."""
    env = dict(os.environ, PYTHONPATH=REPO)

    def closed():
        for fd in close:
            os.close(fd)

    return subprocess.run([sys.executable, "-m", "pipeline", *args], cwd=str(tmp_path), env=env,
                          stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                          preexec_fn=closed, timeout=300, check=False).returncode


def _gone_reader():
    """The writing end of a pipe whose reader has gone: every write fails
    with EPIPE (Python ignores SIGPIPE)."""
    read, write = os.pipe()
    os.close(read)
    return write


@pytest.fixture(scope="module")
def series(tmp_path_factory) -> str:
    return str(write_long_parquet(tmp_path_factory.mktemp("in")))


@pytest.mark.parametrize("streams", ["a pipe whose reader has gone", "closed"])
def test_a_complete_run_exits_0_whatever_its_streams(tmp_path, series, streams):
    # Both were exit 1 (too many series failed) beside a _SUCCESS.json: the
    # last line's BrokenPipeError, or a None sys.stderr, raised out of gpfit.
    output = str(tmp_path / "out")
    if streams == "closed":
        code = _gpfit(tmp_path, "--input", series, "--output", output, "--kernel", "rbf",
                      stdout=None, stderr=None, close=(1, 2))
    else:
        gone = _gone_reader()
        try:
            code = _gpfit(tmp_path, "--input", series, "--output", output, "--kernel", "rbf",
                          stdout=gone, stderr=gone)
        finally:
            os.close(gone)
    assert code == 0
    assert files_in(output) == ["_SUCCESS.json", "params/part-00000-of-00001.parquet"]
    with open(os.path.join(output, "_SUCCESS.json")) as f:
        assert json.load(f)["counts"]["ok"] == 3
    assert [row["status"] for row in read_rows(output)] == ["ok"] * 3


def test_the_summary_goes_to_stdout_with_stderr_closed(tmp_path, series):
    """The descriptor a closed stderr leaves free is taken by nothing gpfit
    writes (TensorFlow's start-up lines go to descriptor 2)."""
    output = str(tmp_path / "out")
    with open(tmp_path / "stdout.txt", "w") as said:
        code = _gpfit(tmp_path, "--input", series, "--output", output, "--kernel", "rbf",
                      stdout=said, stderr=None, close=(2,))
    assert code == 0
    lines = (tmp_path / "stdout.txt").read_text().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpfit: 3 series: 3 ok"), lines
    assert [row["status"] for row in read_rows(output)] == ["ok"] * 3


def test_a_refusal_into_a_pipe_whose_reader_has_gone_exits_2(tmp_path):
    # It was exit 1: writing the refusal's line raised BrokenPipeError, and
    # so did the line of the "unexpected" error that followed.
    gone = _gone_reader()
    try:
        code = _gpfit(tmp_path, "--input", str(tmp_path / "missing"), "--output",
                      str(tmp_path / "out"), stdout=gone, stderr=gone)
    finally:
        os.close(gone)
    assert code == 2
    assert not os.path.exists(tmp_path / "out")

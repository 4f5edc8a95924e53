"""gpfit on Beam's PortableRunner: the embedded job server and an external
worker pool on loopback, the job-service and worker protocol that Flink,
Spark and Dataflow Runner v2 use (docs/design.md, "Runners and quiet
runs"). Its rows equal the DirectRunner's; a pool that cannot start workers
ends the run in bounded time with one line, and the lock is released."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

from frame_data import assert_same_rows
from pipeline_data import RUN_OPTIONS, gpfit, make_series, write_long

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_pool(port: int, path: str) -> subprocess.Popen:
    """Beam's worker pool on 127.0.0.1:port; its workers run `python` from
    `path`. Returns once it listens."""
    env = {**os.environ, "PATH": path,
           "PYTHONPATH": os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")]))}
    pool = subprocess.Popen([sys.executable, "-m", "apache_beam.runners.worker.worker_pool_main",
                             "--service_port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert pool.poll() is None, "the worker pool exited"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return pool
        except OSError:
            time.sleep(0.2)
    pool.kill()
    raise AssertionError("the worker pool did not listen")


def portable(port: int) -> tuple[str, ...]:
    return ("--runner", "PortableRunner", "--job_endpoint", "embed",
            "--environment_type", "EXTERNAL", "--environment_config", f"127.0.0.1:{port}")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_long(str(tmp_path_factory.mktemp("portable") / "in"),
                      make_series(n_series=8))


def this_python_first() -> str:
    return os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])


def test_the_portable_runner_with_an_external_pool_gives_the_direct_runners_rows(
        data, tmp_path):
    direct = gpfit(data, str(tmp_path / "direct"), *RUN_OPTIONS)
    assert direct.code == 0, direct.stderr
    port = free_port()
    pool = start_pool(port, this_python_first())
    try:
        run = gpfit(data, str(tmp_path / "portable"), *RUN_OPTIONS, *portable(port))
    finally:
        pool.kill()
        pool.wait()
    assert run.code == 0, run.stderr
    assert_same_rows(run.rows(), direct.rows())
    assert run.manifest["counts"] == direct.manifest["counts"]


# Beam's short name too: its check was skipped, the folder cleared, exit 3.
@pytest.mark.parametrize("name", ["PortableRunner", "portable"])
def test_no_pool_listening_fails_at_once_with_one_line_and_no_lock(data, tmp_path, name):
    out = tmp_path / "out"
    run = gpfit(data, str(out), *portable(free_port())[2:], "--runner", name)
    assert run.code == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpfit: error: no Beam worker pool answers "
                                                   "at --environment_config 127.0.0.1:"), lines
    assert not (out / "_RUNNING.json").exists()


def test_a_pool_whose_workers_cannot_start_fails_in_bounded_time_and_no_lock(
        data, tmp_path, monkeypatch):
    from pipeline import portable as check

    # No worker ever connects, so any bound shows it; a short one keeps the
    # test's xdist worker from idling (docs/design.md, "Build").
    monkeypatch.setattr(check, "WORKER_START_S", 5.0)
    port = free_port()
    # Its workers run a `python` without Beam: none ever connects (before,
    # gpfit waited for them until it was killed).
    bare = tmp_path / "bin"
    bare.mkdir()
    (bare / "python").write_text("#!/bin/sh\necho \"No module named 'apache_beam'\" >&2\nexit 1\n")
    (bare / "python").chmod(0o755)
    pool = start_pool(port, f"{bare}{os.pathsep}/usr/bin{os.pathsep}/bin")
    out = tmp_path / "out"
    try:
        run = gpfit(data, str(out), *portable(port))
    finally:
        pool.kill()
        pool.wait()
    assert run.code == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "started no worker that connected within 5 s" in lines[0], lines
    assert not (out / "_RUNNING.json").exists()


def test_no_job_server_listening_is_refused_before_any_work(data, tmp_path):
    """Beam's runner waited for the job server without end (over 150 s),
    the output folder cleared and left locked as a remote job's; now at
    most portable._ASK_S (10 s), and the folder is not touched. In a child
    process with a bound, as before the check it never returned."""
    out = tmp_path / "out"
    run = subprocess.run(
        [sys.executable, "-m", "pipeline", "--input", data, "--output", str(out),
         "--runner", "PortableRunner", "--job_endpoint", f"127.0.0.1:{free_port()}"],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(
            filter(None, [REPO, os.environ.get("PYTHONPATH")]))})
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "gpfit: error: no job server answers at --job_endpoint 127.0.0.1:"), lines
    assert not out.exists()

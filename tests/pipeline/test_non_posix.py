"""gpfit on a platform without POSIX's process and file calls (Windows):
the local runner's run and a stale lock's check degrade, not crash
(docs/design.md, "Runners and quiet runs", POSIX-only parts). Windows
is simulated by removing the names it lacks, before gpfit is imported."""
from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time

from gpfit_runs import command_in, read_rows, write_long_parquet

# Names of os and signal, and modules, that Windows' Python lacks and gpfit
# reached: AttributeError (or ImportError) where a user on Windows runs it.
WITHOUT_POSIX = """
import os, signal, sys
import apache_beam, pyarrow, tensorflow  # imported as on Windows, before the names go
for name in ("geteuid", "getuid", "statvfs", "pathconf", "sysconf", "O_NOFOLLOW", "O_CLOEXEC"):
    delattr(os, name)
for name in ("SIGKILL", "SIGCONT", "SIGSTOP", "pthread_kill"):
    delattr(signal, name)
sys.modules["resource"] = sys.modules["fcntl"] = None  # no such module: ImportError
from pipeline import cli
sys.exit(cli.run(sys.argv[1:]))
"""


def test_the_local_runner_runs_without_posix_calls(tmp_path):
    write_long_parquet(tmp_path / "in", n_series=2)
    done = command_in("", "-c", WITHOUT_POSIX, "--input", str(tmp_path / "in"),
                      "--output", str(tmp_path / "out"), "--kernel", "rbf",
                      "--max_points", "5000", cwd=str(tmp_path))  # asks the memory
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(r["series_id"] for r in read_rows(str(tmp_path / "out"))) == ["s0", "s1"]
    with open(tmp_path / "out" / "_SUCCESS.json") as f:
        assert json.load(f)["counts"]["ok"] == 2


def test_a_stale_lock_is_not_probed_with_os_kill_where_that_kills(monkeypatch):
    """On Windows os.kill(pid, 0) is no probe: it ends process pid
    (TerminateProcess), here the one that now holds a stale lock's pid. Off
    POSIX a lock of this host is not said to have ended: it is broken with
    --break_lock, as one of another host is."""
    from pipeline.io import lock

    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    held = {"local": True, "host": socket.gethostname(), "pid": ended.pid, "pid_start": 1}
    assert lock._ended_here(held)  # POSIX: the process is gone
    monkeypatch.setattr(sys, "platform", "win32")
    assert not lock._ended_here(held)


def test_a_worker_exit_stops_the_job_without_pthread_kill(monkeypatch):
    """The watch of the local runner's worker processes stops the job with
    SIGTERM to the main thread, whose handler says which worker ended;
    without signal.pthread_kill (Windows) it raised AttributeError in the
    watch's thread and the job went on."""
    from pipeline import runtime

    handled = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: handled.append(
        threading.current_thread() is threading.main_thread()))
    monkeypatch.setattr(runtime, "_WORKER_EXITS", [])
    monkeypatch.delattr(signal, "pthread_kill")
    try:
        watch = threading.Thread(target=runtime._stop_job, args=("worker process 7 exited",))
        watch.start()
        watch.join()
        for _ in range(200):  # the handler runs between the main thread's bytecodes
            if handled:
                break
            time.sleep(0.01)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert handled == [True]
    assert runtime._WORKER_EXITS == ["worker process 7 exited"]

"""A local worker process ends once the gpfit that started it is gone.

Beam's local worker processes (--direct_running_mode multi_processing)
outlived a SIGKILL of their launcher (the OOM killer, kill -9, a
scheduler's last resort) by some 120 s, about 230 MB each: one still
starting waits 60 s for its logging channel to the runner and then 60 s for
its control channel (Beam's log_handler and sdk_worker), and the runner
died with the launcher. A connected one ends in a few seconds, as its
channels break. So each worker watches its parent from a daemon thread and
leaves at once when that is no longer the launcher (the system re-parents
an orphan). It has nothing left to write: the job died with the launcher,
and its stderr drops every line by then (pipeline/worker_stderr.py;
docs/design.md, "Runners and quiet runs"). Imports nothing heavy: a
worker starts it before it imports Beam.
"""
from __future__ import annotations

import os
import threading
import time

WATCH_EVERY_S = 0.25
ORPHANED = 1  # the exit code; nobody reads it: the launcher is gone


def leave_with(launcher: int, every_s: float = WATCH_EVERY_S) -> None:
    """Ends this process (os._exit) once its parent is not `launcher`, the
    pid of the gpfit process that started it; checked every every_s
    seconds (os.getppid: a system call, no file)."""

    def watch() -> None:
        while os.getppid() == launcher:
            time.sleep(every_s)
        os._exit(ORPHANED)

    threading.Thread(target=watch, name="gpfit-launcher-watch", daemon=True).start()

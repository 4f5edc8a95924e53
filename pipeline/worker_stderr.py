"""A Beam SDK worker process's stderr, without the tracebacks Beam prints there.

Beam's SDK worker prints the traceback of a failed bundle to its stderr
(sdk_worker._execute) and also logs it. A local worker process
(--direct_running_mode multi_processing) shares gpfit's stderr, so a
failure printed each traceback whole whatever --log_level said. The logged
copy reaches the launcher, which cuts it to one line below debug and shows
it whole at debug (pipeline/logs.py); the printed copy is dropped here
(docs/design.md, "Runners and quiet runs"). Python's warnings (numpy's, on
a series that then fails) are logged instead of printed, for the same reason. Imports nothing heavy:
`import pipeline` runs it.
"""
from __future__ import annotations

import logging
import os
import sys
import time

_WORKER_MAIN = "apache_beam.runners.worker.sdk_worker_main"
_TRACEBACK = "Traceback (most recent call last)"
# How an error report starts (a thread's, Beam's log client's, a traceback).
_REPORTS = ("Exception in thread", "Logging client failed", _TRACEBACK)
_REPARENTED_S = 0.5


class _WithoutTracebacks:
    """A text stream that drops a write holding a whole traceback (and the
    line end print writes after it), and every write once the process that
    started this one (the launcher) is gone; everything else goes through."""

    def __init__(self, stream):
        self._stream = stream
        self._dropped = False
        self._launcher = os.getppid()

    def write(self, text: str) -> int:
        if self._launcher_gone(text):
            # Killed (a second Ctrl-C, SIGKILL): this process's channels to
            # it break, and each thread's error would follow the launcher's
            # last line with a gRPC traceback.
            return len(text)
        dropped, self._dropped = self._dropped, False
        if text.lstrip().startswith(_TRACEBACK):
            self._dropped = True
            return len(text)
        if dropped and text == "\n":
            return len(text)
        return self._stream.write(text)

    def _launcher_gone(self, text: str) -> bool:
        if os.getppid() != self._launcher:
            return True
        if not text.lstrip().startswith(_REPORTS):
            return False
        # A dying launcher's sockets close before the system re-parents this
        # process: the first report of the broken channel comes in between.
        time.sleep(_REPARENTED_S)
        return os.getppid() != self._launcher

    def __getattr__(self, name):
        return getattr(self._stream, name)


def drop_printed_tracebacks() -> None:
    """In a Beam SDK worker process only: its stderr without printed
    tracebacks, and Python's warnings logged instead of printed (the
    launcher shows them at debug, as in one process: pipeline/logs.py)."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if getattr(spec, "name", None) != _WORKER_MAIN or sys.stderr is None:
        return
    logging.captureWarnings(True)
    if not isinstance(sys.stderr, _WithoutTracebacks):
        sys.stderr = _WithoutTracebacks(sys.stderr)

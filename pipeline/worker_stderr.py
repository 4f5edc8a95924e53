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

A worker that cannot reach the runner (its channels on localhost: offline,
loopback down) has no channel to log through: Beam's worker printed each
error whole on stderr, and the traceback it exited with, some 40 lines a
process before gpfit's one line. gpfit's local workers start with
quiet_local_worker, which below --log_level debug says each in one line.
"""
from __future__ import annotations

import logging
import os
import sys
import time
import traceback

_WORKER_MAIN = "apache_beam.runners.worker.sdk_worker_main"
# Warnings every local worker process logs, and harmless here: the worker
# parses the options without gpfit's option class, and has no staging folder.
HARMLESS = ("Discarding unparseable args", "No semi_persistent_directory found")
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
    if getattr(spec, "name", None) == _WORKER_MAIN:
        _drop_printed_tracebacks()


def _drop_printed_tracebacks() -> None:
    if sys.stderr is None:
        return
    logging.captureWarnings(True)
    if not isinstance(sys.stderr, _WithoutTracebacks):
        sys.stderr = _WithoutTracebacks(sys.stderr)


def quiet_local_worker(debug: bool) -> None:
    """A local worker process of gpfit's runner (pipeline/runtime.py), before
    Beam's worker module runs (`import pipeline` then comes too early to see
    it): drop_printed_tracebacks, and below debug what the worker logs with
    no channel to the runner, and the error it exits with, one line each."""
    _drop_printed_tracebacks()
    if debug:
        return
    root = logging.getLogger()
    if not any(isinstance(h, _Unsent) for h in root.handlers):
        root.addHandler(_Unsent())
    sys.excepthook = _exited


class _Unsent(logging.Handler):
    """A worker's warnings and errors that no handler sends to the runner,
    as one line on stderr each; silent once Beam's worker has added the
    handler that does (the launcher shows those: pipeline/logs.py)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s worker: %(message)s"))

    def filter(self, record: logging.LogRecord) -> bool:
        if any(h is not self and not isinstance(h, logging.NullHandler)
               for h in logging.getLogger().handlers):
            return False
        return not str(record.msg).startswith(HARMLESS)

    def format(self, record: logging.LogRecord) -> str:
        line = one_line_error(record.getMessage(), record.exc_info)
        record = logging.makeLogRecord({**record.__dict__, "msg": line, "args": None,
                                        "exc_info": None, "exc_text": None,
                                        "stack_info": None})
        return super().format(record)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
            sys.stderr.flush()
        except Exception:  # pylint: disable=broad-except
            self.handleError(record)


def _exited(kind, error, tb) -> None:
    """sys.excepthook: the error the worker exits with, in one line."""
    _Unsent().emit(logging.makeLogRecord({"levelno": logging.ERROR, "levelname": "ERROR",
                                          "msg": "exited", "exc_info": (kind, error, tb)}))


def one_line_error(message: str, exc_info) -> str:
    """message, and of exc_info's error its type, first line and the line of
    Beam (or else the last) that raised it; one line."""
    message = message.strip().splitlines()[0].rstrip(".") if message.strip() else "error"
    if not exc_info or exc_info[0] is None:
        return message
    kind, error, tb = exc_info
    said = str(error).strip().splitlines()
    line = f"{message}: {kind.__name__}" + (f": {said[0]}" if said else "")
    frames = traceback.extract_tb(tb)
    beams = [f for f in frames if "apache_beam" in f.filename] or frames
    if beams:
        frame = beams[-1]
        at = frame.filename.rfind("apache_beam")
        name = frame.filename[at:] if at >= 0 else os.path.basename(frame.filename)
        line += f" at {name}:{frame.lineno}" + (f", {frame.line}" if frame.line else "")
    return line + " (traceback: --log_level debug)"

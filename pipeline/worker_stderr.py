"""A Beam SDK worker process's stderr, without the tracebacks Beam prints there.

Beam's SDK worker prints the traceback of a failed bundle to its stderr
(sdk_worker._execute) and also logs it. A local worker process
(--direct_running_mode multi_processing) shares gpfit's stderr, so a
failure printed each traceback whole whatever --log_level said. The logged
copy reaches the launcher, which cuts it to one line below debug and shows
it whole at debug (pipeline/runtime.py); the printed copy is dropped here
(docs/design.md, "Runners and quiet runs"). Python's warnings (numpy's, on
a series that then fails) are logged instead of printed, for the same reason. Imports nothing heavy:
`import pipeline` runs it.
"""
from __future__ import annotations

import logging
import sys

_WORKER_MAIN = "apache_beam.runners.worker.sdk_worker_main"
_TRACEBACK = "Traceback (most recent call last)"


class _WithoutTracebacks:
    """A text stream that drops a write holding a whole traceback (and the
    line end print writes after it); everything else goes through."""

    def __init__(self, stream):
        self._stream = stream
        self._dropped = False

    def write(self, text: str) -> int:
        dropped, self._dropped = self._dropped, False
        if text.lstrip().startswith(_TRACEBACK):
            self._dropped = True
            return len(text)
        if dropped and text == "\n":
            return len(text)
        return self._stream.write(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def drop_printed_tracebacks() -> None:
    """In a Beam SDK worker process only: its stderr without printed
    tracebacks, and Python's warnings logged instead of printed (the
    launcher shows them at debug, as in one process: pipeline/runtime.py)."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if getattr(spec, "name", None) != _WORKER_MAIN or sys.stderr is None:
        return
    logging.captureWarnings(True)
    if not isinstance(sys.stderr, _WithoutTracebacks):
        sys.stderr = _WithoutTracebacks(sys.stderr)

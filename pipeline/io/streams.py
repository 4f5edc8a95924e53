"""The commands' stdout and stderr where they are closed or cannot be written.

A scheduler or a daemon may start `gpfit` or `gpfit-report` with a
descriptor closed (`2>&-`), a pipe's reader may leave early (`gpfit ...
2>&1 | head -1`), and a log file's disk may fill. Their lines are then
lost, never the exit code, which is the run's (docs/design.md, "Exit
codes"): before, the line's BrokenPipeError, or a sys.stderr of None,
raised out of the command, which exited 1 or 3 ("failed unexpectedly")
beside a _SUCCESS.json, and gpfit-report wrote no page.
"""
from __future__ import annotations

import io
import logging
import os
import sys
from typing import NoReturn

_STANDARD = (0, 1, 2)


def opened() -> None:
    """Opens the null device on each closed standard descriptor, and gives
    Python a sys.stdout and sys.stderr where it has none.

    A closed descriptor 2 is the number the next file opened gets (the lock,
    an input file, a shard), and TensorFlow's and gRPC's C++ write their
    lines to descriptor 2, into that file."""
    for fd in _STANDARD:
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    if sys.stdout is None:
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), line_buffering=True)
    if sys.stderr is None:
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), line_buffering=True,
                                      errors="backslashreplace")


def write(line: str, stream=None) -> None:
    """Writes a line to stream (default: sys.stdout); where it cannot be
    written, the line is dropped and so is everything this process writes
    to its descriptor after it (logging's lines among them)."""
    stream = sys.stdout if stream is None else stream
    try:
        print(line, file=stream, flush=True)
    except (OSError, ValueError):  # BrokenPipeError, ENOSPC; ValueError: a closed file
        silenced(stream)


def flushed() -> None:
    """Flushes sys.stdout and sys.stderr, dropping what cannot be written
    (the command's last step)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            silenced(stream)


def leave(code: int) -> NoReturn:
    """Ends a command's process with code once logging and the streams are
    flushed, without Python's finalisation: the work is done and every file
    closed by then, and tearing down TensorFlow's and Beam's modules only
    adds seconds (docs/design.md, "Start-up"), or aborts where Arrow's scan
    threads still hold a Python file (docs/design.md, "Arrow's reads at
    exit")."""
    logging.shutdown()
    flushed()  # a stream that cannot be written loses its lines, not the exit code
    os._exit(code)


def silenced(stream) -> None:
    """Points stream's descriptor at the null device, so that what its buffer
    holds and later writes go nowhere instead of failing again."""
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):  # no descriptor (a StringIO), or closed
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)

"""Beam imported without the line it logs where the gcp extra is missing.

Without the gcp extra (apitools: `make run`'s environment, a plain `pip
install gpfit`), importing Beam logs "apitools not found" on the root
logger, and logging.warning then configures that logger with Python's
default handler and format: the line came out on stderr, gpfit's own lines
after it as "INFO:gpfit:...", and a notebook's own logging.basicConfig
after `import gpfit` did nothing. So each entry point (the `gpfit` and
`gpfit-report` commands, `import gpfit`) imports Beam within `quietly()`
(docs/design.md, "Runners and quiet runs"); local worker processes do the
same before Beam's worker module runs (pipeline/runtime.py).

Nor can Beam be imported with docstrings stripped (`python -OO`,
PYTHONOPTIMIZE=2): it builds parts of its API from them and raised
AttributeError from its own import; `refusal` says so first.
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import Iterator, Optional


# gRPC's C++ core (Beam's channels to the local runner's workers) writes its
# errors to file descriptor 2 itself, outside Python's logging: out of
# descriptors mid-run (ulimit -n), 3 lines ("E1207 ... posix_interface_
# posix.cc:168] socket(10, 1, 0) returned -1 with error: |Too many open
# files| ...", with NUL bytes in them) before gpfit's own. It reads
# GRPC_VERBOSITY once, as grpc is imported (setting it later does nothing),
# so each entry point sets it first, below --log_level debug: NONE, where
# the environment does not set it (a user's value wins). Worker processes
# inherit it. The error still reaches gpfit's last line as the exception
# gRPC raises in Python (docs/design.md, "Quiet by default").
GRPC_VERBOSITY = "GRPC_VERBOSITY"


def quiet_grpc(argv: list[str], environ=None) -> None:
    """Sets GRPC_VERBOSITY=NONE in `environ` (default: this process's) for
    a command line `argv` below --log_level debug, unless it is set; call
    it before grpc (Beam) is imported."""
    environ = os.environ if environ is None else environ
    if environ.get(GRPC_VERBOSITY) or log_level_in(argv) == "debug":
        return
    environ[GRPC_VERBOSITY] = "NONE"


def log_level_in(argv: list[str]) -> str:
    """--log_level's value in argv, before the options are parsed (so that a
    refusal of them is logged at the level asked for); "info" by default.
    The last one given, as the parser takes it (a wrapper's default followed
    by the user's own)."""
    found = "info"
    for i, arg in enumerate(argv):
        if arg.startswith("--log_level="):
            found = arg.split("=", 1)[1]
        elif arg == "--log_level" and i + 1 < len(argv):
            found = argv[i + 1]
    return found


@contextlib.contextmanager
def quietly() -> Iterator[None]:
    """Within it, a null handler on the root logger: what is logged there
    with no other handler is dropped, and the root logger stays unconfigured."""
    held = logging.NullHandler()
    root = logging.getLogger()
    root.addHandler(held)
    try:
        yield
    finally:
        root.removeHandler(held)


def refusal() -> Optional[str]:
    """Why Beam cannot be imported in this process (one line, with what to
    do), or None where it can; the commands refuse with it (exit 2) and
    fit_frame's import raises ImportError with it."""
    if sys.flags.optimize < 2:
        return None
    return ("Python runs with docstrings stripped (python -OO, or PYTHONOPTIMIZE=2 or more "
            "in the environment), and Apache Beam, which builds parts of its API from "
            "docstrings, cannot be imported so: run without -OO and unset PYTHONOPTIMIZE "
            "(or set it to 1, as -O)")

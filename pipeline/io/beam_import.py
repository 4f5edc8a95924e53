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
import sys
from typing import Iterator, Optional


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

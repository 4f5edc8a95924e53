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
"""
from __future__ import annotations

import contextlib
import logging
from typing import Iterator


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

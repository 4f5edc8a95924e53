"""Beam's build of --setup_file's sdist, without `build`'s progress lines.

Beam's stager builds the package a job stages from --setup_file with
`python -m build --no-isolation --sdist ...`, its stdout captured and its
stderr on gpfit's: "* Getting build dependencies for sdist..." and
"* Building sdist..." came out on every launch with --setup_file, between
gpfit's own lines. Below --log_level debug that command's stderr is
captured too, and printed only where the build fails (its account of
why; Beam then tries `setup.py sdist`). `build` has no option that
silences them but -qq, which Beam gives no way to pass.
"""
from __future__ import annotations

import contextlib
import subprocess
import sys
from typing import Iterator

from apache_beam.utils import processes


def _is_build(args: tuple) -> bool:
    """Whether check_output's arguments run `python -m build`."""
    command = args[0] if args else None
    return isinstance(command, (list, tuple)) and [str(a) for a in command[1:3]] == ["-m", "build"]


@contextlib.contextmanager
def quiet(debug: bool) -> Iterator[None]:
    """Within it, below debug, Beam's `python -m build` runs with its stderr
    captured (apache_beam.utils.processes.check_output, which the stager
    calls by the module's name)."""
    if debug:
        yield
        return
    beams = processes.check_output

    def check_output(*args, **kwargs):
        if not _is_build(args) or "stderr" in kwargs:
            return beams(*args, **kwargs)
        try:
            return beams(*args, stderr=subprocess.PIPE, **kwargs)
        except RuntimeError as err:
            said = getattr(err.__cause__, "stderr", None)
            if said:  # the failure's reason, as the build would have printed it
                sys.stderr.write(said.decode(errors="replace") if isinstance(said, bytes)
                                 else said)
            raise

    processes.check_output = check_output
    try:
        yield
    finally:
        processes.check_output = beams

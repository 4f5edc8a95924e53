"""Beam's build of --setup_file's sdist, without `build`'s progress lines.

Beam's stager builds the package a job stages from --setup_file with
`python -m build --no-isolation --sdist ...`, its stdout captured and its
stderr on gpfit's: "* Getting build dependencies for sdist..." and
"* Building sdist..." came out on every launch with --setup_file, between
gpfit's own lines. Below --log_level debug that command's stderr is
captured too, and printed only where the build fails (its account of
why; Beam then tries `setup.py sdist`). `build` has no option that
silences them but -qq, which Beam gives no way to pass.

Either build writes in the setup file's folder (gpfit.egg-info/, and the
release tree gpfit-VERSION/ it archives, then removes), so two launches
from one checkout at once broke each other's build ("No such file or
directory: 'gpfit-0.16.5/pipeline/io/matching.py'"); each build now holds
that folder's lock (docs/design.md, "One sdist build a folder at a time").
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from typing import Iterator

from apache_beam.utils import processes

try:
    import fcntl
except ImportError:  # not POSIX: builds are not serialised
    fcntl = None


def _runs(args: tuple, *words: str) -> bool:
    """Whether check_output's arguments run the interpreter with these first words."""
    command = args[0] if args else None
    return isinstance(command, (list, tuple)) and [str(a) for a in command[1:3]] == list(words)


def _is_build(args: tuple) -> bool:
    """Whether check_output's arguments run `python -m build`."""
    return _runs(args, "-m", "build")


def _is_sdist(args: tuple) -> bool:
    """Whether check_output's arguments build an sdist: `python -m build`,
    or Beam's fallback `python setup.py sdist`."""
    return _is_build(args) or _runs(args, "setup.py", "sdist")


@contextlib.contextmanager
def folder_locked(folder: str) -> Iterator[None]:
    """Holds an exclusive lock on `folder` (flock on the folder itself: no
    file is left in a user's checkout) until the block ends; where it
    cannot be had (not POSIX, a folder that cannot be opened, NFS's flock
    of a read-only descriptor: EBADF), the block runs unlocked, as before."""
    fd = None
    if fcntl is not None:
        try:
            fd = os.open(folder, os.O_RDONLY)
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            if fd is not None:
                os.close(fd)
            fd = None
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)  # and with it the lock


@contextlib.contextmanager
def quiet(debug: bool) -> Iterator[None]:
    """Within it, Beam's sdist builds run one at a time per folder
    (folder_locked: Beam runs each in the setup file's folder, which it
    writes in), and below debug `python -m build` runs with its stderr
    captured (apache_beam.utils.processes.check_output, which the stager
    calls by the module's name)."""
    beams = processes.check_output

    def check_output(*args, **kwargs):
        if not _is_sdist(args):
            return beams(*args, **kwargs)
        with folder_locked(os.getcwd()):
            return _build(beams, debug, *args, **kwargs)

    processes.check_output = check_output
    try:
        yield
    finally:
        processes.check_output = beams


def _build(beams, debug: bool, *args, **kwargs):
    """Beam's check_output of one sdist build; below debug `python -m
    build`'s stderr captured, and printed only where it fails."""
    if debug or not _is_build(args) or "stderr" in kwargs:
        return beams(*args, **kwargs)
    try:
        return beams(*args, stderr=subprocess.PIPE, **kwargs)
    except RuntimeError as err:
        said = getattr(err.__cause__, "stderr", None)
        if said:  # the failure's reason, as the build would have printed it
            sys.stderr.write(said.decode(errors="replace") if isinstance(said, bytes)
                             else said)
        raise

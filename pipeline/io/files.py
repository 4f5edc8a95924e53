"""Opening files and reading many of them at once, locally or on gs://."""
from __future__ import annotations

import concurrent.futures
import os
from typing import Callable, Iterable, Optional, TypeVar

import pyarrow as pa
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from pipeline.io.errors import UsageError

T = TypeVar("T")
R = TypeVar("R")

# The remote file systems gpfit reads and writes (README, "Input formats"),
# each with the extra that brings Beam's file system for it.
EXTRAS = {"gs": "gcp"}

# Files are read in parallel: on gs:// each footer or small read is a round
# trip, so threads hide latency even on one core.
FILE_THREADS = 16


def open_file(path: str):
    """The file at path, opened for binary reading as it is (never
    decompressed by its name)."""
    return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)


def open_for_scan(path: str):
    """The file at path, opened for Arrow's dataset reads (`pq.read_table`):
    a local file as Arrow's own, elsewhere as open_file opens it.

    Arrow's scan threads drop their last hold on the file after read_table
    returns; releasing a Python file takes the GIL, and at interpreter exit
    that ended the process with SIGABRT ("terminate called without an
    active exception") after its work was done (docs/design.md, "Arrow's
    reads at exit"). Arrow's own file is released without Python.
    """
    if FileSystems.get_scheme(path) is not None:
        return open_file(path)
    try:
        return pa.OSFile(path)
    except OSError as err:
        if err.errno is None:
            raise
        # As open() says it ("Permission denied"), not as Arrow's longer text.
        raise type(err)(err.errno, os.strerror(err.errno), path) from None


def write_whole(path: str, temporary: str, data: bytes, mime_type: str) -> None:
    """Writes `data` to `temporary`, then renames it to `path`: a reader
    never sees half of it. Locally `temporary` is created exclusively and
    never through a symbolic link (a leftover of a killed write, or a link
    another user planted in a shared output folder, is removed, not
    followed): Beam's create opened it as it was, so a link at
    _SUCCESS.json.tmp had the manifest overwrite the file it named, anywhere
    the user could write (docs/design.md, "Output folder")."""
    if FileSystems.get_scheme(path) is not None:
        with FileSystems.create(temporary, mime_type=mime_type) as f:
            f.write(data)
        FileSystems.rename([temporary], [path])
        return
    os.makedirs(os.path.dirname(temporary) or ".", exist_ok=True)
    # O_NOFOLLOW and O_CLOEXEC are POSIX's; elsewhere O_EXCL alone still
    # refuses a name that exists, a planted link included (docs/design.md,
    # "Runners and quiet runs").
    flags = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
             | getattr(os, "O_CLOEXEC", 0))
    try:
        fd = os.open(temporary, flags, 0o666)
    except FileExistsError:
        os.unlink(temporary)  # the name itself, link or file; what a link names is left alone
        fd = os.open(temporary, flags, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def missing_extra(path: str) -> Optional[str]:
    """Where path is on a file system gpfit supports that this installation
    cannot reach (gs:// without the gcp extra), what to install, in words;
    else None. Beam then raised from the first call on such a path, which
    surfaced as a crash or a misleading reason (no manifest, give a gs://
    path), and an optional --previous_output was dropped as if absent."""
    scheme = FileSystems.get_scheme(path)
    if scheme not in EXTRAS:
        return None
    try:
        FileSystems.get_filesystem(path)
    except Exception:  # pylint: disable=broad-except  (Beam raises ValueError or BeamIOError)
        return (f"{scheme}:// paths need gpfit's {EXTRAS[scheme]} extra, which is not "
                f"installed here; pip install 'gpfit[{EXTRAS[scheme]}]'")
    return None


def check_reachable(options, names: Iterable[str], show: Callable[[str], str] = str) -> None:
    """Refuses the first of options' path options `names` (attributes; None
    or "" is not given) on a file system this installation lacks, or that
    starts with a `~` no shell expanded, before any of them is read; `show`
    writes the path in the command's way (repr: quoted).

    Also refuses a relative local path where the working folder has been
    removed (a shell left in a folder another job deleted): resolving it
    raised FileNotFoundError, said as a bug ("failed unexpectedly").

    Raises:
      UsageError: the option, its path and what to install (missing_extra),
        or how to give the home folder, or that the working folder is gone.
    """
    for name in names:
        path = getattr(options, name)
        missing = path and missing_extra(path)
        if missing:
            raise UsageError(f"--{name} {show(path)}: {missing}")
        if path and not os.path.isabs(path) and FileSystems.get_scheme(path) is None \
                and not _working_folder_exists():
            raise UsageError(f"--{name} {show(path)} is relative to the working folder, which no "
                             "longer exists (removed after this process started in it); give the "
                             "path in full, or run the command from a folder that exists")
        if path and path.startswith("~"):
            # The shell expands ~ only at a word's start: `--output=~/out`, a
            # quoted path or a scheduler's argument list reach gpfit as is,
            # and named a folder "~" in the working folder, where the user
            # never looked (and a later `rm -rf ~` would take their home).
            raise UsageError(f"--{name} {show(path)} starts with '~', which no shell expanded "
                             f"(it does not after '=' or in quotes); give the path in full, or "
                             f"--{name} {path} with a space")


def _working_folder_exists() -> bool:
    try:
        os.getcwd()
    except FileNotFoundError:
        return False
    return True


def too_long(path: str, inside: int = 0) -> Optional[str]:
    """Where a local path names a file or folder longer than its file system
    takes (NAME_MAX bytes a name, 255 on most; PATH_MAX bytes the path with
    `inside` bytes more of names to be written in it, 4096 on most), that
    problem in words; else None. Making it failed late with ENAMETOOLONG,
    as gpfit "failed unexpectedly" or after the report's work."""
    parent = absolute = os.path.abspath(path)
    while not os.path.isdir(parent):
        parent = os.path.dirname(parent)
    limits = []
    for name, default in (("PC_NAME_MAX", 255), ("PC_PATH_MAX", 4096)):
        try:
            limits.append(os.pathconf(parent, name))
        except (OSError, ValueError, AttributeError):  # AttributeError: no pathconf (Windows)
            limits.append(default)
    most, longest = limits
    for name in absolute.split(os.sep):
        size = len(os.fsencode(name))
        if size > most:
            return (f"the name {name[:40]}... is {size:,} bytes, longer than the file system "
                    f"takes ({most} bytes)")
    size = len(os.fsencode(absolute)) + inside
    if size >= longest:
        more = f" with the {inside} bytes of names written in it" if inside else ""
        return (f"the path {absolute[:40]}... is {size - inside:,} bytes, longer{more} than the "
                f"file system takes ({longest} bytes)")
    return None


def map_files(fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
    """[fn(item) for item in items], on up to FILE_THREADS threads.

    Raises:
      the exception of the first item (in item order) whose call raised, so
      that the error reported does not depend on thread timing.
    """
    items = list(items)
    if not items:
        return []
    with concurrent.futures.ThreadPoolExecutor(min(FILE_THREADS, len(items))) as pool:
        return list(pool.map(fn, items))

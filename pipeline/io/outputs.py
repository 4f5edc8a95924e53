"""The output folder: its file names, and the rules for (re)writing it.

Layout of a finished run:
  <output>/params-SSSSS-of-NNNNN.parquet   one row per series (schema.py)
  <output>/predictions-SSSSS-of-NNNNN.parquet  with --predict_*: posterior rows
  <output>/_SUCCESS.json                   written last: counts, options, time
A run that finishes with too many failed series, or with unreadable input,
writes _FAILED.json instead (same content); a run that crashes writes
neither (manifest.py). While a run writes the folder it holds the lock
_RUNNING.json (lock.py). Shard numbers have five digits or more (Beam pads
to the template's width and widens past 99,999).
"""
from __future__ import annotations

import os
import posixpath
import re

from apache_beam.io.filesystems import FileSystems

from pipeline.io.errors import UsageError

PARAMS_PREFIX = "params"
PREDICTIONS_PREFIX = "predictions"
PARAMS_SUFFIX = ".parquet"
SHARD_TEMPLATE = "-SSSSS-of-NNNNN"
# Parameters compress about 2x with zstd (float columns, repeated kernel
# and status strings); every reader named in the README reads it.
PARAMS_CODEC = "zstd"
# The manifest's two names: the run succeeded, or too many series failed.
SUCCESS_MARKER = "_SUCCESS.json"
FAILED_MARKER = "_FAILED.json"
MARKERS = (SUCCESS_MARKER, FAILED_MARKER)
# One run at a time writes a folder (lock.py).
LOCK_NAME = "_RUNNING.json"

# Files a previous gpfit run may have left: its shards, its manifest, and
# WriteToParquet's temporary folder of an interrupted run.
_WRITTEN = f"({PARAMS_PREFIX}|{PREDICTIONS_PREFIX})"
_OURS = re.compile(
    rf"^({_WRITTEN}-\d{{5,}}-of-\d{{5,}}{re.escape(PARAMS_SUFFIX)}"
    rf"|{re.escape(SUCCESS_MARKER)}|{re.escape(FAILED_MARKER)}|{re.escape(LOCK_NAME)}"
    rf"|[^/]*\.json\.tmp"
    rf"|beam-temp-{_WRITTEN}-[^/]+/.*)$")


def params_prefix(output: str, prefix: str = PARAMS_PREFIX) -> str:
    """The WriteToParquet file prefix inside the output folder (of the
    params, or of PREDICTIONS_PREFIX)."""
    return FileSystems.join(output, prefix)


def params_pattern(output: str, prefix: str = PARAMS_PREFIX) -> str:
    """The glob matching the parameter (or prediction) shards in the output folder."""
    return FileSystems.join(output.rstrip("/"), f"{prefix}-*{PARAMS_SUFFIX}")


def existing_files(output: str) -> list[str]:
    """Every file under the output folder (recursively), sorted."""
    folder = output.rstrip("/")
    try:
        matched = FileSystems.match([FileSystems.join(folder, "**")])[0].metadata_list
    except Exception as err:  # BeamIOError: unreachable bucket, bad scheme
        raise UsageError(f"cannot list output folder {output!r}: {err}") from err
    return sorted(m.path for m in matched)


def check_output(output: str, input_files: tuple[str, ...]) -> list[str]:
    """Checks that the output folder may be (re)written; returns its files.

    Refuses a folder holding files gpfit did not write, so that a mistyped
    --output never deletes someone's data. The lock (lock.py) is gpfit's
    but not returned: it is not the previous run's to clear.

    Raises:
      UsageError: no output given; it is a file; it holds input or foreign files.
    """
    if not output:
        raise UsageError("no output given; pass --output FOLDER")
    if FileSystems.get_scheme(output) is None and os.path.isfile(output):
        raise UsageError(f"output {output!r} is a file; --output takes a folder")
    folder = _normalised(output)
    for path in input_files:
        if _normalised(path).startswith(folder + "/"):
            raise UsageError(f"input file {path} lies inside the output folder {output}; "
                             "choose another output folder")
    files = existing_files(output)
    for path in files:
        relative = _relative(path, output)
        if not _OURS.match(relative):
            raise UsageError(
                f"output folder {output} holds {relative!r}, which gpfit did not write; "
                "give an empty folder or a previous gpfit output folder")
    return [path for path in files if posixpath.basename(path) != LOCK_NAME]


def clear_output(output: str, files: list[str]) -> None:
    """Deletes a previous run's files, so that no stale shard survives a run
    with another shard count; creates the folder if it is missing.

    The manifest goes first: a reader that sees _SUCCESS.json never sees it
    beside a half-deleted set of shards."""
    markers, rest = deletion_order(files)
    for batch in (markers, rest):
        if batch:
            FileSystems.delete(batch)
    if FileSystems.get_scheme(output) is None:
        # Local folders outlive their files (gs:// has no real folders).
        for root, dirs, _ in os.walk(output, topdown=False):
            for name in dirs:
                path = os.path.join(root, name)
                if not os.listdir(path):
                    os.rmdir(path)
        os.makedirs(output, exist_ok=True)


def deletion_order(files: list[str]) -> tuple[list[str], list[str]]:
    """(the manifests among files, the rest): what clear_output deletes first."""
    markers = [path for path in files if posixpath.basename(path) in MARKERS]
    return markers, [path for path in files if path not in markers]


def params_files(output: str, prefix: str = PARAMS_PREFIX) -> list[str]:
    """Names (not paths) of the parameter (or prediction) shards in the output folder."""
    return sorted(posixpath.basename(m.path)
                  for m in FileSystems.match([params_pattern(output, prefix)])[0].metadata_list)


def same_folder(a: str, b: str) -> bool:
    """Whether two paths name the same folder (trailing slashes, relative
    local paths aside)."""
    return _normalised(a) == _normalised(b)


def _normalised(path: str) -> str:
    if FileSystems.get_scheme(path) is None:
        return os.path.abspath(path)
    return path.rstrip("/")


def _relative(path: str, output: str) -> str:
    folder = _normalised(output)
    path = _normalised(path)
    return path[len(folder) + 1:] if path.startswith(folder + "/") else path

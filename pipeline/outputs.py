"""The output folder: made ready before a run, crowned with a manifest after.

Layout of a finished run:
  <output>/params-SSSSS-of-NNNNN.parquet   one row per series (schema.py)
  <output>/_SUCCESS.json                   written last: counts, options, time
A run that finishes with too many failed series writes _FAILED.json instead
(same content); a run that crashes writes neither.
"""
from __future__ import annotations

import json
import os
import posixpath
import re

from apache_beam.io.filesystems import FileSystems

from pipeline.errors import UsageError

PARAMS_PREFIX = "params"
PARAMS_SUFFIX = ".parquet"
SHARD_TEMPLATE = "-SSSSS-of-NNNNN"
SUCCESS = "_SUCCESS.json"
FAILED = "_FAILED.json"

# Files a previous gpfit run may have left: its shards, its manifest, and
# WriteToParquet's temporary folder of an interrupted run.
_OURS = re.compile(
    r"^(params-\d{5}-of-\d{5}\.parquet|_SUCCESS\.json|_FAILED\.json|[^/]*\.json\.tmp"
    r"|beam-temp-params-[^/]+/.*)$")


def params_prefix(output: str) -> str:
    """The WriteToParquet file prefix inside the output folder."""
    return FileSystems.join(output, PARAMS_PREFIX)


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
    --output never deletes someone's data.

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
    return files


def clear_output(output: str, files: list[str]) -> None:
    """Deletes a previous run's files, so that no stale shard survives a run
    with another shard count; creates the folder if it is missing."""
    if files:
        FileSystems.delete(files)
    if FileSystems.get_scheme(output) is None:
        # Local folders outlive their files (gs:// has no real folders).
        for root, dirs, _ in os.walk(output, topdown=False):
            for name in dirs:
                path = os.path.join(root, name)
                if not os.listdir(path):
                    os.rmdir(path)
        os.makedirs(output, exist_ok=True)


def params_files(output: str) -> list[str]:
    """Names (not paths) of the parameter shards in the output folder."""
    pattern = FileSystems.join(output, f"{PARAMS_PREFIX}-*{PARAMS_SUFFIX}")
    return sorted(posixpath.basename(m.path)
                  for m in FileSystems.match([pattern])[0].metadata_list)


def write_manifest(output: str, name: str, manifest: dict) -> str:
    """Writes <output>/<name> as JSON; returns its path.

    Written under a temporary name and renamed, so that a reader never sees
    a half-written manifest.
    """
    path = FileSystems.join(output, name)
    temporary = path + ".tmp"
    with FileSystems.create(temporary, mime_type="application/json") as f:
        f.write(json.dumps(manifest, indent=2, sort_keys=False).encode("utf-8") + b"\n")
    FileSystems.rename([temporary], [path])
    return path


def _normalised(path: str) -> str:
    if FileSystems.get_scheme(path) is None:
        return os.path.abspath(path)
    return path.rstrip("/")


def _relative(path: str, output: str) -> str:
    folder = _normalised(output)
    path = _normalised(path)
    return path[len(folder) + 1:] if path.startswith(folder + "/") else path

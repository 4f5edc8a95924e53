"""Table formats' folders that an input reaches: refused.

Delta Lake, Apache Iceberg, Apache Hudi and Spark's Structured Streaming
file sink keep the Parquet parts an update, overwrite or retried batch
replaced on disk (until VACUUM or expiry), and say in their logs which are
current. Read as a folder, every version's rows were fitted as one series
(docs/design.md, "Contracts"): gpfit reads no such log, so it refuses them.
"""
from __future__ import annotations

import fnmatch
import os
import posixpath
from typing import Iterable, Optional

from apache_beam.io.filesystems import FileSystems

from pipeline.io.errors import InputError

# (format, the log folder at the table's root, a glob of a file in it that
# marks the format; None: the folder alone marks it).
FORMATS = (
    ("a Delta Lake table", "_delta_log", None),
    ("an Apache Hudi table", ".hoodie", None),
    ("a Spark Structured Streaming output", "_spark_metadata", None),
    # A folder named metadata is common; Iceberg's holds its table metadata.
    ("an Apache Iceberg table", "metadata", "*.metadata.json"),
)
READERS = {
    "a Delta Lake table": "deltalake.DeltaTable({root!r}).to_pyarrow_table()",
    "an Apache Hudi table": "spark.read.format('hudi').load({root!r})",
    "a Spark Structured Streaming output": "spark.read.parquet({root!r})",
    "an Apache Iceberg table": "pyiceberg's table.scan().to_arrow()",
}


def check_no_table(files: Iterable[str]) -> None:
    """Raises InputError naming the first table-format folder (see FORMATS)
    that holds one of `files` or a folder above it (an input may lie inside
    a table: a Delta table's partition folder). A stat or a listing per
    distinct folder: callers pass a bounded sample of an object store's
    files.

    Raises:
      InputError: what the table is, and to write its current version as
        plain Parquet.
    """
    for folder in _folders(files):
        kind = _format(folder)
        if kind:
            reader = READERS[kind].format(root=folder)
            raise InputError(
                f"{folder} is {kind} ({_log(kind)}/), which gpfit does not read: its Parquet "
                "files are every version's, the replaced ones beside the current, and each "
                "point would be read once per version that holds it. Read its current "
                f"version with the table's own reader (e.g. {reader}), write it as plain "
                "Parquet, and give that folder as --input")


def _log(kind: str) -> str:
    return next(log for name, log, _ in FORMATS if name == kind)


def _folders(files: Iterable[str]) -> Iterable[str]:
    """The files' folders, each once, from each file's own up to the file
    system's root or the bucket (local ones absolute, and by their real
    path too: a relative input may lie inside a table whose root is the
    working folder or above)."""
    seen: set[str] = set()
    for path in files:
        local = FileSystems.get_scheme(path) is None
        own = _parent(os.path.abspath(path) if local else path)
        if own in seen:
            continue
        # A link to a table's partition folder lies in the table by its
        # real path alone.
        for folder in (own, os.path.realpath(own)) if local else (own,):
            while folder and folder not in seen:  # the folders above were seen too
                seen.add(folder)
                yield folder
                folder = _parent(folder)


def _parent(path: str) -> Optional[str]:
    """The folder holding path; None above the root or a bucket."""
    path = path.rstrip("/")
    scheme = FileSystems.get_scheme(path)
    if scheme is not None:
        bucket_end = path.find("/", len(scheme) + 3)
        if bucket_end < 0:
            return None
        return path[:path.rfind("/")]
    if not path:
        return None
    parent = os.path.dirname(path)
    return parent if parent != path else None


def _format(folder: str) -> Optional[str]:
    exists = _local_marker if FileSystems.get_scheme(folder) is None else _remote_marker
    for kind, log, marker in FORMATS:
        if exists(posixpath.join(folder, log), marker):
            return kind
    return None


def _local_marker(log: str, marker: Optional[str]) -> bool:
    if not os.path.isdir(log):
        return False
    if marker is None:
        return True
    try:
        return any(fnmatch.fnmatchcase(name, marker) for name in os.listdir(log))
    except OSError:
        return False


def _remote_marker(log: str, marker: Optional[str]) -> bool:
    try:
        found = FileSystems.match([posixpath.join(log, marker or "*")], limits=[1])[0]
    except Exception:  # pylint: disable=broad-except  (the listing's own check says so)
        return False
    return bool(found.metadata_list)

"""A gpfit output folder's parameter shards: listed, checked, read.

Shared by the next night's run (pipeline/io/previous.py reads last night's
shards) and the report (pipeline/report/params.py).
"""
from __future__ import annotations

import os
from typing import Iterator, Sequence

import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from pipeline.io.errors import InputError, first_line
from pipeline.io.files import open_file
from pipeline.io.outputs import shard_patterns
from pipeline.io.schema import HOLDOUT_COLUMNS, OUTPUT_COLUMNS

COLUMNS = OUTPUT_COLUMNS
# What a shard must have: older releases' shards lack the holdout columns,
# which read as null.
REQUIRED = tuple(name for name in COLUMNS if name not in HOLDOUT_COLUMNS)


def list_shards(folder: str, prefix: str = "params") -> list[str]:
    """Paths of a table's shards in an output folder, sorted: params/part-*.parquet,
    or in a folder of gpfit 0.4.0 and earlier params-*.parquet
    (outputs.shard_patterns).

    Raises:
      InputError: the folder cannot be listed (its table's folder, locally,
        for want of permission: Beam's match found no shards there).
    """
    if FileSystems.get_scheme(folder) is None:
        for table in (folder, os.path.join(folder, prefix)):
            _check_listable(table)
    found = []
    for pattern in shard_patterns(folder, prefix):
        try:
            matched = FileSystems.match([pattern])[0].metadata_list
        except Exception as err:  # BeamIOError for unreachable buckets and bad schemes
            raise InputError(f"cannot list {pattern!r}: {first_line(err)}") from err
        found += [m.path for m in matched]
    return sorted(found)


def against_listed(paths: Sequence[str], listed) -> tuple[list[str], tuple[str, ...],
                                                          tuple[str, ...]]:
    """(the shard paths [k] a manifest lists, the names of those found it
    does not list, the names it lists that are not found), both sorted;
    listed: its output_files or prediction_files (names relative to the
    folder). Where it lists none (an older or hand-edited manifest) every
    path is kept and nothing is said: a stray copy of a shard gives its
    series twice, a copy cut short lacks some."""
    if not isinstance(listed, list) or not listed:
        return list(paths), (), ()
    names = {str(name).rsplit("/", 1)[-1] for name in listed}
    kept = [path for path in paths if path.rsplit("/", 1)[-1] in names]
    found = {path.rsplit("/", 1)[-1] for path in paths}
    return kept, tuple(sorted(found - names)), tuple(sorted(names - found))


def _check_listable(folder: str) -> None:
    try:
        os.listdir(folder)
    except PermissionError as err:
        raise InputError(f"cannot list the folder {folder}: {err.strerror}; make it readable "
                         "by this user") from err
    except OSError:
        pass  # absent, or not a folder: no shards, said by the caller


def checked_rows(path: str, required: Sequence[str] = REQUIRED) -> int:
    """Row count of one shard, from its footer.

    Raises:
      InputError: it is not Parquet, or lacks a required column.
    """
    try:
        with open_file(path) as f:
            parquet = pq.ParquetFile(f)
            names, rows = parquet.schema_arrow.names, parquet.metadata.num_rows
    except PermissionError as err:
        raise InputError(f"{path} cannot be read: {err.strerror}; make it readable by this "
                         "user") from err
    except (pa.ArrowException, OSError, ValueError) as err:
        raise InputError(f"{path} is not a Parquet file ({first_line(err)})") from err
    missing = [name for name in required if name not in names]
    if missing:
        raise InputError(f"{path} lacks column(s) {', '.join(missing)}; expected a gpfit "
                         "params shard with " + ", ".join(required))
    return rows


def iter_batches(path: str, columns: Sequence[str] = COLUMNS,
                 batch_rows: int = 65_536) -> Iterator[pa.RecordBatch]:
    """One shard's rows, batch_rows at a time, with those of `columns` it
    has (all of them for this release's shards), series_id as string."""
    with open_file(path) as f:
        parquet = pq.ParquetFile(f)
        present = [c for c in columns if c in parquet.schema_arrow.names]
        for batch in parquet.iter_batches(batch_size=batch_rows, columns=present):
            if "series_id" in batch.schema.names:
                i = batch.schema.get_field_index("series_id")
                if not pa.types.is_string(batch.column(i).type):
                    batch = batch.set_column(i, "series_id", batch.column(i).cast(pa.string()))
            yield batch


def read_rows(path: str) -> Iterator[dict]:
    """One shard's rows as dicts of every output column; a column the shard
    lacks (an older release's) is None."""
    for batch in iter_batches(path):
        for row in batch.to_pylist():
            yield {name: row.get(name) for name in COLUMNS}

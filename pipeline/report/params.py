"""A gpfit run's parameter shards: found, checked, and streamed in batches.

The shards can hold millions of rows; nothing here holds more than one
batch of them at a time.
"""
from __future__ import annotations

import dataclasses
from typing import Iterator, Optional, Sequence

import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from pipeline.io import manifest
from pipeline.io.errors import InputError, first_line
from pipeline.io.files import map_files, open_file
from pipeline.io.outputs import PARAMS_PREFIX, PARAMS_SUFFIX, params_pattern
from pipeline.io.schema import OUTPUT_SCHEMA

COLUMNS = tuple(OUTPUT_SCHEMA.names)
BATCH_ROWS = 65_536


@dataclasses.dataclass(frozen=True)
class ParamsRun:
    """The output folder of one gpfit run.

    Attributes:
      folder: as given.
      files: the params-*.parquet shards, sorted.
      rows: total rows (one per series) over all shards.
      manifest_name: "_SUCCESS.json", "_FAILED.json" or None if neither is
        there (the run did not finish, or is still running).
      manifest: its parsed content, or None.
    """

    folder: str
    files: tuple[str, ...]
    rows: int
    manifest_name: Optional[str]
    manifest: Optional[dict]


def locate(folder: str) -> ParamsRun:
    """Finds and checks the shards of a run's output folder.

    Raises:
      InputError: no folder given, no shards in it, a shard that is not
        Parquet or lacks one of the output columns.
    """
    if not folder:
        raise InputError("no params folder given; pass --params, the --output folder of gpfit")
    pattern = params_pattern(folder)
    try:
        matched = FileSystems.match([pattern])[0].metadata_list
    except Exception as err:  # BeamIOError for unreachable buckets and bad schemes
        raise InputError(f"cannot list {pattern!r}: {first_line(err)}") from err
    files = sorted(m.path for m in matched)
    if not files:
        raise InputError(f"no {PARAMS_PREFIX}-*{PARAMS_SUFFIX} files in {folder!r}; "
                         "pass the folder that gpfit --output wrote")
    rows = map_files(_checked_rows, files)
    name = manifest.find(folder)
    return ParamsRun(folder, tuple(files), sum(rows), name, _content(folder, name))


def iter_batches(run: ParamsRun, columns: Sequence[str] = COLUMNS,
                 batch_rows: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """Yields the shards' rows in file order, batch_rows at a time, with
    only the given columns (series_id always as string)."""
    for path in run.files:
        with open_file(path) as f:
            for batch in pq.ParquetFile(f).iter_batches(batch_size=batch_rows,
                                                        columns=list(columns)):
                if "series_id" in batch.schema.names:
                    i = batch.schema.get_field_index("series_id")
                    if not pa.types.is_string(batch.column(i).type):
                        batch = batch.set_column(i, "series_id",
                                                 batch.column(i).cast(pa.string()))
                yield batch


def _checked_rows(path: str) -> int:
    """Row count of one shard.

    Raises:
      InputError: it is not Parquet, or lacks an output column.
    """
    try:
        with open_file(path) as f:
            parquet = pq.ParquetFile(f)
            names, rows = parquet.schema_arrow.names, parquet.metadata.num_rows
    except (pa.ArrowException, OSError, ValueError) as err:
        raise InputError(f"{path} is not a Parquet file ({first_line(err)})") from err
    missing = [name for name in COLUMNS if name not in names]
    if missing:
        raise InputError(f"{path} lacks column(s) {', '.join(missing)}; expected a gpfit "
                          "params shard with " + ", ".join(COLUMNS))
    return rows


def _content(folder: str, name: Optional[str]) -> Optional[dict]:
    """The manifest's content; None if there is none, or it is unreadable
    (the page then shows it as present but unreadable)."""
    if name is None:
        return None
    try:
        return manifest.load(folder, name)
    except (OSError, ValueError):
        return None

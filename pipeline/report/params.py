"""A gpfit run's parameter shards: found, checked, and streamed in batches.

The shards can hold millions of rows; nothing here holds more than one
batch of them at a time.
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import json
from typing import Iterator, Optional, Sequence

import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from pipeline.errors import InputError
from pipeline.outputs import FAILED, PARAMS_PREFIX, PARAMS_SUFFIX, SUCCESS
from pipeline.schema import OUTPUT_SCHEMA

COLUMNS = tuple(OUTPUT_SCHEMA.names)
BATCH_ROWS = 65_536
_FOOTER_THREADS = 16


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
    pattern = FileSystems.join(folder.rstrip("/"), f"{PARAMS_PREFIX}-*{PARAMS_SUFFIX}")
    try:
        matched = FileSystems.match([pattern])[0].metadata_list
    except Exception as err:  # BeamIOError for unreachable buckets and bad schemes
        raise InputError(f"cannot list {pattern!r}: {_first_line(err)}") from err
    files = sorted(m.path for m in matched)
    if not files:
        raise InputError(f"no {PARAMS_PREFIX}-*{PARAMS_SUFFIX} files in {folder!r}; "
                         "pass the folder that gpfit --output wrote")
    with concurrent.futures.ThreadPoolExecutor(min(_FOOTER_THREADS, len(files))) as pool:
        rows = list(pool.map(_checked_rows, files))
    for row_count in rows:  # the first problem in file order
        if isinstance(row_count, InputError):
            raise row_count
    name, manifest = _manifest(folder)
    return ParamsRun(folder, tuple(files), sum(rows), name, manifest)


def iter_batches(run: ParamsRun, columns: Sequence[str] = COLUMNS,
                 batch_rows: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """Yields the shards' rows in file order, batch_rows at a time, with
    only the given columns (series_id always as string)."""
    for path in run.files:
        with _open(path) as f:
            for batch in pq.ParquetFile(f).iter_batches(batch_size=batch_rows,
                                                        columns=list(columns)):
                if "series_id" in batch.schema.names:
                    i = batch.schema.get_field_index("series_id")
                    if not pa.types.is_string(batch.column(i).type):
                        batch = batch.set_column(i, "series_id",
                                                 batch.column(i).cast(pa.string()))
                yield batch


def _checked_rows(path: str) -> int | InputError:
    """Row count of one shard, or (returned, for the pool) its problem."""
    try:
        with _open(path) as f:
            parquet = pq.ParquetFile(f)
            names, rows = parquet.schema_arrow.names, parquet.metadata.num_rows
    except (pa.ArrowException, OSError, ValueError) as err:
        return InputError(f"{path} is not a Parquet file ({_first_line(err)})")
    missing = [name for name in COLUMNS if name not in names]
    if missing:
        return InputError(f"{path} lacks column(s) {', '.join(missing)}; expected a gpfit "
                          "params shard with " + ", ".join(COLUMNS))
    return rows


def _manifest(folder: str) -> tuple[Optional[str], Optional[dict]]:
    for name in (SUCCESS, FAILED):
        path = FileSystems.join(folder.rstrip("/"), name)
        if not FileSystems.exists(path):
            continue
        try:
            with _open(path) as f:
                content = json.loads(f.read().decode("utf-8"))
        except (OSError, ValueError):
            content = None  # shown as present but unreadable
        return name, content if isinstance(content, dict) else None
    return None, None


def _open(path: str):
    return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)


def _first_line(err: Exception) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__

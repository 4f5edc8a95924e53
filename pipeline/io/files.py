"""Opening files and reading many of them at once, locally or on gs://."""
from __future__ import annotations

import concurrent.futures
from typing import Callable, Iterable, TypeVar

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

T = TypeVar("T")
R = TypeVar("R")

# Files are read in parallel: on gs:// each footer or small read is a round
# trip, so threads hide latency even on one core.
FILE_THREADS = 16


def open_file(path: str):
    """The file at path, opened for binary reading as it is (never
    decompressed by its name)."""
    return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)


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

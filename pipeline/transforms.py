"""The pipeline's transforms: Parquet row groups -> Series -> fitted rows.

  ReadSeries: files -> row groups -> (id, chunk) -> GroupByKey -> Series
  FitSeries:  Series -> batches of similar length -> FitDoFn -> output rows

Rows whose series cannot be assembled (a nested row whose t and y differ in
length) leave ReadSeries as ready "skipped" rows on the UNFITTABLE output;
the count of rows with a null id leaves it on NULL_IDS. FitSeries also puts
out one FitStats per batch (FIT_STATS). Both feed the manifest.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Callable, Iterable, NamedTuple, Optional

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from apache_beam.io.parquetio import ReadAllFromParquetBatched
from apache_beam.transforms.window import GlobalWindows
from apache_beam.utils import shared

from gpcore import FitConfig, FitResult, GPFitter, Series
from gpcore.result import FAILED, SKIPPED
from pipeline import metrics, runtime
from pipeline.io import columns as col
from pipeline.io.errors import first_line
from pipeline.io.inputs import Columns

_LOG = logging.getLogger(__name__)

UNFITTABLE = "unfittable"
NULL_IDS = metrics.NULL_IDS  # output tag: ints, rows with a null id in a row group
FIT_STATS = "fit_stats"      # output tag: metrics.FitStats, one per fitted batch

# (t [n] float64, y [n] float64, problem or None): part of one series.
Chunk = tuple[np.ndarray, np.ndarray, Optional[str]]


class ReadOutputs(NamedTuple):
    """ReadSeries' outputs."""

    series: beam.PCollection      # Series, one per distinct id
    unfittable: beam.PCollection  # output rows, status "skipped"
    null_ids: beam.PCollection    # ints: rows with a null id (one per row group that has any)


class ReadSeries(beam.PTransform):
    """Parquet files (long or nested layout) -> Series, one per distinct id.

    Returns ReadOutputs: series, unfittable and null_ids.
    """

    def __init__(self, files: Iterable[str], columns: Columns, kernel: str):
        super().__init__()
        self._files = list(files)
        self._columns = columns
        self._kernel = kernel

    def expand(self, pbegin):
        c = self._columns
        chunks = (pbegin
                  | "ListFiles" >> beam.Create(self._files)
                  # One pyarrow Table per row group; spreads files over workers.
                  | "ReadRowGroups" >> ReadAllFromParquetBatched(columns=[c.id, c.time, c.value])
                  | "SplitBySeries" >> beam.ParDo(SplitBySeries(c)).with_outputs(
                      NULL_IDS, main="chunks"))
        series = (chunks.chunks
                  # Grouping by id gathers a series spread over row groups and
                  # files, and is also the shuffle that spreads series over
                  # workers: no separate Reshuffle is needed before fitting.
                  | "GroupBySeries" >> beam.GroupByKey()
                  | "MergeChunks" >> beam.ParDo(MergeChunks(self._kernel)).with_outputs(
                      UNFITTABLE, main="series"))
        return ReadOutputs(series.series, series[UNFITTABLE], chunks[NULL_IDS])


class SplitBySeries(beam.DoFn):
    """A row group (pa.Table) -> (series id, Chunk) per series in it.

    Long layout: rows are grouped by id within the table (one chunk per id
    and row group, not one element per observation). Nested layout: one
    chunk per row. Rows with a null id are dropped, and counted: a metric,
    and their number on the NULL_IDS output.
    """

    def __init__(self, columns: Columns):
        self._columns = columns
        self._null_ids = metrics.counter(metrics.NULL_IDS)

    def process(self, table: pa.Table):
        c = self._columns
        ids = table.column(c.id)
        if ids.null_count:
            self._null_ids.inc(ids.null_count)
            yield beam.pvalue.TaggedOutput(NULL_IDS, ids.null_count)
            table = table.filter(pc.is_valid(ids))
        if table.num_rows == 0:
            return
        ids = col.as_str(table.column(c.id))
        times, values = table.column(c.time), table.column(c.value)
        if col.is_list(times.type):
            yield from _nested_chunks(ids, times, values, c)
        else:
            yield from _long_chunks(ids, col.as_float(times), col.as_float(values))


def _long_chunks(ids: np.ndarray, t: np.ndarray, y: np.ndarray):
    unique, inverse = np.unique(ids, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    ends = np.cumsum(np.bincount(inverse, minlength=unique.size))
    for series_id, part in zip(unique, np.split(order, ends[:-1])):
        yield str(series_id), (t[part], y[part], None)


def _nested_chunks(ids: np.ndarray, times, values, columns: Columns):
    t_len, y_len = col.list_lengths(times), col.list_lengths(values)
    t_all = np.split(col.as_float(col.list_values(times)), np.cumsum(t_len)[:-1])
    y_all = np.split(col.as_float(col.list_values(values)), np.cumsum(y_len)[:-1])
    for series_id, t, y in zip(ids, t_all, y_all):
        problem = None
        if t.size != y.size:
            problem = (f"a row of this series has {t.size} times but {y.size} values; give "
                       f"its {columns.time!r} and {columns.value!r} lists equal length")
        yield str(series_id), (t, y, problem)


class MergeChunks(beam.DoFn):
    """(id, [Chunk]) -> Series, points sorted by (t, y).

    Sorting makes the series independent of the order in which chunks
    arrive, so results do not depend on how the input was split.
    """

    def __init__(self, kernel: str):
        self._kernel = kernel
        self._series_read = metrics.counter(metrics.SERIES_READ)

    def process(self, element: tuple[str, Iterable[Chunk]]):
        series_id, chunks = element
        chunks = list(chunks)
        self._series_read.inc()
        problems = [problem for _, _, problem in chunks if problem]
        if problems:
            yield beam.pvalue.TaggedOutput(UNFITTABLE, FitResult(
                series_id, SKIPPED, self._kernel, 0, error=problems[0]).to_row())
            return
        t = np.concatenate([chunk[0] for chunk in chunks])
        y = np.concatenate([chunk[1] for chunk in chunks])
        order = np.lexsort((y, t))
        yield Series(series_id, t[order], y[order])


# Series handed to one GPFitter.fit call, in compiled batches (batch_size).
# The fitter sorts a call's series by length before cutting it into compiled
# batches, so a larger call pads less: with calls of one compiled batch, a
# power-of-two bucket padded its 129-point series to 256 points (~2x the
# Cholesky work of sorted batches).
COMPILED_BATCHES_PER_FIT = 8


class FitSeries(beam.PTransform):
    """Series -> output rows (dicts of gpcore.OUTPUT_COLUMNS).

    Returns the outputs of FitBatches: rows (main) and FIT_STATS.
    """

    def __init__(self, config: FitConfig, processes_per_machine: Optional[int]):
        super().__init__()
        self._config = config
        self._processes = processes_per_machine

    def expand(self, series):
        return (series
                | "BatchByLength" >> beam.ParDo(BatchByLength(
                    self._config.batch_size * COMPILED_BATCHES_PER_FIT))
                | "FitBatches" >> beam.ParDo(FitDoFn(self._config, self._processes)).with_outputs(
                    FIT_STATS, main="rows"))


def length_bucket(n: int) -> int:
    """Series of n points share a bucket with those up to the next power of 2."""
    return max(n - 1, 0).bit_length()


class BatchByLength(beam.DoFn):
    """Series -> lists of up to batch_size series of similar length.

    Batches are formed within a bundle (no extra shuffle); what is left at
    the end of a bundle goes out sorted by length in full-size batches.
    """

    def __init__(self, batch_size: int):
        self._batch_size = batch_size
        self._buckets: dict[int, list[Series]] = {}

    def start_bundle(self):
        self._buckets = {}

    def process(self, series: Series):
        bucket = self._buckets.setdefault(length_bucket(np.size(series.y)), [])
        bucket.append(series)
        if len(bucket) >= self._batch_size:
            yield bucket.copy()
            bucket.clear()

    def finish_bundle(self):
        rest = sorted((s for bucket in self._buckets.values() for s in bucket),
                      key=lambda s: np.size(s.y))
        self._buckets = {}
        for start in range(0, len(rest), self._batch_size):
            yield GlobalWindows.windowed_value(rest[start:start + self._batch_size])


class _FitterSlot:
    """A worker process's one GPFitter, with its lock and its progress.

    A plain class so that apache_beam.utils.shared can hold a weak reference.
    """

    def __init__(self, fitter: GPFitter, progress: runtime.Progress):
        self.fitter = fitter
        self.progress = progress
        self.lock = threading.Lock()
        self.counted = False  # fitters_built is counted once, in a bundle


class FitDoFn(beam.DoFn):
    """Fits batches of Series with the worker process's one GPFitter.

    Beam runs several instances of a DoFn per process, on threads. Building
    a fitter costs seconds (TF variables, a traced function), so the process
    builds one, in the first setup(), through a Shared handle, and every
    instance uses it under a lock. Besides the rows, each batch puts out a
    FitStats on FIT_STATS (the figures of its metrics, for the manifest).
    A fit that raises becomes "failed" rows with the reason: on Dataflow an
    exception would retry the bundle four times and then fail the job.
    """

    def __init__(self, config: FitConfig, processes_per_machine: Optional[int],
                 clock: Callable[[], float] = time.monotonic, progress_every_s: float = 30.0):
        self._config = config
        self._processes = processes_per_machine
        self._clock = clock
        self._progress_every_s = progress_every_s
        self._shared = shared.Shared()
        self._slot: Optional[_FitterSlot] = None
        self._fitters_built = metrics.counter(metrics.FITTERS_BUILT)
        self._fit_ms = metrics.distribution(metrics.FIT_MS)
        self._traces = metrics.distribution(metrics.TRACING_COUNT)
        self._traces_now = metrics.gauge(metrics.TRACING_COUNT)

    def setup(self):
        self._slot = self._shared.acquire(self._build_slot)

    def _build_slot(self) -> _FitterSlot:
        intra = runtime.configure_tf_threads(self._processes)
        start = time.monotonic()
        fitter = GPFitter(self._config)
        _LOG.info("gpfit: built a %s fitter in %.1f s (%d intra-op threads)",
                  self._config.kernel, time.monotonic() - start, intra)
        return _FitterSlot(fitter, runtime.Progress(self._clock, self._progress_every_s))

    def process(self, batch: list[Series]):
        slot = self._slot
        with slot.lock:
            built = not slot.counted
            if built:
                # Metrics only count inside a bundle, not in setup().
                self._fitters_built.inc()
                slot.counted = True
            start = self._clock()
            results = fit_safely(slot.fitter, batch, self._config.kernel)
            elapsed = self._clock() - start
            traces = slot.fitter.tracing_count
            line = slot.progress.add(len(batch))
        if line:
            _LOG.info(line)
        per_series_ms = int(round(1000.0 * elapsed / max(len(batch), 1)))
        for _ in batch:
            self._fit_ms.update(per_series_ms)
        self._traces.update(traces)
        self._traces_now.set(traces)
        for result in results:
            yield result.to_row()
        yield beam.pvalue.TaggedOutput(FIT_STATS, metrics.FitStats(
            len(batch), per_series_ms, traces, int(built)))


def fit_safely(fitter: GPFitter, batch: list[Series], kernel: str) -> list[FitResult]:
    """fitter.fit(batch), but an exception fails only the series that cause it.

    A batch that raises is refitted series by series; a series that raises
    alone becomes a "failed" result carrying the exception's message.
    """
    try:
        results = fitter.fit(batch)
        if len(results) != len(batch):
            raise RuntimeError(f"fitter returned {len(results)} results for {len(batch)} series")
        return results
    except Exception as err:  # pylint: disable=broad-except
        if len(batch) > 1:
            _LOG.warning("gpfit: a batch of %d series raised (%s); fitting them one by one",
                         len(batch), first_line(err))
            return [r for s in batch for r in fit_safely(fitter, [s], kernel)]
        series = batch[0]
        return [FitResult(str(series.series_id), FAILED, kernel, _finite_points(series),
                          error=f"fit raised {type(err).__name__}: {first_line(err)}")]


def _finite_points(series: Series) -> int:
    try:
        t = np.asarray(series.t, dtype=np.float64)
        y = np.asarray(series.y, dtype=np.float64)
        return int((np.isfinite(t) & np.isfinite(y)).sum()) if t.shape == y.shape else 0
    except (TypeError, ValueError):
        return 0


def count_status(row: dict) -> dict:
    """Counts an output row under its status; returns it unchanged."""
    metrics.counter(row["status"]).inc()
    return row

"""ReadSeries: the input, matched and read on the workers -> Series.

  ListFiles, MatchInput: the input glob -> matched files, on the workers
                 (the job graph holds the glob, never the file list:
                 docs/design.md, "Data flow")
  SpreadFiles:   a Reshuffle, so that many workers read the footers
  ListRowGroups: a file -> (path, first, stop): ranges of its row groups,
                 after checking its footer
  ReadRowGroups: (path, first, stop) -> pa.Table, spread over workers; one
                 opening of the file per range
  SplitBySeries: a table -> (id, Chunk) per series in it
  GatherChunks:  a combine per id, bounded: beyond max_rows raw rows a
                 series keeps only its count, and is never concatenated
  MergeChunks:   -> Series, or a ready "skipped" row (with its fingerprint)

A file whose footer or a row group cannot be read or does not fit leaves on
UNREADABLE as (path, reason), once per file: the job goes on with the other
files and the manifest step writes _FAILED.json naming it (docs/design.md,
"Contracts").
"""
from __future__ import annotations

import dataclasses
from typing import NamedTuple, Optional

import apache_beam as beam
import numpy as np
import pyarrow as pa
from apache_beam.io import fileio

from pipeline import metrics
from pipeline.io import conversion, inputs, matching
from pipeline.io.errors import InputError
from pipeline.io.inputs import Columns, InputSpec

UNFITTABLE = "unfittable"
NULL_IDS = metrics.NULL_IDS   # output tag: ints, rows with a null id in a table read
UNREADABLE = "unreadable"     # output tag: (path, reason)
FILES = "files"               # output tag: (1, rows) per file whose footer was read

Chunk = conversion.Chunk  # (t [n] float64, y [n] float64, problem or None)


class ReadOutputs(NamedTuple):
    """ReadSeries' outputs."""

    series: beam.PCollection      # Series, one per distinct id
    unfittable: beam.PCollection  # output rows, status "skipped"
    null_ids: beam.PCollection    # ints: rows with a null id (one per table that has any)
    unreadable: beam.PCollection  # (path, reason): input that could not be read
    files: beam.PCollection       # (1, rows) per file read


class ReadSeries(beam.PTransform):
    """The input (long or nested layout) -> Series, one per distinct id.

    Returns ReadOutputs.
    """

    def __init__(self, spec: InputSpec, kernel: str, max_rows: int,
                 fingerprint_key: bytes = b""):
        super().__init__()
        self._key = fingerprint_key
        # The launcher's file list stays out of the job graph: only the first
        # file travels, as the reference the workers name.
        self._spec = dataclasses.replace(spec, files=spec.files[:1])
        self._kernel = kernel
        self._max_rows = max_rows

    def expand(self, pbegin):
        spec, c = self._spec, self._spec.columns
        matched = (pbegin
                   | "ListFiles" >> beam.Create([matching.listing_glob(spec.glob)])
                   | "MatchInput" >> fileio.MatchAll())
        if spec.data_only:
            matched = matched | "DataFilesOnly" >> beam.Filter(
                lambda m, glob: matching.is_data(m.path, glob), spec.glob)
        groups = (matched
                  # One worker matches the glob; many read the footers.
                  | "SpreadFiles" >> beam.Reshuffle()
                  | "ListRowGroups" >> beam.ParDo(ListRowGroups(spec)).with_outputs(
                      UNREADABLE, FILES, main="groups"))
        tables = (groups.groups
                  # A file's row groups go to many workers.
                  | "SpreadRowGroups" >> beam.Reshuffle()
                  | "ReadRowGroups" >> beam.ParDo(ReadRowGroup(c)).with_outputs(
                      UNREADABLE, main="tables"))
        chunks = tables.tables | "SplitBySeries" >> beam.ParDo(SplitBySeries(c)).with_outputs(
            NULL_IDS, main="chunks")
        series = (chunks.chunks
                  # Gathering by id collects a series spread over row groups and
                  # files, and is also the shuffle that spreads series over
                  # workers. A combine, not a GroupByKey: its accumulators are
                  # bounded (GatherChunks), before and after the shuffle.
                  | "GroupBySeries" >> beam.CombinePerKey(GatherChunks(self._max_rows))
                  | "MergeChunks" >> beam.ParDo(MergeChunks(self._kernel, self._max_rows, self._key))
                  .with_outputs(UNFITTABLE, main="series"))
        unreadable = ((groups[UNREADABLE], tables[UNREADABLE])
                      | "AllUnreadable" >> beam.Flatten()
                      # Row groups are read apart: a file with several bad
                      # ones is one unreadable file, with its least reason.
                      | "OnePerFile" >> beam.CombinePerKey(min))
        return ReadOutputs(series.series, series[UNFITTABLE], chunks[NULL_IDS], unreadable,
                           groups[FILES])


class ListRowGroups(beam.DoFn):
    """A matched file -> (path, first, stop) per range of its row groups
    read together (inputs.read_ranges).

    Checks the footer as the launcher did (which read only a sample): a file
    that is empty, not Parquet, or of another layout or kind of time goes
    to UNREADABLE with the reason. Each file read puts (1, rows) on FILES.
    """

    def __init__(self, spec: InputSpec):
        self._spec = spec

    def process(self, match):
        spec = self._spec
        try:
            footer = inputs.check_footer(match.path, match.size_in_bytes, spec.columns)
            if spec.inspected:
                reference = inputs.Footer(spec.layout, spec.time_units, 0)
                inputs.check_agrees(match.path, footer, spec.files[0], reference, spec.columns)
        except InputError as err:
            yield beam.pvalue.TaggedOutput(UNREADABLE, (match.path, str(err)))
            return
        yield beam.pvalue.TaggedOutput(FILES, (1, footer.rows))
        for first, stop in footer.reads:
            yield match.path, first, stop


class ReadRowGroup(beam.DoFn):
    """(path, first, stop) -> the row groups' three columns (one pa.Table,
    or one per group where their types differ), and (path, reason) on
    UNREADABLE for each group that cannot be read."""

    def __init__(self, columns: Columns):
        self._columns = columns

    def process(self, element: tuple[str, int, int]):
        path, first, stop = element
        tables, problems = inputs.read_row_groups(path, range(first, stop), self._columns)
        for problem in problems:
            yield beam.pvalue.TaggedOutput(UNREADABLE, (path, problem))
        tables = [table for table in tables if table.num_rows]
        if len({table.schema for table in tables}) == 1:
            # One table for the range: a series is split once per read, not
            # once per row group (600,000 chunks of 10,001 small groups).
            yield pa.concat_tables(tables)
        else:  # INT96 times read as microseconds in some groups only (_int96_dates)
            yield from tables


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
        null_ids, chunks = conversion.split(table, self._columns)
        if null_ids:
            self._null_ids.inc(null_ids)
            yield beam.pvalue.TaggedOutput(NULL_IDS, null_ids)
        yield from chunks


# One id's chunks so far: (raw rows counted, [Chunk] or None once the rows
# passed the cap: the chunks are dropped and only the count goes on, the
# chunks' problem (conversion.first_problem) or None). A plain tuple: Beam
# pickles it.
Gathered = tuple[int, Optional[list], Optional[str]]


class GatherChunks(beam.CombineFn):
    """Chunks of one id -> Gathered, holding at most max_rows rows.

    Beam lifts a combine in front of the shuffle, so an id with 10^8 rows
    costs a count, not 10^8 rows, on every worker, in the shuffle and after.
    """

    def __init__(self, max_rows: int):
        self._max_rows = max_rows

    def create_accumulator(self):
        return 0, [], None

    def add_input(self, acc, chunk):
        rows, chunks, problem = acc
        rows += len(chunk[1])
        if chunks is not None and rows <= self._max_rows:
            chunks.append(chunk)
        else:
            chunks = None
        return rows, chunks, conversion.first_problem(problem, chunk[2])

    def merge_accumulators(self, accumulators):
        rows, chunks, problem = 0, [], None
        for acc_rows, acc_chunks, acc_problem in accumulators:  # iterated, never listed
            rows += acc_rows
            problem = conversion.first_problem(problem, acc_problem)
            if chunks is not None and acc_chunks is not None and rows <= self._max_rows:
                chunks.extend(acc_chunks)
            else:
                chunks = None
        return rows, chunks, problem

    def compact(self, acc):
        # Before the shuffle: one chunk per id and bundle, not one per row
        # group, so that scattered input pays the per-element overhead once.
        rows, chunks, problem = acc
        if chunks and len(chunks) > 1:
            chunks = [(np.concatenate([c[0] for c in chunks]),
                       np.concatenate([c[1] for c in chunks]), None)]
        return rows, chunks, problem

    def extract_output(self, acc):
        return acc


class MergeChunks(beam.DoFn):
    """(id, Gathered) -> Series, points sorted by (t, y); or a "skipped" row
    on UNFITTABLE (a chunk's problem, or more than max_rows rows), with the
    fingerprint of its reason under fingerprint_key (fingerprint.options_key).

    Sorting makes the series independent of the order in which chunks
    arrive, so results do not depend on how the input was split.
    """

    def __init__(self, kernel: str, max_rows: int, fingerprint_key: bytes = b""):
        self._kernel = kernel
        self._key = fingerprint_key
        self._max_rows = max_rows
        self._series_read = metrics.counter(metrics.SERIES_READ)

    def process(self, element):
        series_id, (rows, chunks, problem) = element
        self._series_read.inc()
        if problem is None and chunks is None:
            problem = conversion.too_many_rows(rows, self._max_rows)
        if problem:
            yield beam.pvalue.TaggedOutput(UNFITTABLE, conversion.skipped_row(
                series_id, self._kernel, problem, self._key))
            return
        yield conversion.merge(series_id, chunks)

"""Checking the input files before any work starts (which files --input
names: pipeline/io/matching.py).

Every problem found here is an InputError with a one-line message (exit
code 2): it is far cheaper to refuse a run up front than to fail a
distributed job after its workers have started. The job's launcher checks
a bounded, evenly spread sample of footers (the cost of launching must not
grow with the input); the workers check every file's footer again as they
read it (check_footer), and report a file that fails as unreadable.
"""
from __future__ import annotations

import dataclasses
import errno
import os
import posixpath
from typing import Optional

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.io import columns as col
from pipeline.io.column_names import as_a_column, check_names, listed  # noqa: F401 (frame)
from pipeline.io.errors import (InputError, descriptor_limit, first_line, read_in_another_encoding,
                                undecodable)
from pipeline.io.files import map_files, open_file
from pipeline.io.matching import (GLOB_CHARACTERS, has_wildcard, is_local, job_glob, resolve,
                                   sample)

LONG, NESTED = "long", "nested"  # layouts
DAYS, AS_GIVEN = "days", "as given"  # time units of the results


@dataclasses.dataclass(frozen=True)
class Columns:
    """Names of the input columns."""

    id: str = "series_id"
    time: str = "t"
    value: str = "y"

    def check_distinct(self, option: str = "--{}") -> None:
        """Refuses one column named for two roles: it would run, and fit t
        against t, or make a series of every distinct time. `option` spells
        the names as check_schema's advice does.

        Raises:
          InputError: naming both options.
        """
        roles = (("id_column", self.id), ("time_column", self.time), ("value_column", self.value))
        for i, (role, name) in enumerate(roles):
            for other, other_name in roles[i + 1:]:
                if name == other_name:
                    raise InputError(f"{option.format(role)} and {option.format(other)} both "
                                     f"name the column {name!r}; each must name a column of its "
                                     "own")


@dataclasses.dataclass(frozen=True)
class InputSpec:
    """An input: checked by inspect(), or only its pattern (uninspected()).

    Attributes:
      pattern: as given by the user.
      files: every data file, sorted (the launcher's listing; the job
        matches `glob` again on its workers and never carries this list).
      columns: the column names.
      layout: LONG (one row per observation) or NESTED (one row per series,
        list columns); None when not inspected.
      time_units: DAYS when t is a date or timestamp (converted to days
        since 1970-01-01 UTC), else AS_GIVEN; None when not inspected.
      rows: total rows over the files whose footers were checked; None when
        not inspected.
      glob: what the job matches on its workers: the file, the folder's
        "<folder>/*", or the glob.
      data_only: the job leaves out names starting with "_" or "." (a
        folder or a glob; not a file named explicitly).
      footers_checked: how many footers the launcher read (all, or a sample).
    """

    pattern: str
    files: tuple[str, ...]
    columns: Columns
    layout: Optional[str]
    time_units: Optional[str]
    rows: Optional[int]
    glob: str = ""
    data_only: bool = True
    footers_checked: int = 0

    @property
    def inspected(self) -> bool:
        return self.layout is not None


# Footers the launcher reads at most (evenly spread over the sorted files).
MAX_FOOTERS = 64


def inspect(pattern: str, columns: Columns, max_footers: Optional[int] = None) -> InputSpec:
    """Resolves the input and checks the footers and schemas of its files:
    every file, or at most `max_footers` of them, evenly spread.

    Raises:
      InputError: no file matches; a local file is matched twice (a link);
        a checked file is empty or not Parquet; a column is missing or of
        the wrong type; files disagree; all files were checked and hold no
        rows.
    """
    everything = resolve(pattern)
    check_read_once(everything)
    files = sample(everything, max_footers)
    # Folders where a glob of *.parquet would find data: advice for a file beside them.
    beside = {posixpath.dirname(path) for path, _ in everything if path.endswith(".parquet")}
    footers = map_files(lambda f: check_footer(f[0], f[1], columns, f[0] == pattern,
                                               posixpath.dirname(f[0]) in beside), files)
    # The reference: the first file with rows and a kind of time (a t of
    # nulls alone has none, a file of no rows no layout either: check_agrees).
    at = next((i for i, footer in enumerate(footers) if footer.rows and footer.time_units),
              next((i for i, footer in enumerate(footers) if footer.rows), 0))
    first = footers[at]
    for (path, _), footer in zip(files, footers):
        check_agrees(path, footer, files[at][0], first, columns)
    rows = sum(f.rows for f in footers)
    if rows == 0 and len(files) == len(everything):
        raise InputError(f"the {len(files)} input file(s) matching {pattern!r} hold no rows; "
                         "check the --input path")
    glob, data_only = job_glob(pattern, everything)
    return InputSpec(pattern, tuple(path for path, _ in everything), columns, first.layout,
                     first.time_units or AS_GIVEN, rows, glob, data_only, len(files))


def check_read_once(files: list[tuple[str, int]]) -> None:
    """Raises InputError where two local names of the input are one file
    (a link beside its target, a folder linked into a `**` glob, a hard
    link): every point of its series would be read twice and fitted as
    repeated measurements (docs/design.md, "Contracts"). A stat per file."""
    seen: dict[tuple[int, int], str] = {}
    for path, _ in files:
        if not is_local(path):
            continue  # object stores have no links
        try:
            found = os.stat(path)
        except OSError:
            continue  # gone since the listing: the footer check says so
        if not found.st_ino:
            continue  # a file system without inode numbers (some FUSE mounts)
        first = seen.setdefault((found.st_dev, found.st_ino), path)
        if first != path:
            raise InputError(
                f"{path} is {first} again (a link): every point of its series would be read "
                "twice; give an --input that matches the file once (a glob that leaves the "
                "link out), or remove the link")


def check_text_names(files: tuple[str, ...]) -> None:
    """Raises InputError naming the first input file whose name is not
    UTF-8 text (a folder of Latin-1 names): the job's workers pass the
    names they match as UTF-8, and the run failed there, exit 3, on a
    codec's words (docs/design.md, "Contracts")."""
    for path in files:
        shown = undecodable(path)
        if read_in_another_encoding(path):
            raise InputError(f"input file '{shown}' {read_in_another_encoding(path)}")
        if shown is not None:
            raise InputError(f"input file '{shown}' has a name that is not UTF-8 text, which "
                             "Beam needs of file names; rename it in UTF-8, or give an --input "
                             "glob that leaves it out")




def uninspected(pattern: str, columns: Columns) -> InputSpec:
    """An InputSpec holding only the --input pattern, for a build that may not
    read the input (an offline dry run): the job matches the pattern on its
    workers. A pattern ending in "/" is a folder, matched as a real run
    matches it ("<folder>/*", data files only); any other without a
    wildcard is taken as one file, as it cannot be listed here."""
    if pattern.endswith("/") and not has_wildcard(pattern):
        glob, data_only = job_glob(pattern, [])  # names no file system: offline
    else:
        glob, data_only = pattern, any(ch in pattern for ch in GLOB_CHARACTERS)
    return InputSpec(pattern=pattern, files=(pattern,), columns=columns, layout=None,
                     time_units=None, rows=None, glob=glob, data_only=data_only)


@dataclasses.dataclass(frozen=True)
class Footer:
    """What a checked footer says: layout, time units (None for a time
    column of nulls alone, which agrees with either), rows, and its row
    groups as read together (reads: (first, stop) ranges)."""

    layout: str
    time_units: Optional[str]
    rows: int
    reads: tuple[tuple[int, int], ...] = ()


# A read opens the file, which parses its footer, once for consecutive row
# groups of up to these many rows and groups: a footer grows with the row
# groups, and parsing it for each of a streaming writer's 10,001 row groups
# (65 ms a time) took 11 minutes to read 1M rows that one row group reads in
# seconds. A large row group is still a read of its own, spread over workers
# (docs/design.md, "Data flow").
ROWS_PER_READ = 1 << 20
GROUPS_PER_READ = 1024


def read_ranges(group_rows: list[int]) -> tuple[tuple[int, int], ...]:
    """Row groups of these rows -> (first, stop) ranges of consecutive
    groups, each of at most ROWS_PER_READ rows (or one larger group) and
    GROUPS_PER_READ groups."""
    ranges, first, rows = [], 0, 0
    for index, n in enumerate(group_rows):
        if index > first and (rows + n > ROWS_PER_READ or index - first == GROUPS_PER_READ):
            ranges.append((first, index))
            first, rows = index, 0
        rows += n
    if group_rows:
        ranges.append((first, len(group_rows)))
    return tuple(ranges)


def _not_parquet(path: str, err: Exception, named: bool, beside: bool) -> InputError:
    """`named`: --input is this file itself; `beside`: Parquet files lie
    in its folder, so a glob of them would leave it out and find data."""
    if named:
        advice = "gpfit reads Parquet alone: convert it to Parquet and give --input the Parquet file"
    else:
        advice = "remove it from the input or convert it to Parquet"
        if beside and not path.endswith(".parquet"):  # a README.txt beside the data
            # A file of the current folder: its "*.parquet", not the root's "/*.parquet".
            glob = posixpath.join(posixpath.dirname(path), "*.parquet")
            advice += f", or give --input a glob of the Parquet files alone, e.g. '{glob}'"
    return InputError(f"{path} is not a Parquet file ({first_line(err)}); {advice}")


def _unreadable_schema(path: str, err: Exception) -> InputError:
    """A Parquet file whose schema Arrow has no type for: the footer is read
    whole, so one such column, even one gpfit does not read, makes the file
    unreadable (it was called "not a Parquet file")."""
    return InputError(
        f"{path} is a Parquet file whose schema Arrow cannot read ({first_line(err)}): a column "
        "of a type Arrow has none for, such as polars' Int128; write that column as another "
        "type (Int64, Float64, a Decimal) or leave it out, or leave the file out of --input")


# The magic that ends a file of Parquet modular encryption's default,
# encrypted footer mode (plain Parquet ends with PAR1).
ENCRYPTED_MAGIC = b"PARE"


def _has_encrypted_footer(path: str, size: int) -> bool:
    """Whether the file of `size` bytes ends with ENCRYPTED_MAGIC; False
    where it cannot be read (the caller's error says what happened)."""
    if size < len(ENCRYPTED_MAGIC):
        return False
    try:
        with open_file(path) as f:
            f.seek(size - len(ENCRYPTED_MAGIC))
            return f.read(len(ENCRYPTED_MAGIC)) == ENCRYPTED_MAGIC
    except OSError:
        return False


def _encrypted(path: str) -> InputError:
    """Arrow reads no encrypted footer without the keys: it was called "not
    a Parquet file", to be converted to Parquet."""
    return InputError(f"{path} is an encrypted Parquet file (Parquet modular encryption), which "
                      "gpfit cannot decrypt: write it without encryption, or leave it out of "
                      "--input")


# A file's bytes around its footer: the magic before the data and after the
# footer (PAR1, 4 bytes each) and the footer's length (4).
FOOTER_FRAME = 12


def _footer_alone(size: int, metadata: pq.FileMetaData) -> bool:
    """Whether the file of `size` bytes holds its footer alone, as a
    _metadata summary does (its row groups are in the files it names).
    Only then is a column chunk's file path asked: Arrow aborts the process
    (SIGABRT) when asked for the chunk of a column under Parquet modular
    encryption with a plaintext footer, whose reads fail as they should."""
    return size <= metadata.serialized_size + FOOTER_FRAME


def check_footer(path: str, size: int, columns: Columns, named: bool = False,
                 beside: bool = True) -> Footer:
    """Reads and checks one footer; `named`, `beside`: as _not_parquet's.

    Raises:
      InputError: the file is empty, not Parquet, encrypted, of a schema
        Arrow cannot read, a summary of other files' footers (_metadata), or its columns
        do not fit.
    """
    if size == 0:
        raise InputError(f"{path} is empty (0 bytes); expected a Parquet file: remove it "
                         "or rewrite it")
    try:
        with open_file(path) as f:
            parquet = pq.ParquetFile(f)
            schema, metadata = parquet.schema_arrow, parquet.metadata
    except PermissionError as err:
        raise InputError(f"{path} cannot be read: {err.strerror}; make it readable by this user, "
                         "or leave it out of --input") from err
    except OSError as err:
        if err.errno not in (errno.EMFILE, errno.ENFILE):
            raise (_encrypted(path) if _has_encrypted_footer(path, size)
                   else _not_parquet(path, err, named, beside)) from err
        # Under `ulimit -n 9` a good file was called "not a Parquet file"
        # (docs/design.md, "The fitter", A lock released without descriptors).
        raise InputError(f"{path} cannot be opened: this process has no file descriptor left "
                         f"({err.strerror}; {descriptor_limit()}): raise the limit, e.g. ulimit "
                         "-n 4096 in the shell that runs gpfit, and run again") from err
    except pa.ArrowNotImplementedError as err:
        raise _unreadable_schema(path, err) from err
    except (pa.ArrowException, ValueError) as err:
        raise _not_parquet(path, err, named, beside) from err
    if metadata.num_row_groups and metadata.num_columns and _footer_alone(size, metadata) and \
            metadata.row_group(0).column(0).file_path not in ("", posixpath.basename(path)):
        # Its row groups are in the files it names: each read failed (exit 3).
        raise InputError(
            f"{path} holds the footers of other files (a _metadata summary, as Dask and Spark "
            "write beside their parts), not their rows; give --input the folder that holds "
            f"it, {posixpath.dirname(path)!r}: its parts are read, names starting with _ "
            "left out")
    layout, time_units = check_schema(path, schema, columns)
    group_rows = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
    return Footer(layout, time_units, metadata.num_rows, read_ranges(group_rows))


def read_row_groups(path: str, indices: range, columns: Columns
                    ) -> tuple[list[pa.Table], list[str]]:
    """Row groups `indices` of a file, the id, time and value columns, from
    one opening of it (see ROWS_PER_READ). Page checksums, where the writer
    stored them, are verified.

    Returns:
      (a pa.Table per row group read, a reason naming the file and the
      row group per row group that cannot be read).
    """
    names = [columns.id, columns.time, columns.value]
    tables, problems = [], []
    try:
        with open_file(path) as f:
            parquet = pq.ParquetFile(f, page_checksum_verification=True)
            # Read again as microseconds where its INT96 times wrapped (_int96_dates).
            wide = (pq.ParquetFile(f, page_checksum_verification=True, metadata=parquet.metadata,
                                   coerce_int96_timestamp_unit="us")
                    if _is_int96(parquet.schema, columns.time) else None)
            for index in indices:
                try:
                    table = parquet.read_row_group(index, columns=names)
                    if wide is not None:
                        table = _int96_dates(table, columns.time, wide.read_row_group(
                            index, columns=[columns.time]).column(0))
                    tables.append(table)
                except (pa.ArrowException, OSError, ValueError) as err:
                    problems.append(_unreadable_group(path, index, err))
    except (pa.ArrowException, OSError, ValueError) as err:  # the file cannot be opened
        problems.append(_unreadable_group(path, indices[0], err))
    return tables, problems


def _unreadable_group(path: str, index: int, err: Exception) -> str:
    return f"{path}: row group {index} cannot be read: {first_line(err)}"


def _is_int96(schema: pq.ParquetSchema, name: str) -> bool:
    """Whether column `name` (or its list's elements) is stored as INT96,
    the legacy timestamps Spark still writes by default."""
    return any(schema.column(i).path.split(".")[0] == name
               and schema.column(i).physical_type == "INT96" for i in range(len(schema)))


def _int96_dates(table: pa.Table, name: str, wide) -> pa.Table:
    """`table` with its INT96 time column `name` as Arrow reads it
    (nanoseconds), unless some time lies outside nanoseconds' 1677-2262:
    those wrapped silently (1610 read as 2194), so the row group's times
    are then `wide`, the same column read as microseconds. Inside the range
    the nanoseconds are kept, so the days, fits and fingerprints of such
    input stay as they were (docs/design.md, "Contracts")."""
    try:
        pc.cast(wide, table.schema.field(name).type)  # safe: refuses what wraps
    except pa.ArrowInvalid:
        return table.set_column(table.schema.get_field_index(name), name, wide)
    return table


def check_agrees(path: str, footer: Footer, reference_path: str, reference: Footer,
                 columns: Columns) -> None:
    """Raises InputError unless the file at path has the reference's layout
    and kind of time, or holds no rows: an empty part written with another
    schema (pandas' empty frame of datetime64 t) has no time to disagree."""
    if footer.rows == 0:
        return
    if footer.layout != reference.layout:
        raise InputError(
            f"{path} is in {footer.layout} layout but {reference_path} is {reference.layout}; "
            "give files of one layout")
    if None not in (footer.time_units, reference.time_units) and \
            footer.time_units != reference.time_units:
        raise InputError(
            f"column {columns.time!r} holds {_units_words(footer.time_units)} in {path} "
            f"but {_units_words(reference.time_units)} in {reference_path}; give one kind of "
            "time")


def check_schema(path: str, schema: pa.Schema, columns: Columns,
                 option: str = "--{}") -> tuple[str, Optional[str]]:
    """-> (layout, time units) of one file (or table: `path` names it), or
    InputError naming the problem; `option` spells the column options in the
    advice ("--{}" for the command, "{}=" for pipeline.frame's keywords).
    Time units are None where t is of Arrow's null type: all null, it holds
    no kind of time."""
    check_names(path, schema.names, columns, option, schema)
    id_type = schema.field(columns.id).type
    time_type = schema.field(columns.time).type
    value_type = schema.field(columns.value).type
    # An id column of Arrow's null type (all null, as pandas writes an
    # all-None column; a dictionary of it: a category column without
    # categories) holds rows with a null id: dropped and counted
    # (docs/design.md, "Contracts").
    if not (pa.types.is_null(col.decoded(id_type)) or col.is_id(id_type)):
        raise InputError(f"id column {columns.id!r} in {path} has type {id_type}; expected "
                         "strings or integers: write it as one of those (a JSON id as "
                         f"its text, e.g. CAST(\"{columns.id}\" AS VARCHAR) in DuckDB), or name "
                         f"another with {option.format('id_column')}")
    zone = col.unknown_zone(id_type)
    if zone is not None:
        raise InputError(f"id column {columns.id!r} in {path} holds timestamps in the time zone "
                         f"{zone!r}, which the tz database lacks, so its ids cannot be written "
                         "as text; write the column in UTC or in a zone the tz database has "
                         "(e.g. pandas' .dt.tz_convert('UTC')), or name another with "
                         f"{option.format('id_column')}")
    if col.is_list(time_type) != col.is_list(value_type):
        listed, scalar = ((columns.time, columns.value) if col.is_list(time_type)
                          else (columns.value, columns.time))
        raise InputError(
            f"in {path} column {listed!r} holds lists but {scalar!r} does not; give both "
            "as lists (one row per series) or neither (one row per observation)")
    layout = NESTED if col.is_list(time_type) else LONG
    if layout == NESTED:
        time_type, value_type = time_type.value_type, value_type.value_type
    # Categories (pandas' category dtype, in fit_frame) are read as their
    # values (columns.as_float).
    time_type, value_type = col.decoded(time_type), col.decoded(value_type)
    if not (col.is_number(time_type) or col.is_calendar(time_type)):
        raise InputError(
            f"time column {columns.time!r} in {path} has type {time_type}; expected numbers, "
            f"dates or timestamps{_time_advice(time_type, columns.time)} (or name another "
            f"with {option.format('time_column')})")
    if not col.is_number(value_type):
        advice = _value_advice(value_type)
        raise InputError(
            f"value column {columns.value!r} in {path} has type {value_type}; expected "
            f"numbers{': ' + advice if advice else ''} ({'or' if advice else 'convert it, or'} "
            f"name another with {option.format('value_column')})")
    if pa.types.is_null(time_type):
        return layout, None
    return layout, DAYS if col.is_calendar(time_type) else AS_GIVEN


def _value_advice(type_: pa.DataType) -> str:
    """How to make values of a refused type numbers, where one call does:
    text (numbers written as text) and bools (yes/no readings); else ""."""
    if col.is_text(type_):
        return "parse the text into numbers first (e.g. pandas.to_numeric)"
    if pa.types.is_boolean(type_):
        return "give true and false as numbers first (e.g. .astype(float): 1.0 and 0.0)"
    return ""


# How Arrow reads Parquet's INTERVAL logical type (months, days, ms).
_PARQUET_INTERVAL = pa.binary(12)


def _time_advice(type_: pa.DataType, name: str) -> str:
    """How to make times of a refused type, of the column `name`, into ones
    gpfit takes: text (pandas' object strings arrive as large_string,
    polars' and pandas' ArrowDtype ones may as string_view), durations
    (pandas' Timedelta), intervals (DuckDB's), pandas' Period (an extension
    type), times of day, and a struct holding a date or timestamp (Spark's
    window)."""
    if col.is_text(type_):
        return ": parse the text into timestamps first (e.g. pandas.to_datetime)"
    if pa.types.is_duration(type_):
        return (": give durations as numbers of one unit (e.g. days, t / pd.Timedelta(days=1)) "
                "or as timestamps")
    if pa.types.is_interval(type_) or type_ == _PARQUET_INTERVAL:
        said = "" if pa.types.is_interval(type_) else \
            "Parquet's INTERVAL (DuckDB's) is read as 12 bytes: "
        return (f": {said}give intervals as numbers of one unit (e.g. days, epoch(t) / 86400 in "
                "DuckDB) or as timestamps")
    if "period" in str(type_):
        return ": give periods as timestamps (e.g. .dt.to_timestamp())"
    if pa.types.is_time(type_):
        return ": a time of day needs its date; give them as timestamps"
    times = [inner.name for inner in type_ if col.is_calendar(inner.type)] \
        if pa.types.is_struct(type_) else []
    if times:
        return (": gpfit reads columns, not their fields: write the field that holds the time "
                f"as a column of its own {as_a_column(name, times[0])}")
    return ""


def _units_words(units: str) -> str:
    return "dates or timestamps" if units == DAYS else "plain numbers"

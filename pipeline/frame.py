"""fit_frame: gpfit on a DataFrame in memory, for notebooks and for the
"one model per group" step of Spark (applyInPandas), Dask (map_partitions,
groupby-apply) and Ray (map_groups).

    import gpfit
    params = gpfit.fit_frame(df, id_column="store", time_column="day",
                             value_column="sales", kernel="rbf+periodic")

The data is the long layout the command reads (one row per observation; or
the nested layout, one row per series with list columns), and the result
has exactly the rows and columns the command writes to <output>/params/
(pipeline/io/schema.py): every series once, fitted or with its reason. The
conversions are the pipeline's own (pipeline/io/conversion.py): dates and
timestamps become days since 1970-01-01 UTC, ids strings, points sorted,
rows fingerprinted, so a series gives the command's parameters (recipes and
the measured agreement: docs/design.md, "DataFrame API"). The command's
--transform, --holdout and forecast options are keywords of the same names,
run by the job's own steps (pipeline/frame_tables.py); with predictions
asked for, the result is Tables(params, predictions), the command's two
tables.

A process keeps one fitter per configuration (pipeline/fitters.py), built at
its first call (seconds: TensorFlow variables, a traced function) and reused
by every later call, whichever function of the engine's makes them. TF's
thread pools are set at the first call: `cores` fitters side by side, one
intra-op thread each (docs/design.md, "Threads"); the default of 1 suits an
engine that runs one task per core in a process of its own (Spark's and
Ray's defaults; Dask's workers with one thread each: a worker's threads take
turns with its fitter, docs/design.md, "DataFrame API").
"""
from __future__ import annotations

import dataclasses
import datetime
import itertools
import numbers
import re
import sys
from typing import Any, NamedTuple, Optional, Sequence, Union

import numpy as np
import pyarrow as pa

from gpcore.config import AUTO, THOROUGH, FitConfig, search_settings
from pipeline.io import beam_import

if beam_import.refusal() is not None:
    raise ImportError(beam_import.refusal())  # else Beam's own AttributeError, below

from pipeline import fitters, frame_tables  # noqa: E402  (after the check above)
from pipeline.fitted_scale import said_in_y
from pipeline.io import columns as col
from pipeline.io import conversion, fingerprint, inputs, scales
from pipeline.io.errors import InputError, first_line
from pipeline.io.schema import OUTPUT_SCHEMA
from pipeline.options import MAX_ROWS, check_max_rows

# A column name Spark's DDL takes bare (its SQL lexer's IDENTIFIER, not
# starting with a digit, which would read as a number); others are backquoted.
_SPARK_BARE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def fit_frame(data, *, id_column: str = "series_id", time_column: str = "t",
              value_column: str = "y", kernel: str = "rbf",
              candidates: Union[str, Sequence[str], None] = None,
              restarts: Optional[int] = None, min_points: int = 3,
              max_points: Optional[int] = None, batch_size: Optional[int] = None,
              max_rows: int = MAX_ROWS, cores: int = 1,
              search: str = THOROUGH, transform: str = scales.NONE, holdout: int = 0,
              predict_horizon: float = 0.0, predict_points: int = 0, predict_steps: int = 0,
              predict_levels: Union[str, float, Sequence[float]] = "95",
              predict_observed: bool = False):
    """Fits every series of `data`; one output row per series, and with
    predictions asked for the command's predictions too.

    Args:
      data: a pandas DataFrame, or a pyarrow Table or RecordBatch, with the
        id, time and value columns (other columns are ignored). Times:
        numbers (results in the same units), dates or timestamps (results
        in days). Values: numbers, NaN or null = missing.
      id_column, time_column, value_column, kernel, candidates, restarts,
      min_points, max_points, batch_size, max_rows, search: as the command's
        options of the same names (`gpfit --help`); candidates may be a
        comma-separated string or a sequence. max_points left out is the
        kernel's default, as the command's (4,096; 1,000,000 for the Matérns
        and their sums, which fit long series in O(n)).
      cores: cores this process may use, the first time it fits: as many
        fitters side by side (later calls keep the first setting).
      transform, holdout, predict_horizon, predict_points, predict_steps,
      predict_levels, predict_observed: as the command's options of the
        same names; predict_levels may be a comma-separated string, a
        number or numbers (a list, a numpy array, a pandas Series).

    Returns:
      The type given (pandas DataFrame, or pyarrow Table for Arrow input)
      with the output schema's columns (pipeline.io.schema.OUTPUT_SCHEMA),
      one row per distinct non-null id, sorted by series_id. Where
      predictions are asked for (predict_points, predict_steps,
      predict_observed or holdout), Tables(params, predictions): those rows
      and what the command writes to <output>/predictions/ (its schema:
      predictions_schema()), sorted by series_id, each series' rows in the
      command's order.

    Raises:
      InputError: a column missing or of a type that cannot be fitted, or
        one column named for two roles.
      ValueError: options FitConfig refuses (an unknown kernel, restarts < 1,
        a search not in SEARCHES), candidates without kernel "auto", or
        max_rows below the max_points in force, a transform not in
        TRANSFORMS, forecast options the command refuses (as the
        command's), a count that is not a whole number, or cores < 1 or
        above the machine's cores.
      RuntimeError: a process forked after this one fitted (TensorFlow
        does not survive fork: start workers with 'spawn').
    """
    max_rows, cores = _whole("max_rows", max_rows), _whole("cores", cores)
    if cores < 1:
        raise ValueError(f"cores= must be >= 1; got {cores}")
    most = fitters.machine_cores()
    if cores > most:
        # As --direct_num_workers (pipeline/runtime.py): a fitter past one per
        # core only competes, and 10**9 sized TensorFlow's thread pools so
        # that the process died (SIGSEGV, under an 8 GB memory limit); the first
        # setting is the process's.
        raise ValueError(f"cores= must be at most this machine's {most} cores "
                         f"(one fitter per core); got {cores}")
    # As Arrow names columns: a pandas label 0 (read_csv(header=None)) is "0".
    columns = inputs.Columns(str(id_column), str(time_column), str(value_column))
    columns.check_distinct(option="{}=")
    table, pandas = _as_table(data, columns)
    _, time_units = inputs.check_schema("the table", table.schema, columns, option="{}=")
    config = fit_config(kernel, candidates, restarts, min_points, max_points, batch_size,
                        search)
    check_max_rows(max_rows, max_points, config, option="{}=")  # restarts: FitConfig's own
    asked = frame_tables.asked(transform, _whole("holdout", holdout),
                               _number("predict_horizon", predict_horizon),
                               _whole("predict_points", predict_points),
                               _whole("predict_steps", predict_steps), predict_levels,
                               _flag("predict_observed", predict_observed),
                               dates=time_units == inputs.DAYS)
    key = fingerprint.options_key(config, asked.transform, asked.holdout)
    table = table.select([columns.id, columns.time, columns.value])
    _, chunks = conversion.split(table, columns)
    rows, ready = [], []
    for series_id, parts in _gathered(chunks).items():
        points = sum(len(part[1]) for part in parts)
        problem = conversion.first_problem(*(part[2] for part in parts))
        if problem is None and points > max_rows:
            problem = conversion.too_many_rows(points, max_rows, flag="max_rows")
        if problem:
            rows.append(conversion.skipped_row(series_id, config.kernel_name, problem, key))
            continue
        found = frame_tables.on_fitted_scale(asked, config, key,
                                             conversion.merge(series_id, parts))
        (rows if isinstance(found, dict) else ready).append(found)
    fitted = []
    if ready:
        slot = fitters.cached(config, cores)
        given = frame_tables.fitted_parts(asked, ready)
        with slot.lock:
            results = slot.fitter.fit(given)
            slot.calls += 1
        fitted = frame_tables.scored(asked, ready, [
            said_in_y(asked.transform, seen, conversion.fitted_row(r, s, key))
            for r, s, seen in zip(results, ready, given)])
        rows += [row for _, row in fitted]
    rows.sort(key=lambda row: row["series_id"])
    out = _as_given(conversion.output_table(rows), pandas)
    if not asked.predicts:
        return out
    return Tables(out, _as_given(frame_tables.predictions(asked, fitted), pandas))


class Tables(NamedTuple):
    """fit_frame's result where predictions are asked for: the two tables
    the command writes, <output>/params/ and <output>/predictions/."""

    params: Any
    predictions: Any


def _as_given(table: pa.Table, pandas: bool):
    return _as_pandas(table) if pandas else table


def fit_config(kernel: str = "rbf", candidates: Union[str, Sequence[str], None] = None,
               restarts: Optional[int] = None, min_points: int = 3,
               max_points: Optional[int] = None, batch_size: Optional[int] = None,
               search: str = THOROUGH) -> FitConfig:
    """The FitConfig of fit_frame's options, as the command builds it from
    its flags (an option not given keeps FitConfig's default)."""
    settings = dict(kernel=kernel, restarts=_whole("restarts", restarts, optional=True),
                    min_points=_whole("min_points", min_points),
                    max_points=_whole("max_points", max_points, optional=True))
    batch_size = _whole("batch_size", batch_size, optional=True)
    if candidates is not None:
        if kernel != AUTO:  # unused, as the command's --candidates would be: refused there too
            raise ValueError(f"candidates= is for kernel={AUTO!r}; got kernel={kernel!r}. "
                             f"Add kernel={AUTO!r}, or drop candidates=")
        settings["candidates"] = tuple(candidates.split(",") if isinstance(candidates, str)
                                       else candidates)
    if batch_size is not None:
        settings["batch_size"] = batch_size
    if "candidates" in settings:
        try:  # the candidates alone, as the command checks --candidates
            FitConfig(kernel=AUTO, candidates=settings["candidates"])
        except ValueError as err:  # how to write them, as the command says
            raise ValueError(f"candidates={candidates!r}: {err}; give at least 2 kernels, a "
                             "sequence or separated by commas with no spaces, e.g. "
                             "'rbf,rbf+periodic'") from err
    config = FitConfig(**settings)  # its own ValueError for a kernel it does not know
    return dataclasses.replace(config, **search_settings(search, config.kernel))


def _whole(name: str, value, optional: bool = False) -> Optional[int]:
    """value as an int (numpy's too: the options' JSON fingerprint takes
    only Python's), or ValueError naming the keyword: the command's flags
    parse as int, and 2.5 or "8" would be taken as they came or fail deep
    inside. None passes where the option may be left out."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name}= must be a whole number; got {value!r}")
    return int(value)


def _number(name: str, value) -> float:
    """value as a float, or ValueError naming the keyword (the flag parses as float)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name}= must be a number; got {value!r}")
    return float(value)


def _flag(name: str, value) -> bool:
    """value as a bool, or ValueError naming the keyword: "false" would be true."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name}= must be True or False; got {value!r}")
    return bool(value)


def _as_table(data, columns: inputs.Columns) -> tuple[pa.Table, bool]:
    """-> (the data as an Arrow table, whether it was a pandas DataFrame)."""
    if isinstance(data, pa.Table):
        return data, False
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data]), False
    pandas = sys.modules.get("pandas")  # not imported: data cannot be a DataFrame
    if pandas is not None and isinstance(data, pandas.DataFrame):  # subclasses too
        return _from_pandas(data, columns), True
    raise InputError(f"fit_frame takes a pandas DataFrame or a pyarrow Table; got "
                     f"{_type_name(data)}{_conversion(data)}")


# Data a step away from a table fit_frame takes (by class name in its top
# package) -> the call that makes it: polars' frames, a dict of columns, a
# numpy record array, a pyarrow Dataset (docs/design.md, "DataFrame API").
_TO_ARROW = {("polars", "DataFrame"): "data.to_arrow()",
             ("polars", "LazyFrame"): "data.collect().to_arrow()",
             ("builtins", "dict"): "pandas.DataFrame(data)",
             ("numpy", "recarray"): "pandas.DataFrame(data)",
             **{("pyarrow", name): "data.to_table()"
                for name in ("Dataset", "FileSystemDataset", "InMemoryDataset",
                             "UnionDataset")}}

# pandas' other objects -> what to pass instead.
_PANDAS_OTHERS = {
    ("pandas", "Series"): (": a Series is one column; pass the DataFrame that holds the id, "
                           "time and value columns"),
    ("pandas", "DataFrameGroupBy"): (": call it on each group, with the id column selected, "
                                     "as in groupby(id)[[id, t, y]].apply(gpfit.fit_frame)")}

# Packages of the engines whose frames fit_frame is called inside, per group
# or partition, by the recipes; only their frames are told so.
_ENGINES = ("pyspark", "dask", "ray", "modin")


def _type_name(data) -> str:
    """The type of `data` with its top package ("polars.DataFrame"): a bare
    "DataFrame" reads as pandas'."""
    package = type(data).__module__.split(".")[0]
    return type(data).__qualname__ if package == "builtins" else f"{package}.{type(data).__qualname__}"


def _conversion(data) -> str:
    """What to do with `data`: the call that makes a table of it, else the
    recipes where it is an engine's frame (a dict or a Dataset was told it
    was "a Spark or Dask frame"), else nothing."""
    package = type(data).__module__.split(".")[0]
    to_arrow = _TO_ARROW.get((package, type(data).__name__))
    if to_arrow:
        return f": pass {to_arrow}"
    said = _PANDAS_OTHERS.get((package, type(data).__name__))
    if said:
        return said
    if package in _ENGINES:
        return (" (a Spark or Dask frame: call it per group or partition, as docs/design.md's "
                "recipes show)")
    return ""


# What pa.array raises for a column it cannot convert: Arrow's errors, and
# Python's own where a converter of Arrow's calls int() on an object, for
# 128-bit ints (uuid4().int ids: OverflowError) or np.datetime64 day scalars
# kept as objects (TypeError), which named neither column nor conversion
# (docs/design.md, "DataFrame API").
_UNCONVERTIBLE = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError,
                  OverflowError)


def _from_pandas(frame, columns: inputs.Columns) -> pa.Table:
    """The id, time and value columns of a pandas frame as an Arrow table.

    Only they are converted, one at a time, so that the other columns are
    ignored whatever they hold (mixed objects, names given twice: Arrow
    refuses those in a whole frame), and a column Arrow cannot read is named.
    """
    names = [str(name) for name in frame.columns]  # as Arrow names them
    _check_index(frame, names, columns)
    _check_grouped(names, columns)
    inputs.check_names("the table", names, columns, option="{}=")
    arrays = {}
    for name in (columns.id, columns.time, columns.value):
        arrays[name] = _as_arrow(frame.iloc[:, names.index(name)], name,
                                 ids=name == columns.id)
    if pa.types.is_null(arrays[columns.id].type):
        # An object column without a value (no rows, or every id missing)
        # has no Arrow type: no id, no series, as null ids in the job.
        arrays[columns.id] = arrays[columns.id].cast(pa.string())
    return pa.table(arrays)


def _as_arrow(column, name: str, ids: bool) -> pa.Array:
    """One role column of a pandas frame (a Series of n rows; `ids`: the id
    column) as an Arrow array of n values, or InputError naming it and the
    conversion to make."""
    try:  # as Table.from_pandas converts each column
        array = pa.array(column, from_pandas=True)
    except UnicodeEncodeError as err:
        if not ids:  # times or values as text: refused as text whatever it holds
            raise InputError(f"column {name!r} of the frame holds text, and text that is not "
                             f"UTF-8 ({first_line(str(err))}); convert it first: "
                             "pd.to_numeric or pd.to_datetime") from err
        # Lone surrogates (os.fsdecode's of names that are not UTF-8):
        # Arrow's strings are UTF-8, its bytes ids are written with \xNN
        # escapes (columns.as_str).
        raise InputError(
            f"column {name!r} of the frame holds text that is not UTF-8 "
            f"({first_line(str(err))}); give such ids as bytes, e.g. "
            ".map(lambda s: s.encode('utf-8', 'surrogateescape')), which are named "
            "with \\xNN escapes") from err
    except _UNCONVERTIBLE as err:
        said = err.args[0] if err.args else err
        raise InputError(
            f"column {name!r} of the frame holds values Arrow cannot read as one type "
            f"({first_line(str(said))}); convert it first: .astype(str) for ids, "
            "pd.to_numeric or pd.to_datetime for times and values") from err
    if _holds_datetimes(column, array.type):
        convert = (f"data[{name!r}].map(lambda ts: pd.to_datetime(ts).to_numpy(), "
                   "na_action='ignore')" if col.is_list(array.type)
                   else f"pd.to_datetime(data[{name!r}])")
        raise InputError(
            f"column {name!r} of the frame holds datetime.datetime values among datetime.date "
            "ones, which Arrow (and to_parquet) read as dates, dropping their time of day; "
            f"convert it first: {convert}, which keeps every instant (a date as its midnight; "
            "utc=True for times in several zones)")
    return array


def _holds_datetimes(column, type_: pa.DataType) -> bool:
    """Whether an object column Arrow read as dates (`type_`), lists of them
    (the nested layout) or categories of them, holds a datetime.datetime
    (pd.Timestamp too, not NaT): with a date first Arrow makes the whole
    column dates, and distinct instants one day (docs/design.md, "DataFrame
    API")."""
    nested = col.is_list(type_)
    if not pa.types.is_date(col.decoded(type_.value_type if nested else type_)):
        return False
    if isinstance(column.dtype, sys.modules["pandas"].CategoricalDtype):
        column = column.cat.categories
    if column.dtype != object:
        return False
    values = column.to_numpy()
    if nested:  # lists, tuples or arrays; a missing list is None or NaN
        values = itertools.chain.from_iterable(
            value for value in values if isinstance(value, (list, tuple, np.ndarray)))
    missing = type(sys.modules["pandas"].NaT)  # a datetime.datetime too
    # The distinct types, not each value: 0.08 s a million rows (as long as
    # Arrow's conversion), where isinstance of each value took 0.8 s.
    return any(issubclass(kind, datetime.datetime) and kind is not missing
               for kind in set(map(type, values)))


def _check_index(frame, names: list[str], columns: inputs.Columns) -> None:
    """Refuses a frame that holds a column in its index (set_index("t"), a
    time series' usual shape), which the conversion leaves out, saying so."""
    index = [str(name) for name in frame.index.names if name is not None]
    for name in (columns.id, columns.time, columns.value):
        if name not in names and name in index:
            raise InputError(f"{name!r} is in the frame's index, not among its columns "
                             f"({', '.join(names)}); pass data{_as_timestamps(frame.index)}"
                             ".reset_index()")
    _check_times_in_index(frame.index, names, columns.time)


def _check_times_in_index(index, names: list[str], time: str) -> None:
    """Refuses a frame without its time column whose unnamed index holds
    times (a DatetimeIndex: a time series' usual shape) or periods (a
    PeriodIndex), saying how to make it the column: "no column 't'" alone
    left the times unmentioned."""
    if time in names or index.nlevels != 1 or index.name is not None:
        return
    if _as_timestamps(index):
        held = "periods"
    elif sys.modules["pandas"].api.types.is_datetime64_any_dtype(index.dtype):  # tz too
        held = "times"
    else:
        return
    raise InputError(f"the frame has no column {time!r} but its index holds {held} "
                     f"({index.dtype}): pass data{_as_timestamps(index)}.rename_axis({time!r})"
                     ".reset_index(), or name another column with time_column=")


def _as_timestamps(index) -> str:
    """The call that makes an index of periods (a PeriodIndex: monthly data,
    resample("M")) timestamps, each period's start, before reset_index():
    periods are refused as times (docs/design.md, "DataFrame API"); else
    nothing."""
    pandas = sys.modules["pandas"]
    return ".to_timestamp()" if isinstance(index, pandas.PeriodIndex) else ""


def _check_grouped(names: list[str], columns: inputs.Columns) -> None:
    """Refuses a pandas frame with the time and value columns but no id:
    what groupby(id).apply passes since pandas 3 (and Dask after it), which
    leave the grouping column out unless it is selected."""
    if columns.id in names or columns.time not in names or columns.value not in names:
        return
    selected = f'groupby("{columns.id}")[["{columns.id}", "{columns.time}", "{columns.value}"]]'
    raise InputError(
        f"the table has no column {columns.id!r} (its columns: {inputs.listed(names)}); pandas' "
        "and Dask's groupby().apply leaves the grouping column out of each group: select "
        f"it, as in {selected}.apply(gpfit.fit_frame), or name another with id_column=")


def _as_pandas(table: pa.Table):
    """The result as pandas, its dtypes the same whatever its rows: a
    nullable integer column (holdout_points, null in fit_frame's rows)
    becomes float64 once a row holds a null, so it is float64 with no rows
    too, where the empty result serves as Dask's meta."""
    for i, field in enumerate(table.schema):
        if field.nullable and pa.types.is_integer(field.type):
            table = table.set_column(i, field.name, table.column(i).cast(pa.float64()))
    return table.to_pandas()


def _gathered(chunks) -> dict:
    """(id, Chunk) pairs -> {id: [Chunk, ...]} (a nested table can hold an
    id on several rows)."""
    by_id: dict[str, list] = {}
    for series_id, chunk in chunks:
        by_id.setdefault(series_id, []).append(chunk)
    return by_id


def output_schema() -> pa.Schema:
    """The output schema as a pyarrow Schema: what `to_parquet(...,
    schema=)` needs where a writer would infer each file's schema from its
    rows (Dask: a partition's object columns of lists and nulls cannot be
    inferred)."""
    return OUTPUT_SCHEMA


def predictions_schema(dates: bool = False,
                       predict_levels: Union[str, float, Sequence[float]] = "95") -> pa.Schema:
    """The schema of fit_frame's predictions (Tables.predictions) for t of
    dates or timestamps (`dates`) or numbers, and predict_levels as
    fit_frame takes them: what a Dask partition's to_parquet or Spark's
    schema (spark_schema) needs."""
    return frame_tables.schema(frame_tables.asked(scales.NONE, 0, 0.0, 0, 0, predict_levels,
                                                  False, dates=bool(dates)))


def spark_schema(schema: Optional[pa.Schema] = None) -> str:
    """A schema (default: the output schema; or predictions_schema()'s) as
    a Spark DDL string, for applyInPandas' schema argument (no pyspark
    needed to build it). A name Spark's parser takes bare only as letters,
    digits and "_" is backquoted otherwise (a fractional level's
    lower_99.5: the "." would end it)."""
    def name(text: str) -> str:
        return text if _SPARK_BARE.fullmatch(text) else "`" + text.replace("`", "``") + "`"

    def ddl(type_: pa.DataType) -> str:
        if pa.types.is_list(type_):
            return f"array<{ddl(type_.value_type)}>"
        if pa.types.is_struct(type_):
            return "struct<" + ",".join(f"{name(f.name)}:{ddl(f.type)}" for f in type_) + ">"
        if pa.types.is_timestamp(type_):  # predictions' t of dates: UTC, as Spark keeps it
            return "timestamp"
        return {pa.string(): "string", pa.int64(): "bigint", pa.float64(): "double",
                pa.bool_(): "boolean"}[type_]
    return ", ".join(f"{name(field.name)} {ddl(field.type)}" for field in schema or OUTPUT_SCHEMA)
